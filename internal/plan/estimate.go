package plan

import (
	"math"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
)

// Costs are the fixed costs an estimate adds to the phases' own work,
// measured on the embedded stack (2 cores; the e2e logs of `make test`,
// medians): a SUT from deploy to ready, by catalog kind; a phase's start
// (driver JVM, READY/GO barrier, the GO's lead) and end (final results
// stored); a TPC-C warehouse's loading.
type Costs struct {
	SUTReadyS       map[string]float64 // by catalog kind; a cluster's per node
	ExportersS      float64            // the application metrics' exporters (-ma) before the SUT is ready
	PhaseS          float64
	TeardownS       float64
	TPCCWarehouseS  float64 // loading one warehouse
	UnknownSUTReady float64 // a kind without a measurement
	// PoolAgents is the embedded stack's pool of driver agents (benchq
	// up's BENCHQ_AGENTS, 2); a phase with more shards starts an agent
	// for each one more (the local backend), PhaseAgentS each.
	PoolAgents  int
	PhaseAgentS float64
}

// MeasuredCosts are the costs measured here: Redis ready in 0.1 s,
// PostgreSQL 2.0 s, a Redis Cluster 1.0 s a node (3 masters 2.2 s, 3 with
// a replica each 6.3 s), PgBouncer (PostgreSQL and its pools) 6.3 s, and
// 4 s more with -ma (its exporters; Redis 4.4-4.9 s, PostgreSQL 3.6 s);
// a phase costs 0.8 s beyond its work, and 0.65 s more for each shard
// beyond the pool's 2 agents (their own agents start: 0.24-0.83 s each,
// 6 to 14 of them, against 0.3 s for a phase the pool serves); TPC-C loads
// a warehouse in 9.2 s (2 in 18.5 s). A SUT that cannot keep up with the target takes longer (the
// estimate assumes it keeps up), and the Kubernetes backend pulls images
// and schedules pods: its SUTs take longer than this says.
var MeasuredCosts = Costs{
	SUTReadyS: map[string]float64{
		catalog.KindRedis: 0.1, catalog.KindPostgreSQL: 2.0, catalog.KindRedisCluster: 1.0, catalog.KindPgBouncer: 6.3,
	},
	ExportersS:      4.0,
	PhaseS:          0.8,
	TeardownS:       0.2,
	TPCCWarehouseS:  9.2,
	UnknownSUTReady: 10,
	PoolAgents:      2,
	PhaseAgentS:     0.65,
}

// PhaseEstimate is the expected length of one planned phase; Bounded is
// false when its work has no rate to go by (an unthrottled YCSB phase: it
// runs as fast as the SUT goes), and then Seconds is only the fixed cost.
type PhaseEstimate struct {
	Phase   string
	Seconds float64
	Bounded bool
	// Reused: a loading phase skipped at run time, its data on the volume
	// an earlier configuration of the plan loaded (ReusesVolume); its
	// Seconds is 0.
	Reused string // that configuration's name
}

// ReusesVolume reports whether a configuration's data goes on a volume
// that later SUTs of the same DBMS and use case find loaded (-rst, -rsr
// only empties it once per experiment), so that their loading is skipped.
// A cluster of workers is taken to load again: on Kubernetes its workers'
// volumes are the experiment's own (docs/kubernetes.md); so is a DBMS whose
// volume keeps no data (catalog's volume_not_reused).
func ReusesVolume(s contracts.SUTSpec, entry catalog.Entry) bool {
	return s.WantsVolume() && !entry.Clustered() && entry.VolumeNotReused == ""
}

// VolumeOf names the volume a configuration's SUT keeps its data on (-rst),
// as the deployers name it: its data owner's (PgBouncer's is its
// PostgreSQL's) for its data set; "" without one. A volume serves one SUT
// at a time: the configurations on one take turns.
func VolumeOf(cfg Configuration) string {
	if !cfg.SUT.WantsVolume() {
		return ""
	}
	owner := cfg.DBMS
	if e, err := catalog.Lookup(cfg.DBMS); err == nil {
		owner = e.DataOwner().Name
	}
	return owner + "/" + cfg.SUT.UseCase
}

// Estimate is the expected duration of a plan: per phase, per
// configuration (its SUT's start, phases and teardown) and in total, with
// -ms SUTs at a time. Steps of a saturation search are added as the search
// goes: its estimate counts them all (MaxSteps) and says so (Saturation).
type Estimate struct {
	Phases         []PhaseEstimate
	Configurations map[string]float64
	TotalS         float64
	Bounded        bool // every phase has a rate or a duration
	Saturation     bool // an upper bound: every step of the search, and the hold
}

