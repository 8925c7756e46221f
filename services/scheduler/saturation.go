package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/plan"
	"github.com/benchq/benchq/internal/saturation"
)

// The saturation search (-xsat, docs/saturation.md). A configuration of
// such an experiment is planned with its loading phase and the search's
// first step; when a step's phase ends, internal/saturation judges it from
// the shards' finals and decides the next step, which is appended to the
// configuration's phases and started on the same SUT — or, when the search
// is over, the configuration is torn down. Each step's judgement travels in
// its phase.done (or phase.failed) event, the knee on the last.

// Search is a configuration's saturation search in the stored state.
type Search struct {
	Steps []contracts.SaturationStep `json:"steps,omitempty"`
	// Finals are the current step's shards' finals, kept until it ends.
	Finals []*contracts.Final `json:"finals,omitempty"`
	// Hold names the phase that holds the knee, once there is one.
	Hold string `json:"hold,omitempty"`
}

// searching reports whether configuration i runs a saturation search and
// its current phase is one of its steps.
func (s *State) searching(i int) bool {
	c := s.Configs[i]
	return s.Plan.Settings.Saturation != nil && i < len(s.Searches) && c.Phase < len(s.Plan.Configurations[i].Phases) &&
		s.Plan.Configurations[i].Phases[c.Phase].Kind == contracts.KindRun
}

// keepFinal keeps a step's final until the step ends.
func (s *State) keepFinal(i int, m *contracts.Final) {
	if !s.searching(i) {
		return
	}
	cur := s.Configs[i].Current
	sr := &s.Searches[i]
	if len(sr.Finals) != len(cur.Done) {
		sr.Finals = make([]*contracts.Final, len(cur.Done))
	}
	f := *m
	f.Stdout = "" // stored by the collector; the judgement needs the figures only
	sr.Finals[m.Shard-1] = &f
}

// endStep ends a step's phase: judged, then the next step or the hold
// started, or the search over (teardown). A phase that failed (a shard
// failed, a timeout) ends the search with the knee found so far.
func (s *State) endStep(i int, reason, note string, now time.Time) []Out {
	pc := s.Plan.Configurations[i]
	ph := pc.Phases[s.Configs[i].Phase]
	sr := &s.Searches[i]
	set := *s.Plan.Settings.Saturation
	role := contracts.RoleStep
	if ph.Name == sr.Hold {
		role = contracts.RoleHold
	}
	var finals []*contracts.Final
	for _, f := range sr.Finals {
		if f != nil && f.Attempt == s.Configs[i].Current.Attempt { // not an abandoned attempt's
			finals = append(finals, f)
		}
	}
	evaluate := saturation.Evaluate
	if s.Plan.Settings.Benchmark == plan.BenchmarkTSDB {
		evaluate = saturation.EvaluateIngest // stored points, by the database's own count
	}
	st := evaluate(set, *s.Plan.Settings.ErrorShareLimit, role, len(sr.Steps)+1, ph.Target, finals)
	var move *saturation.Move
	if reason != "" {
		st.Verdict, st.Why = contracts.VerdictFail, reason
		if role == contracts.RoleHold {
			st.Verdict = contracts.VerdictUnstable
		}
		sr.Steps = append(sr.Steps, st)
		st.Knee = saturation.Result(set, sr.Steps, "the search ended early: phase "+ph.Name+" failed")
	} else {
		sr.Steps = append(sr.Steps, st)
		saturation.Retried(sr.Steps)
		st = sr.Steps[len(sr.Steps)-1]
		move, st.Knee = saturation.Next(set, sr.Steps)
	}
	var next plan.Phase
	if move != nil {
		seconds := set.StepS
		if move.Role == contracts.RoleHold {
			seconds = set.HoldS
		}
		next = plan.SaturationPhase(s.Plan.Settings, s.Plan, pc.Name, ph.Client+1, move.Offered, move.Shards, max(1, ph.Threads/max(1, ph.Pods)), seconds)
		var full *plan.InvalidError
		if errors.As(plan.CheckPoolInbound(next, pc.SUT.Pool), &full) {
			// More shards than the pool takes clients: PgBouncer would
			// turn the step's connections away. The search ends here.
			move, st.Knee = nil, saturation.Result(set, sr.Steps, "a lower bound: "+move.Why+", but "+full.Message)
		}
	}
	if move != nil {
		st.Next = move.Why
	} else {
		st.Next = "the search is over"
	}
	sr.Steps[len(sr.Steps)-1] = st
	sr.Finals = nil
	closed := s.closePhase(i, reason, note, now)
	closed.Msg.(*contracts.PhaseEvent).Saturation = &st
	out := []Out{closed}
	switch {
	case reason != "":
		return append(out, s.teardown(i, fmt.Sprintf("%s phase %s failed", ph.Kind, ph.Name), now)...)
	case move == nil:
		return append(out, s.startPhase(i, s.Configs[i].Phase+1, now)...) // past the last: teardown
	}
	if move.Role == contracts.RoleHold {
		sr.Hold = next.Name
	}
	s.Plan.Configurations[i].Phases = append(s.Plan.Configurations[i].Phases, next)
	return append(out, s.startPhase(i, s.Configs[i].Phase+1, now)...)
}
