package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/benchq/benchq/contracts"
)

// The phase lifecycle: shard jobs out, the READY barrier, GO, the shards'
// finals, then done or failed and the next phase (or a re-run).

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
		Attempt: attempt, Status: phPreparing, Ready: make([]bool, n), Done: make([]*ShardDone, n), Agents: make([]string, n), Instances: make([]string, n),
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
			Engine: engine, DBMS: pc.DBMS, Endpoint: ep, YCSB: sh.YCSB, TPCC: sh.TPCC, TSDB: sh.TSDB, Node: ph.Node,
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

func (s *State) onReady(m *contracts.BarrierReady, now time.Time, published *contracts.BarrierGo) []Out {
	i, cur, ok := s.current(m.Phase, m.Attempt)
	if !ok || cur.Status != phPreparing || m.Shard < 1 || m.Shard > len(cur.Ready) {
		return nil
	}
	cur.Ready[m.Shard-1] = true
	if len(cur.Agents) == len(cur.Ready) {
		cur.Agents[m.Shard-1] = m.Agent
	}
	if len(cur.Instances) == len(cur.Ready) {
		cur.Instances[m.Shard-1] = m.Instance
	}
	for _, r := range cur.Ready {
		if !r {
			return nil
		}
	}
	goAt := now.Add(s.goLead()).UTC()
	if published != nil {
		goAt = published.StartAt.UTC()
		if len(published.Agents) == len(cur.Agents) && len(published.Instances) == len(cur.Instances) {
			cur.Agents, cur.Instances = slices.Clone(published.Agents), slices.Clone(published.Instances)
		}
	}
	cur.Status, cur.GoAt = phRunning, &goAt
	cur.Deadline = goAt.Add(secs(s.Plan.Timeouts.ShardS))
	pc := s.Plan.Configurations[i]
	ph := pc.Phases[s.Configs[i].Phase]
	return []Out{
		{Subject: contracts.TopicBarrierGo.For(s.Code), Msg: &contracts.BarrierGo{
			Envelope: env(s.Code, contracts.GoID(s.Code, ph.Name, cur.Attempt), now), Phase: ph.Name, Attempt: cur.Attempt, StartAt: goAt,
			Agents: slices.Clone(cur.Agents), Instances: slices.Clone(cur.Instances)}},
		s.phaseEvent(i, contracts.PhaseStarted, &goAt, nil, "", now),
	}
}

// onFinal takes a shard's final, signed by signer (handleEvent checked the
// signature). A shard bound to a run at READY counts only that run's final:
// another agent's is ignored.
func (s *State) onFinal(m *contracts.Final, now time.Time, signer string) []Out {
	i, cur, ok := s.current(m.Phase, m.Attempt)
	if !ok || m.Shard < 1 || m.Shard > len(cur.Done) || cur.Done[m.Shard-1] != nil {
		return nil
	}
	if k := m.Shard - 1; k < len(cur.Instances) && cur.Instances[k] != "" && signer != cur.Instances[k] {
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
	s.keepFinal(i, m)
	s.noteGoDelay(m.GoDelayMS)
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
	if s.searching(i) {
		return s.endStep(i, reason, note, now)
	}
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
	out := []Out{s.abandon(i, reason+"; re-running the phase", now)}
	s.Configs[i].Reruns = append(s.Configs[i].Reruns, fmt.Sprintf("%s attempt %d: %s", ph.Name, cur.Attempt, reason))
	return append(out, s.startAttempt(i, s.Configs[i].Phase, cur.Attempt+1, now)...)
}

// reloadPhase abandons a loading attempt that lost a shard's agent and
// runs the next one on a new SUT: the one that holds part of the data is
// torn down (its volume, if any, is not marked loaded, so it is emptied
// before the next load), a new generation is deployed (onSUTRemoved), and
// the loading starts again there as the next attempt (onSUTReady). A fresh
// SUT holds exactly the records loaded once; truncating the old one would
// leave it in another state than a first load (server caches, files,
// statistics).
func (s *State) reloadPhase(i int, reason string, now time.Time) []Out {
	c := &s.Configs[i]
	ph := s.Plan.Configurations[i].Phases[c.Phase]
	out := []Out{s.abandon(i, reason+"; loading again on a new SUT", now)}
	c.Reruns = append(c.Reruns, fmt.Sprintf("%s attempt %d: %s", ph.Name, c.Current.Attempt, reason))
	next := c.Current.Attempt + 1
	out = append(out, s.teardown(i, "loading again on a new SUT", now)...)
	c.ReloadAttempt = next // after teardown, which clears it
	return out
}

// closePhase publishes the phase's done or failed event with its window
// (earliest shard start … latest shard end) and clears the current phase.
func (s *State) closePhase(i int, reason, note string, now time.Time) Out {
	cur := s.Configs[i].Current
	start, end := shardWindow(cur)
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

// shardWindow is the earliest start and the latest end of the shards that
// finished (nil, nil when none did).
func shardWindow(cur *contracts.PhaseState) (start, end *time.Time) {
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
	return start, end
}

// abandon is the phase.failed of an attempt given up at now (benchq stop,
// a re-run): its shards still running stop on it. Its window runs from its
// first shard's start (its GO while none finished) to now, so that the
// collector keeps what was measured until then (the SUT's and drivers'
// metrics of a stopped phase); an attempt that never got its GO has none.
func (s *State) abandon(i int, reason string, now time.Time) Out {
	cur := s.Configs[i].Current
	start, _ := shardWindow(cur)
	if start == nil {
		start = cur.GoAt
	}
	var end *time.Time
	switch {
	case start != nil && now.Before(*start):
		start = nil // given up within its GO lead: its operations never began
	case start != nil:
		t := now.UTC()
		end = &t
	}
	return s.phaseEvent(i, contracts.PhaseFailed, start, end, reason, now)
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
