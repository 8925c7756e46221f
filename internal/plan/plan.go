// Package plan expands an experiment request into the grid of SUT
// configurations and their phases, in bexhoma's loop order, and computes the
// per-shard YCSB parameters. Everything here is pure: no I/O, no clock.
package plan

import (
	"fmt"
	"math"

	"github.com/benchq/benchq/contracts"
)

// Plan is the expanded experiment, published in the planned event and kept
// in the experiments table. Settings holds the request with defaults applied.
type Plan struct {
	Code           string             `json:"code"`
	Settings       contracts.Request  `json:"settings"`
	RecordCount    int64              `json:"recordcount"`
	OperationCount int64              `json:"operationcount"`
	Configurations []Configuration    `json:"configurations"`
	Timeouts       contracts.Timeouts `json:"timeouts"`
}

// Configuration is one SUT, loaded once, then benchmarked phase after phase.
type Configuration struct {
	Name          string  `json:"name"` // e.g. Redis-8-2-16384-1
	Base          string  `json:"base"` // name without the repetition: Redis-8-2-16384
	DBMS          string  `json:"dbms"`
	ExperimentRun int     `json:"experiment_run"` // -nc repetition, 1-based
	Phases        []Phase `json:"phases"`         // the loading phase first
}

// Phase is one loading or benchmarking phase; its shards start together.
type Phase struct {
	Name    string                `json:"name"` // <configuration>-load, <configuration>-run<client>
	Kind    string                `json:"kind"`
	Client  int                   `json:"client"` // benchmarking phase number inside the configuration (0 for loading)
	Pods    int                   `json:"pods"`
	Threads int                   `json:"threads"` // total over shards
	Factor  float64               `json:"factor"`
	Target  int                   `json:"target"` // total ops/s over shards; 0 = unthrottled
	Shards  []contracts.YCSBShard `json:"shards"`
}

// InvalidError is a request that cannot be expanded; Field names the culprit.
type InvalidError struct{ Field, Message string }

