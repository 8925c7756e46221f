package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, &State{Env: func(string) string { return "" }, Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

// The seed command of bexhoma's loading test case plans four configurations.
func TestDryRunPlansTheGrid(t *testing.T) {
	code, out, errs := run("ycsb", "-dbms", "PostgreSQL", "-nlp", "1,8", "-nlt", "64", "-nlf", "1,4", "-nbp", "1", "-nbt", "64", "-nbf", "2", "--dry-run", "run")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := "### Workflow\n\n#### Planned\n" +
		"* DBMS PostgreSQL-64-1-16384 - Pods [[1]]\n* DBMS PostgreSQL-64-1-65536 - Pods [[1]]\n" +
		"* DBMS PostgreSQL-64-8-16384 - Pods [[1]]\n* DBMS PostgreSQL-64-8-65536 - Pods [[1]]\n"
	if !strings.HasPrefix(out, want) {
		t.Errorf("got:\n%s\nwant prefix:\n%s", out, want)
	}
}

func TestDryRunRepetitionsAndPods(t *testing.T) {
	_, out, _ := run("ycsb", "-dbms", "PostgreSQL", "-nlp", "8", "-nbp", "1,8", "-xnbf", "2,3", "-nc", "2", "-dry-run", "run")
	if !strings.Contains(out, "* DBMS PostgreSQL-64-8-16384 - Pods [[1, 8, 1, 8], [1, 8, 1, 8]]\n") {
		t.Errorf("got:\n%s", out)
	}
}

func TestUsageErrors(t *testing.T) {
	cases := map[string]struct {
		args []string
		code int
		msg  string
	}{
		"unknown flag":    {[]string{"ycsb", "-nosuch", "1", "run"}, ExitUsage, "-nosuch"},
		"malformed list":  {[]string{"ycsb", "-dbms", "Redis", "-nlp", "1,x", "run"}, ExitUsage, "-nlp"},
		"no action":       {[]string{"ycsb", "-dbms", "Redis"}, ExitUsage, "run"},
		"unknown command": {[]string{"frobnicate"}, ExitUsage, "frobnicate"},
		"unknown dbms":    {[]string{"ycsb", "-dbms", "NoSuchDB", "-dry-run", "run"}, ExitFailed, `unknown DBMS "NoSuchDB"`},
		// The flag as typed (bexhoma has -dbms and --dbms), the nearest
		// name, and only the DBMSs the benchmark runs.
		// One option given twice: the flag package would keep the last.
		"two names of one option": {[]string{"ycsb", "-dbms", "Redis", "-xop", "10", "-sfo", "5", "-dry-run", "run"}, ExitUsage, "-xop and -sfo are one option (-xop)"},
		"a list given twice":      {[]string{"ycsb", "-dbms", "Redis", "-nlp", "1", "--nlp=8", "-dry-run", "run"}, ExitUsage, "--nlp is given twice: give it once (a list takes commas: 1,8)"},
		"thresholds repeat":       {[]string{"ycsb", "-dbms", "Redis", "-threshold", "p99<5ms", "-threshold", "p99<6ms", "-nlp", "0", "-dry-run", "run"}, ExitFailed, "-nlp"},
		"a value given twice":     {[]string{"ycsb", "-dbms", "Redis", "-sf", "1", "-sf", "2", "-dry-run", "run"}, ExitUsage, "-sf is given twice: give it once"},
		"mistyped dbms":           {[]string{"ycsb", "-dbms", "PostgresSQL", "-dry-run", "run"}, ExitFailed, `-dbms: unknown DBMS "PostgresSQL" (did you mean PostgreSQL?); allowed: Dragonfly, DragonflyCluster, PgBouncer, PostgreSQL, Redis, RedisCluster`},
		"mistyped --dbms":         {[]string{"ycsb", "--dbms", "Redi", "-dry-run", "run"}, ExitFailed, `--dbms: unknown DBMS "Redi" (did you mean Redis?)`},
		"mistyped tsdb dbms":      {[]string{"tsdb", "-dbms", "VictoriaMetric", "-dry-run", "run"}, ExitFailed, `(did you mean VictoriaMetrics?); allowed: Graphite, Prometheus, VictoriaMetrics`},
		"mistyped benchbase dbms": {[]string{"benchbase", "-dbms", "PostgresSQL", "-dry-run", "run"}, ExitFailed, `(did you mean PostgreSQL?); allowed: PgBouncer, PostgreSQL`},
		// The home looked in is named: run from another directory, the
		// default .benchq is not benchq up's.
		"stack not up":  {[]string{"ycsb", "-dbms", "Redis", "run"}, ExitNotReady, "the stack is not running in /no/such/home (start it with: benchq up"},
		"no stack":      {[]string{"summary", "-e", "x"}, ExitNotReady, "not running in /no/such/home"},
		"ycsb workload": {[]string{"ycsb", "-dbms", "Redis", "--workload", "A", "-dry-run", "run"}, ExitUsage, "--workload A: YCSB's core workloads are a, b, c, d, e, f"},
		"sf 0":          {[]string{"ycsb", "-dbms", "Redis", "-sf", "0", "-dry-run", "run"}, ExitUsage, "-sf 0: the scale factor must be more than 0"},
		"sf negative":   {[]string{"benchbase", "-dbms", "PostgreSQL", "--scaling-factor", "-1", "-dry-run", "run"}, ExitUsage, "--scaling-factor -1: the scale factor must be more than 0"},
		// A plan larger than one NATS message: the dry run says what the
		// scheduler would (it printed the plan and exited 0).
		"plan too large": {[]string{"ycsb", "-dbms", "Redis", "-sf", "0.001", "-nbp", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40",
			"-nbt", "40", "-ne", "8", "-dry-run", "run"}, ExitFailed, "the scheduler would refuse it"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(context.Background(), c.args, &State{Env: func(k string) string {
				if k == "BENCHQ_HOME" {
					return "/no/such/home"
				}
				return ""
			}, Stdout: &out, Stderr: &errb})
			if code != c.code || !strings.Contains(errb.String(), c.msg) {
				t.Errorf("exit %d, stderr %q; want %d containing %q", code, errb.String(), c.code, c.msg)
			}
		})
	}
}

