package plan

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/benchq/benchq/catalog"
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
	if load.Name != "Redis-8-2-16384-1-0" || !reflect.DeepEqual(ycsbShards(load), wantLoad) {
		t.Errorf("load phase %s: %+v", load.Name, ycsbShards(load))
	}
	wantRun := []contracts.YCSBShard{{Workload: "a", Threads: 8, Target: 16384, RecordCount: 100000, InsertStart: 0, InsertCount: 100000, OperationCount: 200000, InsertOrder: "hashed", StatusInterval: 10}}
	if run.Name != "Redis-8-2-16384-1-1" || !reflect.DeepEqual(ycsbShards(run), wantRun) {
		t.Errorf("run phase %s: %+v", run.Name, ycsbShards(run))
	}
}

func ycsbShards(ph Phase) []contracts.YCSBShard {
	var out []contracts.YCSBShard
	for _, sh := range ph.Shards {
		out = append(out, *sh.YCSB)
	}
	return out
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

// `benchq benchbase -dbms PostgreSQL -sf 16 -xsd 10 -xtb 1024 -xnbf 16
// -nbp 1,2 -nbt 32 -xconn` (bexhoma-pgbouncer-benchbase.txt): one
// configuration PostgreSQL-1-1-1024, benchmark pods [1, 2], 32 terminals
// split, target 16384 split, 16 warehouses, 600 s.
func TestExpandBenchbase(t *testing.T) {
	p, err := Expand("1", req(contracts.Request{Benchmark: BenchmarkBenchbase, DBMS: []string{"PostgreSQL"}, SF: 16, DurationS: 600,
		TargetBase: tb(1024), BenchmarkingFactors: floats(16), BenchmarkingPods: ints(1, 2), BenchmarkingThreads: ints(32), NewConnection: true}))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Configurations) != 1 || p.Configurations[0].Base != "PostgreSQL-1-1-1024" {
		t.Fatalf("configurations %+v", p.Configurations)
	}
	c := p.Configurations[0]
	if !reflect.DeepEqual(benchPods(c), ints(1, 2)) {
		t.Errorf("pods %v", benchPods(c))
	}
	if got := *c.Phases[0].Shards[0].TPCC; got != (contracts.TPCCShard{Warehouses: 16, Terminals: 1, StatusInterval: 10}) {
		t.Errorf("load shard %+v", got)
	}
	want := []contracts.TPCCShard{
		{Warehouses: 16, Terminals: 16, Target: 8192, DurationS: 600, NewConnection: true, StatusInterval: 10},
		{Warehouses: 16, Terminals: 16, Target: 8192, DurationS: 600, NewConnection: true, StatusInterval: 10},
	}
	for i, sh := range c.Phases[2].Shards {
		if sh.YCSB != nil || *sh.TPCC != want[i] {
			t.Errorf("run2 shard %d: %+v", i+1, sh)
		}
	}
	if p.Timeouts.ShardS != 3600 {
		t.Errorf("shard timeout %d, want 3600 (2 × 600 + 300 < 3600)", p.Timeouts.ShardS)
	}
	if c.SUT.UseCase != "benchbase-16" {
		t.Errorf("use case %q", c.SUT.UseCase)
	}
}

// A long throttled phase gets a shard timeout that fits it.
func TestShardTimeoutGrowsWithTheExpectedPhase(t *testing.T) {
	// 10M operations at 1024 ops/s ≈ 9766 s → 2 × 9766 + 300.
	p, err := Expand("1", req(contracts.Request{DBMS: []string{"Redis"}, SF: 0.01, Operations: 10, TargetBase: tb(1024)}))
	if err != nil {
		t.Fatal(err)
	}
	if p.Timeouts.ShardS != 2*9766+300 {
		t.Errorf("shard timeout %d", p.Timeouts.ShardS)
	}
	p, _ = Expand("1", req(contracts.Request{DBMS: []string{"Redis"}, SF: 0.01, Operations: 10, TargetBase: tb(1024), Timeouts: &contracts.Timeouts{ShardS: 60}}))
	if p.Timeouts.ShardS != 60 {
		t.Errorf("explicit shard timeout %d", p.Timeouts.ShardS)
	}
}

