package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
)

// InvalidError is a request that cannot be expanded; Field names the culprit.
type InvalidError struct{ Field, Message string }

func (e *InvalidError) Error() string { return e.Field + ": " + e.Message }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Message: fmt.Sprintf(format, args...)}
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
	if err := checkWorkers(r); err != nil {
		return err
	}
	if err := checkRepeats(r); err != nil {
		return err
	}
	if r.Benchmark == BenchmarkTSDB {
		return checkTSDB(r)
	}
	if r.TSDB != nil {
		return invalid("tsdb", "the metrics generators' settings are for benchmark tsdb (`benchq tsdb`), not %s", r.Benchmark)
	}
	if r.Workload == WorkloadHaggar {
		return invalid("workload", "haggar is the metrics workload of benchmark tsdb (`benchq tsdb`); %s runs %s", r.Benchmark, map[bool]string{true: WorkloadTPCC, false: "a YCSB workload a-f"}[bb])
	}
	for i, d := range r.DBMS {
		if e, err := catalog.Lookup(d); err == nil && e.IsTSDB() {
			return invalid(fmt.Sprintf("dbms[%d]", i), "%s is a time-series database: it ingests metrics, run it with `benchq tsdb` (benchmark tsdb), not %s", d, r.Benchmark)
		}
	}
	switch {
	case bb && r.Workload != WorkloadTPCC:
		return invalid("workload", "benchbase runs tpcc, not %q", r.Workload)
	case !bb && r.Workload == WorkloadTPCC:
		return invalid("workload", "tpcc is a Benchbase workload; use `benchq benchbase` (benchmark benchbase) or a YCSB workload a-f")
	case !bb && r.NewConnection:
		return invalid("new_connection", "a new connection per transaction (-xconn) is a Benchbase option")
	case bb && r.SF != float64(int64(r.SF)):
		return invalid("sf", "Benchbase's scale factor is a number of warehouses, a whole number (got %g)", r.SF)
	case r.Storage != nil && r.Storage.Remove && r.Storage.Class == "":
		return invalid("storage.remove", "removing the volume first (-rsr) needs a volume: give -rst (a -rss size alone is an ephemeral-storage request, no volume)")
	}
	if err := checkSaturation(r); err != nil {
		return err
	}
	if bb && len(r.Thresholds) > 0 {
		return invalid("thresholds", "thresholds judge YCSB's benchmarking phases so far; Benchbase's figures are not supported yet")
	}
	if len(r.Thresholds) > 0 && (r.Action == contracts.ActionLoad || r.Action == contracts.ActionStart) {
		return invalid("thresholds", "thresholds judge benchmarking phases, and action %s runs none: leave -threshold out, or run (the default action)", r.Action)
	}
	for i, t := range r.Thresholds {
		if err := checkThreshold(t); err != nil {
			return invalid(fmt.Sprintf("thresholds[%d]", i), "%s: %v", t.Text, err)
		}
		if t.OfTarget && *r.TargetBase == 0 {
			// Unthrottled phases have no target: a bound of 0.95 × 0 would always hold.
			return invalid(fmt.Sprintf("thresholds[%d]", i), "%s compares with the target, but -xtb 0 runs every phase unthrottled: give -xtb a target base, or the bound in ops/s (goodput>=5000)", t.Text)
		}
	}
	if bb {
		for i, d := range r.DBMS {
			if e, err := catalog.Lookup(d); err == nil && e.JDBCURL == "" {
				return invalid(fmt.Sprintf("dbms[%d]", i), "%s has no SQL interface; benchbase needs one of: %s", d, strings.Join(BenchmarkDBMS(BenchmarkBenchbase), ", "))
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

// checkTSDB: benchmark tsdb writes metrics into time-series databases
// that ingest its protocol; YCSB's and Benchbase's options do not apply.
func checkTSDB(r contracts.Request) error {
	t := r.TSDB
	switch {
	case r.Workload != WorkloadHaggar:
		return invalid("workload", "benchmark tsdb runs the metrics workload haggar, not %q", r.Workload)
	case r.NewConnection:
		return invalid("new_connection", "a new connection per transaction (-xconn) is a Benchbase option")
	case len(r.Thresholds) > 0:
		return invalid("thresholds", "thresholds judge YCSB's benchmarking phases so far; benchmark tsdb's figures are not supported yet")
	case len(r.PoolPods) > 0 || len(r.PoolInbound) > 0 || len(r.PoolOutbound) > 0:
		return invalid("pool_pods", "-xnpp/-xnpi/-xnpo size a connection pool; a time-series database has none")
	case r.WorkerReplicas > 0:
		return invalid("worker_replicas", "replicas (-nwr) are not supported for time-series databases")
	case r.Storage != nil && r.Storage.Remove && r.Storage.Class == "":
		return invalid("storage.remove", "removing the volume first (-rsr) needs a volume: give -rst (a -rss size alone is an ephemeral-storage request, no volume)")
	case t.FlushIntervalMS < 10:
		return invalid("tsdb.flush_interval_ms", "a flush every %d ms: at least 10", t.FlushIntervalMS)
	}
	if err := checkSaturation(r); err != nil {
		return err
	}
	var tsdbs []string
	for _, n := range catalog.Names() {
		if e, err := catalog.Lookup(n); err == nil && e.IsTSDB() {
			tsdbs = append(tsdbs, n)
		}
	}
	for i, d := range r.DBMS {
		e, err := catalog.Lookup(d)
		if err != nil {
			continue // FromRequest names unknown DBMSs
		}
		if !e.IsTSDB() {
			return invalid(fmt.Sprintf("dbms[%d]", i), "%s is not a time-series database; benchmark tsdb writes metrics into one of: %s", d, strings.Join(tsdbs, ", "))
		}
		if !slices.Contains(e.TSDB.Protocols(), t.Protocol) {
			return invalid("tsdb.protocol", "%s does not ingest %s; it takes %s (-protocol %s)", d, t.Protocol, strings.Join(e.TSDB.Protocols(), ", "), e.TSDB.Protocols()[0])
		}
	}
	return nil
}

// checkLoaders rejects a loading variant whose rows or threads cannot be
// split over its pods.
func checkLoaders(r contracts.Request, records int64, threads, pods int) error {
	switch {
	case int64(pods) > records:
		return invalid("loading_pods", "%d loader pods for %d rows would leave pods without rows (lower -nlp or raise -sf)", pods, records)
	case threads < pods:
		return invalid("loading_threads", "%d threads cannot be split into %d loader pods; every pod needs at least one thread (raise -nlt or lower -nlp)", threads, pods)
	case r.Benchmark == BenchmarkTSDB:
		return nil // rows do not apply: each loading generator writes its agents' series once
	case r.Benchmark == BenchmarkBenchbase && pods != 1:
		return invalid("loading_pods", "Benchbase loads with one pod (it creates the schema and fills every warehouse); drop -nlp")
	}
	return nil
}

// checkBenchmarkers rejects a benchmarking variant whose threads (per
// benchmarker pod) or operations (per shard) cannot be split.
func checkBenchmarkers(r contracts.Request, operations int64, threads, pods, shards int) error {
	switch {
	case threads < pods:
		return invalid("benchmarking_threads", "%d threads cannot be split into %d benchmarker pods; every pod needs at least one thread (raise -nbt or lower -nbp)", threads, pods)
	case r.Benchmark == BenchmarkYCSB && int64(shards) > operations:
		return invalid("operations", "%d operations cannot be split into %d benchmarker pods (raise -xop)", operations, shards)
	}
	return nil
}

// checkSaturation: a saturation search starts from one benchmarking
// variant with a target, on YCSB, judged second by second.
func checkSaturation(r contracts.Request) error {
	s := r.Saturation
	if s == nil {
		return nil
	}
	one := func(field, flag string, n int) error {
		if n != 1 {
			return invalid(field, "a saturation search (-xsat) starts from one benchmarking variant: give one %s (got %d)", flag, n)
		}
		return nil
	}
	switch {
	case r.Benchmark == BenchmarkBenchbase:
		return invalid("saturation", "the saturation search drives YCSB and benchq tsdb's generators (docs/saturation.md); TPC-C is not supported yet")
	case r.Action != contracts.ActionRun:
		return invalid("saturation", "a saturation search benchmarks: action run, not %s", r.Action)
	case *r.TargetBase < 1 && r.Benchmark != BenchmarkTSDB: // tsdb's load is its agents × metrics
		return invalid("target_base", "a saturation search raises an offered load: give -xtb > 0 (the first step offers -xtb × -xnbf ops/s)")
	case r.StatusInterval != 1:
		return invalid("status_interval", "a saturation search judges its steps second by second: -xli 1 (got %d)", r.StatusInterval)
	case s.WarmupS >= s.StepS-1:
		return invalid("saturation.warmup_s", "the warm-up (%d s) leaves no steady second of a %d s step", s.WarmupS, s.StepS)
	case s.MaxShards < r.BenchmarkingPods[0]:
		return invalid("saturation.max_shards", "%d shards at most, but the first step has %d (-nbp)", s.MaxShards, r.BenchmarkingPods[0])
	}
	for _, c := range []error{
		one("benchmarking_factors", "-xnbf", len(r.BenchmarkingFactors)),
		one("benchmarking_pods", "-nbp", len(r.BenchmarkingPods)),
		one("benchmarking_threads", "-nbt", len(r.BenchmarkingThreads)),
		one("clients", "-ne", len(r.Clients)),
	} {
		if c != nil {
			return c
		}
	}
	return nil
}

// checkWorkers checks -nw (workers or workers_list), -nwr and the price of
// a node, for every benchmark.
func checkWorkers(r contracts.Request) error {
	switch {
	case r.WorkerReplicas > 0 && r.Workers == 0 && len(r.WorkersList) == 0 && len(single(r.DBMS)) > 0:
		return invalid("worker_replicas", "replicas (-nwr) need workers (-nw): without -nw, %s is one server", strings.Join(single(r.DBMS), ", "))
	case r.Workers > 0 && len(r.WorkersList) > 0:
		return invalid("workers_list", "give workers (one number) or workers_list (-nw 1,2,3), not both")
	case slices.ContainsFunc(r.WorkersList, func(n int) bool { return n < 1 }):
		return invalid("workers_list", "%s: each number of workers must be at least 1", joinG(asFloats(r.WorkersList)))
	case hasDuplicate(r.WorkersList):
		return invalid("workers_list", "%s names a number of workers twice: each number is one configuration", joinG(asFloats(r.WorkersList)))
	case r.CostPerHour < 0:
		return invalid("cost_per_hour", "a price cannot be negative (got %g)", r.CostPerHour)
	}
	return nil
}

// checkRepeats refuses a value given twice in a list that makes
// configurations (-dbms, -nlp, -nlt, -xnlf, the pool's lists): both would
// have the same name, and the same deploy and teardown messages, so the
// second would never run and its experiment would wait for it. A list of
// benchmarking variants may repeat a value: each is a phase of its own.
func checkRepeats(r contracts.Request) error {
	seen := map[string]bool{}
	for i, d := range r.DBMS {
		key := strings.ToLower(strings.TrimSpace(d))
		if e, err := catalog.Lookup(d); err == nil {
			key = e.Name
		}
		if seen[key] {
			return invalid(fmt.Sprintf("dbms[%d]", i), "%s is given twice: a DBMS makes one configuration (per variant of the other lists); to run it again on a fresh SUT, use -nc (repetitions)", key)
		}
		seen[key] = true
	}
	type list struct {
		field, what string
		values      []float64
	}
	lists := []list{
		{"loading_pods", "number of loading pods", asFloats(r.LoadingPods)},
		{"loading_threads", "number of loading threads", asFloats(r.LoadingThreads)},
		{"loading_factors", "loading factor", r.LoadingFactors},
	}
	if slices.ContainsFunc(r.DBMS, HasPool) { // else the pool's lists are refused as not applied
		lists = append(lists,
			list{"pool_pods", "number of pool pods", asFloats(r.PoolPods)},
			list{"pool_inbound", "pool's inbound connections", asFloats(r.PoolInbound)},
			list{"pool_outbound", "pool's outbound connections", asFloats(r.PoolOutbound)})
	}
	for _, l := range lists {
		for i, v := range l.values {
			if slices.Contains(l.values[:i], v) {
				return invalid(l.field, "%s names the %s %g twice: each value makes configurations of its own, and two would be the same; to run one again on a fresh SUT, use -nc (repetitions)",
					joinG(l.values), l.what, v)
			}
		}
	}
	// Loading factors name configurations by their target: two factors
	// that give one target (at -xtb 0 every one loads unthrottled) are one
	// configuration twice.
	if base := r.TargetBase; base != nil && len(r.LoadingFactors) > 1 {
		seenTarget := map[int]float64{}
		for _, lf := range r.LoadingFactors {
			t := target(*base, lf)
			if first, ok := seenTarget[t]; ok {
				return invalid("loading_factors", "%s at -xtb %d: the factors %g and %g both load at %d ops/s (0: unthrottled), which makes one configuration twice; give one of them",
					joinG(r.LoadingFactors), *base, first, lf, t)
			}
			seenTarget[t] = lf
		}
	}
	return nil
}

// joinG is a list as typed: "1,1".
func joinG(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ",")
}

func asFloats(xs []int) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

func hasDuplicate(xs []int) bool {
	seen := map[int]bool{}
	for _, x := range xs {
		if seen[x] {
			return true
		}
		seen[x] = true
	}
	return false
}

// single are the DBMSs of dbms that are one server without -nw: -nwr
// alone has no masters to give replicas to there (RedisCluster is a
// cluster of 3 without -nw; Redis and Graphite are one server).
func single(dbms []string) []string {
	var out []string
	for _, d := range dbms {
		e, err := catalog.Lookup(d)
		if err == nil && e.Clustered() {
			if _, dflt := e.WorkerLimits(); dflt >= 1 {
				continue
			}
		}
		out = append(out, d)
	}
	return out
}
