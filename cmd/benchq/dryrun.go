package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/plan"
	"github.com/benchq/benchq/internal/saturation"
)

// dryRun prints the plan the scheduler will run (the CLI expanded the
// request exactly as the scheduler does, plan.FromRequest): the planned
// workflow, the SUT's shape, monitoring and -ms, the saturation search's
// plan, what is not applied, an estimated duration, then every
// configuration's phases and shards.
func dryRun(st *State, p plan.Plan) int {
	w := st.Stdout
	fmt.Fprint(w, plannedWorkflow(p))
	printSUT(w, p, backendOf(st) == contracts.BackendLocal)
	printSaturation(w, p)
	if notes := p.Settings.Notes; len(notes) > 0 {
		fmt.Fprintln(w, "\n#### Not applied")
		for _, n := range notes {
			fmt.Fprintf(w, "* warning: %s\n", n)
		}
	}
	e := printEstimate(w, p)
	reused := map[string]string{}
	for _, pe := range e.Phases {
		reused[pe.Phase] = pe.Reused
	}
	fmt.Fprintln(w, "\n#### Configurations")
	for _, c := range p.Configurations {
		fmt.Fprintf(w, "* %s (%s, experiment run %d)\n", c.Name, c.DBMS, c.ExperimentRun)
		for _, ph := range c.Phases {
			skip := ""
			if by := reused[ph.Name]; by != "" {
				skip = fmt.Sprintf(" (skipped when its volume holds the data %s loads)", by)
			}
			fmt.Fprintf(w, "  * %s: %s, %d shard(s), %d threads, target %d%s\n", ph.Name, ph.Kind, ph.Pods, ph.Threads, ph.Target, skip)
			for i, sh := range ph.Shards {
				switch {
				case sh.YCSB != nil:
					y := sh.YCSB
					fmt.Fprintf(w, "    * shard %d: threads %d, target %d, insertstart %d, insertcount %d, operations %d",
						i+1, y.Threads, y.Target, y.InsertStart, y.InsertCount, y.OperationCount)
					if y.MaxExecutionS > 0 {
						fmt.Fprintf(w, ", at most %ds", y.MaxExecutionS)
					}
					fmt.Fprintln(w)
				case sh.TPCC != nil && ph.Kind == contracts.KindLoad:
					fmt.Fprintf(w, "    * shard %d: loads %d warehouse(s) with %d terminal(s)\n", i+1, sh.TPCC.Warehouses, sh.TPCC.Terminals)
				case sh.TPCC != nil:
					c := sh.TPCC
					conn := ""
					if c.NewConnection {
						conn = ", a new connection per transaction (-xconn)"
					}
					fmt.Fprintf(w, "    * shard %d: terminals %d, target %d, warehouses %d, duration %ds%s\n",
						i+1, c.Terminals, c.Target, c.Warehouses, c.DurationS, conn)
				case sh.TSDB != nil:
					fmt.Fprintf(w, "    * %s\n", describeGenerator(i+1, ph.Kind, *sh.TSDB))
				}
			}
		}
	}
	// The scheduler refuses a plan larger than one NATS message (its
	// state holds the plan): said here too, not only at submission.
	if b, err := json.Marshal(p); err == nil && len(b) > natsMessageBytes {
		st.Errorf("this plan takes %d bytes, more than the about %d one NATS message carries (its default max_payload): the scheduler would refuse it; make the grid smaller (fewer values per list, clients or repetitions) or split it into several experiments", len(b), natsMessageBytes)
		return ExitFailed
	}
	return ExitOK
}

// natsMessageBytes is about what one NATS message carries with the
// server's default max_payload (1 MiB), less room for its headers.
const natsMessageBytes = 1<<20 - 4<<10