func TestExpandActionsAndSUTSpec(t *testing.T) {
	base := contracts.Request{DBMS: []string{"Redis"}, SF: 0.1, Workers: 3, WorkerReplicas: 1,
		Resources: &contracts.Resources{RequestCPU: "4", RequestMemory: "16Gi", LimitMemory: "64Gi"},
		Storage:   &contracts.Storage{Class: "shared", Size: "50Gi"},
		Nodes:     &contracts.Nodes{SUT: "n-sut", Loading: "n-load", Benchmarking: "n-bench"}}
	p, err := Expand("1", req(base))
	if err != nil {
		t.Fatal(err)
	}
	c := p.Configurations[0]
	want := contracts.SUTSpec{Workers: 3, WorkerReplicas: 1, Resources: base.Resources, Storage: base.Storage, Node: "n-sut", UseCase: "ycsb-0.1"}
	if !reflect.DeepEqual(c.SUT, want) {
		t.Errorf("sut %+v", c.SUT)
	}
	if c.Phases[0].Node != "n-load" || c.Phases[1].Node != "n-bench" {
		t.Errorf("nodes %q %q", c.Phases[0].Node, c.Phases[1].Node)
	}
	load := base
	load.Action = contracts.ActionLoad
	p, _ = Expand("1", req(load))
	if len(p.Configurations[0].Phases) != 1 || p.Configurations[0].Phases[0].Kind != contracts.KindLoad {
		t.Errorf("action load: phases %+v", p.Configurations[0].Phases)
	}
	start := base
	start.Action = contracts.ActionStart
	start.Repetitions = 2
	p, _ = Expand("1", req(start))
	if len(p.Configurations) != 2 || len(p.Configurations[0].Phases) != 0 {
		t.Errorf("action start: %+v", p.Configurations)
	}
}

func TestExpandRejectsInconsistentSettings(t *testing.T) {
	cases := map[string]struct {
		r     contracts.Request
		field string
	}{
		"tpcc on ycsb":         {contracts.Request{DBMS: []string{"Redis"}, Workload: "tpcc"}, "workload"},
		"ycsb wl on benchbase": {contracts.Request{Benchmark: BenchmarkBenchbase, DBMS: []string{"PostgreSQL"}, Workload: "a"}, "workload"},
		"xconn on ycsb":        {contracts.Request{DBMS: []string{"Redis"}, NewConnection: true}, "new_connection"},
		"fractional wh":        {contracts.Request{Benchmark: BenchmarkBenchbase, DBMS: []string{"PostgreSQL"}, SF: 1.5}, "sf"},
		"benchbase on redis":   {contracts.Request{Benchmark: BenchmarkBenchbase, DBMS: []string{"Redis"}}, "dbms[0]"},
		"benchbase 2 loaders":  {contracts.Request{Benchmark: BenchmarkBenchbase, DBMS: []string{"PostgreSQL"}, SF: 4, LoadingPods: ints(2), LoadingThreads: ints(2)}, "loading_pods"},
		"replicas w/o workers": {contracts.Request{DBMS: []string{"Redis"}, WorkerReplicas: 1}, "worker_replicas"},
		"remove nothing":       {contracts.Request{DBMS: []string{"Redis"}, Storage: &contracts.Storage{Remove: true}}, "storage.remove"},
		"pool without pooler":  {contracts.Request{DBMS: []string{"Redis", "PostgreSQL"}, PoolPods: ints(4)}, "pool_pods"},
		// The saturation search (docs/saturation.md).
		"saturation on tpcc": {contracts.Request{Benchmark: BenchmarkBenchbase, DBMS: []string{"PostgreSQL"}, Saturation: &contracts.Saturation{}}, "saturation"},
		"saturation, load":   {contracts.Request{DBMS: []string{"Redis"}, Action: contracts.ActionLoad, Saturation: &contracts.Saturation{}}, "saturation"},
		"saturation, -xli 5": {contracts.Request{DBMS: []string{"Redis"}, StatusInterval: 5, Saturation: &contracts.Saturation{}}, "status_interval"},
		"saturation, 2 -nbp": {contracts.Request{DBMS: []string{"Redis"}, BenchmarkingPods: ints(1, 2), Saturation: &contracts.Saturation{}}, "benchmarking_pods"},
		"saturation, -xtb 0": {contracts.Request{DBMS: []string{"Redis"}, TargetBase: func() *int { z := 0; return &z }(), Saturation: &contracts.Saturation{}}, "target_base"},
		"warm-up > step":     {contracts.Request{DBMS: []string{"Redis"}, Saturation: &contracts.Saturation{StepS: 5, WarmupS: 10}}, "saturation.warmup_s"},
	}
	for name, c := range cases {
		_, err := Expand("1", req(c.r))
		var ie *InvalidError
		if !errors.As(err, &ie) || ie.Field != c.field {
			t.Errorf("%s: got %v, want field %s", name, err, c.field)
		}
	}
}

