package plan

import (
	"errors"
	"reflect"
	"testing"

	"github.com/benchq/benchq/contracts"
)

func TestSplitRange(t *testing.T) {
	cases := []struct {
		n     int64
		parts int
		want  []Range
	}{
		{100000, 2, []Range{{0, 50000}, {50000, 50000}}},
		{10, 3, []Range{{0, 4}, {4, 3}, {7, 3}}},
		{7, 8, []Range{{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}, {6, 1}, {7, 0}}},
		{1000001, 8, nil},
	}
	for _, c := range cases {
		got := SplitRange(c.n, c.parts)
		if c.want != nil && !reflect.DeepEqual(got, c.want) {
			t.Errorf("SplitRange(%d, %d) = %v, want %v", c.n, c.parts, got, c.want)
		}
		// Invariants: contiguous, nothing lost, sizes differ by at most one.
		var next, sum int64
		lo, hi := got[0].Count, got[0].Count
		for _, r := range got {
			if r.Start != next {
				t.Errorf("SplitRange(%d, %d): gap at %v", c.n, c.parts, r)
			}
			next += r.Count
			sum += r.Count
			lo, hi = min(lo, r.Count), max(hi, r.Count)
		}
		if sum != c.n || hi-lo > 1 {
			t.Errorf("SplitRange(%d, %d): sum %d, spread %d", c.n, c.parts, sum, hi-lo)
		}
	}
}

func ints(v ...int) []int                       { return v }
func floats(v ...float64) []float64             { return v }
func tb(v int) *int                             { return &v }
func req(r contracts.Request) contracts.Request { r.SchemaVersion = 1; return r }

// The default experiment of `make run`.
func TestExpandDefaultExperiment(t *testing.T) {
	p, err := Expand("17", req(contracts.Request{DBMS: []string{"Redis"}, SF: 0.1, Operations: 0.2,
		LoadingPods: ints(2), LoadingThreads: ints(8), BenchmarkingPods: ints(1), BenchmarkingThreads: ints(8), TargetBase: tb(16384)}))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Configurations) != 1 {
		t.Fatalf("%d configurations", len(p.Configurations))
	}
	c := p.Configurations[0]
	if c.Name != "Redis-8-2-16384-1" || len(c.Phases) != 2 {
		t.Fatalf("configuration %s with %d phases", c.Name, len(c.Phases))
	}
	load, run := c.Phases[0], c.Phases[1]
	wantLoad := []contracts.YCSBShard{
		{Workload: "a", Threads: 4, Target: 8192, RecordCount: 100000, InsertStart: 0, InsertCount: 50000, OperationCount: 50000, InsertOrder: "hashed", StatusInterval: 10},
		{Workload: "a", Threads: 4, Target: 8192, RecordCount: 100000, InsertStart: 50000, InsertCount: 50000, OperationCount: 50000, InsertOrder: "hashed", StatusInterval: 10},
	}
	if load.Name != "Redis-8-2-16384-1-load" || !reflect.DeepEqual(load.Shards, wantLoad) {
		t.Errorf("load phase %s: %+v", load.Name, load.Shards)
	}
	wantRun := []contracts.YCSBShard{{Workload: "a", Threads: 8, Target: 16384, RecordCount: 100000, InsertStart: 0, InsertCount: 100000, OperationCount: 200000, InsertOrder: "hashed", StatusInterval: 10}}
	if run.Name != "Redis-8-2-16384-1-run1" || !reflect.DeepEqual(run.Shards, wantRun) {
		t.Errorf("run phase %s: %+v", run.Name, run.Shards)
	}
}

func benchPods(c Configuration) []int {
	var out []int
	for _, ph := range c.Phases[1:] {
		out = append(out, ph.Pods)
	}
	return out
}

// Grid expansion in bexhoma's loop order (seed commands of bexhoma-ycsb.md).
func TestExpandGrid(t *testing.T) {
	// -nlp 1,8 -nlt 64 -nlf 1,4 -nbp 1 -nbf 2 → four configurations.
	p, err := Expand("1", req(contracts.Request{DBMS: []string{"PostgreSQL"}, LoadingPods: ints(1, 8), LoadingThreads: ints(64), LoadingFactors: floats(1, 4), BenchmarkingFactors: floats(2)}))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range p.Configurations {
		names = append(names, c.Base)
	}
	want := []string{"PostgreSQL-64-1-16384", "PostgreSQL-64-1-65536", "PostgreSQL-64-8-16384", "PostgreSQL-64-8-65536"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("configurations %v, want %v", names, want)
	}
	// -nlp 8 -nbp 1,8 -nbf 2,3 → one configuration, benchmark pods [1 8 1 8].
	p, _ = Expand("1", req(contracts.Request{DBMS: []string{"PostgreSQL"}, LoadingPods: ints(8), BenchmarkingPods: ints(1, 8), BenchmarkingFactors: floats(2, 3)}))
	if len(p.Configurations) != 1 || !reflect.DeepEqual(benchPods(p.Configurations[0]), ints(1, 8, 1, 8)) {
		t.Errorf("pods %v", benchPods(p.Configurations[0]))
	}
	// -nc 2 → the same sequence twice, on fresh SUTs.
	p, _ = Expand("1", req(contracts.Request{DBMS: []string{"PostgreSQL"}, LoadingPods: ints(8), BenchmarkingPods: ints(1, 8), BenchmarkingFactors: floats(2, 3), Repetitions: 2}))
	if len(p.Configurations) != 2 || p.Configurations[1].ExperimentRun != 2 || !reflect.DeepEqual(benchPods(p.Configurations[1]), ints(1, 8, 1, 8)) {
		t.Errorf("nc 2: %d configurations", len(p.Configurations))
	}
}

func TestExpandRejectsImpossibleGrids(t *testing.T) {
	cases := map[string]struct {
		r     contracts.Request
		field string
	}{
		"threads < pods": {contracts.Request{DBMS: []string{"Redis"}, LoadingPods: ints(8), LoadingThreads: ints(4)}, "loading_threads"},
		"bench threads":  {contracts.Request{DBMS: []string{"Redis"}, BenchmarkingPods: ints(8), BenchmarkingThreads: ints(2)}, "benchmarking_threads"},
		"no rows":        {contracts.Request{DBMS: []string{"Redis"}, SF: 1e-9}, "sf"},
	}
	for name, c := range cases {
		_, err := Expand("1", req(c.r))
		var ie *InvalidError
		if !errors.As(err, &ie) || ie.Field != c.field {
			t.Errorf("%s: got %v, want field %s", name, err, c.field)
		}
	}
}
