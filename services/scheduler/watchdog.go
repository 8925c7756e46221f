package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/benchq/benchq/contracts"
)

// The watchdog: every tick checks the deadlines of deploys, teardowns,
// barriers and shards, and the driver agents' heartbeats.

// MaxAttempts bounds how often a benchmarking phase runs when it loses a
// shard's agent: the second attempt is marked as a re-run in the summary.
const MaxAttempts = 2

// AgentLost is how long an agent may stay silent before its shards count
// as lost.
const AgentLost = contracts.AgentLiveness

func (s *State) onTick(now time.Time, runs map[string]contracts.Heartbeat, beatsAt time.Time, vouched, gone map[string]bool) []Out {
	var out []Out
	for i := range s.Configs {
		c := &s.Configs[i]
		name := s.Plan.Configurations[i].Name
		switch {
		case s.driversDue(i, now):
			out = append(out, s.settleDrivers(i, now)...)
		case c.Status == cfgDeploying && c.Deadline != nil && now.After(*c.Deadline):
			s.fail(fmt.Sprintf("SUT %s not ready within %ds: the deployer said neither ready nor failed (is it running? benchq status; its log; a slow start: --timeout-sut)", name, s.Plan.Timeouts.SUTReadyS))
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
		case c.Status == cfgRunning && c.Current != nil && lostPodsDue(c.Current, now):
			out = append(out, s.settleLostPods(i, now)...)
		case c.Status == cfgRunning && c.Current != nil && runs != nil:
			if short := s.tooFewAgents(i, runs, beatsAt, vouched); short != "" {
				out = append(out, s.endPhase(i, short, now)...)
			} else if lost := lostShards(c.Current, runs, beatsAt, vouched, gone); lost != "" {
				out = append(out, s.loseShards(i, "lost "+lost, now)...)
			}
		}
	}
	return out
}

// loseShards ends configuration i's current attempt, which lost a shard's
// agent: a benchmarking phase runs again on the same SUT, a loading phase
// on a new one (reloadPhase, not under a saturation search), each at most
// MaxAttempts times in all; otherwise the phase fails.
func (s *State) loseShards(i int, reason string, now time.Time) []Out {
	c := &s.Configs[i]
	ph := s.Plan.Configurations[i].Phases[c.Phase]
	switch {
	case c.Current.Attempt >= MaxAttempts:
		return s.endPhase(i, reason, now)
	case ph.Kind == contracts.KindRun:
		return s.retryPhase(i, reason, now)
	case ph.Kind == contracts.KindLoad && !s.searching(i):
		return s.reloadPhase(i, reason, now)
	default:
		return s.endPhase(i, reason, now)
	}
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
func (s *State) tooFewAgents(i int, runs map[string]contracts.Heartbeat, now time.Time, vouched map[string]bool) string {
	c := &s.Configs[i]
	cur := c.Current
	if c.Backend != contracts.BackendLocal || cur.Status != phPreparing {
		return ""
	}
	dispatched := cur.Deadline.Add(-secs(s.Plan.Timeouts.BarrierS))
	if now.Sub(dispatched) < AgentsGrace {
		return ""
	}
	alive := contracts.LiveAgents(runs, now)
	for instance := range vouched {
		if name := runs[instance].Name; name != "" && !slices.Contains(alive, name) {
			alive = append(alive, name) // late, but seen working (vouch.go)
		}
	}
	slices.Sort(alive)
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

// lostShards names the unfinished shards whose agent run stopped beating,
// or was replaced by a new run under the same name (a restart: the new run
// does not know the shard the old one took). A shard is judged by the
// heartbeats of the run that took it (its instance, bound at READY), which
// only that run can sign: a heartbeat another agent writes under its name
// neither keeps a dead run alive nor passes for its restart. runs were read
// at now; a vouched run is late but seen working, a gone one's process
// ended (vouch.go).
func lostShards(cur *PhaseState, runs map[string]contracts.Heartbeat, now time.Time, vouched, gone map[string]bool) string {
	newest := contracts.NewestRuns(runs)
	var lost []string
	for k, agent := range cur.Agents {
		if agent == "" || cur.Done[k] != nil {
			continue
		}
		instance := ""
		if k < len(cur.Instances) {
			instance = cur.Instances[k]
		}
		run, ok := runs[instance]
		if instance == "" {
			run, ok = newest[agent] // taken before runs were named: by its name
		}
		next, hasNext := newest[agent]
		// Replaced: its process is gone; or its entry is; or a newer run beat
		// restartAfter past its last beat, while it is not seen working.
		replaced := hasNext && instance != "" && next.Instance != instance &&
			(gone[instance] || !ok || !vouched[instance] && next.At.After(run.At.Add(restartAfter)))
		switch {
		case replaced:
			lost = append(lost, fmt.Sprintf("shard %d (agent %s restarted since it took the shard)", k+1, agent))
		case !ok:
			lost = append(lost, fmt.Sprintf("shard %d (agent %s silent for more than %s)", k+1, agent, AgentLost))
		case !run.Live(now) && !vouched[run.Instance]:
			lost = append(lost, fmt.Sprintf("shard %d (agent %s silent for %.1fs, more than %s)", k+1, agent, now.Sub(run.At).Seconds(), AgentLost))
		}
	}
	return strings.Join(lost, ", ")
}

// restartAfter: a new run under a shard's agent's name counts as its
// restart once it beat this long after the run that took the shard last
// did. A live run beats every HeartbeatEvery, so a run under the same name
// beside it (another agent's forgery) never passes for its restart.
const restartAfter = 2*contracts.HeartbeatEvery + contracts.HeartbeatEvery/2

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
