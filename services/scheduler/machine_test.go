package main

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/plan"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func intp(n int) *int { return &n }

func defaultPlan(t testing.TB, mutate func(*contracts.Request)) plan.Plan {
	t.Helper()
	r := contracts.Request{SchemaVersion: 1, DBMS: []string{"Redis"}, SF: 0.1, Operations: 0.2,
		LoadingPods: []int{2}, LoadingThreads: []int{8}, BenchmarkingPods: []int{1}, BenchmarkingThreads: []int{8}}
	if mutate != nil {
		mutate(&r)
	}
	p, err := plan.Expand("17", r)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func subjects(out []Out) []string {
	var s []string
	for _, o := range out {
		s = append(s, o.Subject)
	}
	return s
}

func jobs(out []Out) []*contracts.ShardJob {
	var j []*contracts.ShardJob
	for _, o := range out {
		if sj, ok := o.Msg.(*contracts.ShardJob); ok {
			j = append(j, sj)
		}
	}
	return j
}

// byRun keys heartbeats given by agent name by their run, as the scheduler
// reads them (bus.AgentRuns): a heartbeat without an instance is its agent's
// run "run-<name>".
func byRun(beats map[string]contracts.Heartbeat) map[string]contracts.Heartbeat {
	runs := map[string]contracts.Heartbeat{}
	for name, hb := range beats {
		hb.Name = name
		if hb.Instance == "" {
			hb.Instance = "run-" + name
		}
		runs[hb.Instance] = hb
	}
	return runs
}

func final(j *contracts.ShardJob, status string) Event {
	return Event{Msg: &contracts.Final{Phase: j.Phase, Shard: j.Shard, Attempt: j.Attempt, Status: status,
		StartedAt: t0.Add(time.Second), EndedAt: t0.Add(time.Duration(2+j.Shard) * time.Second)}}
}

// runPhase answers READY for every job, expects GO + started, then finals.
func runPhase(t *testing.T, s *State, js []*contracts.ShardJob, status string) []Out {
	t.Helper()
	var out []Out
	for i, j := range js {
		out = s.Step(Event{Msg: &contracts.BarrierReady{Phase: j.Phase, Shard: j.Shard, Attempt: j.Attempt}}, t0)
		if i < len(js)-1 && len(out) != 0 {
			t.Fatalf("output before every shard is READY: %v", subjects(out))
		}
	}
	if got := subjects(out); len(got) != 2 || got[0] != "benchq.exp.17.barrier.go" || got[1] != "benchq.exp.17.phase.started" {
		t.Fatalf("after all READY: %v", got)
	}
	if goAt := out[0].Msg.(*contracts.BarrierGo).StartAt; !goAt.Equal(t0.Add(GoLead)) {
		t.Errorf("GO at %v", goAt)
	}
	for _, j := range js {
		out = s.Step(final(j, status), t0)
	}
	return out
}

func TestDefaultExperimentRunsThrough(t *testing.T) {
	s, out, err := Start(defaultPlan(t, nil), []byte(`{}`), t0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := subjects(out); strings.Join(got, " ") != "benchq.exp.17.planned benchq.jobs.deploy" {
		t.Fatalf("start: %v", got)
	}
	out = s.Step(Event{Msg: &contracts.SUTReady{Configuration: "Redis-8-2-16384-1", Endpoint: contracts.Endpoint{Host: "127.0.0.1", Port: 7000}}}, t0)
	load := jobs(out)
	if len(load) != 2 || load[1].YCSB.InsertStart != 50000 || load[1].Endpoint.Port != 7000 || load[0].ID == load[1].ID {
		t.Fatalf("load jobs: %+v", load)
	}
	// A duplicate sut.ready (redelivery) changes nothing.
	if again := s.Step(Event{Msg: &contracts.SUTReady{Configuration: "Redis-8-2-16384-1"}}, t0); len(again) != 0 {
		t.Fatalf("duplicate sut.ready: %v", subjects(again))
	}
	out = runPhase(t, s, load, contracts.StatusOK)
	if got := subjects(out); got[0] != "benchq.exp.17.phase.done" || got[1] != "benchq.jobs.shard" {
		t.Fatalf("after load: %v", got)
	}
	pe := out[0].Msg.(*contracts.PhaseEvent)
	if !pe.StartedAt.Equal(t0.Add(time.Second)) || !pe.EndedAt.Equal(t0.Add(4*time.Second)) {
		t.Errorf("phase window %v – %v", pe.StartedAt, pe.EndedAt)
	}
	out = runPhase(t, s, jobs(out), contracts.StatusOK)
	if got := subjects(out); strings.Join(got, " ") != "benchq.exp.17.phase.done benchq.jobs.teardown" {
		t.Fatalf("after run: %v", got)
	}
	out = s.Step(Event{Msg: &contracts.SUTRemoved{Configuration: "Redis-8-2-16384-1"}}, t0)
	if got := subjects(out); len(got) != 1 || got[0] != "benchq.exp.17.done" || s.Status != "done" {
		t.Fatalf("end: %v (%s)", got, s.Status)
	}
}

func TestShardNeverReadyFailsPhaseNamingIt(t *testing.T) {
	s, _, _ := Start(defaultPlan(t, nil), []byte(`{}`), t0, 0)
	out := s.Step(Event{Msg: &contracts.SUTReady{Configuration: "Redis-8-2-16384-1", Endpoint: contracts.Endpoint{Host: "h", Port: 1}}}, t0)
	j := jobs(out)
	s.Step(Event{Msg: &contracts.BarrierReady{Phase: j[0].Phase, Shard: 1, Attempt: 1}}, t0)
	if out := s.Step(Event{Tick: true}, t0.Add(10*time.Second)); len(out) != 0 {
		t.Fatalf("tick before the deadline: %v", subjects(out))
	}
	out = s.Step(Event{Tick: true}, t0.Add(time.Duration(plan.DefaultTimeouts.BarrierS+1)*time.Second))
	if got := subjects(out); len(got) != 2 || got[0] != "benchq.exp.17.phase.failed" || got[1] != "benchq.jobs.teardown" {
		t.Fatalf("timeout: %v", got)
	}
	if r := out[0].Msg.(*contracts.PhaseEvent).Reason; !strings.Contains(r, "shards 2 not READY") {
		t.Errorf("reason %q", r)
	}
	out = s.Step(Event{Msg: &contracts.SUTRemoved{Configuration: "Redis-8-2-16384-1"}}, t0)
	if s.Status != "failed" || out[0].Subject != "benchq.exp.17.failed" {
		t.Errorf("experiment %s", s.Status)
	}
}

func TestSUTFailureEndsExperiment(t *testing.T) {
	s, _, _ := Start(defaultPlan(t, nil), []byte(`{}`), t0, 0)
	out := s.Step(Event{Msg: &contracts.SUTFailed{Configuration: "Redis-8-2-16384-1", Reason: "no PING"}}, t0)
	if got := subjects(out); len(got) != 1 || got[0] != "benchq.jobs.teardown" {
		t.Fatalf("%v", got)
	}
	s.Step(Event{Msg: &contracts.SUTRemoved{Configuration: "Redis-8-2-16384-1"}}, t0)
	if s.Status != "failed" || !strings.Contains(strings.Join(s.Failures, ""), "no PING") {
		t.Errorf("%s %v", s.Status, s.Failures)
	}
}

// A SUT that dies while its phase runs fails the phase at once, naming when
// (seconds into it); the configuration's later phases are skipped and the next
// configuration is deployed. A death reported after the phase is gone, or
// a repeat, changes nothing.
func TestSUTDeathFailsTheRunningPhase(t *testing.T) {
	p := defaultPlan(t, func(r *contracts.Request) {
		r.BenchmarkingPods = []int{1, 1}
		r.LoadingFactors = []float64{1, 2}
		r.MaxSUTs = intp(1)
	})
	s, _, _ := Start(p, []byte(`{}`), t0, 0)
	first := s.Plan.Configurations[0].Name
	out := runPhase(t, s, jobs(ready(s, 0)), contracts.StatusOK) // loading done, run1 preparing
	for _, j := range jobs(out) {
		s.Step(Event{Msg: &contracts.BarrierReady{Phase: j.Phase, Shard: j.Shard, Attempt: j.Attempt}}, t0)
	}
	died := &contracts.SUTFailed{Envelope: contracts.Envelope{TS: t0.Add(GoLead + 3100*time.Millisecond)},
		Configuration: first, DBMS: "Redis", Reason: "Redis process 42 killed by signal 9 (killed)", Running: true}
	out = s.Step(Event{Msg: died}, t0.Add(4*time.Second))
	if got := strings.Join(subjects(out), " "); got != "benchq.exp.17.phase.failed benchq.jobs.teardown" {
		t.Fatalf("after the SUT died: %s", got)
	}
	pe := out[0].Msg.(*contracts.PhaseEvent)
	want := "SUT " + first + " died (Redis process 42 killed by signal 9 (killed)) 3.1 s into " + first + "-1"
	if pe.Reason != want || pe.Kind != contracts.KindRun {
		t.Errorf("phase.failed reason %q, want %q", pe.Reason, want)
	}
	if f := strings.Join(s.Failures, "; "); !strings.Contains(f, want) || !strings.Contains(f, "1 later phase(s) skipped") {
		t.Errorf("failures %q", f)
	}
	if again := s.Step(Event{Msg: died}, t0.Add(5*time.Second)); len(again) != 0 {
		t.Errorf("a repeated death: %v", subjects(again))
	}
	// Torn down: the next configuration is deployed (-ms 1).
	out = s.Step(Event{Msg: &contracts.SUTRemoved{Configuration: first}}, t0.Add(6*time.Second))
	if got := strings.Join(subjects(out), " "); got != "benchq.jobs.deploy" {
		t.Fatalf("after teardown: %s", got)
	}
}

// -ms bounds the SUTs alive at once, across experiments (busy: another
// experiment's SUTs); -ms 0 is no limit (bexhoma's); -mse bounds this
// experiment's own.
func TestMaxSUTs(t *testing.T) {
	for _, c := range []struct {
		name     string
		ms       *int
		mse      int
		busy     int
		deployed int
	}{
		{"-ms 2", intp(2), 0, 0, 2},
		{"-ms 2, one SUT elsewhere", intp(2), 0, 1, 1},
		{"-ms 0: no limit", intp(0), 0, 7, 5},
		{"-ms 0 -mse 3", intp(0), 3, 7, 3},
		{"-ms 4 -mse 3, two SUTs elsewhere", intp(4), 3, 2, 2},
		{"default: -ms 1", nil, 0, 0, 1},
	} {
		p := defaultPlan(t, func(r *contracts.Request) { r.Repetitions = 5; r.MaxSUTs = c.ms; r.MaxSUTsExperiment = c.mse })
		_, out, _ := Start(p, []byte(`{}`), t0, c.busy)
		if n := count(out, contracts.SubjDeploy); n != c.deployed {
			t.Errorf("%s: %d deploys at start, want %d", c.name, n, c.deployed)
		}
	}
}

// Events answering outputs whose state is not stored yet are "early" (and
// redelivered); events about the past are not (and are dropped as stale).
func TestEarlyEvents(t *testing.T) {
	p := defaultPlan(t, nil)
	s, _, _ := Start(p, []byte(`{}`), t0, 0)
	before := *s // as stored before sut.ready's step
	before.Configs = append([]ConfigState(nil), s.Configs...)
	s.Step(Event{Msg: &contracts.SUTReady{Configuration: "Redis-8-2-16384-1", Endpoint: contracts.Endpoint{Host: "h", Port: 1}}}, t0)
	load, run := p.Configurations[0].Phases[0].Name, p.Configurations[0].Phases[1].Name
	cases := []struct {
		name  string
		state *State
		ev    Event
		early bool
	}{
		{"READY for the phase the unsaved step started", &before, Event{Msg: &contracts.BarrierReady{Phase: load, Shard: 1, Attempt: 1}}, true},
		{"READY for the current phase", s, Event{Msg: &contracts.BarrierReady{Phase: load, Shard: 1, Attempt: 1}}, false},
		{"READY for a later phase", s, Event{Msg: &contracts.BarrierReady{Phase: run, Shard: 1, Attempt: 1}}, true},
		{"READY for a later attempt", s, Event{Msg: &contracts.BarrierReady{Phase: load, Shard: 1, Attempt: 2}}, true},
		{"final of an unknown phase", s, Event{Msg: &contracts.Final{Phase: "nope", Shard: 1, Attempt: 1}}, false},
		{"sut.removed of a running SUT", s, Event{Msg: &contracts.SUTRemoved{Configuration: "Redis-8-2-16384-1"}}, true},
	}
	for _, c := range cases {
		if got := c.state.Early(c.ev); got != c.early {
			t.Errorf("%s: early = %v, want %v", c.name, got, c.early)
		}
	}
}

// ready answers sut.ready for configuration i of s's plan.
func ready(s *State, i int) []Out {
	return s.Step(Event{Msg: &contracts.SUTReady{Configuration: s.Plan.Configurations[i].Name, Endpoint: contracts.Endpoint{Host: "h", Port: 1}}}, t0)
}

func count(out []Out, subject string) int {
	n := 0
	for _, o := range out {
		if o.Subject == subject {
			n++
		}
	}
	return n
}

// -ms counts the SUTs of other experiments too (Busy): nothing is deployed
// while they fill the bound, and a tick deploys once a slot is free.
func TestMaxSUTsAcrossExperiments(t *testing.T) {
	p := defaultPlan(t, func(r *contracts.Request) { r.MaxSUTs = intp(1) })
	s, out, _ := Start(p, []byte(`{}`), t0, 1)
	if n := count(out, contracts.SubjDeploy); n != 0 {
		t.Fatalf("%d deploys while another experiment holds the only slot", n)
	}
	s.Busy = 1
	if out := s.Step(Event{Tick: true}, t0.Add(time.Second)); count(out, contracts.SubjDeploy) != 0 {
		t.Fatalf("deployed while busy")
	}
	s.Busy = 0
	out = s.Step(Event{Tick: true}, t0.Add(2*time.Second))
	if count(out, contracts.SubjDeploy) != 1 || s.Alive() != 1 {
		t.Fatalf("after the slot freed: %v", subjects(out))
	}
	d := out[0].Msg.(*contracts.Deploy)
	if d.SUT == nil || d.SUT.UseCase != "ycsb-0.1" {
		t.Errorf("deploy carries no SUT spec: %+v", d.SUT)
	}
}

// benchq stop: the running phase fails (its shards stop), the SUT is torn
// down, pending configurations are dropped, the experiment ends cancelled.
func TestStopCancels(t *testing.T) {
	p := defaultPlan(t, func(r *contracts.Request) { r.Repetitions = 2 })
	s, _, _ := Start(p, []byte(`{}`), t0, 0)
	load := jobs(ready(s, 0))
	s.Step(Event{Msg: &contracts.BarrierReady{Phase: load[0].Phase, Shard: 1, Attempt: 1, Agent: "a1"}}, t0)
	out := s.Step(Event{Msg: &contracts.Stop{Reason: "wrong -xtb"}}, t0)
	if got := strings.Join(subjects(out), " "); got != "benchq.exp.17.phase.failed benchq.jobs.teardown" {
		t.Fatalf("stop: %s", got)
	}
	if ev := out[0].Msg.(*contracts.PhaseEvent); ev.Reason != "cancelled by benchq stop: wrong -xtb" || ev.StartedAt != nil || ev.EndedAt != nil {
		t.Errorf("reason %q, window %v … %v (none before the GO)", ev.Reason, ev.StartedAt, ev.EndedAt)
	}
	if again := s.Step(Event{Msg: &contracts.Stop{}}, t0); len(again) != 0 {
		t.Errorf("second stop: %v", subjects(again))
	}
	// A late final of the aborted phase changes nothing.
	if late := s.Step(final(load[1], contracts.StatusFailed), t0); len(late) != 0 {
		t.Errorf("late final: %v", subjects(late))
	}
	out = s.Step(Event{Msg: &contracts.SUTRemoved{Configuration: p.Configurations[0].Name}}, t0)
	if s.Status != contracts.ExperimentCancelled || len(out) != 1 || out[0].Subject != "benchq.exp.17.cancelled" {
		t.Fatalf("end: %s %v", s.Status, subjects(out))
	}
	if s.Configs[1].Status != cfgRemoved {
		t.Errorf("the second repetition was %s, want never deployed", s.Configs[1].Status)
	}
}

// A phase stopped after its GO keeps its window up to the stop, so that the
// collector pulls what was measured until then; one stopped before its GO
// has none (TestStopCancels).
func TestStoppedPhaseHasItsWindowUntilTheStop(t *testing.T) {
	p := defaultPlan(t, nil)
	s, _, _ := Start(p, []byte(`{}`), t0, 0)
	load := jobs(ready(s, 0))
	for k, j := range load {
		s.Step(Event{Msg: &contracts.BarrierReady{Phase: j.Phase, Shard: j.Shard, Attempt: 1, Agent: fmt.Sprintf("a%d", k+1)}}, t0)
	}
	cur := s.Configs[0].Current
	if cur == nil || cur.GoAt == nil {
		t.Fatalf("the loading has no GO after every shard was ready: %+v", cur)
	}
	goAt := *cur.GoAt
	stopAt := t0.Add(5 * time.Second)
	out := s.Step(Event{Msg: &contracts.Stop{}}, stopAt)
	ev, ok := out[0].Msg.(*contracts.PhaseEvent)
	if !ok || ev.Status != contracts.PhaseFailed {
		t.Fatalf("stop: %s", strings.Join(subjects(out), " "))
	}
	if ev.StartedAt == nil || !ev.StartedAt.Equal(goAt) || ev.EndedAt == nil || !ev.EndedAt.Equal(stopAt) {
		t.Errorf("stopped phase's window %v … %v, want its GO %v … the stop %v", ev.StartedAt, ev.EndedAt, goAt, stopAt)
	}
}

// An agent that stops beating during a benchmarking phase: the attempt is
// abandoned (phase.failed tells the other shards) and the phase runs again
// as attempt 2; losing attempt 2 too fails the phase and ends the
// configuration.
func TestLostAgentReRunsThePhaseOnce(t *testing.T) {
	p := defaultPlan(t, func(r *contracts.Request) { r.BenchmarkingPods = []int{2} })
	s, _, _ := Start(p, []byte(`{}`), t0, 0)
	out := runPhase(t, s, jobs(ready(s, 0)), contracts.StatusOK)
	run := jobs(out)
	for k, j := range run {
		s.Step(Event{Msg: &contracts.BarrierReady{Phase: j.Phase, Shard: j.Shard, Attempt: 1, Agent: fmt.Sprintf("a%d", k+1)}}, t0)
	}
	beats := map[string]contracts.Heartbeat{"a1": {At: t0}, "a2": {At: t0}}
	if out := s.Step(Event{Tick: true, Runs: byRun(beats)}, t0.Add(10*time.Second)); len(out) != 0 {
		t.Fatalf("both agents alive: %v", subjects(out))
	}
	beats["a1"] = contracts.Heartbeat{At: t0.Add(20 * time.Second)} // a2 silent for 20 s
	out = s.Step(Event{Tick: true, Runs: byRun(beats)}, t0.Add(20*time.Second))
	if got := strings.Join(subjects(out), " "); got != "benchq.exp.17.phase.failed benchq.jobs.shard benchq.jobs.shard benchq.jobs.drivers" {
		t.Fatalf("lost agent: %s", got)
	}
	if r := out[0].Msg.(*contracts.PhaseEvent).Reason; !strings.Contains(r, "shard 2 (agent a2") || !strings.Contains(r, "re-running") {
		t.Errorf("reason %q", r)
	}
	retry := jobs(out)
	if retry[0].Attempt != 2 || retry[0].StartBy == nil {
		t.Fatalf("retry %+v", retry[0])
	}
	if len(s.Configs[0].Reruns) != 1 {
		t.Errorf("reruns %v", s.Configs[0].Reruns)
	}
	for _, j := range retry {
		s.Step(Event{Msg: &contracts.BarrierReady{Phase: j.Phase, Shard: j.Shard, Attempt: 2, Agent: "a1"}}, t0)
	}
	delete(beats, "a1") // the TTL dropped it
	out = s.Step(Event{Tick: true, Runs: byRun(beats)}, t0.Add(40*time.Second))
	if got := strings.Join(subjects(out), " "); got != "benchq.exp.17.phase.failed benchq.jobs.teardown" {
		t.Fatalf("second loss: %s", got)
	}
	// Unknown heartbeats (bucket unreadable) never count as lost.
	s2, _, _ := Start(p, []byte(`{}`), t0, 0)
	for _, j := range jobs(ready(s2, 0)) {
		s2.Step(Event{Msg: &contracts.BarrierReady{Phase: j.Phase, Shard: j.Shard, Attempt: 1, Agent: "gone"}}, t0)
	}
	if out := s2.Step(Event{Tick: true}, t0.Add(30*time.Second)); len(out) != 0 {
		t.Errorf("nil heartbeats: %v", subjects(out))
	}
}

// An agent's silence is judged at the instant its heartbeat was read, not
// at the step's: on a busy machine the step may come seconds after the
// read, and those seconds are not the agent's silence (a live agent was
// called lost under a CPU load). A late agent the scheduler sees working
// is not lost.
func TestSilenceIsJudgedWhenTheBeatsWereRead(t *testing.T) {
	p := defaultPlan(t, func(r *contracts.Request) { r.BenchmarkingPods = []int{2} })
	s, _, _ := Start(p, []byte(`{}`), t0, 0)
	out := runPhase(t, s, jobs(ready(s, 0)), contracts.StatusOK)
	for k, j := range jobs(out) {
		s.Step(Event{Msg: &contracts.BarrierReady{Phase: j.Phase, Shard: j.Shard, Attempt: 1, Agent: fmt.Sprintf("a%d", k+1)}}, t0)
	}
	// Read 12 s after the last beats; the step runs 8 s later still.
	beats := map[string]contracts.Heartbeat{"a1": {At: t0}, "a2": {At: t0}}
	if out := s.Step(Event{Tick: true, Runs: byRun(beats), BeatsAt: t0.Add(12 * time.Second)}, t0.Add(20*time.Second)); len(out) != 0 {
		t.Fatalf("agents live when read: %v", subjects(out))
	}
	// Read 16 s after them, but the scheduler sees both processes work
	// (vouch.go): not lost.
	if out := s.Step(Event{Tick: true, Runs: byRun(beats), BeatsAt: t0.Add(16 * time.Second), Vouched: map[string]bool{"run-a1": true, "run-a2": true}}, t0.Add(16*time.Second)); len(out) != 0 {
		t.Fatalf("late agents seen working: %v", subjects(out))
	}
	// Read 16 s after them, a2 not seen working: lost.
	out = s.Step(Event{Tick: true, Runs: byRun(beats), BeatsAt: t0.Add(16 * time.Second), Vouched: map[string]bool{"run-a1": true}}, t0.Add(16*time.Second))
	if got := strings.Join(subjects(out), " "); !strings.HasPrefix(got, "benchq.exp.17.phase.failed") {
		t.Fatalf("agents silent when read: %s", got)
	}
	if r := out[0].Msg.(*contracts.PhaseEvent).Reason; !strings.Contains(r, "shard 2 (agent a2 silent for 16.0s") || strings.Contains(r, "agent a1") {
		t.Errorf("reason %q, want shard 2's agent a2 alone", r)
	}
}

// An agent killed and started again at once beats again under its name, but
// its new run does not know the shard the old one took: the heartbeat's
// instance differs from READY's, the shard is lost at the next tick and the
// phase re-run, without waiting for a silence that never comes. An agent
// that did not say its instance (older agents) is judged by silence only.
func TestRestartedAgentLosesItsShard(t *testing.T) {
	p := defaultPlan(t, func(r *contracts.Request) { r.BenchmarkingPods = []int{2} })
	s, _, _ := Start(p, []byte(`{}`), t0, 0)
	run := jobs(runPhase(t, s, jobs(ready(s, 0)), contracts.StatusOK))
	s.Step(Event{Msg: &contracts.BarrierReady{Phase: run[0].Phase, Shard: 1, Attempt: 1, Agent: "a1", Instance: "run-1"}}, t0)
	s.Step(Event{Msg: &contracts.BarrierReady{Phase: run[1].Phase, Shard: 2, Attempt: 1, Agent: "a2"}}, t0)
	beats := map[string]contracts.Heartbeat{"a1": {At: t0, Instance: "run-1"}, "a2": {At: t0, Instance: "run-9"}}
	if out := s.Step(Event{Tick: true, Runs: byRun(beats)}, t0.Add(time.Second)); len(out) != 0 {
		t.Fatalf("same runs beating: %v", subjects(out))
	}
	beats["a1"] = contracts.Heartbeat{At: t0.Add(2 * time.Second), Instance: "run-2"}
	out := s.Step(Event{Tick: true, Runs: byRun(beats)}, t0.Add(2*time.Second))
	if got := strings.Join(subjects(out), " "); got != "benchq.exp.17.phase.failed benchq.jobs.shard benchq.jobs.shard benchq.jobs.drivers" {
		t.Fatalf("restarted agent: %s", got)
	}
	if r := out[0].Msg.(*contracts.PhaseEvent).Reason; !strings.Contains(r, "shard 1 (agent a1 restarted since it took the shard)") || strings.Contains(r, "shard 2") {
		t.Errorf("reason %q", r)
	}
}

// A phase with more shards than the local stack has driver agents can never
// pass its barrier: it fails after AgentsGrace naming the numbers and the
// fix, not after the barrier timeout. On Kubernetes (driver Jobs, one agent
// per shard) the check does not apply.
func TestTooFewAgentsFailsThePhaseNamingTheFix(t *testing.T) {
	p := defaultPlan(t, func(r *contracts.Request) { r.BenchmarkingPods = []int{4} })
	for _, backend := range []string{contracts.BackendLocal, contracts.BackendKubernetes} {
		t.Run(backend, func(t *testing.T) {
			s, _, _ := Start(p, []byte(`{}`), t0, 0)
			load := jobs(s.Step(Event{Msg: &contracts.SUTReady{Configuration: p.Configurations[0].Name,
				Endpoint: contracts.Endpoint{Host: "h", Port: 1}, Backend: backend}}, t0))
			beats := map[string]contracts.Heartbeat{"agent-1": {At: t0}, "agent-2": {At: t0}, "agent-3": {At: t0.Add(-time.Minute)}} // agent-3 is gone
			if out := s.Step(Event{Tick: true, Runs: byRun(beats)}, t0.Add(11*time.Second)); len(out) != 0 {
				t.Fatalf("loading with 2 shards and 2 live agents: %v", subjects(out))
			}
			if run := jobs(runPhase(t, s, load, contracts.StatusOK)); len(run) != 4 {
				t.Fatalf("%d benchmarking shards, want 4", len(run))
			}
			if out := s.Step(Event{Tick: true, Runs: byRun(beats)}, t0.Add(5*time.Second)); len(out) != 0 {
				t.Fatalf("within the grace: %v", subjects(out))
			}
			out := s.Step(Event{Tick: true, Runs: byRun(beats)}, t0.Add(11*time.Second))
			if backend != contracts.BackendLocal {
				if len(out) != 0 {
					t.Fatalf("driver Jobs start one agent per shard, yet: %v", subjects(out))
				}
				return
			}
			if got := strings.Join(subjects(out), " "); got != "benchq.exp.17.phase.failed benchq.jobs.teardown" {
				t.Fatalf("4 shards, 2 live agents: %s", got)
			}
			r := out[0].Msg.(*contracts.PhaseEvent).Reason
			for _, want := range []string{"needs 4 driver agents at once (one per shard), but the stack runs 2 (agent-1, agent-2)", "BENCHQ_AGENTS=4", "-nbp"} {
				if !strings.Contains(r, want) {
					t.Errorf("reason %q lacks %q", r, want)
				}
			}
		})
	}
}

// A failed benchmarking phase ends its configuration: later phases are
// skipped and named, the SUT is torn down.
func TestFailedPhaseEndsConfiguration(t *testing.T) {
	p := defaultPlan(t, func(r *contracts.Request) { r.BenchmarkingPods = []int{1, 1, 1} })
	s, _, _ := Start(p, []byte(`{}`), t0, 0)
	out := runPhase(t, s, jobs(ready(s, 0)), contracts.StatusOK)
	out = runPhase(t, s, jobs(out), contracts.StatusFailed)
	if got := strings.Join(subjects(out), " "); got != "benchq.exp.17.phase.failed benchq.jobs.teardown" {
		t.Fatalf("%s", got)
	}
	if f := strings.Join(s.Failures, "; "); !strings.Contains(f, "2 later phase(s) skipped") {
		t.Errorf("failures %q", f)
	}
	// The deployer found the SUT dead when it came to remove it: the phase
	// failed on the symptoms (a driver that could not connect), the cause
	// is named beside them, once.
	name := s.Plan.Configurations[0].Name
	removed := &contracts.SUTRemoved{Configuration: name, Died: "Redis process 42 killed by signal 9 (killed)"}
	s.Step(Event{Msg: removed}, t0)
	s.Step(Event{Msg: removed}, t0)
	want := "SUT " + name + " had died before its teardown (Redis process 42 killed by signal 9 (killed))"
	if f := strings.Join(s.Failures, "; "); strings.Count(f, want) != 1 {
		t.Errorf("failures %q, want %q once", f, want)
	}
}

// A SUT that died after its last phase was done (or in its last second,
// before the watch saw it) fails the experiment, named; what it measured is
// kept.
func TestSUTDeadAtItsTeardownFailsTheExperiment(t *testing.T) {
	p := defaultPlan(t, func(r *contracts.Request) { r.BenchmarkingPods = []int{1} })
	s, _, _ := Start(p, []byte(`{}`), t0, 0)
	out := runPhase(t, s, jobs(ready(s, 0)), contracts.StatusOK)
	out = runPhase(t, s, jobs(out), contracts.StatusOK)
	if got := strings.Join(subjects(out), " "); got != "benchq.exp.17.phase.done benchq.jobs.teardown" {
		t.Fatalf("%s", got)
	}
	out = s.Step(Event{Msg: &contracts.SUTRemoved{Configuration: s.Plan.Configurations[0].Name, Died: "Redis process 42 exited with status 1"}}, t0)
	want := "SUT " + s.Plan.Configurations[0].Name + " had died before its teardown (Redis process 42 exited with status 1)"
	if s.Status != contracts.ExperimentFailed || strings.Join(s.Failures, "; ") != want {
		t.Errorf("status %s, failures %q; out %v", s.Status, s.Failures, subjects(out))
	}
	if end := out[len(out)-1].Msg.(*contracts.ExperimentEnd); end.Reason != want {
		t.Errorf("end %+v", end)
	}
}

// Action start deploys and holds the SUT until stop.
func TestActionStartHoldsTheSUT(t *testing.T) {
	p := defaultPlan(t, func(r *contracts.Request) { r.Action = contracts.ActionStart })
	s, _, _ := Start(p, []byte(`{}`), t0, 0)
	if out := ready(s, 0); len(out) != 0 {
		t.Fatalf("after ready: %v", subjects(out))
	}
	if out := s.Step(Event{Tick: true, Runs: byRun(map[string]contracts.Heartbeat{})}, t0.Add(time.Hour)); len(out) != 0 || s.Configs[0].Status != cfgRunning {
		t.Fatalf("held SUT: %v %s", subjects(out), s.Configs[0].Status)
	}
	if out := s.Step(Event{Msg: &contracts.Stop{}}, t0); strings.Join(subjects(out), " ") != "benchq.jobs.teardown" {
		t.Fatalf("stop: %v", subjects(out))
	}
}

// A SUT whose persistent volume already holds the data set skips loading
// (bexhoma's "Database is persisted to disk"); a SUT whose loading filled
// its volume says so with its teardown, so the backend can record it.
func TestPersistedVolumes(t *testing.T) {
	p := defaultPlan(t, nil)
	s, _, _ := Start(p, []byte(`{}`), t0, 0)
	out := s.Step(Event{Msg: &contracts.SUTReady{Configuration: p.Configurations[0].Name, Endpoint: contracts.Endpoint{Host: "h", Port: 1},
		Volume: &contracts.VolumeState{Name: "bq-redis-ycsb-0-1", Loaded: true, LoadedBy: "42"}}}, t0)
	if got := strings.Join(subjects(out), " "); got != "benchq.exp.17.phase.skipped benchq.jobs.shard benchq.jobs.drivers" {
		t.Fatalf("persisted: %s", got)
	}
	if pe := out[0].Msg.(*contracts.PhaseEvent); pe.Status != contracts.PhaseSkipped || !strings.Contains(pe.Reason, "persisted on volume bq-redis-ycsb-0-1") || !strings.Contains(pe.Reason, "by experiment 42") {
		t.Errorf("skipped %+v", pe)
	}
	if j := jobs(out); j[0].Kind != contracts.KindRun {
		t.Errorf("first job %s", j[0].Kind)
	}
	out = runPhase(t, s, jobs(out), contracts.StatusOK)
	if td := out[len(out)-1].Msg.(*contracts.Teardown); td.Loaded != nil {
		t.Errorf("a skipped load marked the volume again: %+v", td.Loaded)
	}

	s, _, _ = Start(p, []byte(`{}`), t0, 0)
	out = s.Step(Event{Msg: &contracts.SUTReady{Configuration: p.Configurations[0].Name, Endpoint: contracts.Endpoint{Host: "h", Port: 1},
		Volume: &contracts.VolumeState{Name: "bq-redis-ycsb-0-1", Loaded: false}}}, t0)
	out = runPhase(t, s, jobs(out), contracts.StatusOK) // load: shards 1 s … 4 s
	out = runPhase(t, s, jobs(out), contracts.StatusOK)
	td := out[len(out)-1].Msg.(*contracts.Teardown)
	if td.Loaded == nil || td.Loaded.Volume != "bq-redis-ycsb-0-1" || td.Loaded.LoadingTimeS != 3 || td.Loaded.By != "17" {
		t.Errorf("teardown %+v", td.Loaded)
	}
}

// Dragonfly runs with its snapshots off: its volume keeps nothing, so it is
// never marked loaded, and a volume said to be loaded (by an older benchq)
// does not skip its loading.
func TestAVolumeOfADBMSThatKeepsNoDataIsNeverReused(t *testing.T) {
	p := defaultPlan(t, func(r *contracts.Request) {
		r.DBMS = []string{"Dragonfly"}
		r.Storage = &contracts.Storage{Class: "shared"}
	})
	s, _, _ := Start(p, []byte(`{}`), t0, 0)
	out := s.Step(Event{Msg: &contracts.SUTReady{Configuration: p.Configurations[0].Name, Endpoint: contracts.Endpoint{Host: "h", Port: 1},
		Volume: &contracts.VolumeState{Name: "bq-dragonfly-ycsb-0-1", Loaded: true, LoadedBy: "42"}}}, t0)
	if j := jobs(out); len(j) == 0 || j[0].Kind != contracts.KindLoad {
		t.Fatalf("a Dragonfly volume said to be loaded skipped the loading: %s", strings.Join(subjects(out), " "))
	}
	out = runPhase(t, s, jobs(out), contracts.StatusOK)
	out = runPhase(t, s, jobs(out), contracts.StatusOK)
	if td := out[len(out)-1].Msg.(*contracts.Teardown); td.Loaded != nil {
		t.Errorf("a Dragonfly volume was marked loaded: %+v", td.Loaded)
	}
}

// Two configurations on one volume (-rst) are never deployed at once, -ms
// 2 or not: the second waits for the first's SUT to go (a volume serves one
// SUT at a time; the deployer handles one job at a time, so it could not
// wait for the first's teardown itself).
func TestConfigurationsOnOneVolumeTakeTurns(t *testing.T) {
	two := 2
	p := defaultPlan(t, func(r *contracts.Request) {
		r.Repetitions, r.MaxSUTs = 2, &two
		r.Storage = &contracts.Storage{Class: "shared"}
	})
	s, out, _ := Start(p, []byte(`{}`), t0, 0)
	if n := deploys(out); n != 1 {
		t.Fatalf("%d deploys at the start, want 1 (both repetitions use one volume)", n)
	}
	out = s.Step(Event{Msg: &contracts.SUTFailed{Configuration: p.Configurations[0].Name, Reason: "test"}}, t0)
	if n := deploys(out); n != 0 {
		t.Fatalf("%d deploys while the first SUT is torn down, want 0", n)
	}
	out = s.Step(Event{Msg: &contracts.SUTRemoved{Configuration: p.Configurations[0].Name}}, t0)
	if n := deploys(out); n != 1 {
		t.Errorf("%d deploys once the first SUT is gone, want 1", n)
	}
	// Without -rst both go at once.
	p = defaultPlan(t, func(r *contracts.Request) { r.Repetitions, r.MaxSUTs = 2, &two })
	if _, out, _ := Start(p, []byte(`{}`), t0, 0); deploys(out) != 2 {
		t.Errorf("%d deploys without a volume, want 2", deploys(out))
	}
}

func deploys(out []Out) int {
	n := 0
	for _, o := range out {
		if o.Subject == contracts.SubjDeploy {
			n++
		}
	}
	return n
}

// drivers returns the Drivers job among out.
func drivers(t *testing.T, out []Out) *contracts.Drivers {
	t.Helper()
	for _, o := range out {
		if d, ok := o.Msg.(*contracts.Drivers); ok {
			if o.Subject != contracts.SubjDrivers {
				t.Errorf("drivers job on %s", o.Subject)
			}
			return d
		}
	}
	t.Fatalf("no drivers job in %v", subjects(out))
	return nil
}

// driverJob is the Job the deployer would start for d.
func driverJob(d *contracts.Drivers) contracts.DriverJob {
	return contracts.DriverJob{Configuration: d.Configuration, Phase: d.Phase, Kind: d.Kind, Attempt: d.Attempt, Job: "bq-17-" + strings.ToLower(d.Phase)}
}

func driverEnded(d *contracts.Drivers, succeeded, failed int, simulated bool) Event {
	start, end := t0.Add(time.Second), t0.Add(2*time.Second)
	return Event{Msg: &contracts.DriverEnded{DriverJob: driverJob(d), Shards: d.Shards, Succeeded: succeeded, Failed: failed, Simulated: simulated,
		Nodes: []string{"kwok-node-0"}, StartedAt: &start, EndedAt: &end, Reason: "Complete"}}
}

// Every phase attempt asks the deployer for its driver agents, with the
// phase's shape and node pin.
func TestEveryPhaseAsksForDrivers(t *testing.T) {
	p := defaultPlan(t, func(r *contracts.Request) {
		r.Nodes = &contracts.Nodes{Loading: "n-load", Benchmarking: "n-bench"}
	})
	s, _, _ := Start(p, []byte(`{}`), t0, 0)
	out := ready(s, 0)
	d := drivers(t, out)
	if d.Phase != "Redis-8-2-16384-1-0" || d.Kind != contracts.KindLoad || d.Shards != 2 || d.Attempt != 1 || d.Node != "n-load" ||
		d.DBMS != "Redis" || d.Configuration != "Redis-8-2-16384-1" || d.ID != "17.Redis-8-2-16384-1-0.a1.drivers" {
		t.Errorf("load drivers %+v", d)
	}
	out = runPhase(t, s, jobs(out), contracts.StatusOK)
	if d := drivers(t, out); d.Phase != "Redis-8-2-16384-1-1" || d.Kind != contracts.KindRun || d.Shards != 1 || d.Node != "n-bench" {
		t.Errorf("run drivers %+v", d)
	}
}

// kwok: the driver Jobs "complete" at once and no agent ever reports.
// After the grace every shard is recorded as simulated (a final on its
// behalf, no measurement), the phase starts and is done saying so, and the
// experiment goes on to the end; the volume is not marked loaded.
func TestSimulatedDriversCompleteThePhaseWithoutMeasurements(t *testing.T) {
	p := defaultPlan(t, func(r *contracts.Request) { r.BenchmarkingPods = []int{1, 2} })
	s, _, _ := Start(p, []byte(`{}`), t0, 0)
	out := s.Step(Event{Msg: &contracts.SUTReady{Configuration: p.Configurations[0].Name, Endpoint: contracts.Endpoint{Host: "h", Port: 1},
		Volume: &contracts.VolumeState{Name: "bq-redis-ycsb-0-1"}}}, t0)
	var sequence []string
	for phase := 0; phase < 3; phase++ {
		d := drivers(t, out)
		if got := s.Step(driverEnded(d, d.Shards, 0, true), t0); len(got) != 0 {
			t.Fatalf("driver.ended settles before the grace: %v", subjects(got))
		}
		if got := s.Step(Event{Tick: true}, t0.Add(DriverGrace-time.Millisecond)); len(got) != 0 {
			t.Fatalf("tick within the grace: %v", subjects(got))
		}
		out = s.Step(Event{Tick: true}, t0.Add(DriverGrace))
		var finals int
		for _, o := range out {
			switch m := o.Msg.(type) {
			case *contracts.Final:
				finals++
				if m.Status != contracts.StatusSimulated || len(m.Operations) != 0 || m.Agent != "bq-17-"+strings.ToLower(d.Phase) ||
					!strings.Contains(m.Error, SimulatedNote) || !strings.Contains(m.Error, "kwok-node-0") ||
					m.ID != fmt.Sprintf("17.%s.%d.a1.final", d.Phase, m.Shard) || o.Subject != "benchq.exp.17.shard.ended" {
					t.Errorf("final %s %+v", o.Subject, m)
				}
				raw, _ := json.Marshal(m)
				if err := contracts.Validate(contracts.SchemaFinal, raw); err != nil {
					t.Error(err)
				}
			case *contracts.PhaseEvent:
				sequence = append(sequence, m.Status+" "+m.Phase)
				if m.Reason != SimulatedNote {
					t.Errorf("phase event reason %q", m.Reason)
				}
				if m.Status == contracts.PhaseDone && (!m.StartedAt.Equal(t0.Add(time.Second)) || !m.EndedAt.Equal(t0.Add(2*time.Second))) {
					t.Errorf("window %v – %v", m.StartedAt, m.EndedAt)
				}
			case *contracts.Teardown:
				if m.Loaded != nil {
					t.Errorf("a simulated load marked the volume loaded: %+v", m.Loaded)
				}
			}
		}
		if finals != d.Shards {
			t.Errorf("%d simulated finals for %d shards", finals, d.Shards)
		}
		// The finals come back to the scheduler: nothing happens.
		if got := s.Step(final(&contracts.ShardJob{Phase: d.Phase, Shard: 1, Attempt: 1}, contracts.StatusSimulated), t0); len(got) != 0 {
			t.Errorf("own final: %v", subjects(got))
		}
	}
	want := "started Redis-8-2-16384-1-0, done Redis-8-2-16384-1-0, started Redis-8-2-16384-1-1, done Redis-8-2-16384-1-1, " +
		"started Redis-8-2-16384-1-2, done Redis-8-2-16384-1-2"
	if got := strings.Join(sequence, ", "); got != want {
		t.Errorf("phases: %s", got)
	}
	if got := subjects(out); got[len(got)-1] != "benchq.jobs.teardown" {
		t.Fatalf("after the last phase: %v", got)
	}
	s.Step(Event{Msg: &contracts.SUTRemoved{Configuration: p.Configurations[0].Name}}, t0)
	if s.Status != contracts.ExperimentDone || len(s.Failures) != 0 || len(s.Drivers) != 0 {
		t.Errorf("experiment %s %v drivers %v", s.Status, s.Failures, s.Drivers)
	}
}

// A real node: the Job's pods ran (and exited 0) but shard 2 never sent a
// result. That is a failure naming the Job and the shard, not a success.
func TestDriversThatEndWithoutResultsFailThePhase(t *testing.T) {
	p := defaultPlan(t, nil)
	s, _, _ := Start(p, []byte(`{}`), t0, 0)
	out := ready(s, 0)
	d := drivers(t, out)
	js := jobs(out)
	for _, j := range js {
		s.Step(Event{Msg: &contracts.BarrierReady{Phase: j.Phase, Shard: j.Shard, Attempt: 1, Agent: fmt.Sprint("pod-", j.Shard)}}, t0)
	}
	s.Step(final(js[0], contracts.StatusOK), t0)
	s.Step(driverEnded(d, 2, 0, false), t0.Add(5*time.Second))
	if got := s.Step(Event{Tick: true}, t0.Add(6*time.Second)); len(got) != 0 {
		t.Fatalf("within the grace: %v", subjects(got))
	}
	out = s.Step(Event{Tick: true}, t0.Add(8*time.Second))
	if got := strings.Join(subjects(out), " "); got != "benchq.exp.17.shard.ended benchq.exp.17.phase.failed benchq.jobs.teardown" {
		t.Fatalf("got %s", got)
	}
	want := "driver Job bq-17-redis-8-2-16384-1-0 ended (succeeded 2, failed 0) but shard 2 never reported a result"
	if f := out[0].Msg.(*contracts.Final); f.Status != contracts.StatusFailed || f.Shard != 2 || f.Error != want {
		t.Errorf("final %+v", f)
	}
	if r := out[1].Msg.(*contracts.PhaseEvent).Reason; r != want {
		t.Errorf("reason %q", r)
	}
	s.Step(Event{Msg: &contracts.SUTRemoved{Configuration: p.Configurations[0].Name}}, t0)
	if s.Status != contracts.ExperimentFailed || !strings.Contains(strings.Join(s.Failures, "; "), want) {
		t.Errorf("experiment %s %v", s.Status, s.Failures)
	}

	// A Job that failed before any agent was READY fails the phase too,
	// with what the Job says.
	s, _, _ = Start(p, []byte(`{}`), t0, 0)
	d = drivers(t, ready(s, 0))
	ev := driverEnded(d, 0, 3, false)
	ev.Msg.(*contracts.DriverEnded).Reason = "Failed: BackoffLimitExceeded"
	s.Step(ev, t0)
	out = s.Step(Event{Tick: true}, t0.Add(DriverGrace))
	if got := strings.Join(subjects(out), " "); got != "benchq.exp.17.shard.ended benchq.exp.17.shard.ended benchq.exp.17.phase.failed benchq.jobs.teardown" {
		t.Fatalf("got %s", got)
	}
	if r := out[2].Msg.(*contracts.PhaseEvent).Reason; !strings.Contains(r, "(succeeded 0, failed 3) but shard 1 never reported") || !strings.Contains(r, "BackoffLimitExceeded") {
		t.Errorf("reason %q", r)
	}
}

// Every shard reported before the Job ended: driver.ended changes nothing;
// one of another attempt or of a phase not running is ignored; one that
// overtakes the stored phase is early (redelivered).
func TestDriverEndedAfterTheFinalsChangesNothing(t *testing.T) {
	p := defaultPlan(t, nil)
	s, _, _ := Start(p, []byte(`{}`), t0, 0)
	if !s.Early(Event{Msg: &contracts.DriverEnded{DriverJob: contracts.DriverJob{Phase: "Redis-8-2-16384-1-0", Attempt: 1}}}) {
		t.Error("driver.ended of a phase not started yet is not early")
	}
	out := ready(s, 0)
	d := drivers(t, out)
	if got := s.Step(driverEnded(&contracts.Drivers{Phase: d.Phase, Attempt: 2, Shards: 2}, 2, 0, true), t0); len(got) != 0 || len(s.Drivers) != 0 {
		t.Errorf("another attempt's driver.ended recorded: %v", s.Drivers)
	}
	out = runPhase(t, s, jobs(out), contracts.StatusOK)
	if got := subjects(out); got[0] != "benchq.exp.17.phase.done" {
		t.Fatalf("load: %v", got)
	}
	if got := s.Step(driverEnded(d, 2, 0, false), t0); len(got) != 0 || len(s.Drivers) != 0 {
		t.Errorf("driver.ended of a finished phase: %v %v", subjects(got), s.Drivers)
	}
	if got := s.Step(Event{Tick: true}, t0.Add(time.Minute)); len(got) != 0 {
		t.Errorf("tick: %v", subjects(got))
	}
}

// A READY replayed after a restart whose GO was published but not stored
// starts the phase at that GO's instant, with that GO's holders: the agents
// and the collector got it, and JetStream drops a new GO with the same id.
func TestReplayedReadyKeepsThePublishedGo(t *testing.T) {
	p := defaultPlan(t, nil)
	t0 := time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC)
	s, _, _ := Start(p, []byte(`{}`), t0, 0)
	s.Step(Event{Msg: &contracts.SUTReady{Configuration: p.Configurations[0].Name, Endpoint: contracts.Endpoint{Host: "h", Port: 1}, Backend: contracts.BackendLocal}}, t0)
	cur := s.Configs[0].Current
	if cur == nil {
		t.Fatal("no phase started")
	}
	published := t0.Add(-3 * time.Second)
	prev := &contracts.BarrierGo{StartAt: published, Agents: []string{"a1", "a2"}, Instances: []string{"run-a1", "run-a2"}}
	var out []Out
	for k := range cur.Ready {
		phase := p.Configurations[0].Phases[s.Configs[0].Phase].Name
		// Shard 1's READY now comes from another run than the GO named (it
		// took the job over while the scheduler was down).
		run := fmt.Sprintf("run-a%d", k+1)
		if k == 0 {
			run = "run-c1"
		}
		out = s.Step(Event{Msg: &contracts.BarrierReady{Phase: phase, Shard: k + 1, Attempt: cur.Attempt, Agent: "a", Instance: run}, PublishedGo: prev, Signer: run}, t0)
	}
	var goAt, startedAt *time.Time
	for _, o := range out {
		switch m := o.Msg.(type) {
		case *contracts.BarrierGo:
			goAt = &m.StartAt
		case *contracts.PhaseEvent:
			startedAt = m.StartedAt
		}
	}
	if goAt == nil || !goAt.Equal(published) || startedAt == nil || !startedAt.Equal(published) || !s.Configs[0].Current.GoAt.Equal(published) {
		t.Errorf("GO %v, phase.started %v, state %v; want all %v", goAt, startedAt, s.Configs[0].Current.GoAt, published)
	}
	if got := s.Configs[0].Current.Instances; !slices.Equal(got, prev.Instances) {
		t.Errorf("holders %v, want the published GO's %v", got, prev.Instances)
	}
}

// A loading phase that loses a shard's agent runs again on a new SUT: its
// attempt fails (the other shards stop), the SUT that holds part of the data
// is torn down, a second generation is deployed under ids of its own, the
// loading runs there as attempt 2 and the experiment goes on; a SUT removal
// or readiness of the first generation, redelivered, changes nothing.
// Losing attempt 2 too fails the configuration.
func TestLostLoadingAgentLoadsAgainOnANewSUT(t *testing.T) {
	p := defaultPlan(t, nil) // loading on 2 pods
	s, _, _ := Start(p, []byte(`{}`), t0, 0)
	name := s.Plan.Configurations[0].Name
	load := jobs(ready(s, 0))
	for k, j := range load {
		s.Step(Event{Msg: &contracts.BarrierReady{Phase: j.Phase, Shard: j.Shard, Attempt: 1, Agent: fmt.Sprintf("a%d", k+1)}}, t0)
	}
	beats := map[string]contracts.Heartbeat{"a1": {At: t0.Add(20 * time.Second)}} // a2 gone
	out := s.Step(Event{Tick: true, Runs: byRun(beats), BeatsAt: t0.Add(20 * time.Second)}, t0.Add(20*time.Second))
	if got := strings.Join(subjects(out), " "); got != "benchq.exp.17.phase.failed benchq.jobs.teardown" {
		t.Fatalf("lost loading agent: %s", got)
	}
	if r := out[0].Msg.(*contracts.PhaseEvent).Reason; !strings.Contains(r, "agent a2") || !strings.Contains(r, "loading again on a new SUT") {
		t.Errorf("reason %q", r)
	}
	td := out[1].Msg.(*contracts.Teardown)
	if td.ID != contracts.TeardownID("17", name) || td.Loaded != nil {
		t.Errorf("teardown %+v: want the first generation's, the volume not marked loaded", td)
	}
	// The old SUT is gone: a new one, under the second generation's ids.
	out = s.Step(Event{Msg: &contracts.SUTRemoved{Envelope: contracts.Envelope{ID: contracts.SUTRemovedID(td.ID)}, Configuration: name}}, t0.Add(21*time.Second))
	if len(out) != 1 || out[0].Msg.(*contracts.Deploy).ID != "17."+name+".deploy.g2" {
		t.Fatalf("after the removal: %v", subjects(out))
	}
	// The first generation's answers, redelivered, are not the new SUT.
	stale := &contracts.SUTReady{Envelope: contracts.Envelope{ID: contracts.SUTReadyID(contracts.DeployID("17", name))}, Configuration: name, Endpoint: contracts.Endpoint{Host: "old", Port: 1}}
	if out := s.Step(Event{Msg: stale}, t0.Add(22*time.Second)); len(out) != 0 {
		t.Fatalf("first generation's sut.ready: %v", subjects(out))
	}
	fresh := &contracts.SUTReady{Envelope: contracts.Envelope{ID: contracts.SUTReadyID(contracts.DeployIDAt("17", name, 1))}, Configuration: name, Endpoint: contracts.Endpoint{Host: "new", Port: 2}}
	again := jobs(s.Step(Event{Msg: fresh}, t0.Add(23*time.Second)))
	if len(again) != 2 || again[0].Attempt != 2 || again[0].Phase != load[0].Phase || again[0].Endpoint.Host != "new" {
		t.Fatalf("loading again: %+v", again)
	}
	if len(s.Configs[0].Reruns) != 1 || s.Configs[0].Generation != 1 {
		t.Errorf("reruns %v, generation %d", s.Configs[0].Reruns, s.Configs[0].Generation)
	}
	out = runPhase(t, s, again, contracts.StatusOK)
	out = runPhase(t, s, jobs(out), contracts.StatusOK)
	if got := strings.Join(subjects(out), " "); got != "benchq.exp.17.phase.done benchq.jobs.teardown" {
		t.Fatalf("end of the phases: %s", got)
	}
	if id := out[1].Msg.(*contracts.Teardown).ID; id != "17."+name+".teardown.g2" {
		t.Errorf("last teardown %s, want the second generation's", id)
	}
	out = s.Step(Event{Msg: &contracts.SUTRemoved{Envelope: contracts.Envelope{ID: contracts.SUTRemovedID(contracts.TeardownIDAt("17", name, 1))}, Configuration: name}}, t0.Add(60*time.Second))
	if s.Status != contracts.ExperimentDone {
		t.Fatalf("status %s %v: %v", s.Status, s.Failures, subjects(out))
	}

	// Attempt 2 loses an agent too: the configuration fails.
	s2, _, _ := Start(p, []byte(`{}`), t0, 0)
	for attempt := 1; attempt <= 2; attempt++ {
		var js []*contracts.ShardJob
		if attempt == 1 {
			js = jobs(ready(s2, 0))
		} else {
			s2.Step(Event{Msg: &contracts.SUTRemoved{Envelope: contracts.Envelope{ID: contracts.SUTRemovedID(contracts.TeardownID("17", name))}, Configuration: name}}, t0)
			js = jobs(s2.Step(Event{Msg: &contracts.SUTReady{Envelope: contracts.Envelope{ID: contracts.SUTReadyID(contracts.DeployIDAt("17", name, 1))}, Configuration: name}}, t0))
		}
		for _, j := range js {
			s2.Step(Event{Msg: &contracts.BarrierReady{Phase: j.Phase, Shard: j.Shard, Attempt: attempt, Agent: "gone"}}, t0)
		}
		out = s2.Step(Event{Tick: true, Runs: byRun(map[string]contracts.Heartbeat{}), BeatsAt: t0.Add(time.Minute)}, t0.Add(time.Minute))
	}
	if got := strings.Join(subjects(out), " "); got != "benchq.exp.17.phase.failed benchq.jobs.teardown" || s2.Configs[0].ReloadAttempt != 0 {
		t.Fatalf("second loss: %s (reload pending %d)", got, s2.Configs[0].ReloadAttempt)
	}
	if r := out[0].Msg.(*contracts.PhaseEvent).Reason; strings.Contains(r, "again") {
		t.Errorf("second loss reason %q: no third attempt", r)
	}

	// The new SUT fails to deploy: the configuration ends, no third SUT.
	s3, _, _ := Start(p, []byte(`{}`), t0, 0)
	for _, j := range jobs(ready(s3, 0)) {
		s3.Step(Event{Msg: &contracts.BarrierReady{Phase: j.Phase, Shard: j.Shard, Attempt: 1, Agent: "gone"}}, t0)
	}
	s3.Step(Event{Tick: true, Runs: byRun(map[string]contracts.Heartbeat{}), BeatsAt: t0.Add(time.Minute)}, t0.Add(time.Minute))
	s3.Step(Event{Msg: &contracts.SUTRemoved{Envelope: contracts.Envelope{ID: contracts.SUTRemovedID(contracts.TeardownID("17", name))}, Configuration: name}}, t0)
	out = s3.Step(Event{Msg: &contracts.SUTFailed{Envelope: contracts.Envelope{ID: contracts.SUTFailedID(contracts.DeployIDAt("17", name, 1))}, Configuration: name, Reason: "no PING"}}, t0)
	if got := strings.Join(subjects(out), " "); got != "benchq.jobs.teardown" {
		t.Fatalf("new SUT failed: %s", got)
	}
	out = s3.Step(Event{Msg: &contracts.SUTRemoved{Envelope: contracts.Envelope{ID: contracts.SUTRemovedID(contracts.TeardownIDAt("17", name, 1))}, Configuration: name}}, t0)
	if s3.Status != contracts.ExperimentFailed || count(out, contracts.SubjDeploy) != 0 {
		t.Fatalf("after the new SUT's failure: %s, %v", s3.Status, subjects(out))
	}
}

func driverLost(d *contracts.Drivers, pod string, simulated bool) Event {
	return Event{Msg: &contracts.DriverLost{DriverJob: driverJob(d), Pod: pod, Node: "n1", Simulated: simulated, Reason: "deleted"}}
}

// Kubernetes: a driver pod deleted or failed mid-phase loses its agent's
// shard once LostGrace is over, not after its heartbeats' silence: the
// phase runs again (a loading phase on a new SUT). A pod whose agent held
// no shard, or whose final came within the grace, costs nothing; a pod
// the Job made for an earlier attempt loses the shard of this attempt its
// agent took; on kwok, where no agent runs, a pod of this attempt stands
// for a shard.
func TestLostDriverPodReRunsThePhase(t *testing.T) {
	p := defaultPlan(t, func(r *contracts.Request) { r.BenchmarkingPods = []int{2} })
	s, _, _ := Start(p, []byte(`{}`), t0, 0)
	out := runPhase(t, s, jobs(ready(s, 0)), contracts.StatusOK)
	d := drivers(t, out)
	run := jobs(out)
	for k, j := range run {
		s.Step(Event{Msg: &contracts.BarrierReady{Phase: j.Phase, Shard: j.Shard, Attempt: 1, Agent: fmt.Sprintf("pod-%d", k+1)}}, t0)
	}
	// pod-9 held no shard; pod-1's final arrives within the grace.
	for _, ev := range []Event{driverLost(d, "pod-9", false), driverLost(d, "pod-1", false), final(run[0], contracts.StatusOK)} {
		if out := s.Step(ev, t0); len(out) != 0 {
			t.Fatalf("%T: %v", ev.Msg, subjects(out))
		}
	}
	if out := s.Step(Event{Tick: true}, t0.Add(LostGrace)); len(out) != 0 || len(s.Configs[0].Current.LostPods) != 0 || !s.dirty {
		t.Fatalf("pods without an unfinished shard: %v, waiting %v, to be saved %v", subjects(out), s.Configs[0].Current.LostPods, s.dirty)
	}
	if out := s.Step(driverLost(d, "pod-2", false), t0.Add(2*time.Second)); len(out) != 0 {
		t.Fatalf("judged before the grace: %v", subjects(out))
	}
	if out := s.Step(Event{Tick: true}, t0.Add(2*time.Second+LostGrace-time.Millisecond)); len(out) != 0 {
		t.Fatalf("tick within the grace: %v", subjects(out))
	}
	out = s.Step(Event{Tick: true}, t0.Add(2*time.Second+LostGrace))
	if got := strings.Join(subjects(out), " "); got != "benchq.exp.17.phase.failed benchq.jobs.shard benchq.jobs.shard benchq.jobs.drivers" {
		t.Fatalf("lost pod: %s", got)
	}
	want := "lost shard 2 (driver pod pod-2 of Job bq-17-" + strings.ToLower(d.Phase) + " deleted on node n1); re-running the phase"
	if r := out[0].Msg.(*contracts.PhaseEvent).Reason; r != want {
		t.Errorf("reason %q, want %q", r, want)
	}
	d2 := drivers(t, out)
	if d2.Attempt != 2 || len(s.Configs[0].Reruns) != 1 {
		t.Errorf("drivers %+v, reruns %v", d2, s.Configs[0].Reruns)
	}
	// Attempt 2: the first Job's replacement pod took shard 1 and is lost.
	for _, j := range jobs(out) {
		s.Step(Event{Msg: &contracts.BarrierReady{Phase: j.Phase, Shard: j.Shard, Attempt: 2, Agent: fmt.Sprintf("pod-%d", j.Shard+2)}}, t0)
	}
	s.Step(driverLost(d, "pod-3", false), t0.Add(5*time.Second)) // d: attempt 1's Job
	out = s.Step(Event{Tick: true}, t0.Add(5*time.Second+LostGrace))
	if got := strings.Join(subjects(out), " "); got != "benchq.exp.17.phase.failed benchq.jobs.teardown" {
		t.Fatalf("attempt 1's pod lost in attempt 2: %s", got)
	}

	// kwok: a loading pod of this attempt lost loads again on a new SUT;
	// one of an earlier attempt, or one not simulated, stands for nothing.
	s2, _, _ := Start(p, []byte(`{}`), t0, 0)
	d = drivers(t, ready(s2, 0))
	stale := driverLost(d, "pod-0", true)
	stale.Msg.(*contracts.DriverLost).Attempt = 0
	s2.Step(stale, t0)
	s2.Step(driverLost(d, "pod-1", false), t0)
	if out := s2.Step(Event{Tick: true}, t0.Add(LostGrace)); len(out) != 0 {
		t.Fatalf("no agent took a shard: %v", subjects(out))
	}
	s2.Step(driverLost(d, "pod-1", true), t0)
	out = s2.Step(Event{Tick: true}, t0.Add(LostGrace))
	if got := strings.Join(subjects(out), " "); got != "benchq.exp.17.phase.failed benchq.jobs.teardown" || s2.Configs[0].ReloadAttempt != 2 {
		t.Fatalf("simulated pod lost while loading: %s (reload %d)", got, s2.Configs[0].ReloadAttempt)
	}
	if r := out[0].Msg.(*contracts.PhaseEvent).Reason; !strings.Contains(r, "simulated: the pod stands for a shard") || !strings.Contains(r, "loading again on a new SUT") {
		t.Errorf("reason %q", r)
	}
}

// A shard is bound at READY to the agent run that sent it (its instance):
// only that run's final counts. Another agent's final for the shard —
// signed by its own key, as it must be to pass handleEvent — is ignored,
// and the real one is taken after it.
func TestOnlyTheRunHoldingAShardEndsIt(t *testing.T) {
	p := defaultPlan(t, func(r *contracts.Request) { r.BenchmarkingPods = []int{1} })
	s, _, _ := Start(p, []byte(`{}`), t0, 0)
	run := jobs(runPhase(t, s, jobs(ready(s, 0)), contracts.StatusOK))
	j := run[0]
	s.Step(Event{Msg: &contracts.BarrierReady{Phase: j.Phase, Shard: 1, Attempt: 1, Agent: "a1", Instance: "run-a1"}, Signer: "run-a1"}, t0)
	cur := s.Configs[0].Current
	if cur.Status != phRunning || cur.Instances[0] != "run-a1" {
		t.Fatalf("after READY: %s, bound to %v", cur.Status, cur.Instances)
	}
	forged := final(j, contracts.StatusFailed)
	forged.Signer = "run-rogue"
	if out := s.Step(forged, t0.Add(time.Second)); len(out) != 0 || cur.Done[0] != nil {
		t.Fatalf("another run's final counted: %v", subjects(out))
	}
	holders := final(j, contracts.StatusOK)
	holders.Signer = "run-a1"
	if out := s.Step(holders, t0.Add(2*time.Second)); !strings.Contains(strings.Join(subjects(out), " "), "phase.done") || cur.Done[0] == nil || cur.Done[0].Status != contracts.StatusOK {
		t.Fatalf("the holder's final: %v, done %+v", subjects(out), cur.Done[0])
	}
}

// Another agent writing heartbeats under the name of a shard's agent
// (signed by its own key, under its own run's key) neither passes for that
// agent's restart while the run that took the shard beats, nor keeps it
// alive once that run fell silent. A real restart — the old run's process
// gone — loses the shard at once; without that sign, once the new run beat
// restartAfter past the old one's last beat.
func TestAForgedRunDoesNotPassForTheShardsAgent(t *testing.T) {
	p := defaultPlan(t, func(r *contracts.Request) { r.BenchmarkingPods = []int{1} })
	start := func() *State {
		s, _, _ := Start(p, []byte(`{}`), t0, 0)
		j := jobs(runPhase(t, s, jobs(ready(s, 0)), contracts.StatusOK))[0]
		s.Step(Event{Msg: &contracts.BarrierReady{Phase: j.Phase, Shard: 1, Attempt: 1, Agent: "a1", Instance: "run-a1"}, Signer: "run-a1"}, t0)
		return s
	}
	beat := func(instance string, at time.Time) contracts.Heartbeat {
		return contracts.Heartbeat{Name: "a1", Instance: instance, At: at}
	}
	s := start()
	at := t0.Add(4 * time.Second)
	runs := map[string]contracts.Heartbeat{"run-a1": beat("run-a1", t0.Add(3*time.Second)), "run-rogue": beat("run-rogue", at)}
	if out := s.Step(Event{Tick: true, Runs: runs, BeatsAt: at}, at); len(out) != 0 {
		t.Fatalf("a forged run beside the live one: %v", subjects(out))
	}
	// The real run falls silent; the rogue keeps beating under its name:
	// silent, not kept alive.
	at = t0.Add(3*time.Second + contracts.AgentLiveness + time.Second)
	runs["run-rogue"] = beat("run-rogue", at)
	delete(runs, "run-a1")
	runs["run-a1"] = beat("run-a1", t0.Add(3*time.Second))
	out := s.Step(Event{Tick: true, Runs: runs, BeatsAt: at, Vouched: map[string]bool{"run-rogue": true}}, at)
	if len(out) == 0 || !strings.Contains(out[0].Msg.(*contracts.PhaseEvent).Reason, "restarted since it took the shard") &&
		!strings.Contains(out[0].Msg.(*contracts.PhaseEvent).Reason, "silent") {
		t.Fatalf("the shard's run silent, a rogue beating under its name: %v", subjects(out))
	}

	// A real restart: the old run's process is gone (vouch.go) → at once.
	s = start()
	at = t0.Add(4 * time.Second)
	runs = map[string]contracts.Heartbeat{"run-a1": beat("run-a1", t0.Add(3*time.Second)), "run-a1b": beat("run-a1b", at)}
	out = s.Step(Event{Tick: true, Runs: runs, BeatsAt: at, Gone: map[string]bool{"run-a1": true}}, at)
	if len(out) == 0 || !strings.Contains(out[0].Msg.(*contracts.PhaseEvent).Reason, "shard 1 (agent a1 restarted since it took the shard)") {
		t.Fatalf("restart with the old process gone: %v", subjects(out))
	}
	// Without that sign: only once the new run beat restartAfter past the
	// old one's last beat.
	s = start()
	at = t0.Add(3*time.Second + restartAfter)
	runs = map[string]contracts.Heartbeat{"run-a1": beat("run-a1", t0.Add(3*time.Second)), "run-a1b": beat("run-a1b", at)}
	if out := s.Step(Event{Tick: true, Runs: runs, BeatsAt: at}, at); len(out) != 0 {
		t.Fatalf("a new run within restartAfter of the old one's beat: %v", subjects(out))
	}
	at = at.Add(time.Millisecond)
	runs["run-a1b"] = beat("run-a1b", at)
	// ... unless the old run is late but seen working (vouched): a late
	// holder beside another run under its name keeps its shard.
	if out := s.Step(Event{Tick: true, Runs: runs, BeatsAt: at, Vouched: map[string]bool{"run-a1": true}}, at); len(out) != 0 {
		t.Fatalf("a vouched holder, a new run past restartAfter: %v", subjects(out))
	}
	out = s.Step(Event{Tick: true, Runs: runs, BeatsAt: at}, at)
	if len(out) == 0 || !strings.Contains(out[0].Msg.(*contracts.PhaseEvent).Reason, "restarted since it took the shard") {
		t.Fatalf("a new run past restartAfter: %v", subjects(out))
	}
}

// The GO lead follows the slowest delivery agents reported, within its
// bounds; application metrics keep room for the deployer's exporter reads.
func TestGoLeadFollowsTheReportedDelivery(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	s := &State{}
	steps := []struct {
		report *float64
		want   time.Duration
	}{
		{nil, GoLead},                     // no report yet
		{ms(3), MinGoLead},                // 2*3+20 ms, raised to the floor
		{ms(1), MinGoLead},                // a faster one does not lower it
		{ms(-5), MinGoLead},               // a clock behind: ignored
		{ms(math.NaN()), MinGoLead},       // ignored
		{ms(100), 220 * time.Millisecond}, // 2*100+20 ms
		{ms(10_000), MaxGoLead},           // capped
		{ms(1e13), MaxGoLead},             // absurd: capped, not overflowed
		{ms(math.Inf(1)), MaxGoLead},      // ignored
	}
	for i, st := range steps {
		s.noteGoDelay(st.report)
		if got := s.goLead(); got != st.want {
			t.Errorf("step %d: lead %v, want %v", i, got, st.want)
		}
	}
	// Before its own reports, an experiment follows the one before it.
	seeded := &State{SeedGoDelayMS: ms(100)}
	if got := seeded.goLead(); got != 220*time.Millisecond {
		t.Errorf("seeded by the experiment before: lead %v, want 220ms", got)
	}
	seeded.noteGoDelay(ms(3))
	if got := seeded.goLead(); got != MinGoLead {
		t.Errorf("seeded, then its own report: lead %v, want %v", got, MinGoLead)
	}
	app := &State{}
	app.Plan.Settings.Monitoring = &contracts.Monitoring{Application: true}
	app.noteGoDelay(ms(3))
	if got := app.goLead(); got != ExporterGoLead {
		t.Errorf("with -ma: lead %v, want %v", got, ExporterGoLead)
	}
}
