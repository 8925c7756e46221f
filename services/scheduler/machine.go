package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/expstate"
	"github.com/benchq/benchq/internal/plan"
)

// The scheduler is a pure state machine: Step(state, event, now) returns the
// new state and the messages to publish. run.go does the I/O: load state from
// KV, publish the outputs (deterministic ids, so a re-publish after a crash is
// de-duplicated), store the state, then ack the event.

// The stored state's types live in internal/expstate (benchq status reads
// them too); the machine's behaviour lives here.
const (
	cfgPending   = expstate.ConfigPending
	cfgDeploying = expstate.ConfigDeploying
	cfgRunning   = expstate.ConfigRunning
	cfgTearing   = expstate.ConfigTearingDown
	cfgRemoved   = expstate.ConfigRemoved
	phPreparing  = expstate.PhasePreparing
	phRunning    = expstate.PhaseRunning
)

type (
	ConfigState = expstate.Config
	PhaseState  = expstate.Phase
	ShardDone   = expstate.ShardDone
)

// State is one experiment's state with the machine's methods.
type State struct {
	expstate.State
	// Busy is the number of SUTs alive in OTHER experiments, set by the
	// caller before Start/Step: -ms bounds SUTs across all experiments.
	Busy int `json:"-"`
	// Drivers holds, per phase name, the driver.ended event of the current
	// attempt's driver Job (Kubernetes backend) until DriverGrace has
	// passed: then the shards still without a final are settled (drivers.go).
	Drivers map[string]*DriverEnd `json:"drivers,omitempty"`
}

// GoLead is how far ahead of "now" the common start time is set, so every
// agent receives GO before the start instant.
const GoLead = 500 * time.Millisecond

// Out is a message to publish.
type Out struct {
	Subject string
	Msg     contracts.Message
}

// Event is anything the machine reacts to. Exactly one field is set.
type Event struct {
	SUTReady   *contracts.SUTReady
	SUTFailed  *contracts.SUTFailed
	SUTRemoved *contracts.SUTRemoved
	Ready      *contracts.BarrierReady
	Final      *contracts.Final
	Stop       *contracts.Stop
	// DriverEnded: a phase's driver Job ended (Kubernetes backend).
	DriverEnded *contracts.DriverEnded
	Tick        bool
	// Heartbeats of the driver agents (name → last beat), read for a tick;
	// nil when unknown, which disables the lost-agent check.
	Heartbeats map[string]time.Time
}

// MaxAttempts bounds how often a benchmarking phase runs when it loses a
// shard's agent: the second attempt is marked as a re-run in the summary.
const MaxAttempts = 2

// AgentLost is how long an agent may stay silent before its shards count
// as lost.
const AgentLost = contracts.AgentLiveness

