package main

import (
	"fmt"
	"strings"

	"github.com/benchq/benchq/internal/plan"
)

// dryRun validates and expands the request exactly as the scheduler will
// (plan.FromRequest) and prints the planned workflow and configurations.
func dryRun(st *State, code string, request []byte) int {
	_, p, errs := plan.FromRequest(request, code)
	if len(errs) > 0 {
		st.Errorf("the request would be rejected: %s", plan.Reason(errs))
		return ExitFailed
	}
	fmt.Fprint(st.Stdout, plannedWorkflow(p))
	fmt.Fprintln(st.Stdout, "\n#### Configurations")
	for _, c := range p.Configurations {
		fmt.Fprintf(st.Stdout, "* %s (%s, experiment run %d)\n", c.Name, c.DBMS, c.ExperimentRun)
		for _, ph := range c.Phases {
			fmt.Fprintf(st.Stdout, "  * %s: %s, %d shard(s), %d threads, target %d\n", ph.Name, ph.Kind, ph.Pods, ph.Threads, ph.Target)
			for i, sh := range ph.Shards {
				switch {
				case sh.YCSB != nil:
					y := sh.YCSB
					fmt.Fprintf(st.Stdout, "    * shard %d: threads %d, target %d, insertstart %d, insertcount %d, operations %d\n",
						i+1, y.Threads, y.Target, y.InsertStart, y.InsertCount, y.OperationCount)
				case sh.TPCC != nil:
					c := sh.TPCC
					fmt.Fprintf(st.Stdout, "    * shard %d: terminals %d, target %d, warehouses %d, duration %ds\n",
						i+1, c.Terminals, c.Target, c.Warehouses, c.DurationS)
				}
			}
		}
	}
	return ExitOK
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
		for _, ph := range c.Phases[1:] {
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
