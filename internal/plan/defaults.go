package plan

import (
	"cmp"
	"math"
	"slices"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/saturation"
)

// Defaults are bexhoma's defaults where it has one.
var Defaults = contracts.Request{
	Benchmark:           BenchmarkYCSB,
	Action:              contracts.ActionRun,
	SF:                  1,
	Workload:            "a",
	InsertOrder:         "hashed",
	LoadingFactors:      []float64{1},
	BenchmarkingFactors: []float64{1},
	LoadingPods:         []int{1},
	LoadingThreads:      []int{64},
	BenchmarkingPods:    []int{1},
	BenchmarkingThreads: []int{64},
	Clients:             []int{1},
	Repetitions:         1,
	StatusInterval:      10,
}

// Benchmarks (the request's "benchmark", the CLI's command).
const (
	BenchmarkYCSB      = "ycsb"
	BenchmarkBenchbase = "benchbase"
	BenchmarkTSDB      = "tsdb" // metrics ingest into a time-series database (docs/tsdb.md)
)

// DefaultTSDB are the metrics workload's defaults: the DalmatinerDB
// benchmark's haggar flags (-metrics=2000 -flush-interval=1s -jitter=1s),
// its 100 agents per generator (-nbt, -nlt) and carbon. haggar's own
// -spawn-interval default is 10 s per agent; benchq starts every agent at
// once (within the jitter), because a phase lasts -xsd, not until stopped.
var DefaultTSDB = contracts.TSDB{Protocol: contracts.ProtocolCarbon, Metrics: 2000, FlushIntervalMS: 1000, JitterMS: intp(1000), SpawnIntervalMS: intp(0), Prefix: "haggar"}

func intp(v int) *int { return &v }

// DefaultTSDBAgents are a generator's agents when -nbt and -nlt are not
// given (the seed's -agents=100).
const DefaultTSDBAgents = 100

// DefaultTargetBase is -xtb's default; Benchbase's targets are
// transactions/s, so its base is smaller (bexhoma's examples use 1024).
const (
	DefaultTargetBase          = 16384
	DefaultBenchbaseTargetBase = 1024
	DefaultBenchbaseDurationS  = 300
	// DefaultErrorShareLimit is -max-errors's default: a phase with more
	// than 1 % failed operations is marked, its result test fails.
	DefaultErrorShareLimit = 1.0
	// DefaultMaxSUTs is -ms's default: one SUT alive at once (bexhoma's
	// default is no limit, -ms 0; one keeps a shared machine's figures
	// clean).
	DefaultMaxSUTs = 1
)

// Default pool of a DBMS with a connection pool when -xnpp/-xnpi/-xnpo are
// not given.
var DefaultPool = contracts.Pool{Pods: 1, Inbound: 128, Outbound: 64}

// DefaultTimeouts bound every wait; a request may override each. The shard
// timeout grows with the phase's expected duration (see timeouts).
var DefaultTimeouts = contracts.Timeouts{SUTReadyS: 120, BarrierS: 120, ShardS: 3600}

// WithDefaults fills every field the request left out: the plan's settings
// carry every value resolved (plan.schema.json requires them), so no reader
// of a plan needs benchq's defaults.
func WithDefaults(r contracts.Request) contracts.Request {
	d := Defaults
	r.SchemaVersion = cmp.Or(r.SchemaVersion, contracts.SchemaVersion)
	r.Benchmark = cmp.Or(r.Benchmark, d.Benchmark)
	r.Action = cmp.Or(r.Action, d.Action)
	r.SF = cmp.Or(r.SF, d.SF)
	r.Operations = cmp.Or(r.Operations, r.SF)
	bb := r.Benchmark == BenchmarkBenchbase
	ts := r.Benchmark == BenchmarkTSDB
	if r.Workload == "" {
		r.Workload = d.Workload
		switch {
		case bb:
			r.Workload = WorkloadTPCC
		case ts:
			r.Workload = WorkloadHaggar
		}
	}
	if r.InsertOrder == "" && !bb && !ts {
		r.InsertOrder = d.InsertOrder
	}
	if r.TargetBase == nil {
		tb := DefaultTargetBase
		switch {
		case bb:
			tb = DefaultBenchbaseTargetBase
		case ts:
			tb = 0 // a generator's load is its agents × metrics per flush
		}
		r.TargetBase = &tb
	}
	if (bb || ts) && r.DurationS == 0 {
		r.DurationS = DefaultBenchbaseDurationS
	}
	if ts {
		r.TSDB = withTSDBDefaults(r.TSDB)
		if r.Saturation != nil && r.Saturation.Quantum == 0 {
			// The search moves by whole agents.
			s := *r.Saturation
			s.Quantum = max(1, int(math.Round(float64(r.TSDB.Metrics)*1000/float64(r.TSDB.FlushIntervalMS))))
			r.Saturation = &s
		}
		r.StatusInterval = cmp.Or(r.StatusInterval, 1) // evaluated second by second, as the seed does
	}
	if ts {
		fill(&r.BenchmarkingThreads, []int{DefaultTSDBAgents})
		fill(&r.BenchmarkingPods, d.BenchmarkingPods)
		// Loading writes the series the first benchmarking variant uses.
		fill(&r.LoadingThreads, r.BenchmarkingThreads[:1])
		fill(&r.LoadingPods, r.BenchmarkingPods[:1])
	}
	fill(&r.LoadingFactors, d.LoadingFactors)
	fill(&r.BenchmarkingFactors, d.BenchmarkingFactors)
	fill(&r.LoadingPods, d.LoadingPods)
	if bb {
		fill(&r.LoadingThreads, []int{1}) // bexhoma's Benchbase loads with one thread per pod
	}
	fill(&r.LoadingThreads, d.LoadingThreads)
	fill(&r.BenchmarkingPods, d.BenchmarkingPods)
	fill(&r.BenchmarkingThreads, d.BenchmarkingThreads)
	fill(&r.Clients, d.Clients)
	r.Repetitions = cmp.Or(r.Repetitions, d.Repetitions)
	r.MaxSUTs = orPointer(r.MaxSUTs, DefaultMaxSUTs)
	if r.Saturation != nil {
		// Steps are judged second by second (-xli 1).
		s := saturation.WithDefaults(*r.Saturation)
		r.Saturation = &s
		r.StatusInterval = cmp.Or(r.StatusInterval, 1)
	}
	r.StatusInterval = cmp.Or(r.StatusInterval, d.StatusInterval)
	r.TestResults = orPointer(r.TestResults, true)
	r.ErrorShareLimit = orPointer(r.ErrorShareLimit, DefaultErrorShareLimit)
	return r
}

