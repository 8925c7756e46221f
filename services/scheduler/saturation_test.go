package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/ycsb"
)

// satFinal is the final of a step's shard on a SUT that sustains capacity
// ops/s over all shards: the shard's share of min(offered, capacity),
// second by second for the step.
func satFinal(j *contracts.ShardJob, capacity int) Event {
	rate := float64(min(j.YCSB.Target*j.Shards, capacity)) / float64(j.Shards)
	secs := j.YCSB.MaxExecutionS
	first, last := t0, t0.Add(time.Duration(secs)*time.Second)
	f := &contracts.Final{Phase: j.Phase, Shard: j.Shard, Attempt: j.Attempt, Status: contracts.StatusOK, Threads: j.YCSB.Threads,
		Target: j.YCSB.Target, StartedAt: first, EndedAt: last, FirstOpAt: &first, LastOpAt: &last}
	for s := 1; s <= secs; s++ {
		f.Progress = append(f.Progress, contracts.Progress{At: t0.Add(time.Duration(s) * time.Second), Operations: int64(rate * float64(s))})
	}
	f.Operations = []contracts.OpResult{{Name: "READ", Count: int64(rate * float64(secs))}}
	return Event{Msg: f}
}

// A saturation experiment: the scheduler adds a step after each one, each
// judged in its phase.done, until the knee is bracketed within the
// precision; then the hold, then teardown.
func TestSaturationSearchStepsToTheKnee(t *testing.T) {
	p := defaultPlan(t, func(r *contracts.Request) {
		tb := 1000
		r.TargetBase = &tb
		r.BenchmarkingPods = []int{2}
		r.Saturation = &contracts.Saturation{StepS: 10, HoldS: 30}
	})
	if n := len(p.Configurations[0].Phases); n != 2 || p.Configurations[0].Phases[1].Target != 1000 || p.Settings.StatusInterval != 1 {
		t.Fatalf("planned %d phases, first step %+v, -xli %d", n, p.Configurations[0].Phases[1], p.Settings.StatusInterval)
	}
	s, _, err := Start(p, []byte(`{}`), t0, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := runPhase(t, s, jobs(ready(s, 0)), contracts.StatusOK)
	const capacity = 3700
	var steps []*contracts.SaturationStep
	for len(steps) < 30 {
		js := jobs(out)
		if len(js) == 0 {
			break
		}
		// The state survives being stored between events.
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		s = &State{}
		if err := json.Unmarshal(b, s); err != nil {
			t.Fatal(err)
		}
		for i, j := range js {
			out = s.Step(Event{Msg: &contracts.BarrierReady{Phase: j.Phase, Shard: j.Shard, Attempt: j.Attempt}}, t0)
			if i == len(js)-1 && len(out) != 2 {
				t.Fatalf("step %s: no GO", j.Phase)
			}
		}
		for _, j := range js {
			out = s.Step(satFinal(j, capacity), t0)
		}
		pe, ok := out[0].Msg.(*contracts.PhaseEvent)
		if !ok || pe.Status != contracts.PhaseDone || pe.Saturation == nil {
			t.Fatalf("after %s: %v", js[0].Phase, subjects(out))
		}
		steps = append(steps, pe.Saturation)
		t.Logf("%s: %d ops/s on %d shards: %s (%s) → %s", pe.Phase, pe.Saturation.Offered, pe.Saturation.Shards, pe.Saturation.Verdict, pe.Saturation.Why, pe.Saturation.Next)
	}
	last := steps[len(steps)-1]
	if last.Role != contracts.RoleHold || last.Verdict != contracts.VerdictStable || last.Knee == nil {
		t.Fatalf("last step %+v, want a stable hold with the knee", last)
	}
	// The knee is the goodput of the highest passing step: what the SUT
	// sustained, within the precision of its capacity.
	if k := last.Knee; k.Goodput > capacity || k.Goodput < capacity/1.05 || k.FirstBad <= capacity || k.Note != "" {
		t.Errorf("knee %+v, want a goodput within 5 %% under %d", k, capacity)
	}
	if got := subjects(out); got[len(got)-1] != "benchq.jobs.teardown" {
		t.Errorf("after the hold: %v, want teardown", got)
	}
	if n := len(s.Plan.Configurations[0].Phases); n != len(steps)+1 {
		t.Errorf("%d phases in the plan, want loading + %d steps", n, len(steps))
	}
}

// A step whose drivers were the limit would be retried with twice the
// shards; behind PgBouncer, more shards than the pool takes clients end
// the search instead (PgBouncer would turn their connections away), with
// the knee so far and what to raise.
func TestSaturationSearchStopsAtThePoolsClients(t *testing.T) {
	p := defaultPlan(t, func(r *contracts.Request) {
		tb := 1000
		r.TargetBase = &tb
		r.DBMS = []string{"PgBouncer"}
		r.PoolInbound = []int{8}
		r.BenchmarkingPods, r.BenchmarkingThreads = []int{2}, []int{8}
		r.Saturation = &contracts.Saturation{StepS: 10}
	})
	s, _, err := Start(p, []byte(`{}`), t0, 0)
	if err != nil {
		t.Fatal(err)
	}
	js := jobs(runPhase(t, s, jobs(ready(s, 0)), contracts.StatusOK))
	if len(js) != 2 {
		t.Fatalf("first step: %d shard jobs, want 2", len(js))
	}
	var out []Out
	for _, j := range js {
		out = s.Step(Event{Msg: &contracts.BarrierReady{Phase: j.Phase, Shard: j.Shard, Attempt: j.Attempt}}, t0)
	}
	// 250 ops/s a shard of the 500 offered, each operation 15 ms: the 8
	// threads were busy 94 % of the time, so the drivers were the limit.
	for _, j := range js {
		ev := satFinal(j, 500)
		f := ev.Msg.(*contracts.Final)
		h := hdrhistogram.New(1, 60_000_000, 3)
		_ = h.RecordValues(15_000, f.Operations[0].Count)
		enc, err := ycsb.EncodeHistogram(h)
		if err != nil {
			t.Fatal(err)
		}
		f.Operations[0].Histogram = enc
		out = s.Step(ev, t0)
	}
	pe, ok := out[0].Msg.(*contracts.PhaseEvent)
	if !ok || pe.Saturation == nil {
		t.Fatalf("after the first step: %v", subjects(out))
	}
	st := pe.Saturation
	t.Logf("%s: %s (%s) → %s; knee %+v", pe.Phase, st.Verdict, st.Why, st.Next, st.Knee)
	if st.Verdict != contracts.VerdictDriverLimited {
		t.Fatalf("verdict %s (%s), want driver_limited", st.Verdict, st.Why)
	}
	if st.Next != "the search is over" || st.Knee == nil || !strings.Contains(st.Knee.Note, "4 shards") ||
		!strings.Contains(st.Knee.Note, "16 client connections") || !strings.Contains(st.Knee.Note, "raise -xnpi to at least 16") {
		t.Errorf("next %q, knee %+v: want the search over, naming the 4 shards' 16 connections and -xnpi", st.Next, st.Knee)
	}
	if got := subjects(out); got[len(got)-1] != "benchq.jobs.teardown" {
		t.Errorf("after the step: %v, want teardown", got)
	}
}
