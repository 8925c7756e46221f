package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/benchq/benchq/contracts"
)

// Driver Jobs (Kubernetes backend): the deployer starts one Job of agent
// pods per phase attempt (the Drivers job of startAttempt) and reports its
// end with driver.ended. Agents that ran publish their finals before they
// exit, so by then every shard should have one. After DriverGrace (finals
// may still be on their way) every shard without a final is settled:
//
//   - simulated (the pods ran on kwok's fake nodes, where no container
//     runs): the shard is recorded as "simulated" without a measurement and
//     the phase is done, its reason saying so (SimulatedNote);
//   - otherwise the shard failed: its agent exited without a result, or
//     never ran (the Job failed); the phase fails naming Job and shard.
//
// In both cases the scheduler publishes the shard's final on its behalf
// (same id as the agent's would have, so JetStream keeps one), so the
// results database holds one row per shard either way.

// DriverGrace is how long after driver.ended the shards without a final
// are settled.
const DriverGrace = 3 * time.Second

// SimulatedNote is the reason of a phase whose driver pods were simulated,
// and the error of its shards' finals.
const SimulatedNote = "simulated on kwok: the driver pods did not run YCSB, no measurements"

// DriverEnd is a stored driver.ended, waiting for DriverGrace.
type DriverEnd struct {
	contracts.DriverEnded
	ReceivedAt time.Time `json:"received_at"`
}

// onDriverEnded records the end of the current attempt's driver Job; a
// stale one (another attempt, a phase no longer running) is ignored, a
// repeated one keeps the first.
func (s *State) onDriverEnded(m *contracts.DriverEnded, now time.Time) []Out {
	if _, _, ok := s.current(m.Phase, m.Attempt); !ok {
		return nil
	}
	if d := s.Drivers[m.Phase]; d != nil && d.Attempt == m.Attempt {
		return nil
	}
	if s.Drivers == nil {
		s.Drivers = map[string]*DriverEnd{}
	}
	s.Drivers[m.Phase] = &DriverEnd{DriverEnded: *m, ReceivedAt: now.UTC()}
	return nil
}

// LostGrace is how long a lost driver pod waits to be judged: its agent
// may have published its final just before the pod went, on another
// consumer than driver.lost.
const LostGrace = time.Second

// onDriverLost records a driver pod of the current phase that was deleted
// or failed before it completed; settleLostPods judges it after LostGrace.
// The pod's attempt is not matched: a pod the Job made for an earlier
// attempt (a replacement) may run a shard of this one.
func (s *State) onDriverLost(m *contracts.DriverLost, now time.Time) []Out {
	for i, c := range s.Configs {
		if c.Status != cfgRunning || c.Current == nil || s.Plan.Configurations[i].Phases[c.Phase].Name != m.Phase {
			continue
		}
		c.Current.LostPods = append(c.Current.LostPods, contracts.LostPod{Pod: m.Pod, Job: m.Job, Node: m.Node, How: m.Reason,
			Attempt: m.Attempt, Simulated: m.Simulated, ReceivedAt: now.UTC()})
	}
	return nil
}

// lostPodsDue reports whether a lost pod of cur waited out LostGrace.
func lostPodsDue(cur *PhaseState, now time.Time) bool {
	for _, p := range cur.LostPods {
		if !now.Before(p.ReceivedAt.Add(LostGrace)) {
			return true
		}
	}
	return false
}

// settleLostPods judges configuration i's lost pods that waited out
// LostGrace. The agent named after a pod loses its unfinished shard at
// once, as if its heartbeats had stopped: the phase runs again
// (loseShards). On a simulated node no agent runs and takes a shard, so a
// pod of the current attempt stands for one. A pod whose agent held no
// shard (it died before taking one, or its shard is done) costs nothing:
// the Job replaces the pod, and the shard's job goes to another agent
// after the ack wait.
func (s *State) settleLostPods(i int, now time.Time) []Out {
	cur := s.Configs[i].Current
	var waiting []contracts.LostPod
	var lost string
	for _, p := range cur.LostPods {
		if now.Before(p.ReceivedAt.Add(LostGrace)) {
			waiting = append(waiting, p)
			continue
		}
		if lost == "" {
			lost = lostPod(cur, p)
		}
	}
	s.dirty = s.dirty || len(waiting) != len(cur.LostPods)
	cur.LostPods = waiting
	if lost == "" {
		return nil
	}
	return s.loseShards(i, lost, now)
}

