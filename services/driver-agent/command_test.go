package main

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/plan"
	"github.com/benchq/benchq/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const (
	java      = "/usr/lib/jvm/bin/java"
	lib       = "/opt/benchq/ycsb/lib"
	workloads = "/opt/benchq/ycsb/workloads"
	hdrDir    = "/tmp/benchq-shard-1"
)

// shardJob builds the job the scheduler would send for shard (1-based) of
// phase (0 = loading) of the request's only configuration.
func shardJob(t *testing.T, req contracts.Request, phase, shard int, ep contracts.Endpoint) contracts.ShardJob {
	t.Helper()
	req.SchemaVersion = 1
	p, err := plan.Expand("1700000000", req)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Configurations[0]
	ph := c.Phases[phase]
	return contracts.ShardJob{
		Envelope:      contracts.NewEnvelope(p.Code, "job", time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)),
		Configuration: c.Name, Phase: ph.Name, Kind: ph.Kind, Shard: shard, Shards: len(ph.Shards), Attempt: 1,
		Engine: "ycsb", DBMS: c.DBMS, Endpoint: ep, YCSB: ph.Shards[shard-1].YCSB,
	}
}

// command is ycsbCommand as the agent calls it: binding and properties from
// the catalog entry of the job's DBMS.
func command(t *testing.T, job contracts.ShardJob) []string {
	t.Helper()
	e, err := catalog.Lookup(job.DBMS)
	if err != nil {
		t.Fatal(err)
	}
	return ycsbCommand(java, lib, workloads, hdrDir, job, e.YCSB.DB, e.YCSBProperties(job.Endpoint, job.Kind), "")
}

func pgEndpoint(t *testing.T) contracts.Endpoint {
	e, err := catalog.Lookup("PostgreSQL")
	if err != nil {
		t.Fatal(err)
	}
	return e.Endpoint("10.0.0.5", 5432)
}

func TestYCSBCommand(t *testing.T) {
	t.Parallel()
	zero := 0
	for _, tc := range []struct {
		name   string
		job    contracts.ShardJob
		mode   string
		target string // "" = no -target
	}{
		{
			// Shard 2 of 2: the second half of the keys, half the threads
			// and half the target.
			name: "redis-load-shard-2",
			job: shardJob(t, contracts.Request{DBMS: []string{"Redis"}, SF: 0.001, LoadingPods: []int{2}, LoadingThreads: []int{3}},
				0, 2, contracts.Endpoint{Host: "127.0.0.1", Port: 7000}),
			mode: "-load", target: "8192",
		},
		{
			name: "redis-run",
			job: shardJob(t, contracts.Request{DBMS: []string{"Redis"}, SF: 0.001, Operations: 0.002, Workload: "b",
				BenchmarkingPods: []int{1}, BenchmarkingThreads: []int{8}, BenchmarkingFactors: []float64{0.5}},
				1, 1, contracts.Endpoint{Host: "127.0.0.1", Port: 7000, Password: "s3cret"}),
			mode: "-t", target: "8192",
		},
		{
			name: "postgresql-load-shard-1",
			job: shardJob(t, contracts.Request{DBMS: []string{"PostgreSQL"}, SF: 0.001, LoadingPods: []int{2}, LoadingThreads: []int{4},
				InsertOrder: "ordered"}, 0, 1, pgEndpoint(t)),
			mode: "-load", target: "8192",
		},
		{
			// target_base 0: unthrottled, so no -target at all.
			name: "postgresql-run-unthrottled",
			job: shardJob(t, contracts.Request{DBMS: []string{"PostgreSQL"}, SF: 0.001, Workload: "c", TargetBase: &zero,
				BenchmarkingPods: []int{2}, BenchmarkingThreads: []int{4}, StatusInterval: 2, BatchSize: 100}, 1, 2, pgEndpoint(t)),
			mode: "-t",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := command(t, tc.job)
			golden(t, filepath.Join("testdata", "ycsb-"+tc.name+".golden"), strings.Join(args, "\n")+"\n")

			if args[0] != java || args[4] != tc.mode {
				t.Errorf("command starts %q, want %s … %s", args[:5], java, tc.mode)
			}
			if slices.Contains(args, "-load") && slices.Contains(args, "-t") {
				t.Errorf("both -load and -t: %q", args)
			}
			i := slices.Index(args, "-target")
			switch {
			case tc.target == "" && i >= 0:
				t.Errorf("-target %s for an unthrottled shard", args[i+1])
			case tc.target != "" && (i < 0 || args[i+1] != tc.target):
				t.Errorf("-target missing or not %s: %q", tc.target, args)
			}
			props := properties(args)
			if !slices.IsSorted(props) {
				t.Errorf("properties not sorted: %q", props)
			}
			e, _ := catalog.Lookup(tc.job.DBMS)
			for k, v := range e.YCSBProperties(tc.job.Endpoint, tc.job.Kind) {
				if !slices.Contains(props, k+"="+v) {
					t.Errorf("catalog property %s=%s missing: %q", k, v, props)
				}
			}
		})
	}
}

// properties returns the values of every -p.
func properties(args []string) []string {
	var out []string
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-p" {
			out = append(out, args[i+1])
		}
	}
	return out
}

