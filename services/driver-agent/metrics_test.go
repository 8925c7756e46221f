package main

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/benchq/benchq/contracts"
)

// The live figures follow the intervals: operations over all and per
// operation add up, rates per operation are the interval's count over its
// length, and the shard's series go when it ends.
func TestLiveShardFigures(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := newAgentMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{cfg: Config{Name: "agent-1"}, metrics: m}
	job := contracts.ShardJob{Envelope: contracts.Envelope{Code: "1234", ID: "1234.run1.2"}, Configuration: "Redis-1", DBMS: "Redis", Phase: "Redis-1-1", Kind: contracts.KindRun, Shard: 2}
	live := a.track(job, 0) // no process tree: only the operations
	live.interval(&contracts.Interval{ElapsedS: 1, Operations: 100, OpsPerSec: 100, PerOp: map[string]map[string]float64{"READ": {"Count": 60}, "UPDATE": {"Count": 40}}})
	live.interval(&contracts.Interval{ElapsedS: 3, Operations: 300, OpsPerSec: 100, PerOp: map[string]map[string]float64{"READ": {"Count": 120}, "UPDATE": {"Count": 80}}})
	labels := func(op string) []string {
		return []string{"1234", "Redis-1", "Redis", "benchmarker", "Redis-1-1", "2", op}
	}
	for _, c := range []struct {
		vec  *prometheus.GaugeVec
		op   string
		want float64
	}{
		{m.ops, allOps, 300}, {m.ops, "READ", 180}, {m.ops, "UPDATE", 120},
		{m.rate, allOps, 100}, {m.rate, "READ", 60}, {m.rate, "UPDATE", 40},
	} {
		if got := testutil.ToFloat64(c.vec.WithLabelValues(labels(c.op)...)); got != c.want {
			t.Errorf("%v %s = %v, want %v", c.vec, c.op, got, c.want)
		}
	}
	live.end()
	live.interval(&contracts.Interval{ElapsedS: 4, Operations: 400})
	if n := testutil.CollectAndCount(reg); n != 0 {
		t.Errorf("%d series after the shard ended", n)
	}
}
