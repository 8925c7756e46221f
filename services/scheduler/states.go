package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
)

// The running experiments' states, as the scheduler last wrote them to the
// benchq_experiments bucket (or read them at start). The scheduler is the
// bucket's only writer, so what it wrote is what is stored: an event or a
// tick decodes the state from here instead of reading the bucket, and a
// tick looks only at the experiments that have something to check. Every
// write is still a compare-and-set on the revision; one that fails (another
// writer) drops the entry, and the next step reads the bucket.

// cached is one running experiment's stored state and what the tick needs
// to know of it without decoding it. A queued experiment (configurations
// pending, no SUT alive) keeps no data: nothing happens to it until a slot
// frees, and then one read of the bucket costs less than holding its plan
// in memory while thousands wait (docs/bench.md, bench-intake).
type cached struct {
	data      []byte // nil: read the bucket
	rev       uint64
	request   string // the request's id (a redelivery is known by it)
	startedAt time.Time
	alive     int  // SUTs deploying, running or tearing down
	pending   bool // configurations waiting to be deployed
	maxSUTs   int  // its -ms
}

type states struct {
	byCode map[string]*cached
	order  []string        // codes, oldest first (may name ended ones: skipped)
	listed map[string]bool // the codes in order, each listed once
	// doubt are the codes whose stored state the scheduler may not know:
	// a write of it was refused, or it could not be read at start. Before
	// such a code is taken for a new experiment, the bucket is asked.
	doubt map[string]bool
	alive int               // SUTs alive in all running experiments (sum of cached.alive)
	ended map[string]string // code → request id of the experiments that ended
	// active are the experiments with a SUT; waiting counts those queued
	// for one (pending, none alive) by their -ms: a tick looks at the queue
	// only when a slot is free for one of them.
	active  map[string]bool
	waiting map[int]int
}

func newStates() *states {
	return &states{byCode: map[string]*cached{}, listed: map[string]bool{}, doubt: map[string]bool{}, ended: map[string]string{},
		active: map[string]bool{}, waiting: map[int]int{}}
}

// count adds (sign 1) or removes (-1) c's share of the running sums.
func (s *states) count(code string, c *cached, sign int) {
	s.alive += sign * c.alive
	switch {
	case c.alive > 0 && sign > 0:
		s.active[code] = true
	case c.alive > 0:
		delete(s.active, code)
	case c.pending:
		if s.waiting[c.maxSUTs] += sign; s.waiting[c.maxSUTs] == 0 {
			delete(s.waiting, c.maxSUTs)
		}
	}
}

// slotFree says whether some queued experiment may deploy now: fewer SUTs
// are alive than the largest -ms among them.
func (s *states) slotFree() bool {
	for ms := range s.waiting {
		if s.alive < ms {
			return true
		}
	}
	return false
}

// remember records what was stored for st at revision rev, or forgets st
// once it ended.
func (s *states) remember(st *State, data []byte, rev uint64) {
	if old := s.byCode[st.Code]; old != nil {
		s.count(st.Code, old, -1)
	}
	delete(s.doubt, st.Code)
	if st.Status != contracts.ExperimentRunning {
		delete(s.byCode, st.Code)
		s.ended[st.Code] = st.RequestID
		s.compact()
		return
	}
	c := &cached{rev: rev, request: st.RequestID, startedAt: st.StartedAt, alive: st.Alive(), maxSUTs: maxSUTs(st.Plan.Settings)}
	for _, cfg := range st.Configs {
		c.pending = c.pending || cfg.Status == cfgPending
	}
	if c.alive > 0 || !c.pending {
		c.data = data
	}
	if !s.listed[st.Code] {
		s.order = append(s.order, st.Code)
		s.listed[st.Code] = true
	}
	s.byCode[st.Code] = c
	s.count(st.Code, c, 1)
}

// forget drops an experiment whose stored state may differ from ours (a
// write refused, a state unreadable): the next step reads the bucket, and
// so does a request that asks for its code (Scheduler.recheck). It stays
// in order, so it keeps its place in the queue.
func (s *states) forget(code string) {
	if old := s.byCode[code]; old != nil {
		s.count(code, old, -1)
		delete(s.byCode, code)
	}
	s.doubt[code] = true
}

// requestOf says whether the scheduler knows experiment code (running or
// ended: it read the whole bucket at start and is its only writer) and the
// id of the request that made it. A code in doubt must be rechecked first.
func (s *states) requestOf(code string) (request string, known bool) {
	if c := s.byCode[code]; c != nil {
		return c.request, true
	}
	request, known = s.ended[code]
	return request, known
}

// busyExcept is the number of SUTs alive in experiments other than code.
func (s *states) busyExcept(code string) int {
	n := s.alive
	if c := s.byCode[code]; c != nil {
		n -= c.alive
	}
	return n
}

// due says whether a tick must step the experiment: it has a SUT (deadlines,
// its agents' liveness, its phases), or waits for one and a slot is free
// under its -ms. A queued experiment costs a tick nothing else.
func (s *states) due(code string) bool {
	c := s.byCode[code]
	return c != nil && (c.alive > 0 || (c.pending && s.alive < c.maxSUTs))
}

