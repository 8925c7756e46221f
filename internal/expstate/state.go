// Package expstate is the scheduler's stored state of an experiment (one
// value per experiment code in the benchq_experiments KV bucket). The
// scheduler steps it; benchq status reads it. Both use these types, so the
// stored format is defined once.
package expstate

import (
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/plan"
)

// Configuration states.
const (
	ConfigPending     = "pending"
	ConfigDeploying   = "deploying"
	ConfigRunning     = "running"
	ConfigTearingDown = "tearing_down"
	ConfigRemoved     = "removed"
)

// Phase states.
const (
	PhasePreparing = "preparing" // shard jobs out, waiting for READY
	PhaseRunning   = "running"   // GO published, waiting for final results
)

// StatusRunning is an experiment's status until it ends (then done, failed
// or cancelled, as contracts.Experiment*).
const StatusRunning = contracts.ExperimentRunning

// State is one experiment's state.
type State struct {
	Code      string     `json:"code"`
	RequestID string     `json:"request_id"`
	Status    string     `json:"status"` // running | done | failed | cancelled
	Plan      plan.Plan  `json:"plan"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	Configs   []Config   `json:"configs"`
	Failures  []string   `json:"failures,omitempty"`
	// Cancelled holds the reason of a benchq stop; the experiment then
	// tears everything down and ends as cancelled.
	Cancelled string `json:"cancelled,omitempty"`
}

// Config tracks one configuration (one SUT).
type Config struct {
	Status   string              `json:"status"`
	Endpoint *contracts.Endpoint `json:"endpoint,omitempty"`
	Phase    int                 `json:"phase"` // index into the plan's phases
	Current  *Phase              `json:"current,omitempty"`
	Deadline *time.Time          `json:"deadline,omitempty"` // of deploy or teardown
	Failed   string              `json:"failed,omitempty"`
	// Reruns lists why earlier attempts of phases were abandoned.
	Reruns []string `json:"reruns,omitempty"`
	// Volume is the SUT's persistent volume (from sut.ready), and
	// LoadingTimeS how long this configuration's loading phase took to fill
	// it (0: not loaded here).
	Volume       string  `json:"volume,omitempty"`
	LoadingTimeS float64 `json:"loading_time_s,omitempty"`
	// Backend is the deployer's backend of this SUT (from sut.ready):
	// contracts.BackendLocal means the shards run on the stack's pool of
	// driver agents.
	Backend string `json:"backend,omitempty"`
}

// Phase tracks the running phase of a configuration.
type Phase struct {
	Attempt  int          `json:"attempt"`
	Status   string       `json:"status"`
	Ready    []bool       `json:"ready"`
	Done     []*ShardDone `json:"done"`
	Agents   []string     `json:"agents"` // per shard, from READY
	GoAt     *time.Time   `json:"go_at,omitempty"`
	Deadline time.Time    `json:"deadline"`
}

// ShardDone is what the scheduler keeps of a shard's final result.
type ShardDone struct {
	Status    string    `json:"status"`
	Error     string    `json:"error,omitempty"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
}

// Alive counts the experiment's SUTs that exist or are being made or
// removed: what -ms bounds.
func (s *State) Alive() int {
	n := 0
	for _, c := range s.Configs {
		if c.Status == ConfigDeploying || c.Status == ConfigRunning || c.Status == ConfigTearingDown {
			n++
		}
	}
	return n
}

// Shards counts the current phase's shards: pending (no READY yet),
// running (READY, no result) and done.
func (p *Phase) Shards() (pending, running, done int) {
	for k := range p.Ready {
		switch {
		case k < len(p.Done) && p.Done[k] != nil:
			done++
		case p.Ready[k]:
			running++
		default:
			pending++
		}
	}
	return pending, running, done
}

// Waits reports whether the experiment still waits for this shard of this
// phase attempt to get READY: a shard job redelivered after its first agent
// died is worth running only then.
func (s *State) Waits(phase string, attempt, shard int) bool {
	if s.Status != StatusRunning {
		return false
	}
	for i, c := range s.Configs {
		if c.Current == nil || c.Status != ConfigRunning || i >= len(s.Plan.Configurations) {
			continue
		}
		pc := s.Plan.Configurations[i]
		if c.Phase >= len(pc.Phases) || pc.Phases[c.Phase].Name != phase {
			continue
		}
		cur := c.Current
		return cur.Attempt == attempt && cur.Status == PhasePreparing && shard >= 1 && shard <= len(cur.Ready) && !cur.Ready[shard-1]
	}
	return false
}
