package main

import (
	"encoding/json"
	"math"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/plan"
)

// The scheduler is a pure state machine: Step(state, event, now) returns the
// new state and the messages to publish. run.go does the I/O: load state from
// KV, publish the outputs (deterministic ids, so a re-publish after a crash is
// de-duplicated), store the state, then ack the event.
//
// This file holds the state and the dispatch of events to their handlers;
// the handlers live by concern: admission.go (-ms SUT slots, the SUT's
// lifecycle, benchq stop), phase.go (barrier, shards, phase end and re-run),
// watchdog.go (deadlines and lost agents), drivers.go (driver Jobs).

// The stored state's types are contracts.ExperimentState (benchq status and
// the agents read it too); the machine's behaviour lives here.
const (
	cfgPending   = contracts.ConfigPending
	cfgDeploying = contracts.ConfigDeploying
	cfgRunning   = contracts.ConfigRunning
	cfgTearing   = contracts.ConfigTearingDown
	cfgRemoved   = contracts.ConfigRemoved
	phPreparing  = contracts.PhasePreparing
	phRunning    = contracts.PhaseRunning
)

type (
	ConfigState = contracts.ConfigState
	PhaseState  = contracts.PhaseState
	ShardDone   = contracts.ShardDone
)

// State is one experiment's state with the machine's methods.
type State struct {
	contracts.ExperimentState
	// Busy is the number of SUTs alive in OTHER experiments, set by the
	// caller before Start/Step: -ms bounds SUTs across all experiments.
	Busy int `json:"-"`
	// dirty: a step changed what is stored without publishing anything
	// (a tick that settled lost pods costing nothing), so it must be saved
	// all the same.
	dirty bool
	// Drivers holds, per phase name, the driver.ended event of the current
	// attempt's driver Job (Kubernetes backend) until DriverGrace has
	// passed: then the shards still without a final are settled (drivers.go).
	Drivers map[string]*DriverEnd `json:"drivers,omitempty"`
	// Searches are the configurations' saturation searches (saturation.go),
	// by configuration; empty unless the experiment runs one.
	Searches []Search `json:"searches,omitempty"`
	// GoDelayMS is the slowest GO delivery a shard of this experiment
	// reported, in ms (nil before any): it sets the GO lead (goLead).
	GoDelayMS *float64 `json:"go_delay_ms,omitempty"`
	// SeedGoDelayMS is the slowest GO delivery of the experiment that last
	// reported one when this one was planned (nil: none since the
	// scheduler started): the lead until this experiment's own reports.
	SeedGoDelayMS *float64 `json:"seed_go_delay_ms,omitempty"`
}

// The GO lead: how far ahead of "now" a phase's common start instant is
// set, so that GO reaches every agent before it. The drivers are set up and
// connected before READY, so the lead only has to cover GO's delivery.
// Agents report how long GO took to reach them (contracts.Final.GoDelayMS);
// a phase's lead is twice the slowest delivery seen in the experiment plus
// goLeadMargin, within [MinGoLead, MaxGoLead]. The first phase, before any
// report, follows the delivery of the experiment before it in the same way
// (SeedGoDelayMS), or else takes GoLead. With application metrics (-ma) the
// lead is at least ExporterGoLead: the deployer reads the SUT's exporters
// before the instant (services/deployer/deployer, edges.go): at once when
// phase.started arrives, if 45 ms are left, and again 50 ms before the
// instant when that is later. 60 ms leaves room for the first read (the
// SUT is idle until the instant: one read after the drivers' READY gives
// the counters' start); 150 ms until 2026-11-27 and then 100 ms cost every
// monitored phase 90 and 40 ms more for the second.
const (
	GoLead         = 150 * time.Millisecond
	MinGoLead      = 50 * time.Millisecond
	MaxGoLead      = 500 * time.Millisecond
	ExporterGoLead = 60 * time.Millisecond
	goLeadMargin   = 20 * time.Millisecond
)

