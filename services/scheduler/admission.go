package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/plan"
)

// Admission and the SUT's lifecycle: a configuration is deployed only while
// the SUTs alive in every experiment stay below -ms; the deployer's answers
// move it on; teardown and benchq stop remove it.

// maxSUTs is an experiment's -ms as a bound: no limit (-ms 0) is the
// largest int.
func maxSUTs(settings contracts.Request) int {
	switch {
	case settings.MaxSUTs == nil:
		return plan.DefaultMaxSUTs
	case *settings.MaxSUTs == 0:
		return math.MaxInt
	}
	return *settings.MaxSUTs
}

// advance admits pending configurations while the SUTs alive in all
// experiments (Busy + ours) stay below this experiment's -ms, and ends the
// experiment when every configuration is removed.
func (s *State) advance(now time.Time) []Out {
	var out []Out
	mine := s.Alive()
	active := s.Busy + mine
	limit, own := maxSUTs(s.Plan.Settings), s.Plan.Settings.MaxSUTsExperiment
	// A volume (-rst) serves one SUT at a time (docs/volumes.md): a
	// configuration whose volume another of ours holds waits for it, and
	// those after it may go first.
	held := map[string]bool{}
	for i, c := range s.Configs {
		if c.Status != cfgPending && c.Status != cfgRemoved {
			held[s.volumeOf(i)] = true
		}
	}
	for i := range s.Configs {
		if s.Configs[i].Status != cfgPending {
			continue
		}
		if s.Cancelled != "" {
			s.Configs[i].Status = cfgRemoved // never deployed
			continue
		}
		if active >= limit || (own > 0 && mine >= own) {
			break
		}
		vol := s.volumeOf(i)
		if vol != "" && held[vol] {
			continue
		}
		held[vol] = true
		active++
		mine++
		out = append(out, s.deploy(i, now))
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
				out = append(out, s.abandon(i, reason, now))
			}
			out = append(out, s.teardown(i, reason, now)...)
		case cfgDeploying:
			out = append(out, s.teardown(i, reason, now)...)
		}
	}
	return out
}

// deploy asks for configuration i's SUT (of its generation) and waits for
// it.
func (s *State) deploy(i int, now time.Time) Out {
	pc := s.Plan.Configurations[i]
	c := &s.Configs[i]
	dl := now.Add(secs(s.Plan.Timeouts.SUTReadyS)).UTC()
	c.Status, c.Deadline = cfgDeploying, &dl
	sut := pc.SUT
	return Out{Subject: contracts.SubjDeploy, Msg: &contracts.Deploy{
		Envelope: env(s.Code, contracts.DeployIDAt(s.Code, pc.Name, c.Generation), now), Configuration: pc.Name, DBMS: pc.DBMS,
		Benchmark: s.Plan.Settings.Benchmark, TimeoutS: s.Plan.Timeouts.SUTReadyS, SUT: &sut,
	}}
}