// The pool loop (bexhoma-pgbouncer-benchbase.txt): -xnpp 4 -xnpi 128
// -xnpo 64 → one PgBouncer configuration named with its pool; PostgreSQL in
// the same experiment gets no pool. Two pool variants → two configurations.
func TestExpandPoolLoop(t *testing.T) {
	p, err := Expand("1", req(contracts.Request{DBMS: []string{"PgBouncer", "PostgreSQL"}, SF: 16, LoadingPods: ints(16), LoadingThreads: ints(64),
		LoadingFactors: floats(11), PoolPods: ints(4), PoolInbound: ints(128), PoolOutbound: ints(64)}))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range p.Configurations {
		names = append(names, c.Name)
	}
	if want := []string{"pgb-64-4-128-64-1", "PostgreSQL-64-16-180224-1"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("configurations %v, want %v", names, want)
	}
	if pool := p.Configurations[0].SUT.Pool; pool == nil || *pool != (contracts.Pool{Pods: 4, Inbound: 128, Outbound: 64}) {
		t.Errorf("pool %+v", pool)
	}
	if p.Configurations[1].SUT.Pool != nil {
		t.Errorf("PostgreSQL got a pool")
	}
	p, _ = Expand("1", req(contracts.Request{DBMS: []string{"PgBouncer"}, PoolPods: ints(1, 2), PoolInbound: ints(96)}))
	if len(p.Configurations) != 2 || p.Configurations[1].Base != "pgb-64-2-96-64" {
		t.Errorf("pool variants: %+v", p.Configurations)
	}
	if _, err := Expand("1", req(contracts.Request{DBMS: []string{"PgBouncer"}, PoolPods: ints(8), PoolInbound: ints(4)})); err == nil {
		t.Error("4 inbound connections over 8 pool pods accepted")
	}
	// A phase of more client connections (threads) than the pool takes in
	// would be turned away by PgBouncer once deployed: refused at once.
	_, err = Expand("1", req(contracts.Request{DBMS: []string{"PgBouncer"}, PoolInbound: ints(32)}))
	if err == nil || !strings.Contains(err.Error(), "32 inbound connections are fewer than the 64 client connections") || !strings.Contains(err.Error(), "-nlt") {
		t.Errorf("64 loading threads through 32 inbound connections: %v", err)
	}
	_, err = Expand("1", req(contracts.Request{DBMS: []string{"PgBouncer"}, LoadingThreads: ints(8), BenchmarkingThreads: ints(8, 48), PoolInbound: ints(32)}))
	if err == nil || !strings.Contains(err.Error(), "fewer than the 48 client connections") || !strings.Contains(err.Error(), "-nbt") {
		t.Errorf("48 benchmarking threads through 32 inbound connections: %v", err)
	}
}

// A pool of several pods takes each pod's share of -xnpi, and the clients
// spread their connections evenly over the pods: the seed's "Benchbase
// Reconnect via Pool" (32 terminals on 1 and 2 pods, 2 pool pods of 16
// inbound connections each) fits exactly; one connection more per pod
// does not, and the error names the least -xnpi that fits.
func TestPoolInboundIsCheckedPerPod(t *testing.T) {
	seed := func(inbound, terminals int) error {
		_, err := Expand("1", req(contracts.Request{Benchmark: BenchmarkBenchbase, DBMS: []string{"PgBouncer"}, SF: 16,
			LoadingThreads: ints(8), BenchmarkingPods: ints(1, 2), BenchmarkingThreads: ints(terminals), NewConnection: true,
			PoolPods: ints(2), PoolInbound: ints(inbound), PoolOutbound: ints(32)}))
		return err
	}
	if err := seed(32, 32); err != nil {
		t.Fatalf("the seed's pool: %v", err)
	}
	// 31 over 2 pods is 16 each, rounded up, as the deployer sets them.
	if err := seed(31, 32); err != nil {
		t.Errorf("31 inbound over 2 pods (16 each) for 32 terminals: %v", err)
	}
	err := seed(29, 32)
	for _, want := range []string{"29 inbound connections over 2 pool pods leave 15 a pod", "opens 32 client connections (one per thread), 16 on one pod", "at least 31", "-nbt"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("32 terminals through 2 pods of 15: %v, want it to say %q", err, want)
		}
	}
	// A TPC-C loading shard queries its progress over one more connection,
	// on its first thread's pod: 4 loader threads over 2 pods of 2 do not
	// fit, 2 pods of 3 do.
	load := func(inbound int) error {
		_, err := Expand("1", req(contracts.Request{Benchmark: BenchmarkBenchbase, DBMS: []string{"PgBouncer"}, SF: 1,
			LoadingThreads: ints(4), BenchmarkingThreads: ints(4), PoolPods: ints(2), PoolInbound: ints(inbound)}))
		return err
	}
	if err := load(4); err == nil || !strings.Contains(err.Error(), "one for each shard's progress") || !strings.Contains(err.Error(), "-nlt") {
		t.Errorf("4 loader threads and the progress query through 2 pods of 2: %v", err)
	}
	if err := load(5); err != nil {
		t.Errorf("through 2 pods of 3: %v", err)
	}
	// Shards of unequal threads (64 over 3 pods: 22, 21, 21) still spread
	// evenly: 32 a pod.
	_, err = Expand("1", req(contracts.Request{DBMS: []string{"PgBouncer"}, LoadingThreads: ints(8),
		BenchmarkingPods: ints(3), BenchmarkingThreads: ints(64), PoolPods: ints(2), PoolInbound: ints(64)}))
	if err != nil {
		t.Errorf("64 threads on 3 driver pods through 2 pool pods of 32: %v", err)
	}
}

