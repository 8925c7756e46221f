package main

import (
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
	s, out, err := Start(defaultPlan(t, nil), []byte(`{}`), t0)
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
	s, _, _ := Start(defaultPlan(t, nil), []byte(`{}`), t0)
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
	s, _, _ := Start(defaultPlan(t, nil), []byte(`{}`), t0)
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
	_, out, _ := Start(p, []byte(`{}`), t0)
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
	s, _, _ := Start(p, []byte(`{}`), t0)
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