// fill gives an empty list its default.
func fill[T any](v *[]T, def []T) {
	if len(*v) == 0 {
		*v = slices.Clone(def) // its own array: an append to one list must not write into another
	}
}

// orPointer is p, or a pointer to def when p is nil.
func orPointer[T any](p *T, def T) *T {
	if p != nil {
		return p
	}
	return &def
}

// The workloads a request may name (request.schema.json's enum, which
// TestWorkloadsAreTheSchemas checks): YCSB's core workloads, Benchbase's
// tpcc, and benchmark tsdb's one workload, haggar's model.
var YCSBWorkloads = []string{"a", "b", "c", "d", "e", "f"}

const (
	WorkloadTPCC   = "tpcc"
	WorkloadHaggar = "haggar"
)

func withTSDBDefaults(t *contracts.TSDB) *contracts.TSDB {
	d := DefaultTSDB
	if t == nil {
		t = &contracts.TSDB{}
	}
	out := *t
	out.Protocol = cmp.Or(out.Protocol, d.Protocol)
	out.Metrics = cmp.Or(out.Metrics, d.Metrics)
	out.FlushIntervalMS = cmp.Or(out.FlushIntervalMS, d.FlushIntervalMS)
	out.Prefix = cmp.Or(out.Prefix, d.Prefix)
	out.JitterMS = orPointer(out.JitterMS, *d.JitterMS)
	out.SpawnIntervalMS = orPointer(out.SpawnIntervalMS, *d.SpawnIntervalMS)
	return &out
}

// timeouts are the request's, else the defaults; a shard's default grows
// with the longest expected phase (Benchbase's duration, or YCSB operations
// at the target rate) so a long throttled phase is not cut short:
// max(3600 s, 2 × expected + 300 s).
func timeouts(r contracts.Request, p Plan) contracts.Timeouts {
	out := DefaultTimeouts
	var expected float64
	for _, c := range p.Configurations {
		for _, ph := range c.Phases {
			for _, sh := range ph.Shards {
				switch {
				case sh.TPCC != nil && sh.TPCC.DurationS > 0:
					expected = max(expected, float64(sh.TPCC.DurationS))
				case sh.TSDB != nil:
					expected = max(expected, float64(sh.TSDB.DurationS))
				case sh.YCSB != nil && sh.YCSB.Target > 0:
					expected = max(expected, float64(sh.YCSB.OperationCount)/float64(sh.YCSB.Target))
				}
			}
		}
	}
	if s := r.Saturation; s != nil {
		// Its steps and hold are added as the search goes.
		expected = max(expected, float64(s.StepS), float64(s.HoldS))
	}
	out.ShardS = max(out.ShardS, int(math.Ceil(2*expected))+300)
	t := r.Timeouts
	if t == nil {
		return out
	}
	if t.SUTReadyS > 0 {
		out.SUTReadyS = t.SUTReadyS
	}
	if t.BarrierS > 0 {
		out.BarrierS = t.BarrierS
	}
	if t.ShardS > 0 {
		out.ShardS = t.ShardS
	}
	return out
}