// -xsd on YCSB caps each benchmarking shard (maxexecutiontime), not loading.
func TestYCSBDurationCapsBenchmarking(t *testing.T) {
	p, err := Expand("1", req(contracts.Request{DBMS: []string{"Redis"}, DurationS: 90}))
	if err != nil {
		t.Fatal(err)
	}
	c := p.Configurations[0]
	if c.Phases[0].Shards[0].YCSB.MaxExecutionS != 0 || c.Phases[1].Shards[0].YCSB.MaxExecutionS != 90 {
		t.Errorf("load %d, run %d", c.Phases[0].Shards[0].YCSB.MaxExecutionS, c.Phases[1].Shards[0].YCSB.MaxExecutionS)
	}
}

// A saturation search plans its loading phase and its first step: the
// first variant's target, run for a step's time, judged second by second.
func TestExpandSaturation(t *testing.T) {
	tb := 2000
	p, err := Expand("1", req(contracts.Request{DBMS: []string{"Redis"}, TargetBase: &tb, BenchmarkingPods: ints(2), BenchmarkingThreads: ints(16),
		Saturation: &contracts.Saturation{HoldS: 600}}))
	if err != nil {
		t.Fatal(err)
	}
	phases := p.Configurations[0].Phases
	if len(phases) != 2 || phases[1].Target != 2000 || len(phases[1].Shards) != 2 || p.Settings.StatusInterval != 1 {
		t.Fatalf("phases %+v, -xli %d", phases, p.Settings.StatusInterval)
	}
	step := phases[1].Shards[0].YCSB
	if step.Threads != 8 || step.Target != 1000 || step.MaxExecutionS != 20 || step.OperationCount != 2*1000*20 {
		t.Errorf("first step's shard %+v: want 8 threads, 1000 ops/s, 20 s, twice the operations", step)
	}
	if s := p.Settings.Saturation; s.StepFactor != 2 || s.Precision != 5 || s.HoldS != 600 {
		t.Errorf("settings %+v", s)
	}
	// The shard timeout covers the hold the search may add.
	if p.Timeouts.ShardS < 2*600+300 {
		t.Errorf("shard timeout %d s < the hold's 600 s × 2 + 300", p.Timeouts.ShardS)
	}
}