// goLead is the lead of the next GO (see GoLead).
func (s *State) goLead() time.Duration {
	lead := GoLead
	delay := s.GoDelayMS
	if delay == nil {
		delay = s.SeedGoDelayMS
	}
	if delay != nil {
		// In float first: an absurd report must not overflow a Duration.
		ms := min(2**delay+float64(goLeadMargin/time.Millisecond), float64(MaxGoLead/time.Millisecond))
		lead = max(time.Duration(ms*float64(time.Millisecond)), MinGoLead)
	}
	if m := s.Plan.Settings.Monitoring; m != nil && m.Application {
		lead = max(lead, ExporterGoLead)
	}
	return lead
}

// noteGoDelay keeps the slowest GO delivery an agent reported.
func (s *State) noteGoDelay(ms *float64) {
	if ms == nil || *ms < 0 || math.IsNaN(*ms) || math.IsInf(*ms, 0) {
		return
	}
	if s.GoDelayMS == nil || *ms > *s.GoDelayMS {
		v := *ms
		s.GoDelayMS = &v
	}
}

// Out is a message to publish.
type Out struct {
	Subject string
	Msg     contracts.Message
}

// Event is anything the machine reacts to. Exactly one field is set.
type Event struct {
	// Msg is the message that happened: *contracts.SUTReady, SUTFailed,
	// SUTRemoved, BarrierReady, Final, Stop, DriverEnded or DriverLost (a
	// phase's driver Job ended or lost a pod, Kubernetes backend); nil for
	// a tick.
	Msg  contracts.Message
	Tick bool
	// PublishedGo is the GO this READY completes, when a step published it
	// and was not stored (the scheduler stopped in between): the replayed
	// step starts the phase at its instant, with its holders, again — not
	// at an instant the agents never heard of, nor with holders the
	// collector was never told.
	PublishedGo *contracts.BarrierGo
	// Runs are the driver agents' runs (instance → its last signed
	// heartbeat, bus.AgentRuns), read for a tick; nil when unknown, which
	// disables the lost-agent check. BeatsAt is when the read began: an
	// agent's silence is judged at that instant, not at the step's, which
	// may come seconds later on a busy machine.
	Runs    map[string]contracts.Heartbeat
	BeatsAt time.Time
	// Vouched are the late runs (by instance) whose process or pod is seen
	// working (the scheduler's voucher, vouch.go): not lost.
	Vouched map[string]bool
	// Gone are the runs (by instance) whose process on this host ended
	// while a newer run beats under their name: restarted (vouch.go).
	Gone map[string]bool
	// Signer is the instance that signed Msg (a READY or a shard's final:
	// contracts/sign.go), checked by the caller; "" for any other message.
	Signer string
	// storedAt is when JetStream stored the event (zero for a tick or a
	// stop): the start of a phase switch, for metrics only.
	storedAt time.Time
}

// Start creates the state of a newly planned experiment and its first outputs.
// busy is the number of SUTs alive in other experiments (see State.Busy).
func Start(p plan.Plan, request []byte, now time.Time, busy int) (*State, []Out, error) {
	planJSON, err := json.Marshal(p)
	if err != nil {
		return nil, nil, err
	}
	s := &State{ExperimentState: contracts.ExperimentState{Code: p.Code, Status: contracts.ExperimentRunning, Plan: p, StartedAt: now.UTC()}, Busy: busy}
	for range p.Configurations {
		s.Configs = append(s.Configs, ConfigState{Status: cfgPending})
	}
	if p.Settings.Saturation != nil {
		s.Searches = make([]Search, len(p.Configurations))
	}
	out := []Out{{
		Subject: contracts.TopicPlanned.For(p.Code),
		Msg:     &contracts.Planned{Envelope: env(p.Code, contracts.PlannedID(p.Code), now), Request: request, Plan: planJSON},
	}}
	out = append(out, s.advance(now)...)
	return s, out, nil
}

