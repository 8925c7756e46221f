package main

import (
	"fmt"
	"strings"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/plan"
)

// slotWait says why experiment x has deployed nothing yet, when the reason
// is -ms: the SUTs other experiments keep alive fill every slot it allows
// (an experiment started with `start` keeps its SUT until benchq stop, and
// the default -ms is 1). "" when x has a SUT, has no configuration left
// waiting, or a slot is free. all are the running experiments.
func slotWait(x contracts.ExperimentState, all []contracts.ExperimentState) string {
	limit := plan.DefaultMaxSUTs // a plan stored without it: the scheduler's default too
	if m := x.Plan.Settings.MaxSUTs; m != nil {
		limit = *m
	}
	if x.Alive() > 0 || limit == 0 { // -ms 0: no limit
		return ""
	}
	pending := false
	for _, c := range x.Configs {
		pending = pending || c.Status == contracts.ConfigPending
	}
	if !pending {
		return ""
	}
	var holders []string
	for _, o := range all {
		if o.Code == x.Code {
			continue
		}
		for i, c := range o.Configs {
			if !c.HoldsSUT() {
				continue
			}
			h := fmt.Sprintf("%s of experiment %s (%s)", o.Plan.Configurations[i].Name, o.Code, c.Status)
			if c.Status == contracts.ConfigRunning && c.Phase >= len(o.Plan.Configurations[i].Phases) {
				h = fmt.Sprintf("%s of experiment %s, kept until benchq stop -e %s", o.Plan.Configurations[i].Name, o.Code, o.Code)
			}
			holders = append(holders, h)
		}
	}
	if len(holders) < limit {
		return ""
	}
	return fmt.Sprintf("waiting for a SUT slot: -ms %d allows %s alive at once, and %s: %s (a larger -ms runs them side by side)",
		limit, count(limit, "SUT"), isAre(len(holders)), strings.Join(holders, "; "))
}

// isAre is "1 is" or "n are".
func isAre(n int) string {
	if n == 1 {
		return "1 is"
	}
	return fmt.Sprintf("%d are", n)
}