// describeGenerator is one line of a metrics generator (benchq tsdb): its
// series and the points per second they make.
func describeGenerator(shard int, kind string, t contracts.TSDBShard) string {
	series := t.Agents * t.Metrics
	what := fmt.Sprintf("generator %d (%s.agent1-%d.metric1-%d): %d agents × %d metrics = %d series over %s", shard, t.Prefix, t.Agents, t.Metrics, t.Agents, t.Metrics, series, t.Protocol)
	if kind == contracts.KindLoad {
		return what + ", one point of each"
	}
	rate := float64(series) * 1000 / float64(t.FlushIntervalMS)
	what += fmt.Sprintf(", a point of each every %d ms (%.0f points/s) for %ds", t.FlushIntervalMS, rate, t.DurationS)
	if t.JitterMS > 0 || t.SpawnIntervalMS > 0 {
		what += fmt.Sprintf("; agents start within %d ms jitter, %d ms apart", t.JitterMS, t.SpawnIntervalMS)
	}
	return what
}

// plannedWorkflow renders bexhoma's "Workflow — Planned" section: per
// configuration base, per repetition, the pods of each benchmarking phase.
func plannedWorkflow(p plan.Plan) string {
	var order []string
	runs := map[string][]string{}
	for _, c := range p.Configurations {
		if _, ok := runs[c.Base]; !ok {
			order = append(order, c.Base)
		}
		var pods []string
		for _, ph := range c.Phases[min(1, len(c.Phases)):] {
			pods = append(pods, fmt.Sprint(ph.Pods))
		}
		runs[c.Base] = append(runs[c.Base], "["+strings.Join(pods, ", ")+"]")
	}
	var b strings.Builder
	b.WriteString("### Workflow\n\n#### Planned\n")
	for _, base := range order {
		fmt.Fprintf(&b, "* DBMS %s - Pods [%s]\n", base, strings.Join(runs[base], ", "))
	}
	return b.String()
}

// printSUT: what each DBMS deploys and its shape (workers, pool), its
// resources, volume and nodes, monitoring and how many SUTs live at once.
func printSUT(w io.Writer, p plan.Plan, local bool) {
	r := p.Settings
	fmt.Fprintln(w, "\n#### SUT")
	seen := map[string]bool{}
	for _, c := range p.Configurations {
		if seen[c.Base] {
			continue
		}
		seen[c.Base] = true
		fmt.Fprintf(w, "* %s: %s\n", c.Base, sutShape(c))
	}
	if res := r.Resources; res != nil {
		var parts []string
		for _, q := range []struct{ name, v string }{{"CPU request", res.RequestCPU}, {"RAM request", res.RequestMemory}, {"RAM limit", res.LimitMemory}, {"CPU limit", res.LimitCPU}} {
			if q.v != "" {
				parts = append(parts, q.name+" "+q.v)
			}
		}
		fmt.Fprintf(w, "* resources: %s%s\n", strings.Join(parts, ", "), notApplied(local))
	} else {
		fmt.Fprintln(w, "* resources: the catalog's defaults (Kubernetes); none on the local backend")
	}
	if s := r.Storage; s != nil && s.Class != "" {
		v := "a persistent volume of storage class " + s.Class
		if s.Size != "" {
			v += ", " + s.Size
		}
		if s.Remove {
			v += ", emptied once (-rsr): loaded by the first SUT of each DBMS and use case, then reused without loading"
		} else {
			v += ": loaded once, then reused without loading by every SUT of the same DBMS, use case and scale factor"
		}
		if slices.ContainsFunc(p.Configurations, func(c plan.Configuration) bool {
			e, _ := catalog.Lookup(c.DBMS)
			return !plan.ReusesVolume(c.SUT, e)
		}) {
			v += "; a cluster of workers is estimated to load every time (on Kubernetes its workers' volumes are the experiment's own; the local backend reuses a Redis Cluster's)"
		}
		fmt.Fprintf(w, "* database: %s\n", v)
	} else {
		ephemeral := ""
		if s != nil && s.Size != "" {
			ephemeral = "; -rss " + s.Size + " without -rst asks for that much ephemeral storage (Kubernetes; the local backend has no such request)"
		}
		fmt.Fprintf(w, "* database: ephemeral (gone with the SUT), loaded by every configuration%s\n", ephemeral)
	}
	if n := r.Nodes; n != nil && n.SUT+n.Loading+n.Benchmarking != "" {
		fmt.Fprintf(w, "* nodes: SUT %s, loaders %s, benchmarkers %s%s\n", orAny(n.SUT), orAny(n.Loading), orAny(n.Benchmarking), notApplied(local))
	}
	mon := "off (only the results of the drivers)"
	if m := r.Monitoring; m != nil {
		var parts []string
		if m.SUT {
			parts = append(parts, "the SUT's system metrics (-m)")
		}
		if m.Cluster {
			parts = append(parts, "every component's system metrics (-mc)")
		}
		if m.Application {
			parts = append(parts, "the DBMS's application metrics (-ma)")
		}
		mon = strings.Join(parts, ", ")
	}
	fmt.Fprintf(w, "* monitoring: %s\n", mon)
	ms := "no limit (-ms 0)"
	if r.MaxSUTs != nil && *r.MaxSUTs > 0 {
		ms = fmt.Sprintf("%d across all running experiments (-ms)", *r.MaxSUTs)
	}
	if r.MaxSUTsExperiment > 0 {
		ms += fmt.Sprintf(", %d of this experiment (-mse)", r.MaxSUTsExperiment)
	}
	fmt.Fprintf(w, "* SUTs alive at once: %s\n", ms)
}

