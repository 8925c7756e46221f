package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/numfmt"
	"github.com/benchq/benchq/internal/plan"
)

// progress turns the streamed intervals of the running phases into one line
// per phase: operations (TPC-C: transactions; metrics: points sent) done,
// of planned where planned by count, current rate, elapsed, ETA.
// Pure: the follower feeds it planned events and intervals.
type progress struct {
	planned map[string]phasePlan // phase name → what it is to do
	phases  map[string]*phaseProgress
}

type phasePlan struct {
	ops       int64 // YCSB: operations (loading: rows) over all shards
	durationS int   // Benchbase, metrics: the benchmarking duration
	points    bool  // metrics generators: their operations are points sent
}

type phaseProgress struct {
	attempt int
	shards  map[int]contracts.Interval // latest interval per shard
}

func newProgress() *progress {
	return &progress{planned: map[string]phasePlan{}, phases: map[string]*phaseProgress{}}
}

// plan reads the phases' targets from the plan of a planned event.
func (p *progress) plan(pl plan.Plan) {
	for _, c := range pl.Configurations {
		for _, ph := range c.Phases {
			var pp phasePlan
			for _, sh := range ph.Shards {
				switch {
				case sh.YCSB != nil:
					pp.ops += sh.YCSB.OperationCount
				case sh.TPCC != nil:
					pp.durationS = max(pp.durationS, sh.TPCC.DurationS)
				case sh.TSDB != nil:
					pp.points = true
					pp.durationS = max(pp.durationS, sh.TSDB.DurationS)
				}
			}
			p.planned[ph.Name] = pp
		}
	}
}

// interval records a shard's status line; a newer attempt replaces the
// older one's shards.
func (p *progress) interval(iv contracts.Interval) {
	pp := p.phases[iv.Phase]
	if pp == nil || iv.Attempt > pp.attempt {
		pp = &phaseProgress{attempt: iv.Attempt, shards: map[int]contracts.Interval{}}
		p.phases[iv.Phase] = pp
	}
	if iv.Attempt < pp.attempt {
		return
	}
	if old, ok := pp.shards[iv.Shard]; !ok || iv.ElapsedS >= old.ElapsedS {
		pp.shards[iv.Shard] = iv
	}
}

// end forgets a phase that ended.
func (p *progress) end(phase string) { delete(p.phases, phase) }

// line describes one phase's progress; "" if nothing was streamed yet.
func (p *progress) line(phase string) string {
	pp := p.phases[phase]
	if pp == nil || len(pp.shards) == 0 {
		return ""
	}
	var ops, elapsed int64
	var rate float64
	for _, iv := range pp.shards {
		ops += iv.Operations
		rate += iv.OpsPerSec
		elapsed = max(elapsed, iv.ElapsedS)
	}
	if elapsed == 0 {
		// The driver's status line at its start: a few operations and no
		// rate yet ("6 of 100,000 operations (0%), 0 ops/s" says nothing).
		return ""
	}
	plan := p.planned[phase]
	var b strings.Builder
	fmt.Fprintf(&b, "  %s: ", phase)
	switch {
	case plan.ops > 0:
		fmt.Fprintf(&b, "%s of %s operations (%.0f%%), %s ops/s, elapsed %ds", numfmt.Thousands(ops), numfmt.Thousands(plan.ops), 100*float64(ops)/float64(plan.ops), numfmt.Thousands(int64(rate)), elapsed)
		if rate > 0 && ops < plan.ops {
			fmt.Fprintf(&b, ", ETA %s", (time.Duration(float64(plan.ops-ops)/rate) * time.Second).Round(time.Second))
		}
	case plan.durationS > 0:
		what, per := "transactions", "tx/s"
		if plan.points {
			what, per = "points sent", "points/s"
		}
		fmt.Fprintf(&b, "%s %s, %s %s, ", numfmt.Thousands(ops), what, numfmt.Thousands(int64(rate)), per)
		if left := int64(plan.durationS) - elapsed; left >= 0 {
			fmt.Fprintf(&b, "elapsed %ds of %ds", elapsed, plan.durationS)
			if left > 0 {
				fmt.Fprintf(&b, ", ETA %ds", left)
			}
		} else { // its last status line, as the drivers stop
			fmt.Fprintf(&b, "elapsed %ds (%ds planned), ending", elapsed, plan.durationS)
		}
	case plan.points:
		fmt.Fprintf(&b, "%s points sent, %s points/s, elapsed %ds", numfmt.Thousands(ops), numfmt.Thousands(int64(rate)), elapsed)
	default:
		fmt.Fprintf(&b, "%s operations, %s ops/s, elapsed %ds", numfmt.Thousands(ops), numfmt.Thousands(int64(rate)), elapsed)
	}
	if pp.attempt > 1 {
		fmt.Fprintf(&b, " (attempt %d)", pp.attempt)
	}
	return b.String()
}