// bexhoma-pgbouncer-benchbase.txt's Benchbase command: one configuration,
// benchmark pods [1, 2], 600 s each.
func TestDryRunBenchbase(t *testing.T) {
	code, out, errs := run("benchbase", "-dbms", "PostgreSQL", "-sf", "16", "-xsd", "10", "-xtb", "1024", "-xnbf", "16", "-nbp", "1,2", "-nbt", "32", "-xconn", "-ms", "1", "-tr",
		"-rnn", "cl-worker11", "-rnl", "cl-worker19", "-rnb", "cl-worker19", "-rr", "64Gi", "-dry-run", "run")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"* DBMS PostgreSQL-1-1-1024 - Pods [[1, 2]]\n",
		"    * shard 2: terminals 16, target 8192, warehouses 16, duration 600s, a new connection per transaction (-xconn)\n",
		// The local backend does not apply the nodes: the line says so.
		"* nodes: SUT cl-worker11, loaders cl-worker19, benchmarkers cl-worker19 (not applied here: see Not applied)\n",
		"* resources: RAM request 64Gi (not applied here: see Not applied)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

// The PgBouncer seed command: the pool is part of the configuration's name.
func TestDryRunPool(t *testing.T) {
	_, out, errs := run("ycsb", "-dbms", "PgBouncer", "-sf", "16", "-xwl", "c", "-xtb", "16384", "-xnbf", "11", "-xnlf", "11", "-nc", "1", "-ne", "1",
		"-nlp", "16", "-nlt", "64", "-nbp", "16", "-nbt", "128", "-xnpp", "4", "-xnpi", "128", "-xnpo", "64", "-xop", "16", "-m", "-mc", "-ms", "1", "-tr",
		"-lr", "64Gi", "-rr", "64Gi", "-dry-run", "run")
	if !strings.Contains(out, "* DBMS pgb-64-4-128-64 - Pods [[16]]\n") {
		t.Errorf("got:\n%s%s", out, errs)
	}
}

// Every flag lands in its request field.
func TestFlagsBuildTheRequest(t *testing.T) {
	var f expFlags
	fs := newExpFlagSet(&f, "ycsb", &bytes.Buffer{})
	err := fs.Parse([]string{"-dbms", "Redis,PostgreSQL", "-sf", "2", "-xop", "3", "-xwl", "e", "-xio", "ordered", "-xtb", "0",
		"-xnlf", "1,4", "-xnbf", "2", "-nlp", "1,8", "-nlt", "64", "-nbp", "1,8", "-nbt", "32", "-ne", "1,2", "-nc", "2", "-ms", "3", "-xli", "5", "-xbs", "100", "-tr", "-max-errors", "2.5",
		"-m", "-mc", "-ma", "-rc", "4", "-rr", "16Gi", "-lr", "64Gi", "-rst", "shared", "-rss", "50Gi", "-rsr", "-rnn", "n1", "-rnl", "n2", "-rnb", "n3",
		"-nw", "3", "-nwr", "1", "-xnpp", "4", "-xnpi", "128", "-xnpo", "64", "-xsd", "0.5", "-timeout-shard", "99", "-mse", "2", "-lc", "8"})
	if err != nil {
		t.Fatal(err)
	}
	r := f.request("c1", "load", time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	got, _ := json.Marshal(r)
	want := `{"schema_version":1,"code":"c1","ts":"2026-11-21T10:00:00Z","benchmark":"ycsb","dbms":["Redis","PostgreSQL"],"sf":2,"operations":3,` +
		`"workload":"e","insert_order":"ordered","target_base":0,"loading_factors":[1,4],"benchmarking_factors":[2],"loading_pods":[1,8],"loading_threads":[64],` +
		`"benchmarking_pods":[1,8],"benchmarking_threads":[32],"clients":[1,2],"repetitions":2,"max_suts":3,"max_suts_experiment":2,"status_interval":5,"batch_size":100,"test_results":true,"error_share_limit":2.5,` +
		`"timeouts":{"shard_s":99},"action":"load","monitoring":{"sut":true,"cluster":true,"application":true},` +
		`"resources":{"request_cpu":"4","request_memory":"16Gi","limit_memory":"64Gi","limit_cpu":"8"},"storage":{"class":"shared","size":"50Gi","remove":true},` +
		`"nodes":{"sut":"n1","loading":"n2","benchmarking":"n3"},"workers":3,"worker_replicas":1,"pool_pods":[4],"pool_inbound":[128],"pool_outbound":[64],` +
		`"duration_s":30}`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// Graphite's carbon cluster (-nw: the relay in front of N caches) is
// planned on either backend, and so is one carbon-cache; the dry run
// tells which.
func TestGraphiteClusterOnEitherBackend(t *testing.T) {
	on := func(backend string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Main(context.Background(), args, &State{Env: func(k string) string {
			if k == "BENCHQ_BACKEND" {
				return backend
			}
			return ""
		}, Stdout: &out, Stderr: &errb})
		return code, out.String(), errb.String()
	}
	nw := []string{"tsdb", "-dbms", "Graphite", "-nw", "1,2", "-dry-run", "run"}
	for _, backend := range []string{"kubernetes", "local"} {
		if code, out, errs := on(backend, nw...); code != ExitOK || !strings.Contains(out, "Graphite, a cluster of 2 workers behind a master: 3 servers (pods)") {
			t.Errorf("%s, -nw 1,2: exit %d, %s%s", backend, code, out, errs)
		}
	}
	if code, out, errs := on("kubernetes", "tsdb", "-dbms", "Graphite", "-dry-run", "run"); code != ExitOK || !strings.Contains(out, "Graphite, one process (pod)") {
		t.Errorf("kubernetes, no -nw: exit %d, %s%s", code, out, errs)
	}
}

// The Dragonfly seeds planned on the local backend: the dry run says that
// a run would fail at deployment, and how to get the backend that runs it.
func TestDryRunWarnsOfAKubernetesOnlyDBMS(t *testing.T) {
	code, out, errs := run("ycsb", "-dbms", "Dragonfly", "-sf", "1", "-dry-run", "run")
	const warning = "* warning: DBMS Dragonfly needs the kubernetes backend (BENCHQ_BACKEND=kubernetes): on the local backend its configurations fail when deployed\n"
	if code != ExitOK || !strings.Contains(out, "#### Not applied\n"+warning) {
		t.Errorf("exit %d, stderr %q; want the warning in:\n%s", code, errs, out)
	}
	var kout bytes.Buffer
	code = Main(context.Background(), []string{"ycsb", "-dbms", "Dragonfly", "-sf", "1", "-dry-run", "run"}, &State{Env: func(k string) string {
		return map[string]string{"BENCHQ_BACKEND": "kubernetes"}[k]
	}, Stdout: &kout, Stderr: io.Discard})
	if code != ExitOK || !strings.Contains(kout.String(), "#### Configurations") || strings.Contains(kout.String(), "needs the kubernetes backend") {
		t.Errorf("kubernetes backend: exit %d, want the plan without the warning:\n%s", code, kout.String())
	}
}

// The Dragonfly seed's "Replication" command line (-nw 3 -nwr 1) plans
// bexhoma's master-copy replication, 3 servers, and says so; Redis's
// replicas each, 6.
func TestDryRunTellsDragonflysMasterCopyReplication(t *testing.T) {
	code, out, errs := run("ycsb", "-dbms", "Dragonfly", "-sf", "1", "-nw", "3", "-nwr", "1", "-dry-run", "run")
	for _, want := range []string{
		"DragonflyCluster, one master and 2 replica(s) of it (master-copy replication): 3 servers (pods)",
		"* warning: -nwr 1 for Dragonfly is bexhoma's master-copy replication",
	} {
		if code != ExitOK || !strings.Contains(out, want) {
			t.Errorf("exit %d, stderr %q; want %q in:\n%s", code, errs, want, out)
		}
	}
	code, out, errs = run("ycsb", "-dbms", "Redis", "-sf", "1", "-nw", "3", "-nwr", "1", "-dry-run", "run")
	if code != ExitOK || !strings.Contains(out, "RedisCluster, a cluster of 3 workers with 1 replica(s) each: 6 servers (pods)") || strings.Contains(out, "master-copy") {
		t.Errorf("Redis -nw 3 -nwr 1: exit %d, stderr %q:\n%s", code, errs, out)
	}
}

// benchq tsdb has no scale factor: a -sf given is refused naming what
// sizes its load, rather than silently changing nothing; without it the
// plan is made.
func TestTSDBRefusesSF(t *testing.T) {
	for _, sf := range []string{"0", "2"} {
		if code, _, errs := run("tsdb", "-dbms", "VictoriaMetrics", "-sf", sf, "-dry-run", "run"); code != ExitUsage || !strings.Contains(errs, "-sf "+sf+": benchq tsdb has no scale factor") {
			t.Errorf("tsdb -sf %s: exit %d: %s", sf, code, errs)
		}
	}
	if code, _, errs := run("tsdb", "-dbms", "VictoriaMetrics", "-dry-run", "run"); code != ExitOK {
		t.Errorf("tsdb without -sf: exit %d: %s", code, errs)
	}
}

// The backend is the running stack's, recorded at benchq up, whatever the
// CLI's own BENCHQ_BACKEND says; without a stack, BENCHQ_BACKEND's.
func TestTheBackendIsTheStacks(t *testing.T) {
	f := newFakeStack(t, "")
	var s map[string]any
	if err := json.Unmarshal(f.file, &s); err != nil {
		t.Fatal(err)
	}
	s["backend"] = "kubernetes"
	data, _ := json.Marshal(s)
	if err := os.WriteFile(filepath.Join(f.home, "stack.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		home, env, want string
	}{
		{f.home, "", "kubernetes"},
		{f.home, "local", "kubernetes"},
		{t.TempDir(), "kubernetes", "kubernetes"},
		{t.TempDir(), "", "local"},
	} {
		st := &State{Env: func(k string) string {
			return map[string]string{"BENCHQ_HOME": c.home, "BENCHQ_BACKEND": c.env}[k]
		}}
		if got := backendOf(st); got != c.want {
			t.Errorf("stack in %s, BENCHQ_BACKEND %q: backend %q, want %q", c.home, c.env, got, c.want)
		}
	}
}

// A volume is -rst's: -rss alone is an ephemeral-storage request, and the
// dry run must not promise a volume the run never makes.
func TestDryRunStorage(t *testing.T) {
	for args, want := range map[string]string{
		"-rst local":          "* database: a persistent volume of storage class local: loaded once, then reused without loading",
		"-rst local -rss 1Gi": "* database: a persistent volume of storage class local, 1Gi: loaded once",
		"-rss 50Gi":           "* database: ephemeral (gone with the SUT), loaded by every configuration; -rss 50Gi without -rst asks for that much ephemeral storage",
	} {
		code, out, errs := run(append([]string{"ycsb", "-dbms", "Redis"}, append(strings.Fields(args), "-dry-run", "run")...)...)
		if code != ExitOK || !strings.Contains(out, want) {
			t.Errorf("%s: exit %d, stderr %q; want %q in:\n%s", args, code, errs, want, out)
		}
	}
	if code, _, errs := run("ycsb", "-dbms", "Redis", "-rss", "1Gi", "-rsr", "-dry-run", "run"); code != ExitFailed || !strings.Contains(errs, "-rsr: removing the volume first (-rsr) needs a volume: give -rst") {
		t.Errorf("-rsr with -rss alone: exit %d, %q; want it refused", code, errs)
	}
}
