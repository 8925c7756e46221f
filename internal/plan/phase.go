package plan

import (
	"fmt"

	"github.com/benchq/benchq/contracts"
)

// phaseSpec is one phase of the grid before its totals are split over its
// shards.
type phaseSpec struct {
	kind          string // contracts.KindLoad or KindRun
	client        int    // benchmarking phase number, from 1; 0 for loading
	pods, threads int
	factor        float64
	target        int
}

// newPhase splits the phase's threads and target over its shards, and its
// work: a loading shard inserts its own contiguous range of rows, a
// benchmarking shard runs its share of the operations. The engine's builder
// makes each shard.
func newPhase(r contracts.Request, p Plan, cfg string, s phaseSpec) Phase {
	ph := Phase{Name: PhaseName(cfg, s.client), Kind: s.kind, Client: s.client, Pods: s.pods, Threads: s.threads,
		Factor: s.factor, Target: s.target, Node: node(r, s.kind)}
	work := p.RecordCount
	if s.kind == contracts.KindRun {
		work = p.OperationCount
	}
	parts := SplitRange(work, s.pods)
	threads := SplitInt(s.threads, s.pods)
	targets := SplitInt(s.target, s.pods)
	for i := range s.pods {
		switch r.Benchmark {
		case BenchmarkBenchbase:
			ph.Shards = append(ph.Shards, Shard{TPCC: tpccShard(r, s.kind, p.RecordCount, threads[i], targets[i])})
			continue
		case BenchmarkTSDB:
			ph.Shards = append(ph.Shards, Shard{TSDB: tsdbShard(r, s.kind, i+1, threads[i])})
			continue
		}
		ph.Shards = append(ph.Shards, Shard{YCSB: ycsbShard(r, s.kind, p.RecordCount, threads[i], targets[i], parts[i])})
	}
	return ph
}

// PhaseName is bexhoma's name of a phase: its configuration (which ends in
// the repetition, -nc) and its client, 0 for loading and 1, 2, … for the
// benchmarking phases in order: Redis-64-8-196608-1-0 loads,
// Redis-64-8-196608-1-1 is the first benchmarking phase. The summary names
// a shard's row after it: phase-attempt-shard (Redis-64-8-196608-1-1-1-1).
func PhaseName(cfg string, client int) string { return fmt.Sprintf("%s-%d", cfg, client) }

// SaturationPhase is the benchmarking phase of a saturation step or hold
// (internal/saturation): offered ops/s over shards with threadsPerShard
// threads each, for seconds (YCSB's maxexecutiontime; the shards get twice
// the operations the offered load needs, so time ends the phase).
func SaturationPhase(r contracts.Request, p Plan, cfg string, client, offered, shards, threadsPerShard, seconds int) Phase {
	if r.Benchmark == BenchmarkTSDB {
		return tsdbSaturationPhase(r, p, cfg, client, offered, shards, seconds)
	}
	ph := newPhase(r, p, cfg, phaseSpec{kind: contracts.KindRun, client: client, pods: shards, threads: shards * threadsPerShard,
		factor: float64(offered) / float64(max(1, *r.TargetBase)), target: offered})
	work := SplitRange(2*int64(offered)*int64(seconds), shards)
	for k := range ph.Shards {
		ph.Shards[k].YCSB.OperationCount, ph.Shards[k].YCSB.MaxExecutionS = work[k].Count, seconds
	}
	return ph
}

// tsdbSaturationPhase is a step of metrics generators: offered points per
// second as whole agents (the search's quantum is one agent's points per
// second) over shards generators, for seconds.
func tsdbSaturationPhase(r contracts.Request, p Plan, cfg string, client, offered, shards, seconds int) Phase {
	q := max(1, r.Saturation.Quantum)
	agents := max(shards, offered/q)
	ph := newPhase(r, p, cfg, phaseSpec{kind: contracts.KindRun, client: client, pods: shards, threads: agents, factor: 1, target: agents * q})
	for k := range ph.Shards {
		ph.Shards[k].TSDB.DurationS = seconds
	}
	return ph
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
