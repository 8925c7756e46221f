package main

import (
	"encoding/json"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/benchq/benchq/contracts"
)

// The tick steps an experiment only when it has a SUT or a slot is free for
// it; busy counts the other experiments' SUTs; an ended or refused state
// leaves the cache.
func TestStatesTellTheTickWhatToStep(t *testing.T) {
	p := defaultPlan(t, func(r *contracts.Request) { r.MaxSUTs = intp(1) })
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	s := newStates()
	put := func(code string, st *State) {
		st.Code, st.RequestID = code, "r-"+code
		data, _ := json.Marshal(st)
		s.remember(st, data, 1)
	}

	a, _, err := Start(p, []byte(`{}`), t0, 0) // deploys its one configuration
	if err != nil {
		t.Fatal(err)
	}
	put("a", a)
	b, _, _ := Start(p, []byte(`{}`), t0.Add(time.Second), s.busyExcept("b")) // queued behind a (-ms 1)
	put("b", b)
	if b.Alive() != 0 || s.alive != 1 || s.busyExcept("b") != 1 || s.busyExcept("a") != 0 {
		t.Fatalf("alive %d, busy for b %d, for a %d; b alive %d", s.alive, s.busyExcept("b"), s.busyExcept("a"), b.Alive())
	}
	if !s.due("a") || s.due("b") {
		t.Errorf("due: a %v (has a SUT), b %v (queued, no free slot)", s.due("a"), s.due("b"))
	}
	// What the intake asks before it plans a request.
	if r, known := s.requestOf("b"); !known || r != "r-b" {
		t.Errorf("b's request: %q, %v", r, known)
	}
	if _, known := s.requestOf("c"); known {
		t.Error("c is known before it was stored")
	}
	// A queued experiment keeps no state in memory: it is read when due.
	if s.byCode["a"].data == nil || s.byCode["b"].data != nil {
		t.Errorf("data kept: a (running) %d bytes, b (queued) %d bytes", len(s.byCode["a"].data), len(s.byCode["b"].data))
	}

	// a's SUT is removed: b may take the slot.
	a.Configs[0].Status = cfgRemoved
	put("a", a)
	if s.alive != 0 || s.due("a") || !s.due("b") {
		t.Errorf("after a's SUT went: alive %d, due a %v, due b %v", s.alive, s.due("a"), s.due("b"))
	}

	// a ends: forgotten, and its code is never stepped again.
	a.Status = contracts.ExperimentDone
	put("a", a)
	if _, ok := s.byCode["a"]; ok || s.due("a") {
		t.Errorf("an ended experiment stays: %+v", s.byCode["a"])
	}
	if r, known := s.requestOf("a"); !known || r != "r-a" {
		t.Errorf("an ended experiment's code is free again: %q, %v", r, known)
	}

	// A refused write forgets b (and its SUTs) until it is read again.
	b.Configs[0].Status = cfgDeploying
	put("b", b)
	if s.alive != 1 {
		t.Fatalf("alive %d, want b's 1", s.alive)
	}
	s.forget("b")
	if s.alive != 0 || s.due("b") || !s.doubt["b"] {
		t.Errorf("after forget: alive %d, due %v, in doubt %v", s.alive, s.due("b"), s.doubt["b"])
	}
	// Read again: b keeps its one place in the queue (a tick steps it once).
	put("b", b)
	n := 0
	for _, code := range s.order {
		if code == "b" {
			n++
		}
	}
	if n != 1 || s.doubt["b"] {
		t.Errorf("b is %d times in order %v after forget and remember; in doubt %v", n, s.order, s.doubt["b"])
	}
}

func TestStatesCompactEndedCodes(t *testing.T) {
	p := defaultPlan(t, nil)
	s := newStates()
	for i := range 200 {
		st, _, _ := Start(p, []byte(`{}`), time.Unix(int64(i), 0), 0)
		st.Code = "c" + string(rune('a'+i%26)) + time.Unix(int64(i), 0).Format("150405")
		s.remember(st, nil, 1)
		st.Status = contracts.ExperimentDone
		s.remember(st, nil, 2)
	}
	if len(s.order) >= 64 || len(s.byCode) != 0 {
		t.Errorf("order keeps %d codes of ended experiments (%d running)", len(s.order), len(s.byCode))
	}
}

// The queue is looked at only when a slot is free for some experiment in it.
func TestStatesSlotFree(t *testing.T) {
	s := newStates()
	p := defaultPlan(t, func(r *contracts.Request) { r.MaxSUTs = intp(2) })
	holder, _, _ := Start(p, []byte(`{}`), time.Unix(0, 0), 0) // deploys its one configuration
	holder.Code = "h"
	s.remember(holder, nil, 1)
	if s.slotFree() || len(s.active) != 1 {
		t.Fatalf("no one waits: slotFree %v, active %v", s.slotFree(), s.active)
	}
	one := defaultPlan(t, func(r *contracts.Request) { r.MaxSUTs = intp(1) })
	q, _, _ := Start(one, []byte(`{}`), time.Unix(1, 0), s.busyExcept("q")) // queued: 1 alive, -ms 1
	q.Code = "q"
	s.remember(q, nil, 1)
	if s.slotFree() || s.waiting[1] != 1 {
		t.Errorf("-ms 1 behind 1 SUT: slotFree %v, waiting %v", s.slotFree(), s.waiting)
	}
	q2, _, _ := Start(p, []byte(`{}`), time.Unix(2, 0), 1) // -ms 2: one slot of two is free, but Start admitted it
	q2.Code = "q2"
	q2.Configs[0].Status = cfgPending // as if it had been queued
	s.remember(q2, nil, 1)
	if !s.slotFree() {
		t.Errorf("-ms 2 behind 1 SUT: no free slot seen (waiting %v, alive %d)", s.waiting, s.alive)
	}
	s.forget("q2")
	holder.Configs[0].Status = cfgRemoved
	s.remember(holder, nil, 2)
	if !s.slotFree() || len(s.active) != 0 {
		t.Errorf("the holder's SUT went: slotFree %v, active %v", s.slotFree(), s.active)
	}
}

// BenchmarkQueuedExperimentMemory measures the live heap one queued
// experiment costs the scheduler (its states and metrics entries), after a
// collection: make bench-intake prints it beside the resident-memory figure,
// which also holds the garbage of a burst of requests.
func BenchmarkQueuedExperimentMemory(b *testing.B) {
	p := defaultPlan(b, func(r *contracts.Request) { r.MaxSUTs = intp(1) })
	s := &Scheduler{states: newStates(), metrics: newMetrics(prometheus.NewRegistry())}
	hold, _, _ := Start(p, []byte(`{}`), time.Now(), 0)
	hold.Code = "hold"
	data, _ := json.Marshal(hold)
	s.track(hold, data, 1)
	request := []byte(`{"schema_version":1,"dbms":["Redis"],"sf":0.001,"max_suts":1}`)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < b.N; i++ {
		st, _, _ := Start(p, request, time.Now(), 1)
		st.Code = contracts.Code(time.Now(), strconv.Itoa(i+1))
		st.RequestID = contracts.RequestIDFallback(uint64(i + 1))
		data, _ := json.Marshal(st)
		s.track(st, data, uint64(i+2))
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	if s.states.waiting[1] != b.N {
		b.Fatalf("%d queued, want %d", s.states.waiting[1], b.N)
	}
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "B/queued")
	runtime.KeepAlive(s)
}