// Step applies one event.
func (s *State) Step(ev Event, now time.Time) []Out {
	if s.Status != contracts.ExperimentRunning {
		return nil
	}
	var out []Out
	switch m := ev.Msg.(type) {
	case *contracts.SUTReady:
		out = s.onSUTReady(m, now)
	case *contracts.SUTFailed:
		out = s.onSUTFailed(m, now)
	case *contracts.SUTRemoved:
		out = s.onSUTRemoved(m, now)
	case *contracts.BarrierReady:
		out = s.onReady(m, now, ev.PublishedGo)
	case *contracts.Final:
		out = s.onFinal(m, now, ev.Signer)
	case *contracts.Stop:
		out = s.onStop(m, now)
	case *contracts.DriverEnded:
		out = s.onDriverEnded(m, now)
	case *contracts.DriverLost:
		out = s.onDriverLost(m, now)
	case nil:
		if ev.Tick {
			beatsAt := ev.BeatsAt
			if beatsAt.IsZero() || beatsAt.After(now) {
				beatsAt = now
			}
			out = s.onTick(now, ev.Runs, beatsAt, ev.Vouched, ev.Gone)
		}
	}
	return append(out, s.advance(now)...)
}

// Early reports whether ev answers an output whose state change is not
// stored yet: outputs are published before the state is saved, so an agent's
// READY (or the deployer's sut.ready) can overtake it, and a save can fail.
// Such an event must be redelivered, not dropped as stale.
func (s *State) Early(ev Event) bool {
	if s.Status != contracts.ExperimentRunning {
		return false
	}
	cfgStatus := func(name string) string {
		if i, ok := s.config(name); ok {
			return s.Configs[i].Status
		}
		return ""
	}
	phaseAhead := func(phase string, attempt int) bool {
		for i, pc := range s.Plan.Configurations {
			for p, ph := range pc.Phases {
				if ph.Name != phase {
					continue
				}
				c := s.Configs[i]
				switch {
				case c.Status == cfgPending || c.Status == cfgDeploying:
					return true
				case c.Status != cfgRunning:
					return false
				case p > c.Phase:
					return true
				case p == c.Phase:
					return c.Current == nil || attempt > c.Current.Attempt
				}
				return false
			}
		}
		return false
	}
	// The next generation's SUT (a loading run again) answers a deploy
	// the stored state has not asked for yet.
	nextGeneration := func(name, id string, answer func(string) string) bool {
		i, ok := s.config(name)
		return ok && s.Configs[i].Status == cfgTearing && s.Configs[i].ReloadAttempt > 0 &&
			id == answer(contracts.DeployIDAt(s.Code, name, s.Configs[i].Generation+1))
	}
	switch m := ev.Msg.(type) {
	case *contracts.SUTReady:
		return cfgStatus(m.Configuration) == cfgPending || nextGeneration(m.Configuration, m.ID, contracts.SUTReadyID)
	case *contracts.SUTFailed:
		return cfgStatus(m.Configuration) == cfgPending || nextGeneration(m.Configuration, m.ID, contracts.SUTFailedID)
	case *contracts.SUTRemoved:
		st := cfgStatus(m.Configuration)
		if i, ok := s.config(m.Configuration); ok && s.Configs[i].Generation > 0 &&
			m.ID != contracts.SUTRemovedID(contracts.TeardownIDAt(s.Code, m.Configuration, s.Configs[i].Generation)) {
			return false // an earlier generation's: stale, not early
		}
		return st == cfgPending || st == cfgDeploying || st == cfgRunning
	case *contracts.BarrierReady:
		return phaseAhead(m.Phase, m.Attempt)
	case *contracts.Final:
		return phaseAhead(m.Phase, m.Attempt)
	case *contracts.DriverEnded:
		return phaseAhead(m.Phase, m.Attempt)
	case *contracts.DriverLost:
		return phaseAhead(m.Phase, m.Attempt)
	}
	return false
}

func (s *State) config(name string) (int, bool) {
	for i, c := range s.Plan.Configurations {
		if c.Name == name {
			return i, true
		}
	}
	return 0, false
}

func (s *State) current(phase string, attempt int) (int, *PhaseState, bool) {
	for i, c := range s.Configs {
		if c.Current == nil || c.Status != cfgRunning {
			continue
		}
		if s.Plan.Configurations[i].Phases[c.Phase].Name == phase && c.Current.Attempt == attempt {
			return i, c.Current, true
		}
	}
	return 0, nil, false
}

func (s *State) fail(reason string) {
	s.Failures = append(s.Failures, reason)
}

func env(code, id string, now time.Time) contracts.Envelope {
	return contracts.NewEnvelope(code, id, now)
}

func secs(n int) time.Duration { return time.Duration(n) * time.Second }
