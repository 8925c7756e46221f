package plan

import (
	"fmt"
	"strings"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
)

// Notes says, one sentence each, which settings of a request the backend
// or the chosen DBMSs do not apply, and why (the request's notes: the dry
// run warns of them and the summary's Workload section lists them). What
// no backend could apply is refused instead (FromRequest).
func Notes(r contracts.Request, backend string) []string {
	var out []string
	if backend == contracts.BackendLocal {
		for _, d := range r.DBMS {
			if e, err := catalog.Lookup(d); err == nil && e.NotLocally() != "" {
				out = append(out, e.NotLocally()+": on the local backend its configurations fail when deployed")
			}
		}
		if n := r.Nodes; n != nil && n.SUT+n.Loading+n.Benchmarking != "" {
			out = append(out, given(map[string]bool{"-rnn": n.SUT != "", "-rnl": n.Loading != "", "-rnb": n.Benchmarking != ""})+" ignored: the local backend runs everything on this machine")
		}
		if s := r.Resources; s != nil && s.RequestCPU+s.RequestMemory+s.LimitMemory+s.LimitCPU != "" {
			out = append(out, given(map[string]bool{"-rc": s.RequestCPU != "", "-rr": s.RequestMemory != "", "-lr": s.LimitMemory != "", "-lc": s.LimitCPU != ""})+
				" ignored: the local backend does not bound the CPU or memory of its processes")
		}
		if s := r.Storage; s != nil && s.Size != "" && s.Class != "" {
			out = append(out, "-rss ignored: on the local backend a volume is a directory, without a size")
		} else if s != nil && s.Size != "" {
			out = append(out, "-rss ignored: without -rst it asks for ephemeral storage, which the local backend does not bound")
		}
	}
	if r.Storage != nil && r.Storage.Class != "" {
		for _, d := range r.DBMS {
			if e, err := catalog.Lookup(d); err == nil && e.VolumeNotReused != "" {
				out = append(out, fmt.Sprintf("-rst for %s: %s", e.Name, e.VolumeNotReused))
			}
		}
	}
	if r.WorkerReplicas > 0 {
		for _, d := range r.DBMS {
			e, err := catalog.Lookup(d)
			if err == nil && !e.Clustered() && e.ClusterVariant != "" {
				e, err = catalog.Lookup(e.ClusterVariant)
			}
			if err == nil && e.MasterCopy() {
				out = append(out, fmt.Sprintf("-nwr %d for %s is bexhoma's master-copy replication: one master holds every key and the other -nw − 1 workers copy it (-nw 3: 3 servers; -nw 1: no replica), not %d replica(s) of each of -nw masters",
					r.WorkerReplicas, d, r.WorkerReplicas))
			}
		}
	}
	if r.BatchSize > 0 {
		var noBatch []string
		for _, d := range r.DBMS {
			if e, err := catalog.Lookup(d); err == nil && e.JDBCURL == "" {
				noBatch = append(noBatch, e.Name)
			}
		}
		if len(noBatch) > 0 {
			out = append(out, "-xbs ignored for "+strings.Join(noBatch, ", ")+": its YCSB binding writes one key per insert, without batches")
		}
	}
	return out
}

// given lists the flags that are true, in a fixed order.
func given(flags map[string]bool) string {
	var out []string
	for _, f := range []string{"-rnn", "-rnl", "-rnb", "-rc", "-rr", "-lr", "-lc"} {
		if flags[f] {
			out = append(out, f)
		}
	}
	return strings.Join(out, ", ")
}