// A batch size the user asked for (-xbs) must reach YCSB, also for loading,
// where the catalog has a default of its own.
func TestYCSBCommandRequestBatchSizeWins(t *testing.T) {
	t.Parallel()
	job := shardJob(t, contracts.Request{DBMS: []string{"PostgreSQL"}, SF: 0.001, BatchSize: 100}, 0, 1, pgEndpoint(t))
	if job.YCSB.BatchSize != 100 {
		t.Fatalf("the plan lost the batch size: %+v", job.YCSB)
	}
	props := properties(command(t, job))
	if !slices.Contains(props, "db.batchsize=100") {
		t.Errorf("request batch_size 100 not passed to YCSB for loading: %q", props)
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it; review the diff):\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// Benchmarking shards of a workload that inserts learn their place among
// their peers (ShardedWorkload interleaves their new keys); every shard logs
// HdrHistograms; intended-start latencies are measured only under a target.
func TestYCSBCommandShardsAndMeasurement(t *testing.T) {
	t.Parallel()
	zero := 0
	throttled := contracts.Request{DBMS: []string{"Redis"}, SF: 0.001, Workload: "d", BenchmarkingPods: []int{3}, BenchmarkingThreads: []int{6}}
	unthrottled := throttled
	unthrottled.TargetBase = &zero
	for _, tc := range []struct {
		name     string
		req      contracts.Request
		phase    int
		shard    int
		want     []string
		wantNone []string
	}{
		{"run shard 3 of 3", throttled, 1, 3, []string{
			"workload=io.benchq.ycsb.ShardedWorkload", "benchq.shard=3", "benchq.shards=3",
			"measurementtype=hdrhistogram", "hdrhistogram.fileoutput=true", "hdrhistogram.output.path=" + hdrDir + "/",
			"hdrhistogram.percentiles=50,95,99,99.9", "measurement.interval=both",
		}, nil},
		{"unthrottled run", unthrottled, 1, 2, []string{"benchq.shard=2", "benchq.shards=3", "hdrhistogram.fileoutput=true"},
			[]string{"measurement.interval=both"}},
		{"load shard", throttled, 0, 1, []string{"workload=io.benchq.ycsb.ShardedWorkload", "benchq.shard=1", "benchq.shards=1"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			props := properties(command(t, shardJob(t, tc.req, tc.phase, tc.shard, contracts.Endpoint{Host: "127.0.0.1", Port: 7000})))
			for _, p := range tc.want {
				if !slices.Contains(props, p) {
					t.Errorf("%s missing: %q", p, props)
				}
			}
			for _, p := range tc.wantNone {
				if slices.Contains(props, p) {
					t.Errorf("%s present: %q", p, props)
				}
			}
		})
	}
}

// The SUT's password reaches YCSB in a file of the shard's own (mode
// 0600), never on the JVM's command line, and Java reads it back as it is:
// the characters a properties file escapes, a leading space, non-ASCII.
func TestSecretPropertiesReachYCSBAsTheyAre(t *testing.T) {
	javaBin, err := exec.LookPath("java")
	if err != nil {
		testenv.SkipUnlessRequired(t, "BENCHQ_YCSB_REQUIRED", "java: %v", err)
	}
	const password = ` p@ss:w'o"rd\ #=!x é€😀` + "\t"
	e, err := catalog.Lookup("PostgreSQL")
	if err != nil {
		t.Fatal(err)
	}
	job := contracts.ShardJob{Kind: contracts.KindRun, Shard: 1, Shards: 1,
		Endpoint: contracts.Endpoint{Host: "127.0.0.1", Port: 5432, Password: password}, YCSB: &contracts.YCSBShard{Workload: "a", Threads: 1}}
	props := e.YCSBProperties(job.Endpoint, job.Kind)
	if props["db.passwd"] != password || !slices.Equal(e.SecretYCSBProperties(), []string{"db.passwd"}) {
		t.Fatalf("properties %v, secret %v", props, e.SecretYCSBProperties())
	}
	dir := t.TempDir()
	file, err := writeSecretProperties(dir, props, e.SecretYCSBProperties())
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secret properties file: %v, %v", st, err)
	}
	args := ycsbCommand(java, lib, workloads, dir, job, e.YCSB.DB, props, file)
	if cmd := strings.Join(args, " "); strings.Contains(cmd, "p@ss") || !strings.Contains(cmd, "-P "+file) {
		t.Errorf("command line %q: want the file, not the password", cmd)
	}
	// Its stdout only: the JVM may say on stderr what it picked up
	// (JAVA_TOOL_OPTIONS, as make test sets).
	read := exec.Command(javaBin, filepath.Join("testdata", "ReadProperty.java"), file, "db.passwd")
	var stderr strings.Builder
	read.Stderr = &stderr
	out, err := read.Output()
	if err != nil || string(out) != password {
		t.Errorf("Java reads %q (%v: %s), want %q", out, err, stderr.String(), password)
	}
	if none, err := writeSecretProperties(dir, map[string]string{"db.url": "x"}, e.SecretYCSBProperties()); none != "" || err != nil {
		t.Errorf("no password: file %q, %v", none, err)
	}
}
