// Package plan expands an experiment request into the grid of SUT
// configurations and their phases, in bexhoma's loop order, and computes the
// per-shard YCSB parameters. Everything here is pure: no I/O, no clock.
package plan

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/catalog"
)

// The plan's data types are contracts (the planned event publishes them);
// these aliases keep the package's vocabulary: plan.Plan, plan.Phase, ….
type (
	Plan          = contracts.Plan
	Configuration = contracts.PlanConfiguration
	Phase         = contracts.PlanPhase
	Shard         = contracts.PlanShard
)

// InvalidError is a request that cannot be expanded; Field names the culprit.
type InvalidError struct{ Field, Message string }

func (e *InvalidError) Error() string { return e.Field + ": " + e.Message }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Message: fmt.Sprintf(format, args...)}
}

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
	MaxSUTs:             1,
	StatusInterval:      10,
}

// Benchmarks (the request's "benchmark", the CLI's command).
const (
	BenchmarkYCSB      = "ycsb"
	BenchmarkBenchbase = "benchbase"
)

// DefaultTargetBase is -xtb's default; Benchbase's targets are
// transactions/s, so its base is smaller (bexhoma's examples use 1024).
const (
	DefaultTargetBase          = 16384
	DefaultBenchbaseTargetBase = 1024
	DefaultBenchbaseDurationS  = 300
)

// Default pool of a DBMS with a connection pool when -xnpp/-xnpi/-xnpo are
// not given.
var DefaultPool = contracts.Pool{Pods: 1, Inbound: 128, Outbound: 64}

// DefaultTimeouts bound every wait; a request may override each. The shard
// timeout grows with the phase's expected duration (see timeouts).
var DefaultTimeouts = contracts.Timeouts{SUTReadyS: 120, BarrierS: 120, ShardS: 3600}

// Version is benchq's version, stamped on every plan; a release build sets
// it with -ldflags "-X github.com/benchq/benchq/internal/plan.Version=…".
var Version = "dev"

// WithDefaults fills every field the request left out: the plan's settings
// carry every value resolved (plan.schema.json requires them), so no reader
// of a plan needs benchq's defaults.
func WithDefaults(r contracts.Request) contracts.Request {
	d := Defaults
	if r.SchemaVersion == 0 {
		r.SchemaVersion = contracts.SchemaVersion
	}
	if r.Benchmark == "" {
		r.Benchmark = d.Benchmark
	}
	if r.Action == "" {
		r.Action = d.Action
	}
	if r.SF == 0 {
		r.SF = d.SF
	}
	if r.Operations == 0 {
		r.Operations = r.SF
	}
	bb := r.Benchmark == BenchmarkBenchbase
	if r.Workload == "" {
		r.Workload = d.Workload
		if bb {
			r.Workload = "tpcc"
		}
	}
	if r.InsertOrder == "" && !bb {
		r.InsertOrder = d.InsertOrder
	}
	if r.TargetBase == nil {
		tb := DefaultTargetBase
		if bb {
			tb = DefaultBenchbaseTargetBase
		}
		r.TargetBase = &tb
	}
	if bb && r.DurationS == 0 {
		r.DurationS = DefaultBenchbaseDurationS
	}
	fillF := func(v *[]float64, def []float64) {
		if len(*v) == 0 {
			*v = def
		}
	}
	fillI := func(v *[]int, def []int) {
		if len(*v) == 0 {
			*v = def
		}
	}
	fillF(&r.LoadingFactors, d.LoadingFactors)
	fillF(&r.BenchmarkingFactors, d.BenchmarkingFactors)
	fillI(&r.LoadingPods, d.LoadingPods)
	if bb {
		fillI(&r.LoadingThreads, []int{1}) // bexhoma's Benchbase loads with one thread per pod
	}
	fillI(&r.LoadingThreads, d.LoadingThreads)
	fillI(&r.BenchmarkingPods, d.BenchmarkingPods)
	fillI(&r.BenchmarkingThreads, d.BenchmarkingThreads)
	fillI(&r.Clients, d.Clients)
	if r.Repetitions == 0 {
		r.Repetitions = d.Repetitions
	}
	if r.MaxSUTs == 0 {
		r.MaxSUTs = d.MaxSUTs
	}
	if r.StatusInterval == 0 {
		r.StatusInterval = d.StatusInterval
	}
	if r.TestResults == nil {
		t := true
		r.TestResults = &t
	}
	return r
}

