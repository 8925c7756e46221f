package contracts

// SchemaPlan is the plan's schema (schemas/plan.schema.json): the planned
// message carries a plan, and a stored plan is validated against it alone.
const SchemaPlan = "plan"

// Plan is the expanded experiment: published in the planned event, stored
// in the experiments table and the scheduler's state, read by the reporter.
// internal/plan builds it from a Request; schemas/plan.schema.json describes
// it for every reader, Go or Python.
type Plan struct {
	Code string `json:"code"`
	// Version of benchq that planned the experiment (internal/version).
	Version string `json:"version"`
	// Settings is the request with every default resolved, so a reader never
	// needs to know benchq's defaults (docs/events.md, "The plan").
	Settings       Request             `json:"settings"`
	RecordCount    int64               `json:"recordcount"`    // YCSB rows; Benchbase warehouses; TSDB metrics per agent
	OperationCount int64               `json:"operationcount"` // YCSB operations per benchmarking phase; Benchbase and TSDB 0
	Configurations []PlanConfiguration `json:"configurations"`
	Timeouts       Timeouts            `json:"timeouts"` // resolved: every field set
	// EstimatedS is how long the experiment should take, in seconds, from
	// its operations and targets or durations plus measured start-up costs
	// (internal/plan.EstimateOf); absent when a phase has no rate to go by
	// (unthrottled). A saturation search's is its upper bound.
	EstimatedS float64 `json:"estimated_s,omitempty"`
}

// PlanConfiguration is one SUT, loaded once, then benchmarked phase after
// phase.
type PlanConfiguration struct {
	Name          string      `json:"name"` // e.g. Redis-8-2-16384-1
	Base          string      `json:"base"` // name without the repetition: Redis-8-2-16384
	DBMS          string      `json:"dbms"`
	ExperimentRun int         `json:"experiment_run"` // -nc repetition, 1-based
	SUT           SUTSpec     `json:"sut"`
	Phases        []PlanPhase `json:"phases"` // the loading phase first (none for action start)
}

// PlanPhase is one loading or benchmarking phase; its shards start together.
type PlanPhase struct {
	Name    string      `json:"name"`   // <configuration>-<client>: -0 loads, -1, -2, … benchmark
	Kind    string      `json:"kind"`   // KindLoad or KindRun
	Client  int         `json:"client"` // benchmarking phase number inside the configuration (0 for loading)
	Pods    int         `json:"pods"`
	Threads int         `json:"threads"` // total over shards
	Factor  float64     `json:"factor"`
	Target  int         `json:"target"` // total ops/s over shards; 0 = unthrottled
	Node    string      `json:"node,omitempty"`
	Shards  []PlanShard `json:"shards"`
}

// PlanShard holds one shard's parameters for the phase's engine: exactly
// one of YCSB (engine ycsb), TPCC (engine benchbase) and TSDB (engine
// tsdb) is set.
type PlanShard struct {
	YCSB *YCSBShard `json:"ycsb,omitempty"`
	TPCC *TPCCShard `json:"tpcc,omitempty"`
	TSDB *TSDBShard `json:"tsdb,omitempty"`
}

// Threads of the shard, whatever its engine (TPC-C: terminals; TSDB:
// agents).
func (s PlanShard) Threads() int {
	switch {
	case s.TPCC != nil:
		return s.TPCC.Terminals
	case s.TSDB != nil:
		return s.TSDB.Agents
	}
	return s.YCSB.Threads
}

// Target of the shard in operations (TPC-C: transactions) per second; a
// metrics generator's load is set by its agents and metrics instead (0).
func (s PlanShard) Target() int {
	switch {
	case s.TPCC != nil:
		return s.TPCC.Target
	case s.TSDB != nil:
		return 0
	}
	return s.YCSB.Target
}

// Phase returns the phase with the given name and its configuration.
func (p Plan) Phase(name string) (PlanConfiguration, PlanPhase, bool) {
	for _, c := range p.Configurations {
		for _, ph := range c.Phases {
			if ph.Name == name {
				return c, ph, true
			}
		}
	}
	return PlanConfiguration{}, PlanPhase{}, false
}