func (s *State) onSUTReady(m *contracts.SUTReady, now time.Time) []Out {
	i, ok := s.config(m.Configuration)
	if !ok || s.Configs[i].Status != cfgDeploying || !s.ofGeneration(i, m.ID, contracts.SUTReadyID) {
		return nil // stale or duplicate
	}
	ep := m.Endpoint
	reload := s.Configs[i].ReloadAttempt
	s.Configs[i].Status, s.Configs[i].Endpoint, s.Configs[i].Deadline, s.Configs[i].ReloadAttempt = cfgRunning, &ep, nil, 0
	s.Configs[i].Backend = m.Backend
	vol := m.Volume
	if vol != nil {
		s.Configs[i].Volume = vol.Name
	}
	phases := s.Plan.Configurations[i].Phases
	if vol != nil && vol.Loaded && s.volumeKeepsData(i) && len(phases) > 0 && phases[0].Kind == contracts.KindLoad {
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
	if reload > 0 {
		// A new SUT for a loading phase that lost an agent: its next attempt.
		return s.startAttempt(i, 0, reload, now)
	}
	return s.startPhase(i, 0, now)
}

// ofGeneration reports whether the answer id (answer: SUTReadyID or
// SUTFailedID) is to the deploy of configuration i's current generation.
// Answers to the first deploy are taken whatever their id (older
// deployers, tests); once a SUT was replaced, only the new one's count.
func (s *State) ofGeneration(i int, id string, answer func(string) string) bool {
	g := s.Configs[i].Generation
	return g == 0 || id == answer(contracts.DeployIDAt(s.Code, s.Plan.Configurations[i].Name, g))
}

func (s *State) onSUTFailed(m *contracts.SUTFailed, now time.Time) []Out {
	i, ok := s.config(m.Configuration)
	if ok && !m.Running && !s.ofGeneration(i, m.ID, contracts.SUTFailedID) {
		return nil // an earlier generation's deploy
	}
	if ok && m.Running && s.Configs[i].Status == cfgRunning {
		return s.onSUTDied(i, m, now)
	}
	if !ok || s.Configs[i].Status != cfgDeploying {
		return nil
	}
	s.fail(fmt.Sprintf("SUT %s failed: %s", m.Configuration, m.Reason))
	s.Configs[i].Failed = m.Reason
	return s.teardown(i, "SUT failed", now)
}

// onSUTDied fails the phase running on a SUT that died, naming when it died
// within the phase; what its shards measured until then is kept (the
// phase's failed event stops them). The configuration's later phases are
// skipped, its SUT torn down, and the experiment goes on with the others.
func (s *State) onSUTDied(i int, m *contracts.SUTFailed, now time.Time) []Out {
	c := &s.Configs[i]
	name := s.Plan.Configurations[i].Name
	c.Failed = "died: " + m.Reason
	reason := fmt.Sprintf("SUT %s died (%s)", name, m.Reason)
	if c.Current == nil {
		s.fail(reason + " between phases")
		return s.teardown(i, "SUT died", now)
	}
	phase := s.Plan.Configurations[i].Phases[c.Phase].Name
	if at := c.Current.GoAt; at != nil && !m.TS.Before(*at) {
		reason += fmt.Sprintf(" %.1f s into %s", m.TS.Sub(*at).Seconds(), phase)
	} else {
		reason += fmt.Sprintf(" before %s started", phase)
	}
	return s.endPhase(i, reason, now)
}

func (s *State) onSUTRemoved(m *contracts.SUTRemoved, now time.Time) []Out {
	i, ok := s.config(m.Configuration)
	if !ok || s.Configs[i].Status != cfgTearing {
		return nil
	}
	c := &s.Configs[i]
	if (c.Generation > 0 || c.ReloadAttempt > 0) && m.ID != contracts.SUTRemovedID(contracts.TeardownIDAt(s.Code, m.Configuration, c.Generation)) {
		return nil // not this generation's SUT (an earlier one's, redelivered)
	}
	if c.ReloadAttempt > 0 && m.Died == "" && s.Cancelled == "" {
		// The SUT whose loading lost an agent is gone: a new one.
		c.Generation++
		return []Out{s.deploy(i, now)}
	}
	c.ReloadAttempt = 0
	c.Status, c.Deadline = cfgRemoved, nil
	if m.Died != "" && !strings.HasPrefix(c.Failed, "died: ") {
		// The watch had not seen it yet: a phase failed on the symptoms
		// first (a driver that could not connect), or ended with failed
		// operations in its last second, or the SUT crashed after its last
		// phase. Its measurements are kept; the crash fails the experiment.
		if c.Failed == "" {
			c.Failed = "died: " + m.Died
		}
		s.fail(fmt.Sprintf("SUT %s had died before its teardown (%s)", m.Configuration, m.Died))
	}
	return nil
}

// volumeOf names the volume configuration i's SUT keeps its data on (-rst;
// plan.VolumeOf), "" without one.
func (s *State) volumeOf(i int) string { return plan.VolumeOf(s.Plan.Configurations[i]) }

// volumeKeepsData: configuration i's DBMS keeps its data on its volume, so
// that a volume it loaded can be marked loaded and a later SUT skip its
// loading (not Dragonfly's: catalog's volume_not_reused).
func (s *State) volumeKeepsData(i int) bool {
	e, err := catalog.Lookup(s.Plan.Configurations[i].DBMS)
	return err != nil || e.VolumeNotReused == ""
}

func (s *State) teardown(i int, reason string, now time.Time) []Out {
	pc := s.Plan.Configurations[i]
	dl := now.Add(secs(s.Plan.Timeouts.SUTReadyS)).UTC()
	if c := s.Configs[i]; c.Current != nil && c.Phase < len(pc.Phases) {
		delete(s.Drivers, pc.Phases[c.Phase].Name)
	}
	// A teardown ends the SUT for good unless reloadPhase asks for another
	// after it: a failed new deploy, a timeout or the last phase's end never
	// bring one back.
	s.Configs[i].Status, s.Configs[i].Deadline, s.Configs[i].Current, s.Configs[i].ReloadAttempt = cfgTearing, &dl, nil, 0
	td := &contracts.Teardown{
		Envelope: env(s.Code, contracts.TeardownIDAt(s.Code, pc.Name, s.Configs[i].Generation), now), Configuration: pc.Name, DBMS: pc.DBMS, Reason: reason,
	}
	if c := s.Configs[i]; c.Volume != "" && c.LoadingTimeS > 0 && s.volumeKeepsData(i) {
		td.Loaded = &contracts.VolumeLoaded{Volume: c.Volume, LoadingTimeS: c.LoadingTimeS, At: now.UTC(), By: s.Code}
	}
	return []Out{{Subject: contracts.SubjTeardown, Msg: td}}
}
