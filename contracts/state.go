package contracts

import "time"

// The scheduler's stored state of an experiment: one record per experiment
// code in the benchq_experiments KV bucket (names.json "kv"). It is part of
// the protocol because three services read it: the scheduler steps it,
// benchq status shows it, agents check redelivered shard jobs against it.

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

// ExperimentState is one experiment's state: the value of its code in the
// benchq_experiments KV bucket. The scheduler steps it (services/scheduler),
// benchq status reads it, and agents ask it (Waits) whether a redelivered
// shard is still awaited.
type ExperimentState struct {
	Code      string        `json:"code"`
	RequestID string        `json:"request_id"`
	Status    string        `json:"status"` // ExperimentRunning, then ExperimentDone, …Failed or …Cancelled
	Plan      Plan          `json:"plan"`
	StartedAt time.Time     `json:"started_at"`
	EndedAt   *time.Time    `json:"ended_at,omitempty"`
	Configs   []ConfigState `json:"configs"`
	Failures  []string      `json:"failures,omitempty"`
	// Cancelled holds the reason of a benchq stop; the experiment then
	// tears everything down and ends as cancelled.
	Cancelled string `json:"cancelled,omitempty"`
}

// ConfigState tracks one configuration (one SUT).
type ConfigState struct {
	Status   string      `json:"status"`
	Endpoint *Endpoint   `json:"endpoint,omitempty"`
	Phase    int         `json:"phase"` // index into the plan's phases
	Current  *PhaseState `json:"current,omitempty"`
	Deadline *time.Time  `json:"deadline,omitempty"` // of deploy or teardown
	Failed   string      `json:"failed,omitempty"`
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
	// Generation counts the SUT's deployments after its first: a loading
	// phase that lost a shard's agent runs again on a new SUT (a fresh,
	// empty one: exactly the records loaded once), whose deploy and
	// teardown ids carry it (DeployIDAt). ReloadAttempt is the loading
	// attempt the SUT being replaced is for (0: none pending).
	Generation    int `json:"generation,omitempty"`
	ReloadAttempt int `json:"reload_attempt,omitempty"`
}

// PhaseState tracks the running phase of a configuration.
type PhaseState struct {
	Attempt int          `json:"attempt"`
	Status  string       `json:"status"`
	Ready   []bool       `json:"ready"`
	Done    []*ShardDone `json:"done"`
	Agents  []string     `json:"agents"` // per shard, from READY
	// Instances are the agents' runs per shard, from READY ("" when the
	// agent did not say): a different one in its heartbeat means the agent
	// restarted and the shard is lost.
	Instances []string   `json:"instances,omitempty"`
	GoAt      *time.Time `json:"go_at,omitempty"`
	Deadline  time.Time  `json:"deadline"`
	// LostPods are the driver pods reported lost during the phase
	// (driver.lost, Kubernetes), waiting out the scheduler's LostGrace: a
	// final the pod's agent sent just before may still be on its way.
	LostPods []LostPod `json:"lost_pods,omitempty"`
}

// LostPod is a driver pod reported lost, as the scheduler received it.
type LostPod struct {
	Pod        string    `json:"pod"`
	Job        string    `json:"job"`
	Node       string    `json:"node,omitempty"`
	How        string    `json:"how"`
	Attempt    int       `json:"attempt"`
	Simulated  bool      `json:"simulated,omitempty"`
	ReceivedAt time.Time `json:"received_at"`
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
func (s *ExperimentState) Alive() int {
	n := 0
	for _, c := range s.Configs {
		if c.HoldsSUT() {
			n++
		}
	}
	return n
}

// HoldsSUT reports whether the configuration's SUT exists or is being made
// or removed: it takes one of the SUT slots -ms allows.
func (c ConfigState) HoldsSUT() bool {
	return c.Status == ConfigDeploying || c.Status == ConfigRunning || c.Status == ConfigTearingDown
}

// Shards counts the current phase's shards: pending (no READY yet),
// running (READY, no result) and done.
func (p *PhaseState) Shards() (pending, running, done int) {
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
func (s *ExperimentState) Waits(phase string, attempt, shard int) bool {
	if s.Status != ExperimentRunning {
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