// Expand builds the plan of a validated request (defaults are applied here).
//
// Loop order follows bexhoma: loading variants (threads × pods × factor) ×
// DBMS (× pool variants, for a DBMS with a connection pool) give one
// configuration each, repeated -nc times on a fresh SUT; inside a
// configuration the benchmarking variants (factor × threads × pods ×
// clients) run one after another.
func Expand(code string, req contracts.Request) (Plan, error) {
	r := WithDefaults(req)
	p := Plan{
		Code:           code,
		Version:        Version,
		Settings:       r,
		RecordCount:    millions(r.SF),
		OperationCount: millions(r.Operations),
	}
	if err := checkSettings(r); err != nil {
		return Plan{}, err
	}
	bb := r.Benchmark == BenchmarkBenchbase
	if bb {
		p.RecordCount, p.OperationCount = int64(r.SF), 0 // warehouses; Benchbase runs for a duration
	}
	if p.RecordCount < 1 {
		return Plan{}, invalid("sf", "%g million rows is less than one row; use at least 0.000001", r.SF)
	}
	base := *r.TargetBase
	pools, err := poolGrid(r)
	if err != nil {
		return Plan{}, err
	}
	for _, lt := range r.LoadingThreads {
		for _, lp := range r.LoadingPods {
			if int64(lp) > p.RecordCount {
				return Plan{}, invalid("loading_pods", "%d loader pods for %d rows would leave pods without rows (lower -nlp or raise -sf)", lp, p.RecordCount)
			}
			if lt < lp {
				return Plan{}, invalid("loading_threads", "%d threads cannot be split into %d loader pods; every pod needs at least one thread (raise -nlt or lower -nlp)", lt, lp)
			}
			if bb && lp != 1 {
				return Plan{}, invalid("loading_pods", "Benchbase loads with one pod (it creates the schema and fills every warehouse); drop -nlp")
			}
			for _, lf := range r.LoadingFactors {
				loadTarget := target(base, lf)
				for _, dbms := range r.DBMS {
					dbmsPools := []*contracts.Pool{nil}
					if HasPool(dbms) {
						dbmsPools = pools
					}
					for _, pool := range dbmsPools {
						cfgBase := fmt.Sprintf("%s-%d-%d-%d", dbms, lt, lp, loadTarget)
						if pool != nil {
							cfgBase += fmt.Sprintf("-%d-%d-%d", pool.Pods, pool.Inbound, pool.Outbound)
						}
						for run := 1; run <= r.Repetitions; run++ {
							c := Configuration{
								Name:          fmt.Sprintf("%s-%d", cfgBase, run),
								Base:          cfgBase,
								DBMS:          dbms,
								ExperimentRun: run,
								SUT:           sutSpec(r, pool),
								Phases:        []Phase{}, // [] rather than null for action start: the schema wants a list
							}
							if len(c.Name) > maxNameLen-len("-run999") {
								return Plan{}, invalid("dbms", "configuration name %s is too long to name its phases and Kubernetes objects (at most %d characters)", c.Name, maxNameLen-len("-run999"))
							}
							if r.Action == contracts.ActionStart {
								p.Configurations = append(p.Configurations, c)
								continue
							}
							c.Phases = append(c.Phases, loadPhase(c.Name, r, p.RecordCount, lt, lp, lf, loadTarget))
							if r.Action == contracts.ActionLoad {
								p.Configurations = append(p.Configurations, c)
								continue
							}
							client := 0
							for _, bf := range r.BenchmarkingFactors {
								for _, bt := range r.BenchmarkingThreads {
									for _, bp := range r.BenchmarkingPods {
										for _, ne := range r.Clients {
											pods := bp * ne
											if bt < bp {
												return Plan{}, invalid("benchmarking_threads", "%d threads cannot be split into %d benchmarker pods; every pod needs at least one thread (raise -nbt or lower -nbp)", bt, bp)
											}
											if !bb && int64(pods) > p.OperationCount {
												return Plan{}, invalid("operations", "%d operations cannot be split into %d benchmarker pods (raise -xop)", p.OperationCount, pods)
											}
											client++
											c.Phases = append(c.Phases, runPhase(c.Name, client, r, p.RecordCount, p.OperationCount, bt*ne, pods, bf, target(base, bf)))
										}
									}
								}
							}
							p.Configurations = append(p.Configurations, c)
							if n := len(p.Configurations); n > MaxConfigurations {
								return Plan{}, invalid("(grid)", "more than %d configurations; shorten the lists of -nlp, -nlt, -xnlf, -dbms, -xnpp/-xnpi/-xnpo or -nc", MaxConfigurations)
							}
						}
					}
				}
			}
		}
	}
	p.Timeouts = timeouts(r, p)
	return p, nil
}