// bexhoma's -dbms Redis -nw 3 (bexhoma-redis.md, "Distributed DBMS") is a
// Redis Cluster, and so is Dragonfly's; the configurations keep the name the
// user gave. -nwr 1 gives each of Redis's 3 masters a replica (6 servers),
// while bexhoma's Dragonfly has "only the basic master-copy replication"
// (bexhoma-dragonfly.txt, "Replication"): one master and 2 replicas, 3
// servers, and a note says so. -nw on a DBMS without a cluster, or below
// its minimum of masters, is refused naming the DBMS.
func TestExpandWorkersDeployTheCluster(t *testing.T) {
	for dbms, want := range map[string]struct {
		deploys           string
		masters, replicas int
	}{"Redis": {"RedisCluster", 3, 1}, "Dragonfly": {"DragonflyCluster", 1, 2}, "RedisCluster": {"RedisCluster", 3, 1}} {
		r := req(contracts.Request{DBMS: []string{dbms}, Workers: 3, WorkerReplicas: 1})
		p, err := Expand("1", r)
		if err != nil {
			t.Fatalf("%s -nw 3: %v", dbms, err)
		}
		c := p.Configurations[0]
		if c.DBMS != want.deploys || !strings.HasPrefix(c.Name, dbms+"-") || c.SUT.Workers != want.masters || c.SUT.WorkerReplicas != want.replicas {
			t.Errorf("%s -nw 3 -nwr 1: configuration %s deploys %s with %d masters and %d replicas each, want %s-… deploying %s, %d and %d",
				dbms, c.Name, c.DBMS, c.SUT.Workers, c.SUT.WorkerReplicas, dbms, want.deploys, want.masters, want.replicas)
		}
		noted := strings.Contains(strings.Join(Notes(r, contracts.BackendKubernetes), "\n"), "master-copy replication")
		if noted != (dbms == "Dragonfly") {
			t.Errorf("%s -nw 3 -nwr 1: a note on master-copy replication: %v", dbms, noted)
		}
	}
	if p, err := Expand("1", req(contracts.Request{DBMS: []string{"Redis"}})); err != nil || p.Configurations[0].DBMS != "Redis" {
		t.Errorf("Redis without -nw: %v, %+v", err, p.Configurations)
	}
	for _, bad := range []struct {
		dbms    string
		workers int
		want    string
	}{
		{"PostgreSQL", 2, "PostgreSQL has no cluster in benchq's catalog; workers (-nw) apply to Dragonfly, DragonflyCluster, Graphite, Redis, RedisCluster"},
		{"Redis", 2, "RedisCluster needs at least 3 workers (-nw), got 2"},
	} {
		_, err := Expand("1", req(contracts.Request{DBMS: []string{bad.dbms}, Workers: bad.workers}))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s -nw %d: %v, want %q", bad.dbms, bad.workers, err, bad.want)
		}
	}
}