// sutShape says what a configuration deploys: the catalog DBMS, its
// workers and replicas, its pool.
func sutShape(c plan.Configuration) string {
	s := c.DBMS
	e, err := catalog.Lookup(c.DBMS)
	switch {
	case err == nil && e.Clustered() && (e.Workers == nil || c.SUT.Workers > 0): // Graphite is a cluster only with -nw
		masters, replicas := e.Masters(c.SUT.Workers), c.SUT.WorkerReplicas
		servers := masters * (1 + replicas)
		if e.MasterCopy() && replicas > 0 {
			s += fmt.Sprintf(", one master and %d replica(s) of it (master-copy replication)", replicas)
		} else {
			s += ", a cluster of " + count(masters, "worker")
			if replicas > 0 {
				s += fmt.Sprintf(" with %d replica(s) each", replicas)
			}
		}
		if k := e.Kubernetes; k != nil && k.Cluster != nil && k.Cluster.Master != nil {
			s += " behind a master"
			servers++
		}
		s += fmt.Sprintf(": %s (pods)", count(servers, "server"))
	case c.SUT.Pool != nil:
		pl := c.SUT.Pool
		s += fmt.Sprintf(" behind %d pool pod(s) with %d inbound and %d outbound connections in total", pl.Pods, pl.Inbound, pl.Outbound)
	default:
		s += ", one process (pod)"
	}
	return s
}

func orAny(node string) string {
	if node == "" {
		return "any"
	}
	return node
}

// printSaturation: the search's settings and its first steps, while they
// pass (the scheduler adds each step when the last one ended).
func printSaturation(w io.Writer, p plan.Plan) {
	s := p.Settings.Saturation
	if s == nil || len(p.Configurations) == 0 || len(p.Configurations[0].Phases) < 2 {
		return
	}
	first := p.Configurations[0].Phases[1]
	fmt.Fprintln(w, "\n#### Saturation search (-xsat, docs/saturation.md)")
	unit, shards, threads := "ops/s", "shard(s)", "threads"
	pass := fmt.Sprintf("its goodput reaches %g %% of the offered load", s.MinAchieved)
	if p.Settings.Benchmark == plan.BenchmarkTSDB {
		unit, shards, threads = "points/s", "generator(s)", "agents"
		pass = fmt.Sprintf("its generators send %g %% of the offered load and the database's own count says it stored %g %% of what they sent (its backlog did not grow); the load moves by whole agents (%d points/s each)",
			s.MinAchieved, saturation.IngestShare, s.Quantum)
	}
	fmt.Fprintf(w, "* first step: %d %s offered on %d %s, %d %s, %d s a step (the first %d s not judged)\n",
		first.Target, unit, first.Pods, shards, first.Threads, threads, s.StepS, s.WarmupS)
	if s.MaxP99MS > 0 {
		pass += fmt.Sprintf(" and its p99 is at most %g ms", s.MaxP99MS)
	}
	fmt.Fprintf(w, "* a step passes when %s\n", pass)
	steps := []string{}
	for i, load := 0, float64(first.Target); i < min(5, s.MaxSteps); i, load = i+1, load*s.StepFactor {
		steps = append(steps, fmt.Sprint(int64(math.Round(load))))
	}
	fmt.Fprintf(w, "* while steps pass, the offered load × %g: %s %s, …\n", s.StepFactor, strings.Join(steps, ", "), unit)
	fmt.Fprintf(w, "* after the first failing step: bisect until it is at most %g %% above the last passing load\n", s.Precision)
	fmt.Fprintf(w, "* at most %d steps, up to %d shards when the drivers (not the SUT) are the limit\n", s.MaxSteps, s.MaxShards)
	if s.HoldS > 0 {
		fmt.Fprintf(w, "* then hold the knee %d s; stable when the per-second coefficient of variation is at most %g %%\n", s.HoldS, s.MaxCV)
	} else {
		fmt.Fprintln(w, "* no hold of the knee (-xsh 0)")
	}
}