// maxNameLen is the longest name that is a NATS token and, lower-cased, a
// Kubernetes label value and object name.
const maxNameLen = 63

// MaxConfigurations bounds a grid: beyond it a request is almost surely a
// typo, and every configuration is a SUT to start.
const MaxConfigurations = 1000

// HasPool reports whether a DBMS sits behind a connection pool (the pool
// loop -xnpp/-xnpi/-xnpo applies to it).
func HasPool(dbms string) bool {
	e, err := catalog.Lookup(dbms)
	return err == nil && e.Kind == "pgbouncer" // the catalog kind of PgBouncer (catalog/pgbouncer.json)
}

// checkSettings rejects combinations the schema cannot express.
func checkSettings(r contracts.Request) error {
	bb := r.Benchmark == BenchmarkBenchbase
	switch {
	case bb && r.Workload != "tpcc":
		return invalid("workload", "benchbase runs tpcc, not %q", r.Workload)
	case !bb && r.Workload == "tpcc":
		return invalid("workload", "tpcc is a Benchbase workload; use `benchq benchbase` (benchmark benchbase) or a YCSB workload a-f")
	case !bb && r.NewConnection:
		return invalid("new_connection", "a new connection per transaction (-xconn) is a Benchbase option")
	case bb && r.SF != float64(int64(r.SF)):
		return invalid("sf", "Benchbase's scale factor is a number of warehouses, a whole number (got %g)", r.SF)
	case r.WorkerReplicas > 0 && r.Workers == 0:
		return invalid("worker_replicas", "replicas (-nwr) need workers (-nw)")
	case r.Storage != nil && r.Storage.Remove && r.Storage.Class == "" && r.Storage.Size == "":
		return invalid("storage.remove", "removing the volume first (-rsr) needs a volume: give -rst and/or -rss")
	}
	if bb {
		for i, d := range r.DBMS {
			if e, err := catalog.Lookup(d); err == nil && e.JDBCURL == "" {
				return invalid(fmt.Sprintf("dbms[%d]", i), "%s has no SQL interface; benchbase needs one of: %s", d, strings.Join(sqlDBMS(), ", "))
			}
		}
	}
	pooled := false
	for _, d := range r.DBMS {
		pooled = pooled || HasPool(d)
	}
	if !pooled && (len(r.PoolPods) > 0 || len(r.PoolInbound) > 0 || len(r.PoolOutbound) > 0) {
		return invalid("pool_pods", "-xnpp/-xnpi/-xnpo size a connection pool, and none of %s has one (e.g. PgBouncer)", strings.Join(r.DBMS, ", "))
	}
	return nil
}

func sqlDBMS() []string {
	var out []string
	for _, n := range catalog.Names() {
		if e, err := catalog.Lookup(n); err == nil && e.JDBCURL != "" {
			out = append(out, n)
		}
	}
	return out
}

// poolGrid is the pool loop: pods × inbound × outbound, bexhoma's order.
func poolGrid(r contracts.Request) ([]*contracts.Pool, error) {
	or := func(v []int, d int) []int {
		if len(v) == 0 {
			return []int{d}
		}
		return v
	}
	var out []*contracts.Pool
	for _, pods := range or(r.PoolPods, DefaultPool.Pods) {
		for _, in := range or(r.PoolInbound, DefaultPool.Inbound) {
			for _, outb := range or(r.PoolOutbound, DefaultPool.Outbound) {
				if in < pods || outb < pods {
					return nil, invalid("pool_inbound", "%d inbound / %d outbound connections cannot be split over %d pool pods; every pod needs at least one of each", in, outb, pods)
				}
				out = append(out, &contracts.Pool{Pods: pods, Inbound: in, Outbound: outb})
			}
		}
	}
	return out, nil
}

// sutSpec is the SUT shape shared by every configuration of the request.
func sutSpec(r contracts.Request, pool *contracts.Pool) contracts.SUTSpec {
	s := contracts.SUTSpec{
		Workers: r.Workers, WorkerReplicas: r.WorkerReplicas, Pool: pool,
		Resources: r.Resources, Storage: r.Storage, Monitoring: r.Monitoring,
		UseCase: fmt.Sprintf("%s-%s", r.Benchmark, strconv.FormatFloat(r.SF, 'f', -1, 64)),
	}
	if r.Nodes != nil {
		s.Node = r.Nodes.SUT
	}
	return s
}