// EstimateOf estimates how long the plan takes.
func EstimateOf(p Plan, c Costs) Estimate {
	e := Estimate{Configurations: map[string]float64{}, Bounded: true}
	r := p.Settings
	var sum float64
	loadedBy := map[string]string{}  // volume (DBMS, use case) → the configuration that loads it
	onVolume := map[string]float64{} // volume → its configurations' seconds, which take turns
	for _, cfg := range p.Configurations {
		entry, _ := catalog.Lookup(cfg.DBMS) // a plan's DBMSs are the catalog's
		volume, reused := "", ""
		if ReusesVolume(cfg.SUT, entry) {
			volume = VolumeOf(cfg)
			reused = loadedBy[volume]
		}
		ready, ok := c.SUTReadyS[entry.Kind]
		if !ok {
			ready = c.UnknownSUTReady
		}
		if entry.Clustered() {
			ready *= float64(entry.Masters(cfg.SUT.Workers) * (1 + cfg.SUT.WorkerReplicas))
		}
		if m := r.Monitoring; m != nil && m.Application {
			ready += c.ExportersS
		}
		total := ready + c.TeardownS
		for _, ph := range cfg.Phases {
			pe := estimatePhase(ph, c)
			if reused != "" && ph.Kind == contracts.KindLoad {
				pe = PhaseEstimate{Phase: ph.Name, Bounded: true, Reused: reused}
			}
			e.Phases = append(e.Phases, pe)
			e.Bounded = e.Bounded && pe.Bounded
			total += pe.Seconds
		}
		if s := r.Saturation; s != nil && r.Action == contracts.ActionRun {
			e.Saturation = true
			total += float64((s.MaxSteps-1)*s.StepS+s.HoldS) + float64(s.MaxSteps)*c.PhaseS
		}
		e.Configurations[cfg.Name] = total
		sum += total
		if v := VolumeOf(cfg); v != "" {
			onVolume[v] += total
		}
		if volume != "" && reused == "" {
			loadedBy[volume] = cfg.Name
		}
	}
	// -ms SUTs at once (0: all): configurations overlap that many at a time.
	parallel := len(p.Configurations)
	if r.MaxSUTs != nil && *r.MaxSUTs > 0 {
		parallel = min(parallel, *r.MaxSUTs)
	}
	if r.MaxSUTsExperiment > 0 {
		parallel = min(parallel, r.MaxSUTsExperiment)
	}
	e.TotalS = sum / float64(max(1, parallel))
	for _, s := range onVolume {
		e.TotalS = max(e.TotalS, s)
	}
	return e
}

// estimatePhase: a YCSB phase's operations at its target (or its
// maxexecutiontime, if sooner), a TPC-C phase's duration or its warehouses'
// loading, plus the phase's fixed cost.
func estimatePhase(ph Phase, c Costs) PhaseEstimate {
	pe := PhaseEstimate{Phase: ph.Name, Seconds: c.PhaseS, Bounded: true}
	var work float64
	for _, sh := range ph.Shards {
		switch {
		case sh.TPCC != nil && ph.Kind == contracts.KindLoad:
			work = max(work, float64(sh.TPCC.Warehouses)*c.TPCCWarehouseS)
		case sh.TPCC != nil:
			work = max(work, float64(sh.TPCC.DurationS))
		case sh.TSDB != nil:
			// A loading generator's one write per series is taken as free.
			work = max(work, float64(sh.TSDB.DurationS+sh.TSDB.SpawnIntervalMS*(sh.TSDB.Agents-1)/1000))
		case sh.YCSB != nil:
			y := sh.YCSB
			n := y.OperationCount
			if ph.Kind == contracts.KindLoad {
				n = y.InsertCount
			}
			s := math.Inf(1)
			if y.Target > 0 {
				s = float64(n) / float64(y.Target)
			}
			if y.MaxExecutionS > 0 {
				s = min(s, float64(y.MaxExecutionS))
			}
			if math.IsInf(s, 1) {
				pe.Bounded = false
				continue
			}
			work = max(work, s)
		}
	}
	pe.Seconds += work + float64(max(0, len(ph.Shards)-c.PoolAgents))*c.PhaseAgentS
	return pe
}