// printEstimate: each configuration's expected length and the total.
func printEstimate(w io.Writer, p plan.Plan) plan.Estimate {
	e := plan.EstimateOf(p, plan.MeasuredCosts)
	fmt.Fprintln(w, "\n#### Estimated duration")
	byPhase := map[string]plan.PhaseEstimate{}
	for _, pe := range e.Phases {
		byPhase[pe.Phase] = pe
	}
	for _, c := range p.Configurations {
		var parts []string
		for _, ph := range c.Phases {
			pe := byPhase[ph.Name]
			if pe.Reused != "" {
				parts = append(parts, fmt.Sprintf("%s skipped (its volume loaded by %s)", phaseLabel(c, ph), pe.Reused))
				continue
			}
			if pe.Bounded {
				parts = append(parts, fmt.Sprintf("%s %s", phaseLabel(c, ph), seconds(pe.Seconds)))
			} else {
				parts = append(parts, fmt.Sprintf("%s ? (unthrottled)", phaseLabel(c, ph)))
			}
		}
		fmt.Fprintf(w, "* %s: %s, with its SUT's start and teardown %s\n", c.Name, strings.Join(parts, ", "), seconds(e.Configurations[c.Name]))
	}
	switch {
	case !e.Bounded:
		fmt.Fprintf(w, "* total: at least %s; an unthrottled phase (-xtb 0) runs as fast as the SUT goes\n", seconds(e.TotalS))
	case e.Saturation:
		fmt.Fprintf(w, "* total: at most %s, if the search takes all its steps\n", seconds(e.TotalS))
	default:
		fmt.Fprintf(w, "* total: %s\n", seconds(e.TotalS))
	}
	fmt.Fprintln(w, "* (operations at their target, or durations, plus start-up costs measured on the embedded stack; docs/events.md, estimated_s)")
	return e
}

// phaseLabel: the phase's suffix in its name (bexhoma's client number, 0
// loads) and what it does, "0 (loading)", "1 (benchmarking)".
func phaseLabel(c plan.Configuration, ph plan.Phase) string {
	what := "benchmarking"
	if ph.Kind == contracts.KindLoad {
		what = "loading"
	}
	return fmt.Sprintf("%s (%s)", strings.TrimPrefix(ph.Name, c.Name+"-"), what)
}

// seconds prints a duration as bexhoma's summaries do: whole seconds, with
// minutes beyond two of them.
func seconds(s float64) string {
	if s < 10 {
		return fmt.Sprintf("%.1f s", s)
	}
	n := int64(math.Round(s))
	if n < 120 {
		return fmt.Sprintf("%d s", n)
	}
	return fmt.Sprintf("%d s (%dm%02ds)", n, n/60, n%60)
}

// notApplied marks a line of settings the local backend ignores (nodes,
// resources: plan.Notes says why, under Not applied).
func notApplied(local bool) string {
	if local {
		return " (not applied here: see Not applied)"
	}
	return ""
}

// count is n things, in the plural unless n is 1 ("1 worker", "3 workers").
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