func node(r contracts.Request, kind string) string {
	if r.Nodes == nil {
		return ""
	}
	if kind == contracts.KindLoad {
		return r.Nodes.Loading
	}
	return r.Nodes.Benchmarking
}

func loadPhase(cfg string, r contracts.Request, records int64, threads, pods int, factor float64, tgt int) Phase {
	ph := Phase{Name: cfg + "-load", Kind: contracts.KindLoad, Pods: pods, Threads: threads, Factor: factor, Target: tgt, Node: node(r, contracts.KindLoad)}
	ranges := SplitRange(records, pods)
	th := SplitInt(threads, pods)
	tg := SplitInt(tgt, pods)
	for i := 0; i < pods; i++ {
		if r.Benchmark == BenchmarkBenchbase {
			ph.Shards = append(ph.Shards, Shard{TPCC: &contracts.TPCCShard{
				Warehouses: int(records), Terminals: th[i], StatusInterval: r.StatusInterval,
			}})
			continue
		}
		ph.Shards = append(ph.Shards, Shard{YCSB: &contracts.YCSBShard{
			Workload:       r.Workload,
			Threads:        th[i],
			Target:         tg[i],
			RecordCount:    records,
			InsertStart:    ranges[i].Start,
			InsertCount:    ranges[i].Count,
			OperationCount: ranges[i].Count,
			InsertOrder:    r.InsertOrder,
			StatusInterval: r.StatusInterval,
			BatchSize:      r.BatchSize,
		}})
	}
	return ph
}

// runPhase: every benchmarking shard covers the WHOLE keyspace
// (insertstart=0, insertcount=recordcount) so zipfian hot keys stay global;
// operations, threads and target are split. Benchbase shards all run the
// phase's duration against every warehouse; terminals and target are split.
func runPhase(cfg string, client int, r contracts.Request, records, ops int64, threads, pods int, factor float64, tgt int) Phase {
	ph := Phase{Name: fmt.Sprintf("%s-run%d", cfg, client), Kind: contracts.KindRun, Client: client, Pods: pods, Threads: threads, Factor: factor, Target: tgt, Node: node(r, contracts.KindRun)}
	opsSplit := SplitRange(ops, pods)
	th := SplitInt(threads, pods)
	tg := SplitInt(tgt, pods)
	for i := 0; i < pods; i++ {
		if r.Benchmark == BenchmarkBenchbase {
			ph.Shards = append(ph.Shards, Shard{TPCC: &contracts.TPCCShard{
				Warehouses: int(records), Terminals: th[i], Target: tg[i], DurationS: r.DurationS,
				NewConnection: r.NewConnection, StatusInterval: r.StatusInterval,
			}})
			continue
		}
		ph.Shards = append(ph.Shards, Shard{YCSB: &contracts.YCSBShard{
			Workload:       r.Workload,
			Threads:        th[i],
			Target:         tg[i],
			RecordCount:    records,
			InsertStart:    0,
			InsertCount:    records,
			OperationCount: opsSplit[i].Count,
			InsertOrder:    r.InsertOrder,
			StatusInterval: r.StatusInterval,
			BatchSize:      r.BatchSize,
			MaxExecutionS:  r.DurationS, // YCSB: -xsd caps a benchmarking phase (maxexecutiontime)
		}})
	}
	return ph
}

// Range is a contiguous run of keys or operations.
type Range struct{ Start, Count int64 }

// SplitRange splits n items into parts contiguous ranges; the remainder goes
// one each to the first shards, so nothing is lost and sizes differ by ≤ 1.
func SplitRange(n int64, parts int) []Range {
	out := make([]Range, parts)
	q, rem := n/int64(parts), n%int64(parts)
	var start int64
	for i := range out {
		c := q
		if int64(i) < rem {
			c++
		}
		out[i] = Range{Start: start, Count: c}
		start += c
	}
	return out
}

// SplitInt splits n into parts integers summing to n, differing by ≤ 1.
func SplitInt(n, parts int) []int {
	rs := SplitRange(int64(n), parts)
	out := make([]int, parts)
	for i, r := range rs {
		out[i] = int(r.Count)
	}
	return out
}

func millions(x float64) int64 { return int64(math.Round(x * 1e6)) }

func target(base int, factor float64) int { return int(math.Round(float64(base) * factor)) }

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
				case sh.YCSB != nil && sh.YCSB.Target > 0:
					expected = max(expected, float64(sh.YCSB.OperationCount)/float64(sh.YCSB.Target))
				}
			}
		}
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
