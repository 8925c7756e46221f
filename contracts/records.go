package contracts

import (
	"slices"
	"sort"
	"time"
)

// Records of the KV buckets (names.go): what one key holds.

// Heartbeat is an agent run's entry in the agents KV bucket (key:
// HeartbeatKey, its name and instance), written every HeartbeatEvery and
// signed by the run's key (sign.go); see AgentLiveness and AgentsTTL.
type Heartbeat struct {
	Name     string    `json:"name"`
	At       time.Time `json:"at"`
	Busy     string    `json:"busy,omitempty"`     // the shard job id it runs, if any
	Instance string    `json:"instance,omitempty"` // the agent's run (BarrierReady.Instance)
	// Host and Pid name the agent's process: a scheduler on the same host
	// asks the kernel whether a late agent still runs and works.
	Host string `json:"host,omitempty"`
	Pid  int    `json:"pid,omitempty"`
	// Signature is Instance's signature over the rest (SignHeartbeat).
	Signature string `json:"signature,omitempty"`
}

// Live reports whether the agent beat within AgentLiveness of now.
func (h Heartbeat) Live(now time.Time) bool { return AgentLive(h.At, now) }

// AgentLive reports whether an agent whose last beat was at is live at now.
func AgentLive(at, now time.Time) bool { return now.Sub(at) <= AgentLiveness }

// LiveAgents names the agents of beats (by name or by run: the map's keys
// do not matter) that are live at now, each once, sorted.
func LiveAgents(beats map[string]Heartbeat, now time.Time) []string {
	var live []string
	for _, hb := range beats {
		if hb.Live(now) && !slices.Contains(live, hb.Name) {
			live = append(live, hb.Name)
		}
	}
	sort.Strings(live)
	return live
}

// NewestRuns is, of runs (instance → its last heartbeat), each agent
// name's newest run: name → its last heartbeat.
func NewestRuns(runs map[string]Heartbeat) map[string]Heartbeat {
	out := map[string]Heartbeat{}
	for _, hb := range runs {
		if cur, ok := out[hb.Name]; !ok || hb.At.After(cur.At) {
			out[hb.Name] = hb
		}
	}
	return out
}

// VolumeEntry is a volume's entry in the volumes KV bucket (key = name),
// written by a backend with persistent storage; benchq status lists them.
type VolumeEntry struct {
	Name         string  `json:"name"`
	DBMS         string  `json:"dbms"`
	UseCase      string  `json:"use_case"`
	Loaded       bool    `json:"loaded"`
	TimeLoadingS float64 `json:"time_loading_s"`
	Size         string  `json:"size"`
	Class        string  `json:"class,omitempty"`
}