func (e *InvalidError) Error() string { return e.Field + ": " + e.Message }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// Defaults are bexhoma's defaults where it has one.
var Defaults = contracts.Request{
	Benchmark:           "ycsb",
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

// DefaultTargetBase is -xtb's default.
const DefaultTargetBase = 16384

// DefaultTimeouts bound every wait; a request may override each.
var DefaultTimeouts = contracts.Timeouts{SUTReadyS: 120, BarrierS: 120, ShardS: 3600}

// WithDefaults fills every field the request left out.
func WithDefaults(r contracts.Request) contracts.Request {
	d := Defaults
	if r.Benchmark == "" {
		r.Benchmark = d.Benchmark
	}
	if r.SF == 0 {
		r.SF = d.SF
	}
	if r.Operations == 0 {
		r.Operations = r.SF
	}
	if r.Workload == "" {
		r.Workload = d.Workload
	}
	if r.InsertOrder == "" {
		r.InsertOrder = d.InsertOrder
	}
	if r.TargetBase == nil {
		tb := DefaultTargetBase
		r.TargetBase = &tb
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
// DBMS give one configuration each, repeated -nc times on a fresh SUT; inside
// a configuration the benchmarking variants (factor × threads × pods ×
// clients) run one after another.
func Expand(code string, req contracts.Request) (Plan, error) {
	r := WithDefaults(req)
	p := Plan{
		Code:           code,
		Settings:       r,
		RecordCount:    millions(r.SF),
		OperationCount: millions(r.Operations),
		Timeouts:       timeouts(r.Timeouts),
	}
	if p.RecordCount < 1 {
		return Plan{}, invalid("sf", "%g million rows is less than one row; use at least 0.000001", r.SF)
	}
	base := *r.TargetBase
	for _, lt := range r.LoadingThreads {
		for _, lp := range r.LoadingPods {
			if int64(lp) > p.RecordCount {
				return Plan{}, invalid("loading_pods", "%d loader pods for %d rows would leave pods without rows (lower -nlp or raise -sf)", lp, p.RecordCount)
			}
			if lt < lp {
				return Plan{}, invalid("loading_threads", "%d threads cannot be split into %d loader pods; every pod needs at least one thread (raise -nlt or lower -nlp)", lt, lp)
			}
			for _, lf := range r.LoadingFactors {
				loadTarget := target(base, lf)
				for _, dbms := range r.DBMS {
					cfgBase := fmt.Sprintf("%s-%d-%d-%d", dbms, lt, lp, loadTarget)
					for run := 1; run <= r.Repetitions; run++ {
						c := Configuration{
							Name:          fmt.Sprintf("%s-%d", cfgBase, run),
							Base:          cfgBase,
							DBMS:          dbms,
							ExperimentRun: run,
						}
						c.Phases = append(c.Phases, loadPhase(c.Name, r, p.RecordCount, lt, lp, lf, loadTarget))
						client := 0
						for _, bf := range r.BenchmarkingFactors {
							for _, bt := range r.BenchmarkingThreads {
								for _, bp := range r.BenchmarkingPods {
									for _, ne := range r.Clients {
										pods := bp * ne
										if bt < bp {
											return Plan{}, invalid("benchmarking_threads", "%d threads cannot be split into %d benchmarker pods; every pod needs at least one thread (raise -nbt or lower -nbp)", bt, bp)
										}
										if int64(pods) > p.OperationCount {
											return Plan{}, invalid("operations", "%d operations cannot be split into %d benchmarker pods (raise -xop)", p.OperationCount, pods)
										}
										client++
										c.Phases = append(c.Phases, runPhase(c.Name, client, r, p.RecordCount, p.OperationCount, bt*ne, pods, bf, target(base, bf)))
									}
								}
							}
						}
						p.Configurations = append(p.Configurations, c)
					}
				}
			}
		}
	}
	if n := len(p.Configurations); n > MaxConfigurations {
		return Plan{}, invalid("(grid)", "%d configurations exceed the limit of %d; shorten the lists of -nlp, -nlt, -xnlf, -dbms or -nc", n, MaxConfigurations)
	}
	return p, nil
}

// MaxConfigurations bounds a grid: beyond it a request is almost surely a
// typo, and every configuration is a SUT to start.
const MaxConfigurations = 1000

func loadPhase(cfg string, r contracts.Request, records int64, threads, pods int, factor float64, tgt int) Phase {
	ph := Phase{Name: cfg + "-load", Kind: contracts.KindLoad, Pods: pods, Threads: threads, Factor: factor, Target: tgt}
	ranges := SplitRange(records, pods)
	th := SplitInt(threads, pods)
	tg := SplitInt(tgt, pods)
	for i := 0; i < pods; i++ {
		ph.Shards = append(ph.Shards, contracts.YCSBShard{
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
		})
	}
	return ph
}

// runPhase: every benchmarking shard covers the WHOLE keyspace
// (insertstart=0, insertcount=recordcount) so zipfian hot keys stay global;
// operations, threads and target are split.
func runPhase(cfg string, client int, r contracts.Request, records, ops int64, threads, pods int, factor float64, tgt int) Phase {
	ph := Phase{Name: fmt.Sprintf("%s-run%d", cfg, client), Kind: contracts.KindRun, Client: client, Pods: pods, Threads: threads, Factor: factor, Target: tgt}
	opsSplit := SplitRange(ops, pods)
	th := SplitInt(threads, pods)
	tg := SplitInt(tgt, pods)
	for i := 0; i < pods; i++ {
		ph.Shards = append(ph.Shards, contracts.YCSBShard{
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
		})
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

func timeouts(t *contracts.Timeouts) contracts.Timeouts {
	out := DefaultTimeouts
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

// Phase returns the phase with the given name.
func (p Plan) Phase(name string) (Configuration, Phase, bool) {
	for _, c := range p.Configurations {
		for _, ph := range c.Phases {
			if ph.Name == name {
				return c, ph, true
			}
		}
	}
	return Configuration{}, Phase{}, false
}