// Start creates the state of a newly planned experiment and its first outputs.
// busy is the number of SUTs alive in other experiments (see State.Busy).
func Start(p plan.Plan, request []byte, now time.Time, busy int) (*State, []Out, error) {
	planJSON, err := json.Marshal(p)
	if err != nil {
		return nil, nil, err
	}
	s := &State{State: expstate.State{Code: p.Code, Status: expstate.StatusRunning, Plan: p, StartedAt: now.UTC()}, Busy: busy}
	for range p.Configurations {
		s.Configs = append(s.Configs, ConfigState{Status: cfgPending})
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
	if s.Status != expstate.StatusRunning {
		return nil
	}
	var out []Out
	switch {
	case ev.SUTReady != nil:
		out = s.onSUTReady(ev.SUTReady, now)
	case ev.SUTFailed != nil:
		out = s.onSUTFailed(ev.SUTFailed, now)
	case ev.SUTRemoved != nil:
		out = s.onSUTRemoved(ev.SUTRemoved.Configuration, now)
	case ev.Ready != nil:
		out = s.onReady(ev.Ready, now)
	case ev.Final != nil:
		out = s.onFinal(ev.Final, now)
	case ev.Stop != nil:
		out = s.onStop(ev.Stop, now)
	case ev.DriverEnded != nil:
		out = s.onDriverEnded(ev.DriverEnded, now)
	case ev.Tick:
		out = s.onTick(now, ev.Heartbeats)
	}
	return append(out, s.advance(now)...)
}

// Early reports whether ev answers an output whose state change is not
// stored yet: outputs are published before the state is saved, so an agent's
// READY (or the deployer's sut.ready) can overtake it, and a save can fail.
// Such an event must be redelivered, not dropped as stale.
func (s *State) Early(ev Event) bool {
	if s.Status != expstate.StatusRunning {
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
	switch {
	case ev.SUTReady != nil:
		return cfgStatus(ev.SUTReady.Configuration) == cfgPending
	case ev.SUTFailed != nil:
		return cfgStatus(ev.SUTFailed.Configuration) == cfgPending
	case ev.SUTRemoved != nil:
		st := cfgStatus(ev.SUTRemoved.Configuration)
		return st == cfgPending || st == cfgDeploying || st == cfgRunning
	case ev.Ready != nil:
		return phaseAhead(ev.Ready.Phase, ev.Ready.Attempt)
	case ev.Final != nil:
		return phaseAhead(ev.Final.Phase, ev.Final.Attempt)
	case ev.DriverEnded != nil:
		return phaseAhead(ev.DriverEnded.Phase, ev.DriverEnded.Attempt)
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

// advance admits pending configurations while the SUTs alive in all
// experiments (Busy + ours) stay below this experiment's -ms, and ends the
// experiment when every configuration is removed.
func (s *State) advance(now time.Time) []Out {
	var out []Out
	active := s.Busy + s.Alive()
	for i := range s.Configs {
		if s.Configs[i].Status != cfgPending {
			continue
		}
		if s.Cancelled != "" {
			s.Configs[i].Status = cfgRemoved // never deployed
			continue
		}
		if active >= s.Plan.Settings.MaxSUTs {
			break
		}
		pc := s.Plan.Configurations[i]
		dl := now.Add(secs(s.Plan.Timeouts.SUTReadyS)).UTC()
		s.Configs[i].Status, s.Configs[i].Deadline = cfgDeploying, &dl
		active++
		sut := pc.SUT
		out = append(out, Out{Subject: contracts.SubjDeploy, Msg: &contracts.Deploy{
			Envelope: env(s.Code, contracts.DeployID(s.Code, pc.Name), now), Configuration: pc.Name, DBMS: pc.DBMS,
			Benchmark: s.Plan.Settings.Benchmark, TimeoutS: s.Plan.Timeouts.SUTReadyS, SUT: &sut,
		}})
	}
	for _, c := range s.Configs {
		if c.Status != cfgRemoved {
			return out
		}
	}
	status, reason := contracts.ExperimentDone, ""
	switch {
	case s.Cancelled != "":
		status, reason = contracts.ExperimentCancelled, s.Cancelled
	case len(s.Failures) > 0:
		status, reason = contracts.ExperimentFailed, strings.Join(s.Failures, "; ")
	}
	s.Status = status
	end := now.UTC()
	s.EndedAt = &end
	started := s.StartedAt
	return append(out, Out{Subject: contracts.EndTopic(status).For(s.Code), Msg: &contracts.ExperimentEnd{
		Envelope: env(s.Code, contracts.ExperimentEndID(s.Code), now), Status: status, Reason: reason, StartedAt: &started, EndedAt: &end,
	}})
}

// onStop cancels the experiment: running phases fail (their shards stop),
// every SUT is torn down, pending configurations are dropped; results
// already measured stay where they are.
func (s *State) onStop(m *contracts.Stop, now time.Time) []Out {
	if s.Cancelled != "" {
		return nil
	}
	reason := "cancelled by benchq stop"
	if m.Reason != "" {
		reason += ": " + m.Reason
	}
	s.Cancelled = reason
	var out []Out
	for i := range s.Configs {
		c := &s.Configs[i]
		switch c.Status {
		case cfgRunning:
			if c.Current != nil {
				out = append(out, s.phaseEvent(i, contracts.PhaseFailed, c.Current.GoAt, nil, reason, now))
			}
			out = append(out, s.teardown(i, reason, now)...)
		case cfgDeploying:
			out = append(out, s.teardown(i, reason, now)...)
		}
	}
	return out
}

func (s *State) onSUTReady(m *contracts.SUTReady, now time.Time) []Out {
	i, ok := s.config(m.Configuration)
	if !ok || s.Configs[i].Status != cfgDeploying {
		return nil // stale or duplicate
	}
	ep := m.Endpoint
	s.Configs[i].Status, s.Configs[i].Endpoint, s.Configs[i].Deadline = cfgRunning, &ep, nil
	s.Configs[i].Backend = m.Backend
	vol := m.Volume
	if vol != nil {
		s.Configs[i].Volume = vol.Name
	}
	phases := s.Plan.Configurations[i].Phases
	if vol != nil && vol.Loaded && len(phases) > 0 && phases[0].Kind == contracts.KindLoad {
		// bexhoma's "Database is persisted to disk": the volume already
		// holds this data set, so the loading phase is skipped.
		reason := fmt.Sprintf("the database is persisted on volume %s", vol.Name)
		if vol.LoadedAt != nil {
			reason += ", loaded at " + vol.LoadedAt.UTC().Format(time.RFC3339)
		}
		if vol.LoadedBy != "" {
			reason += " by experiment " + vol.LoadedBy
		}
		s.Configs[i].Phase = 0
		ph := phases[0]
		out := []Out{{Subject: contracts.TopicPhaseSkipped.For(s.Code), Msg: &contracts.PhaseEvent{
			Envelope: env(s.Code, contracts.SkippedID(s.Code, ph.Name), now), Configuration: s.Plan.Configurations[i].Name,
			Phase: ph.Name, Kind: ph.Kind, Status: contracts.PhaseSkipped, Attempt: 1, Shards: len(ph.Shards), Reason: reason,
		}}}
		return append(out, s.startPhase(i, 1, now)...)
	}
	return s.startPhase(i, 0, now)
}

func (s *State) onSUTFailed(m *contracts.SUTFailed, now time.Time) []Out {
	i, ok := s.config(m.Configuration)
	if !ok || s.Configs[i].Status != cfgDeploying {
		return nil
	}
	s.fail(fmt.Sprintf("SUT %s failed: %s", m.Configuration, m.Reason))
	s.Configs[i].Failed = m.Reason
	return s.teardown(i, "SUT failed", now)
}

func (s *State) onSUTRemoved(name string, now time.Time) []Out {
	i, ok := s.config(name)
	if !ok || s.Configs[i].Status != cfgTearing {
		return nil
	}
	s.Configs[i].Status, s.Configs[i].Deadline = cfgRemoved, nil
	return nil
}

// startPhase sends the shard jobs of phase p (attempt 1). After the last
// phase the SUT is torn down — unless the action is start, which keeps it
// until benchq stop.
func (s *State) startPhase(i, p int, now time.Time) []Out {
	return s.startAttempt(i, p, 1, now)
}

func (s *State) startAttempt(i, p, attempt int, now time.Time) []Out {
	pc := s.Plan.Configurations[i]
	if p >= len(pc.Phases) {
		if s.Plan.Settings.Action == contracts.ActionStart {
			s.Configs[i].Phase, s.Configs[i].Current = p, nil
			return nil // held: the SUT stays up until benchq stop
		}
		return s.teardown(i, "all phases done", now)
	}
	ph := pc.Phases[p]
	n := len(ph.Shards)
	s.Configs[i].Phase = p
	s.Configs[i].Current = &PhaseState{
		Attempt: attempt, Status: phPreparing, Ready: make([]bool, n), Done: make([]*ShardDone, n), Agents: make([]string, n),
		Deadline: now.Add(secs(s.Plan.Timeouts.BarrierS)).UTC(),
	}
	ep := *s.Configs[i].Endpoint
	engine := s.Plan.Settings.Benchmark
	startBy := s.Configs[i].Current.Deadline
	var out []Out
	for k, sh := range ph.Shards {
		shard := k + 1
		out = append(out, Out{Subject: contracts.SubjShard, Msg: &contracts.ShardJob{
			Envelope:      env(s.Code, contracts.ShardJobID(s.Code, ph.Name, shard, attempt), now),
			Configuration: pc.Name, Phase: ph.Name, Kind: ph.Kind, Shard: shard, Shards: n, Attempt: attempt,
			Engine: engine, DBMS: pc.DBMS, Endpoint: ep, YCSB: sh.YCSB, TPCC: sh.TPCC, Node: ph.Node,
			TimeoutS: s.Plan.Timeouts.BarrierS, StartBy: &startBy,
		}})
	}
	// Where the backend starts the drivers itself (Kubernetes: one Job of
	// agent pods per phase attempt) the deployer needs to know now: those
	// agents are the ones that answer READY. The local backend acks it.
	out = append(out, Out{Subject: contracts.SubjDrivers, Msg: &contracts.Drivers{
		Envelope:      env(s.Code, contracts.DriversID(s.Code, ph.Name, attempt), now),
		Configuration: pc.Name, DBMS: pc.DBMS, Phase: ph.Name, Kind: ph.Kind, Attempt: attempt, Shards: n, Node: ph.Node,
	}})
	return out
}

func (s *State) onReady(m *contracts.BarrierReady, now time.Time) []Out {
	i, cur, ok := s.current(m.Phase, m.Attempt)
	if !ok || cur.Status != phPreparing || m.Shard < 1 || m.Shard > len(cur.Ready) {
		return nil
	}
	cur.Ready[m.Shard-1] = true
	if len(cur.Agents) == len(cur.Ready) {
		cur.Agents[m.Shard-1] = m.Agent
	}
	for _, r := range cur.Ready {
		if !r {
			return nil
		}
	}
	goAt := now.Add(GoLead).UTC()
	cur.Status, cur.GoAt = phRunning, &goAt
	cur.Deadline = goAt.Add(secs(s.Plan.Timeouts.ShardS))
	pc := s.Plan.Configurations[i]
	ph := pc.Phases[s.Configs[i].Phase]
	return []Out{
		{Subject: contracts.TopicBarrierGo.For(s.Code), Msg: &contracts.BarrierGo{
			Envelope: env(s.Code, contracts.GoID(s.Code, ph.Name, cur.Attempt), now), Phase: ph.Name, Attempt: cur.Attempt, StartAt: goAt}},
		s.phaseEvent(i, contracts.PhaseStarted, &goAt, nil, "", now),
	}
}

func (s *State) onFinal(m *contracts.Final, now time.Time) []Out {
	i, cur, ok := s.current(m.Phase, m.Attempt)
	if !ok || m.Shard < 1 || m.Shard > len(cur.Done) || cur.Done[m.Shard-1] != nil {
		return nil
	}
	// The phase window is the shards' first to last operation when the
	// driver reports them (GO reaches a driver a little before the start
	// instant), else the shards' process window.
	start, end := m.StartedAt, m.EndedAt
	if m.FirstOpAt != nil && m.LastOpAt != nil {
		start, end = *m.FirstOpAt, *m.LastOpAt
	}
	cur.Done[m.Shard-1] = &ShardDone{Status: m.Status, Error: m.Error, StartedAt: start, EndedAt: end}
	if m.Status != contracts.StatusOK && cur.Status == phPreparing {
		// A shard died before READY: the phase cannot start together.
		return s.endPhase(i, fmt.Sprintf("shard %d failed before the barrier: %s", m.Shard, m.Error), now)
	}
	for _, d := range cur.Done {
		if d == nil {
			return nil
		}
	}
	return s.endPhase(i, strings.Join(shardFailures(cur), "; "), now)
}

// shardFailures names the finished shards that failed (a simulated shard
// did not fail: it measured nothing, which the phase's reason says).
func shardFailures(cur *PhaseState) []string {
	var failed []string
	for k, d := range cur.Done {
		if d != nil && d.Status != contracts.StatusOK && d.Status != contracts.StatusSimulated {
			failed = append(failed, fmt.Sprintf("shard %d: %s", k+1, d.Error))
		}
	}
	return failed
}

// endPhase publishes done (reason empty) or failed, then moves on: the next
// phase, or — when the phase failed — teardown: the configuration's
// remaining phases are skipped (listed in the failure) and the experiment
// goes on with its other configurations.
func (s *State) endPhase(i int, reason string, now time.Time) []Out {
	return s.endPhaseNoted(i, reason, "", now)
}

// endPhaseNoted is endPhase with a note that a done phase's event carries
// as its reason (a simulated phase: nothing was measured).
func (s *State) endPhaseNoted(i int, reason, note string, now time.Time) []Out {
	ph := s.Plan.Configurations[i].Phases[s.Configs[i].Phase]
	closed := s.closePhase(i, reason, note, now)
	out := []Out{closed}
	if reason == "" {
		// A simulated loading phase loaded nothing: its volume must not be
		// recorded as holding the data set.
		if pe := closed.Msg.(*contracts.PhaseEvent); note == "" && ph.Kind == contracts.KindLoad && pe.StartedAt != nil && pe.EndedAt != nil {
			s.Configs[i].LoadingTimeS = pe.EndedAt.Sub(*pe.StartedAt).Seconds()
		}
		return append(out, s.startPhase(i, s.Configs[i].Phase+1, now)...)
	}
	phases := s.Plan.Configurations[i].Phases
	failed := phases[s.Configs[i].Phase]
	if rest := len(phases) - s.Configs[i].Phase - 1; rest > 0 {
		s.fail(fmt.Sprintf("configuration %s: %d later phase(s) skipped", s.Plan.Configurations[i].Name, rest))
	}
	return append(out, s.teardown(i, fmt.Sprintf("%s phase %s failed", failed.Kind, failed.Name), now)...)
}

// retryPhase abandons the current attempt (its phase.failed stops the
// shards still running) and starts the next one on the same SUT.
func (s *State) retryPhase(i int, reason string, now time.Time) []Out {
	cur := s.Configs[i].Current
	ph := s.Plan.Configurations[i].Phases[s.Configs[i].Phase]
	out := []Out{s.phaseEvent(i, contracts.PhaseFailed, cur.GoAt, nil, reason+"; re-running the phase", now)}
	s.Configs[i].Reruns = append(s.Configs[i].Reruns, fmt.Sprintf("%s attempt %d: %s", ph.Name, cur.Attempt, reason))
	return append(out, s.startAttempt(i, s.Configs[i].Phase, cur.Attempt+1, now)...)
}

// closePhase publishes the phase's done or failed event with its window
// (earliest shard start … latest shard end) and clears the current phase.
func (s *State) closePhase(i int, reason, note string, now time.Time) Out {
	cur := s.Configs[i].Current
	var start, end *time.Time
	for _, d := range cur.Done {
		if d == nil || d.StartedAt.IsZero() {
			continue
		}
		if start == nil || d.StartedAt.Before(*start) {
			t := d.StartedAt
			start = &t
		}
		if end == nil || d.EndedAt.After(*end) {
			t := d.EndedAt
			end = &t
		}
	}
	if start == nil {
		start = cur.GoAt
	}
	if end == nil {
		t := now.UTC()
		end = &t
	}
	status := contracts.PhaseDone
	ph := s.Plan.Configurations[i].Phases[s.Configs[i].Phase]
	text := note
	if reason != "" {
		status, text = contracts.PhaseFailed, reason
		s.fail(fmt.Sprintf("phase %s failed: %s", ph.Name, reason))
	}
	out := s.phaseEvent(i, status, start, end, text, now)
	s.Configs[i].Current = nil
	delete(s.Drivers, ph.Name)
	return out
}

func (s *State) onTick(now time.Time, beats map[string]time.Time) []Out {
	var out []Out
	for i := range s.Configs {
		c := &s.Configs[i]
		name := s.Plan.Configurations[i].Name
		switch {
		case s.driversDue(i, now):
			out = append(out, s.settleDrivers(i, now)...)
		case c.Status == cfgDeploying && c.Deadline != nil && now.After(*c.Deadline):
			s.fail(fmt.Sprintf("SUT %s not ready within %ds", name, s.Plan.Timeouts.SUTReadyS))
			c.Failed = "not ready in time"
			out = append(out, s.teardown(i, "SUT not ready in time", now)...)
		case c.Status == cfgTearing && c.Deadline != nil && now.After(*c.Deadline):
			s.fail(fmt.Sprintf("SUT %s not removed within %ds; remove it by hand", name, s.Plan.Timeouts.SUTReadyS))
			c.Status, c.Deadline = cfgRemoved, nil
		case c.Status == cfgRunning && c.Current != nil && now.After(c.Current.Deadline):
			if c.Current.Status == phPreparing {
				out = append(out, s.endPhase(i, fmt.Sprintf("shards %s not READY within %ds (are enough driver agents running?)", missing(c.Current.Ready, nil), s.Plan.Timeouts.BarrierS), now)...)
			} else {
				out = append(out, s.endPhase(i, fmt.Sprintf("shards %s did not finish within %ds", missing(nil, c.Current.Done), s.Plan.Timeouts.ShardS), now)...)
			}
		case c.Status == cfgRunning && c.Current != nil && beats != nil:
			if short := s.tooFewAgents(i, beats, now); short != "" {
				out = append(out, s.endPhase(i, short, now)...)
			} else if lost := lostShards(c.Current, beats, now); lost != "" {
				reason := "lost " + lost
				ph := s.Plan.Configurations[i].Phases[c.Phase]
				if ph.Kind == contracts.KindRun && c.Current.Attempt < MaxAttempts {
					out = append(out, s.retryPhase(i, reason, now)...)
				} else {
					out = append(out, s.endPhase(i, reason, now)...)
				}
			}
		}
	}
	return out
}

// AgentsGrace is how long a phase on the local backend waits for as many
// live driver agents as it has shards before it fails (agents starting or
// restarting beat within it).
const AgentsGrace = 10 * time.Second

// tooFewAgents explains why a preparing phase on the local backend can never
// pass its barrier: its shards all run at once, one per agent, and fewer
// agents than shards are alive. The deployer starts the agents a phase lacks
// (its drivers job), so this is the safety net when that failed. Without it
// the phase would wait for the barrier timeout and fail saying only which
// shards were not READY. On Kubernetes the deployer starts one agent per
// shard (driver Jobs), so the check does not apply.
func (s *State) tooFewAgents(i int, beats map[string]time.Time, now time.Time) string {
	c := &s.Configs[i]
	cur := c.Current
	if c.Backend != contracts.BackendLocal || cur.Status != phPreparing {
		return ""
	}
	dispatched := cur.Deadline.Add(-secs(s.Plan.Timeouts.BarrierS))
	if now.Sub(dispatched) < AgentsGrace {
		return ""
	}
	alive := contracts.LiveAgents(beats, now)
	need := len(cur.Ready)
	if len(alive) >= need {
		return ""
	}
	ph := s.Plan.Configurations[i].Phases[c.Phase]
	flag := "-nbp"
	if ph.Kind == contracts.KindLoad {
		flag = "-nlp"
	}
	return fmt.Sprintf("needs %d driver agents at once (one per shard), but the stack runs %d (%s): "+
		"start it with more (BENCHQ_AGENTS=%d benchq up) or use fewer pods (%s)",
		need, len(alive), strings.Join(alive, ", "), need, flag)
}

// lostShards names the unfinished shards whose agent stopped beating.
func lostShards(cur *PhaseState, beats map[string]time.Time, now time.Time) string {
	var lost []string
	for k, agent := range cur.Agents {
		if agent == "" || cur.Done[k] != nil {
			continue
		}
		if at, ok := beats[agent]; !ok || !contracts.AgentLive(at, now) {
			lost = append(lost, fmt.Sprintf("shard %d (agent %s silent for more than %s)", k+1, agent, AgentLost))
		}
	}
	return strings.Join(lost, ", ")
}

func missing(ready []bool, done []*ShardDone) string {
	var m []string
	for k, r := range ready {
		if !r {
			m = append(m, fmt.Sprint(k+1))
		}
	}
	for k, d := range done {
		if d == nil {
			m = append(m, fmt.Sprint(k+1))
		}
	}
	return strings.Join(m, ", ")
}

func (s *State) teardown(i int, reason string, now time.Time) []Out {
	pc := s.Plan.Configurations[i]
	dl := now.Add(secs(s.Plan.Timeouts.SUTReadyS)).UTC()
	if c := s.Configs[i]; c.Current != nil && c.Phase < len(pc.Phases) {
		delete(s.Drivers, pc.Phases[c.Phase].Name)
	}
	s.Configs[i].Status, s.Configs[i].Deadline, s.Configs[i].Current = cfgTearing, &dl, nil
	td := &contracts.Teardown{
		Envelope: env(s.Code, contracts.TeardownID(s.Code, pc.Name), now), Configuration: pc.Name, DBMS: pc.DBMS, Reason: reason,
	}
	if c := s.Configs[i]; c.Volume != "" && c.LoadingTimeS > 0 {
		td.Loaded = &contracts.VolumeLoaded{Volume: c.Volume, LoadingTimeS: c.LoadingTimeS, At: now.UTC(), By: s.Code}
	}
	return []Out{{Subject: contracts.SubjTeardown, Msg: td}}
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

func (s *State) phaseEvent(i int, status string, start, end *time.Time, reason string, now time.Time) Out {
	pc := s.Plan.Configurations[i]
	ph := pc.Phases[s.Configs[i].Phase]
	att := s.Configs[i].Current.Attempt
	return Out{Subject: contracts.PhaseTopic(status).For(s.Code), Msg: &contracts.PhaseEvent{
		Envelope: env(s.Code, contracts.PhaseEventID(s.Code, ph.Name, att, status), now), Configuration: pc.Name,
		Phase: ph.Name, Kind: ph.Kind, Status: status, Attempt: att, Shards: len(ph.Shards), StartedAt: start, EndedAt: end, Reason: reason,
	}}
}

func (s *State) fail(reason string) {
	s.Failures = append(s.Failures, reason)
}

func env(code, id string, now time.Time) contracts.Envelope {
	return contracts.NewEnvelope(code, id, now)
}

func secs(n int) time.Duration { return time.Duration(n) * time.Second }
