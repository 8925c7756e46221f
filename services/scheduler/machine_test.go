package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/plan"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func defaultPlan(t *testing.T, mutate func(*contracts.Request)) plan.Plan {
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

func final(j *contracts.ShardJob, status string) Event {
	return Event{Final: &contracts.Final{Phase: j.Phase, Shard: j.Shard, Attempt: j.Attempt, Status: status,
		StartedAt: t0.Add(time.Second), EndedAt: t0.Add(time.Duration(2+j.Shard) * time.Second)}}
}

// runPhase answers READY for every job, expects GO + started, then finals.
func runPhase(t *testing.T, s *State, js []*contracts.ShardJob, status string) []Out {
	t.Helper()
	var out []Out
	for i, j := range js {
		out = s.Step(Event{Ready: &contracts.BarrierReady{Phase: j.Phase, Shard: j.Shard, Attempt: j.Attempt}}, t0)
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
	out = s.Step(Event{SUTReady: &contracts.SUTReady{Configuration: "Redis-8-2-16384-1", Endpoint: contracts.Endpoint{Host: "127.0.0.1", Port: 7000}}}, t0)
	load := jobs(out)
	if len(load) != 2 || load[1].YCSB.InsertStart != 50000 || load[1].Endpoint.Port != 7000 || load[0].ID == load[1].ID {
		t.Fatalf("load jobs: %+v", load)
	}
	// A duplicate sut.ready (redelivery) changes nothing.
	if again := s.Step(Event{SUTReady: &contracts.SUTReady{Configuration: "Redis-8-2-16384-1"}}, t0); len(again) != 0 {
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
	out = s.Step(Event{SUTRemoved: &contracts.SUTRemoved{Configuration: "Redis-8-2-16384-1"}}, t0)
	if got := subjects(out); len(got) != 1 || got[0] != "benchq.exp.17.done" || s.Status != "done" {
		t.Fatalf("end: %v (%s)", got, s.Status)
	}
}

func TestShardNeverReadyFailsPhaseNamingIt(t *testing.T) {
	s, _, _ := Start(defaultPlan(t, nil), []byte(`{}`), t0, 0)
	out := s.Step(Event{SUTReady: &contracts.SUTReady{Configuration: "Redis-8-2-16384-1", Endpoint: contracts.Endpoint{Host: "h", Port: 1}}}, t0)
	j := jobs(out)
	s.Step(Event{Ready: &contracts.BarrierReady{Phase: j[0].Phase, Shard: 1, Attempt: 1}}, t0)
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
	out = s.Step(Event{SUTRemoved: &contracts.SUTRemoved{Configuration: "Redis-8-2-16384-1"}}, t0)
	if s.Status != "failed" || out[0].Subject != "benchq.exp.17.failed" {
		t.Errorf("experiment %s", s.Status)
	}
}

func TestSUTFailureEndsExperiment(t *testing.T) {
	s, _, _ := Start(defaultPlan(t, nil), []byte(`{}`), t0, 0)
	out := s.Step(Event{SUTFailed: &contracts.SUTFailed{Configuration: "Redis-8-2-16384-1", Reason: "no PING"}}, t0)
	if got := subjects(out); len(got) != 1 || got[0] != "benchq.jobs.teardown" {
		t.Fatalf("%v", got)
	}
	s.Step(Event{SUTRemoved: &contracts.SUTRemoved{Configuration: "Redis-8-2-16384-1"}}, t0)
	if s.Status != "failed" || !strings.Contains(strings.Join(s.Failures, ""), "no PING") {
		t.Errorf("%s %v", s.Status, s.Failures)
	}
}

// -ms bounds the SUTs alive at once.
func TestMaxSUTs(t *testing.T) {
	p := defaultPlan(t, func(r *contracts.Request) { r.Repetitions = 3; r.MaxSUTs = 2 })
	_, out, _ := Start(p, []byte(`{}`), t0, 0)
	deploys := 0
	for _, o := range out {
		if o.Subject == contracts.SubjDeploy {
			deploys++
		}
	}
	if deploys != 2 {
		t.Errorf("%d deploys at start, want 2", deploys)
	}
}

// Events answering outputs whose state is not stored yet are "early" (and
// redelivered); events about the past are not (and are dropped as stale).
func TestEarlyEvents(t *testing.T) {
	p := defaultPlan(t, nil)
	s, _, _ := Start(p, []byte(`{}`), t0, 0)
	before := *s // as stored before sut.ready's step
	before.Configs = append([]ConfigState(nil), s.Configs...)
	s.Step(Event{SUTReady: &contracts.SUTReady{Configuration: "Redis-8-2-16384-1", Endpoint: contracts.Endpoint{Host: "h", Port: 1}}}, t0)
	load, run := p.Configurations[0].Phases[0].Name, p.Configurations[0].Phases[1].Name
	cases := []struct {
		name  string
		state *State
		ev    Event
		early bool
	}{
		{"READY for the phase the unsaved step started", &before, Event{Ready: &contracts.BarrierReady{Phase: load, Shard: 1, Attempt: 1}}, true},
		{"READY for the current phase", s, Event{Ready: &contracts.BarrierReady{Phase: load, Shard: 1, Attempt: 1}}, false},
		{"READY for a later phase", s, Event{Ready: &contracts.BarrierReady{Phase: run, Shard: 1, Attempt: 1}}, true},
		{"READY for a later attempt", s, Event{Ready: &contracts.BarrierReady{Phase: load, Shard: 1, Attempt: 2}}, true},
		{"final of an unknown phase", s, Event{Final: &contracts.Final{Phase: "nope", Shard: 1, Attempt: 1}}, false},
		{"sut.removed of a running SUT", s, Event{SUTRemoved: &contracts.SUTRemoved{Configuration: "Redis-8-2-16384-1"}}, true},
	}
	for _, c := range cases {
		if got := c.state.Early(c.ev); got != c.early {
			t.Errorf("%s: early = %v, want %v", c.name, got, c.early)
		}
	}
}

// ready answers sut.ready for configuration i of s's plan.
func ready(s *State, i int) []Out {
	return s.Step(Event{SUTReady: &contracts.SUTReady{Configuration: s.Plan.Configurations[i].Name, Endpoint: contracts.Endpoint{Host: "h", Port: 1}}}, t0)
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
	p := defaultPlan(t, func(r *contracts.Request) { r.MaxSUTs = 1 })
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
	s.Step(Event{Ready: &contracts.BarrierReady{Phase: load[0].Phase, Shard: 1, Attempt: 1, Agent: "a1"}}, t0)
	out := s.Step(Event{Stop: &contracts.Stop{Reason: "wrong -xtb"}}, t0)
	if got := strings.Join(subjects(out), " "); got != "benchq.exp.17.phase.failed benchq.jobs.teardown" {
		t.Fatalf("stop: %s", got)
	}
	if r := out[0].Msg.(*contracts.PhaseEvent).Reason; r != "cancelled by benchq stop: wrong -xtb" {
		t.Errorf("reason %q", r)
	}
	if again := s.Step(Event{Stop: &contracts.Stop{}}, t0); len(again) != 0 {
		t.Errorf("second stop: %v", subjects(again))
	}
	// A late final of the aborted phase changes nothing.
	if late := s.Step(final(load[1], contracts.StatusFailed), t0); len(late) != 0 {
		t.Errorf("late final: %v", subjects(late))
	}
	out = s.Step(Event{SUTRemoved: &contracts.SUTRemoved{Configuration: p.Configurations[0].Name}}, t0)
	if s.Status != contracts.ExperimentCancelled || len(out) != 1 || out[0].Subject != "benchq.exp.17.cancelled" {
		t.Fatalf("end: %s %v", s.Status, subjects(out))
	}
	if s.Configs[1].Status != cfgRemoved {
		t.Errorf("the second repetition was %s, want never deployed", s.Configs[1].Status)
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
		s.Step(Event{Ready: &contracts.BarrierReady{Phase: j.Phase, Shard: j.Shard, Attempt: 1, Agent: fmt.Sprintf("a%d", k+1)}}, t0)
	}
	beats := map[string]time.Time{"a1": t0, "a2": t0}
	if out := s.Step(Event{Tick: true, Heartbeats: beats}, t0.Add(10*time.Second)); len(out) != 0 {
		t.Fatalf("both agents alive: %v", subjects(out))
	}
	beats["a1"] = t0.Add(20 * time.Second) // a2 silent for 20 s
	out = s.Step(Event{Tick: true, Heartbeats: beats}, t0.Add(20*time.Second))
	if got := strings.Join(subjects(out), " "); got != "benchq.exp.17.phase.failed benchq.jobs.shard benchq.jobs.shard" {
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
		s.Step(Event{Ready: &contracts.BarrierReady{Phase: j.Phase, Shard: j.Shard, Attempt: 2, Agent: "a1"}}, t0)
	}
	delete(beats, "a1") // the TTL dropped it
	out = s.Step(Event{Tick: true, Heartbeats: beats}, t0.Add(40*time.Second))
	if got := strings.Join(subjects(out), " "); got != "benchq.exp.17.phase.failed benchq.jobs.teardown" {
		t.Fatalf("second loss: %s", got)
	}
	// Unknown heartbeats (bucket unreadable) never count as lost.
	s2, _, _ := Start(p, []byte(`{}`), t0, 0)
	for _, j := range jobs(ready(s2, 0)) {
		s2.Step(Event{Ready: &contracts.BarrierReady{Phase: j.Phase, Shard: j.Shard, Attempt: 1, Agent: "gone"}}, t0)
	}
	if out := s2.Step(Event{Tick: true}, t0.Add(30*time.Second)); len(out) != 0 {
		t.Errorf("nil heartbeats: %v", subjects(out))
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
}

// Action start deploys and holds the SUT until stop.
func TestActionStartHoldsTheSUT(t *testing.T) {
	p := defaultPlan(t, func(r *contracts.Request) { r.Action = contracts.ActionStart })
	s, _, _ := Start(p, []byte(`{}`), t0, 0)
	if out := ready(s, 0); len(out) != 0 {
		t.Fatalf("after ready: %v", subjects(out))
	}
	if out := s.Step(Event{Tick: true, Heartbeats: map[string]time.Time{}}, t0.Add(time.Hour)); len(out) != 0 || s.Configs[0].Status != cfgRunning {
		t.Fatalf("held SUT: %v %s", subjects(out), s.Configs[0].Status)
	}
	if out := s.Step(Event{Stop: &contracts.Stop{}}, t0); strings.Join(subjects(out), " ") != "benchq.jobs.teardown" {
		t.Fatalf("stop: %v", subjects(out))
	}
}

// A SUT whose persistent volume already holds the data set skips loading
// (bexhoma's "Database is persisted to disk"); a SUT whose loading filled
// its volume says so with its teardown, so the backend can record it.
func TestPersistedVolumes(t *testing.T) {
	p := defaultPlan(t, nil)
	s, _, _ := Start(p, []byte(`{}`), t0, 0)
	out := s.Step(Event{SUTReady: &contracts.SUTReady{Configuration: p.Configurations[0].Name, Endpoint: contracts.Endpoint{Host: "h", Port: 1},
		Info: map[string]any{"volume": "bq-redis-ycsb-0-1", "volume_loaded": true, "volume_loaded_by": "42"}}}, t0)
	if got := strings.Join(subjects(out), " "); got != "benchq.exp.17.phase.skipped benchq.jobs.shard" {
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
	out = s.Step(Event{SUTReady: &contracts.SUTReady{Configuration: p.Configurations[0].Name, Endpoint: contracts.Endpoint{Host: "h", Port: 1},
		Info: map[string]any{"volume": "bq-redis-ycsb-0-1", "volume_loaded": false}}}, t0)
	out = runPhase(t, s, jobs(out), contracts.StatusOK) // load: shards 1 s … 4 s
	out = runPhase(t, s, jobs(out), contracts.StatusOK)
	td := out[len(out)-1].Msg.(*contracts.Teardown)
	if td.Loaded == nil || td.Loaded.Volume != "bq-redis-ycsb-0-1" || td.Loaded.LoadingTimeS != 3 || td.Loaded.By != "17" {
		t.Errorf("teardown %+v", td.Loaded)
	}
}