// compact drops ended codes from order once they are most of it.
func (s *states) compact() {
	if len(s.order) < 64 || len(s.order) < 2*len(s.byCode) {
		return
	}
	live := s.order[:0]
	for _, code := range s.order {
		if s.byCode[code] != nil || s.doubt[code] {
			live = append(live, code)
		} else {
			delete(s.listed, code)
		}
	}
	s.order = live
}

// load returns an experiment's state: what the scheduler stored, or else
// the bucket's. found is false only when the key does not exist; any other
// failure is an error, so the caller's event is redelivered instead of
// being dropped as "unknown".
func (s *Scheduler) load(ctx context.Context, code string) (st stored, found bool, err error) {
	if c := s.states.byCode[code]; c != nil && c.data != nil {
		var state State
		if err := json.Unmarshal(c.data, &state); err != nil {
			return stored{}, false, fmt.Errorf("state of %s: %w", code, err)
		}
		return stored{state: &state, rev: c.rev}, true, nil
	}
	e, err := s.kv.Get(ctx, code)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return stored{}, false, nil
	}
	if err != nil {
		return stored{}, false, fmt.Errorf("read state of %s: %w", code, err)
	}
	var state State
	if err := json.Unmarshal(e.Value(), &state); err != nil {
		return stored{}, false, bus.Permanent(fmt.Errorf("corrupt state of %s: %w", code, err))
	}
	s.track(&state, e.Value(), e.Revision())
	return stored{state: &state, rev: e.Revision()}, true, nil
}

// recheck asks the bucket about a code in doubt (states.forget) before a
// request may take it: a state found there is tracked, so requestOf knows
// it; one that cannot be decoded holds its code for an unknown request. An
// error leaves the code in doubt, and the request is redelivered.
func (s *Scheduler) recheck(ctx context.Context, code string) error {
	if !s.states.doubt[code] {
		return nil
	}
	e, err := s.kv.Get(ctx, code)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		delete(s.states.doubt, code) // free: the scheduler is the bucket's only writer
		return nil
	}
	if err != nil {
		return fmt.Errorf("read state of %s: %w", code, err)
	}
	var state State
	if err := json.Unmarshal(e.Value(), &state); err != nil {
		s.log.Warn("state unreadable: its code stays taken", "code", code, "err", err)
		s.states.ended[code] = ""
		delete(s.states.doubt, code)
		return nil
	}
	s.track(&state, e.Value(), e.Revision())
	return nil
}

// recoverStates reads every experiment that has not ended from the bucket,
// once, at start: the experiments a restarted scheduler carries on.
func (s *Scheduler) recoverStates(ctx context.Context) error {
	keys, err := s.kv.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var codes []string
	for k := range keys.Keys() {
		codes = append(codes, k)
	}
	for _, code := range codes {
		if _, _, err := s.load(ctx, code); err != nil {
			s.log.Warn("state unreadable", "code", code, "err", err)
			s.states.forget(code) // a request for this code asks the bucket again
		}
	}
	// Oldest first: the oldest waiting experiment gets a freed slot first.
	sort.SliceStable(s.states.order, func(i, j int) bool {
		a, b := s.states.byCode[s.states.order[i]], s.states.byCode[s.states.order[j]]
		return a != nil && b != nil && a.startedAt.Before(b.startedAt)
	})
	return nil
}

// tick steps the running experiments that have deadlines, agents or a
// phase to check, and those waiting for a SUT slot while one is free (see
// states.due), oldest first. With no slot free, the queue costs nothing.
func (s *Scheduler) tick(ctx context.Context) error {
	beatsAt := s.now()
	runs := s.agentRuns(ctx)
	var vouched, gone map[string]bool
	if runs != nil {
		vouched = s.voucher.vouch(ctx, runs, beatsAt)
		for instance := range vouched {
			if hb := runs[instance]; !hb.Live(beatsAt) {
				s.log.Info("agent late, but its process or pod still runs: not lost", "agent", hb.Name, "instance", contracts.ShortKey(instance),
					"silent_s", beatsAt.Sub(hb.At).Seconds(), "host", hb.Host, "pid", hb.Pid)
			}
		}
		gone = s.voucher.gone(runs)
	}
	s.mu.Lock()
	var codes []string
	if s.states.slotFree() {
		codes = append(codes, s.states.order...) // oldest first: the oldest gets the slot
	} else {
		for code := range s.states.active {
			codes = append(codes, code)
		}
	}
	s.mu.Unlock()
	for _, code := range codes {
		s.mu.Lock()
		if s.states.due(code) {
			if err := s.step(ctx, code, Event{Tick: true, Runs: runs, BeatsAt: beatsAt, Vouched: vouched, Gone: gone}); err != nil {
				s.log.Warn("tick step failed", "code", code, "err", err)
			}
		}
		s.mu.Unlock()
	}
	return nil
}