// lostPod is the reason p costs cur a shard, "" when it costs none.
func lostPod(cur *PhaseState, p contracts.LostPod) string {
	how := fmt.Sprintf("driver pod %s of Job %s %s", p.Pod, p.Job, p.How)
	if p.Node != "" {
		how += " on node " + p.Node
	}
	for k, agent := range cur.Agents {
		if agent == p.Pod && cur.Done[k] == nil {
			return fmt.Sprintf("lost shard %d (%s)", k+1, how)
		}
	}
	if p.Simulated && p.Attempt == cur.Attempt && slices.Contains(cur.Done, nil) {
		return fmt.Sprintf("lost %s (simulated: the pod stands for a shard)", how)
	}
	return ""
}

// driversDue reports whether configuration i's current phase has a driver
// Job that ended at least DriverGrace ago.
func (s *State) driversDue(i int, now time.Time) bool {
	c := s.Configs[i]
	if c.Status != cfgRunning || c.Current == nil {
		return false
	}
	d := s.Drivers[s.Plan.Configurations[i].Phases[c.Phase].Name]
	return d != nil && d.Attempt == c.Current.Attempt && !now.Before(d.ReceivedAt.Add(DriverGrace))
}

// settleDrivers settles the shards of configuration i's current phase that
// have no final (see the comment at the top).
func (s *State) settleDrivers(i int, now time.Time) []Out {
	c := &s.Configs[i]
	cur := c.Current
	pc := s.Plan.Configurations[i]
	ph := pc.Phases[c.Phase]
	d := s.Drivers[ph.Name]
	delete(s.Drivers, ph.Name)
	start, end := now.UTC(), now.UTC()
	if d.StartedAt != nil {
		start = d.StartedAt.UTC()
	}
	if d.EndedAt != nil {
		end = d.EndedAt.UTC()
	}
	if end.Before(start) {
		end = start
	}
	var missing []int
	for k, done := range cur.Done {
		if done == nil {
			missing = append(missing, k+1)
		}
	}
	if len(missing) == 0 {
		return nil // every shard reported: its finals end the phase
	}
	var out []Out
	shardFinal := func(shard int, status, text string) {
		cur.Done[shard-1] = &ShardDone{Status: status, Error: text, StartedAt: start, EndedAt: end}
		out = append(out, Out{Subject: contracts.TopicShardEnded.For(s.Code), Msg: &contracts.Final{
			Envelope:      env(s.Code, contracts.FinalID(s.Code, ph.Name, shard, cur.Attempt), now),
			Configuration: pc.Name, Phase: ph.Name, Kind: ph.Kind, Shard: shard, Attempt: cur.Attempt,
			Agent: d.Job, Status: status, Error: text, StartedAt: start, EndedAt: end,
		}})
	}
	if d.Simulated {
		where := fmt.Sprintf("driver Job %s", d.Job)
		if len(d.Nodes) > 0 {
			nodes := append([]string(nil), d.Nodes...)
			sort.Strings(nodes)
			where += ", node " + strings.Join(nodes, ", ")
		}
		for _, k := range missing {
			shardFinal(k, contracts.StatusSimulated, fmt.Sprintf("%s (%s)", SimulatedNote, where))
		}
		if cur.Status == phPreparing {
			// No agent ran, so none was READY and no GO went out: the
			// phase "started" when the Job's pods did, as far as the
			// cluster is concerned.
			cur.Status, cur.GoAt = phRunning, &start
			out = append(out, s.phaseEvent(i, contracts.PhaseStarted, &start, nil, SimulatedNote, now))
		}
		return append(out, s.endPhaseNoted(i, strings.Join(shardFailures(cur), "; "), SimulatedNote, now)...)
	}
	var reasons []string
	for _, k := range missing {
		text := fmt.Sprintf("driver Job %s ended (succeeded %d, failed %d) but shard %d never reported a result", d.Job, d.Succeeded, d.Failed, k)
		shardFinal(k, contracts.StatusFailed, text)
		reasons = append(reasons, text)
	}
	for _, f := range shardFailures(cur) {
		if !strings.Contains(f, "driver Job "+d.Job+" ended") {
			reasons = append(reasons, f)
		}
	}
	if d.Failed > 0 && d.Reason != "" {
		reasons = append(reasons, "the Job says: "+d.Reason)
	}
	return append(out, s.endPhase(i, strings.Join(reasons, "; "), now)...)
}