// -nw 3,5 loops over workers: one configuration per number, named with
// -nw<N>, each deploying its own cluster; a list with a number twice, a
// zero, or beside workers is refused.
func TestExpandWorkersListIsALoop(t *testing.T) {
	p, err := Expand("1", req(contracts.Request{DBMS: []string{"Redis"}, WorkersList: []int{3, 5}, CostPerHour: 0.25}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range p.Configurations {
		got = append(got, fmt.Sprintf("%s %s %d", c.Name, c.DBMS, c.SUT.Workers))
	}
	if want := []string{"Redis-64-1-16384-nw3-1 RedisCluster 3", "Redis-64-1-16384-nw5-1 RedisCluster 5"}; !slices.Equal(got, want) {
		t.Errorf("configurations %q, want %q", got, want)
	}
	for _, bad := range []struct {
		r    contracts.Request
		want string
	}{
		{contracts.Request{Workers: 3, WorkersList: []int{3, 5}}, "workers_list: give workers (one number) or workers_list"},
		{contracts.Request{WorkersList: []int{3, 3}}, "workers_list: 3,3 names a number of workers twice"},
		{contracts.Request{WorkersList: []int{0, 3}}, "workers_list: 0,3: each number of workers must be at least 1"},
		{contracts.Request{CostPerHour: -1}, "cost_per_hour: a price cannot be negative"},
		{contracts.Request{WorkerReplicas: 1}, "worker_replicas: replicas (-nwr) need workers (-nw): without -nw, Redis is one server"},
	} {
		bad.r.DBMS = []string{"Redis"}
		if _, err := Expand("1", req(bad.r)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v, want %q", bad.r, err, bad.want)
		}
	}
	// A DBMS that is a cluster without -nw gives its default masters the replicas.
	if p, err := Expand("1", req(contracts.Request{DBMS: []string{"RedisCluster"}, WorkerReplicas: 1})); err != nil || p.Configurations[0].SUT.WorkerReplicas != 1 {
		t.Errorf("RedisCluster -nwr 1: %v", err)
	}
	if _, err := Expand("1", req(contracts.Request{DBMS: []string{"RedisCluster", "Redis"}, WorkerReplicas: 1})); err == nil ||
		!strings.HasSuffix(err.Error(), "without -nw, Redis is one server") {
		t.Errorf("RedisCluster,Redis -nwr 1: %v, want Redis named alone", err)
	}
}

// The estimate: operations at their target plus the measured costs; an
// unthrottled phase has none (the plan then carries no estimated_s); -ms 2
// runs two configurations at a time.
func TestEstimate(t *testing.T) {
	p, err := Expand("1", req(contracts.Request{DBMS: []string{"Redis"}, SF: 0.1, Operations: 0.2, LoadingPods: ints(2), LoadingThreads: ints(8), BenchmarkingThreads: ints(8)}))
	if err != nil {
		t.Fatal(err)
	}
	c := MeasuredCosts
	want := c.SUTReadyS[catalog.KindRedis] + c.TeardownS + (c.PhaseS + 100000.0/16384) + (c.PhaseS + 200000.0/16384)
	if e := EstimateOf(p, c); !e.Bounded || math.Abs(e.TotalS-want) > 1e-9 || p.EstimatedS != math.Round(want*10)/10 {
		t.Errorf("estimate %+v, plan's %g; want %g", e, p.EstimatedS, want)
	}
	two, _ := Expand("1", req(contracts.Request{DBMS: []string{"Redis"}, SF: 0.1, Operations: 0.2, Repetitions: 4, MaxSUTs: intp(2)}))
	if e := EstimateOf(two, c); math.Abs(e.TotalS-2*e.Configurations[two.Configurations[0].Name]) > 1e-9 {
		t.Errorf("4 configurations, 2 at a time: %g s, one takes %g s", e.TotalS, e.Configurations[two.Configurations[0].Name])
	}
	// 8 loaders on a pool of 2 agents: 6 start for the phase.
	wide, _ := Expand("1", req(contracts.Request{DBMS: []string{"Redis"}, SF: 0.1, Operations: 0.2, LoadingPods: ints(8), LoadingThreads: ints(8), BenchmarkingThreads: ints(8)}))
	if e := EstimateOf(wide, c); math.Abs(e.TotalS-(want+6*c.PhaseAgentS)) > 1e-9 {
		t.Errorf("8 loaders: %g s, want %g (6 agents started)", e.TotalS, want+6*c.PhaseAgentS)
	}
	zero := 0
	free, _ := Expand("1", req(contracts.Request{DBMS: []string{"Redis"}, TargetBase: &zero}))
	if e := EstimateOf(free, c); e.Bounded || free.EstimatedS != 0 {
		t.Errorf("unthrottled: bounded %v, plan's estimate %g", e.Bounded, free.EstimatedS)
	}
}

// With a volume (-rst) the second repetition's loading is skipped at run
// time (its data is on the volume the first loaded): the estimate counts
// it as 0 and names the configuration that loads; a cluster of workers
// loads every time.
func TestEstimateSkipsTheLoadingOfAReusedVolume(t *testing.T) {
	c := MeasuredCosts
	r := contracts.Request{DBMS: []string{"Redis"}, SF: 0.1, Operations: 0.2, Repetitions: 2, Storage: &contracts.Storage{Class: "shared"}}
	p, err := Expand("1", req(r))
	if err != nil {
		t.Fatal(err)
	}
	e := EstimateOf(p, c)
	first, second := p.Configurations[0], p.Configurations[1]
	if a, b := e.Configurations[first.Name], e.Configurations[second.Name]; math.Abs(a-b-(c.PhaseS+100000.0/16384)) > 1e-9 {
		t.Errorf("repetitions %g s and %g s: the second should lack the loading", a, b)
	}
	for _, pe := range e.Phases {
		if want := map[bool]string{true: first.Name}[pe.Phase == second.Phases[0].Name]; pe.Reused != want {
			t.Errorf("%s: reused %q, want %q", pe.Phase, pe.Reused, want)
		}
	}
	// PgBouncer's data is its PostgreSQL's: one volume for both.
	both, err := Expand("1", req(contracts.Request{DBMS: []string{"PostgreSQL", "PgBouncer"}, SF: 0.1, Operations: 0.2, Storage: &contracts.Storage{Class: "shared"}}))
	if err != nil {
		t.Fatal(err)
	}
	for _, pe := range EstimateOf(both, c).Phases {
		if pe.Phase == both.Configurations[1].Phases[0].Name && pe.Reused != both.Configurations[0].Name {
			t.Errorf("PgBouncer's loading after PostgreSQL's on one volume: reused %q, want %q", pe.Reused, both.Configurations[0].Name)
		}
	}
	r.DBMS, r.Workers = []string{"RedisCluster"}, 3
	cl, err := Expand("1", req(r))
	if err != nil {
		t.Fatal(err)
	}
	for _, pe := range EstimateOf(cl, c).Phases {
		if pe.Reused != "" {
			t.Errorf("a cluster's %s is taken as reused", pe.Phase)
		}
	}
	// Dragonfly's volume keeps no data (snapshots off): it loads every
	// time, and the dry run and the summary say why.
	r.DBMS, r.Workers = []string{"Dragonfly"}, 0
	df, err := Expand("1", req(r))
	if err != nil {
		t.Fatal(err)
	}
	for _, pe := range EstimateOf(df, c).Phases {
		if pe.Reused != "" {
			t.Errorf("Dragonfly's %s is taken as reused", pe.Phase)
		}
	}
	if notes := strings.Join(Notes(req(r), contracts.BackendKubernetes), "\n"); !strings.Contains(notes, "-rst for Dragonfly: Dragonfly runs with its snapshots off") {
		t.Errorf("notes of Dragonfly with -rst: %q", notes)
	}
	// Configurations on one volume take turns whatever -ms allows.
	two := 2
	r.DBMS, r.MaxSUTs = []string{"Redis"}, &two
	p2, err := Expand("1", req(r))
	if err != nil {
		t.Fatal(err)
	}
	e2 := EstimateOf(p2, c)
	if a, b := e2.Configurations[p2.Configurations[0].Name], e2.Configurations[p2.Configurations[1].Name]; math.Abs(e2.TotalS-(a+b)) > 1e-9 {
		t.Errorf("-ms 2 on one volume: total %g s, want the two in turn, %g + %g", e2.TotalS, a, b)
	}
}

// Thresholds in k6's notation, stored in base units; what cannot be judged
// is refused naming the threshold.
func TestParseThreshold(t *testing.T) {
	for text, want := range map[string]contracts.Threshold{
		"p99<5ms":              {Figure: "p99", Op: "<", Value: 5000},
		"p99[READ] <= 800us":   {Figure: "p99", Operation: "READ", Op: "<=", Value: 800},
		"p99.9<1s":             {Figure: "p99.9", Op: "<", Value: 1e6},
		"goodput>=0.95*target": {Figure: "goodput", Op: ">=", Value: 0.95, OfTarget: true},
		"throughput>1000":      {Figure: "throughput", Op: ">", Value: 1000},
		"error_share<0.1%":     {Figure: "error_share", Op: "<", Value: 0.1},
	} {
		got, err := ParseThreshold(text)
		want.Text = text
		if err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", text, got, err, want)
		}
	}
	for text, want := range map[string]string{
		"p90<5ms":            `unknown figure "p90"`,
		"p99<5":              "a latency needs a unit",
		"goodput>5ms":        "ops/s or a multiple of the target",
		"error_share<0.1":    "error_share is a percent",
		"throughput[READ]>1": "only a latency is per operation",
		"p99=5ms":            "want <figure><op><value>",
	} {
		if _, err := ParseThreshold(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", text, err, want)
		}
	}
	if _, err := Expand("1", req(contracts.Request{DBMS: []string{"Redis"}, Thresholds: []contracts.Threshold{{Text: "x", Figure: "error_share", Op: "<", Value: 1, OfTarget: true}}})); err == nil ||
		!strings.Contains(err.Error(), "thresholds[0]: x: only throughput and goodput compare with the target") {
		t.Errorf("a JSON threshold on error_share of the target: %v", err)
	}
	goodput, _ := ParseThreshold("goodput>=0.95*target")
	zero := 0
	if _, err := Expand("1", req(contracts.Request{DBMS: []string{"Redis"}, TargetBase: &zero, Thresholds: []contracts.Threshold{goodput}})); err == nil ||
		!strings.Contains(err.Error(), "-xtb 0 runs every phase unthrottled") {
		t.Errorf("a bound of a multiple of no target: %v, want it refused", err)
	}
	if _, err := Expand("1", req(contracts.Request{DBMS: []string{"Redis"}, Thresholds: []contracts.Threshold{goodput}})); err != nil {
		t.Errorf("the same bound with the default target base: %v", err)
	}
	// No benchmarking phase to judge (it was ignored, and -tr's tests
	// failed a load that went well).
	for _, action := range []string{contracts.ActionLoad, contracts.ActionStart} {
		if _, err := Expand("1", req(contracts.Request{DBMS: []string{"Redis"}, Action: action, Thresholds: []contracts.Threshold{goodput}})); err == nil ||
			!strings.Contains(err.Error(), "action "+action+" runs none") {
			t.Errorf("a bound with action %s: %v, want it refused", action, err)
		}
	}
}

// The lists WithDefaults fills are their own: appending to one writes into
// neither another list of the request nor the package's Defaults.
func TestDefaultListsAreCopies(t *testing.T) {
	r := WithDefaults(contracts.Request{Benchmark: BenchmarkTSDB, BenchmarkingThreads: []int{4, 8}})
	r.LoadingThreads = append(r.LoadingThreads, 99)
	if !slices.Equal(r.BenchmarkingThreads, []int{4, 8}) {
		t.Errorf("tsdb: benchmarking threads %v after an append to the loading threads, want [4 8]", r.BenchmarkingThreads)
	}
	d := WithDefaults(contracts.Request{})
	d.BenchmarkingThreads[0] = 7
	if Defaults.BenchmarkingThreads[0] != 64 {
		t.Errorf("Defaults.BenchmarkingThreads %v after a change to a request's", Defaults.BenchmarkingThreads)
	}
}

// A value given twice in a list that makes configurations would make two
// configurations of one name, whose deploy and teardown messages share
// their ids: the second never ran and its experiment waited for it (a
// walkthrough's `-dbms Redis -dbms Redis`). Refused, naming the flag's
// field; a benchmarking list may repeat a value (each is its own phase).
func TestRepeatedValuesThatMakeConfigurationsAreRefused(t *testing.T) {
	t.Parallel()
	base := contracts.Request{DBMS: []string{"Redis"}, SF: 0.01, LoadingPods: ints(1), LoadingThreads: ints(8),
		BenchmarkingPods: ints(1), BenchmarkingThreads: ints(8), TargetBase: tb(1000)}
	for _, c := range []struct {
		name string
		edit func(*contracts.Request)
		want string
	}{
		{"dbms", func(r *contracts.Request) { r.DBMS = []string{"Redis", "PostgreSQL", "redis"} }, "dbms[2]: Redis is given twice"},
		{"loading pods", func(r *contracts.Request) { r.LoadingPods = ints(1, 2, 1) }, "loading_pods: 1,2,1 names the number of loading pods 1 twice"},
		{"loading threads", func(r *contracts.Request) { r.LoadingThreads = ints(8, 8) }, "loading_threads: 8,8 names the number of loading threads 8 twice"},
		{"loading factors", func(r *contracts.Request) { r.LoadingFactors = []float64{0.5, 0.5} }, "loading_factors: 0.5,0.5 names the loading factor 0.5 twice"},
		{"pool pods", func(r *contracts.Request) { r.DBMS, r.PoolPods = []string{"PgBouncer"}, ints(2, 2) }, "pool_pods: 2,2 names the number of pool pods 2 twice"},
		{"pool inbound", func(r *contracts.Request) { r.DBMS, r.PoolInbound = []string{"PgBouncer"}, ints(64, 64) }, "pool_inbound: 64,64 names"},
		{"pool outbound", func(r *contracts.Request) { r.DBMS, r.PoolOutbound = []string{"PgBouncer"}, ints(16, 16) }, "pool_outbound: 16,16 names"},
		// Not a repeat: the pool's lists of a DBMS without a pool are refused as such.
		{"pool lists without a pool", func(r *contracts.Request) { r.PoolPods = ints(2, 2) }, "pool_pods: -xnpp/-xnpi/-xnpo size a connection pool"},
		// Two factors, one target: unthrottled (-xtb 0), or both rounding to 1.
		{"factors unthrottled", func(r *contracts.Request) { r.TargetBase, r.LoadingFactors = tb(0), []float64{1, 2} }, "loading_factors: 1,2 at -xtb 0: the factors 1 and 2 both load at 0 ops/s"},
		{"factors rounding alike", func(r *contracts.Request) { r.TargetBase, r.LoadingFactors = tb(1), []float64{1.2, 1.4} }, "the factors 1.2 and 1.4 both load at 1 ops/s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := base
			c.edit(&r)
			if _, err := Expand("1", req(r)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one containing %q", err, c.want)
			}
		})
	}
	r := base
	r.BenchmarkingThreads = ints(8, 8)
	p, err := Expand("1", req(r))
	if err != nil {
		t.Fatalf("a benchmarking list repeating a value: %v", err)
	}
	if n := len(p.Configurations[0].Phases); n != 3 {
		t.Errorf("-nbt 8,8: %d phases, want a loading and two benchmarkings", n)
	}
}
