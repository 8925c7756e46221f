package plan

import (
	"reflect"
	"strings"
	"testing"

	"github.com/benchq/benchq/contracts"
)

// `benchq tsdb -dbms VictoriaMetrics -nbp 1,2 -nbt 4 -metrics 50 -xsd 1`:
// one configuration; loading writes the series of the first variant once;
// each benchmarking generator runs its part of the agents under its own
// prefix (the seed's haggar1, haggar2, …) for the duration.
func TestExpandTSDB(t *testing.T) {
	p, err := Expand("1", req(contracts.Request{Benchmark: BenchmarkTSDB, DBMS: []string{"VictoriaMetrics"}, DurationS: 60,
		BenchmarkingPods: ints(1, 2), BenchmarkingThreads: ints(4), TSDB: &contracts.TSDB{Metrics: 50}}))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Configurations) != 1 || p.Configurations[0].Base != "VictoriaMetrics-4-1-0" {
		t.Fatalf("configurations %+v", p.Configurations)
	}
	s := p.Settings
	if s.Workload != WorkloadHaggar || *s.TargetBase != 0 || s.StatusInterval != 1 || s.InsertOrder != "" ||
		s.TSDB.Protocol != contracts.ProtocolCarbon || *s.TSDB.JitterMS != 1000 || s.TSDB.FlushIntervalMS != 1000 || p.RecordCount != 50 {
		t.Errorf("settings %+v, tsdb %+v, recordcount %d", s, s.TSDB, p.RecordCount)
	}
	c := p.Configurations[0]
	load := *c.Phases[0].Shards[0].TSDB
	if want := (contracts.TSDBShard{Protocol: "carbon", Agents: 4, Metrics: 50, FlushIntervalMS: 1000, Prefix: "haggar1", StatusInterval: 1}); load != want {
		t.Errorf("load shard %+v, want %+v", load, want)
	}
	var got []contracts.TSDBShard
	for _, sh := range c.Phases[2].Shards {
		got = append(got, *sh.TSDB)
	}
	want := []contracts.TSDBShard{
		{Protocol: "carbon", Agents: 2, Metrics: 50, FlushIntervalMS: 1000, JitterMS: 1000, Prefix: "haggar1", DurationS: 60, StatusInterval: 1},
		{Protocol: "carbon", Agents: 2, Metrics: 50, FlushIntervalMS: 1000, JitterMS: 1000, Prefix: "haggar2", DurationS: 60, StatusInterval: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("run2 shards %+v, want %+v", got, want)
	}
	if p.EstimatedS < 120 {
		t.Errorf("estimate %g s for two phases of 60 s", p.EstimatedS)
	}
}

// Each benchmark keeps to its own DBMSs and options; the error names the
// field and the way out.
func TestExpandTSDBRejects(t *testing.T) {
	zero := 0
	for _, c := range []struct {
		name  string
		r     contracts.Request
		field string
		says  string
	}{
		{"ycsb on a tsdb", contracts.Request{DBMS: []string{"VictoriaMetrics"}}, "dbms[0]", "benchq tsdb"},
		{"tsdb on redis", contracts.Request{Benchmark: BenchmarkTSDB, DBMS: []string{"Redis"}}, "dbms[0]", "VictoriaMetrics"},
		{"tsdb settings on ycsb", contracts.Request{DBMS: []string{"Redis"}, TSDB: &contracts.TSDB{Metrics: 1}}, "tsdb", "benchmark tsdb"},
		{"saturation over a grid", contracts.Request{Benchmark: BenchmarkTSDB, DBMS: []string{"VictoriaMetrics"}, BenchmarkingPods: ints(1, 2), Saturation: &contracts.Saturation{}}, "benchmarking_pods", "one benchmarking variant"},
		{"pool", contracts.Request{Benchmark: BenchmarkTSDB, DBMS: []string{"VictoriaMetrics"}, PoolPods: ints(2)}, "pool_pods", "connection pool"},
		{"haggar on ycsb", contracts.Request{DBMS: []string{"Redis"}, Workload: WorkloadHaggar}, "workload", "benchq tsdb"},
		{"fast flush", contracts.Request{Benchmark: BenchmarkTSDB, DBMS: []string{"VictoriaMetrics"}, TSDB: &contracts.TSDB{FlushIntervalMS: 5, JitterMS: &zero}}, "tsdb.flush_interval_ms", "at least 10"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Expand("1", req(c.r))
			ie, ok := err.(*InvalidError)
			if !ok || ie.Field != c.field || !strings.Contains(ie.Message, c.says) {
				t.Errorf("err %v, want field %s saying %q", err, c.field, c.says)
			}
		})
	}
}

// `benchq tsdb -xsat -nbp 2 -nbt 4 -metrics 50 -xsats 10`: the search moves
// by whole agents (50 points/s each at a 1 s flush); its first step offers
// what the first variant's agents make, on its generators, for a step.
func TestExpandTSDBSaturation(t *testing.T) {
	p, err := Expand("1", req(contracts.Request{Benchmark: BenchmarkTSDB, DBMS: []string{"VictoriaMetrics"}, BenchmarkingPods: ints(2),
		BenchmarkingThreads: ints(4), TSDB: &contracts.TSDB{Metrics: 50}, Saturation: &contracts.Saturation{StepS: 10}}))
	if err != nil {
		t.Fatal(err)
	}
	if q := p.Settings.Saturation.Quantum; q != 50 {
		t.Errorf("quantum %d points/s, want one agent's 50", q)
	}
	first := p.Configurations[0].Phases[1]
	if first.Target != 200 || first.Threads != 4 || first.Pods != 2 || first.Shards[0].TSDB.DurationS != 10 || first.Shards[1].TSDB.Agents != 2 {
		t.Errorf("first step %+v, shard %+v", first, *first.Shards[0].TSDB)
	}
	// A later step of 1,030 points/s is 20 agents (1,000 points/s): whole agents only.
	step := SaturationPhase(p.Settings, p, p.Configurations[0].Name, 2, 1030, 2, 2, 10)
	if step.Target != 1000 || step.Threads != 20 || step.Shards[1].TSDB.Agents != 10 {
		t.Errorf("step of 1030 points/s: target %d, agents %d", step.Target, step.Threads)
	}
}
