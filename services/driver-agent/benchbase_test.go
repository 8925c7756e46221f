package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/benchbase"
	"github.com/benchq/benchq/internal/bus"
)

// The real Benchbase cannot be installed on this machine (it is not on
// Maven Central and there is no container runtime), so these tests run the
// agent's Benchbase path against a STAND-IN FOR THE JVM: a shell script
// installed as $JAVA_HOME/bin/java next to an empty benchbase.jar. It
// checks the command line and the configuration the agent hands Benchbase,
// then replays the outputs of a real Benchbase run (TPC-C, PostgreSQL 15;
// internal/benchbase/testdata/benchbase-tpcc-pg15, the same files as
// /work/shared/fixtures/benchbase-tpcc-pg15): it copies its output files
// into -d and prints its real console log. What is tested is the agent's
// side — barrier, process handling, parsing into the final — not Benchbase.

// bbFixture is the directory of a real Benchbase run's outputs.
const bbFixture = "../../internal/benchbase/testdata/benchbase-tpcc-pg15"

// fakeJava is the stand-in JVM. @…@ are filled in by fakeBenchbase.
const fakeJava = `#!/bin/sh
# STAND-IN for the JVM running benchbase.jar: Benchbase cannot be installed
# here. Checks its arguments and configuration, then replays a real run.
fail() { echo "fake java: $*" >&2; exit 3; }
[ "$1" = "-jar" ] && [ "$2" = '@JAR@' ] || fail "want -jar @JAR@, got: $*"
shift 2
bench=; cfg=; dir=; execute=; load=
while [ $# -gt 0 ]; do
	case "$1" in
	-b) bench=$2; shift ;;
	-c) cfg=$2; shift ;;
	-d) dir=$2; shift ;;
	--execute=true) execute=1 ;;
	--load=true) load=1 ;;
	esac
	shift
done
[ "$bench" = tpcc ] || fail "want -b tpcc, got '$bench'"
[ -f "$cfg" ] || fail "no configuration at -c '$cfg'"
[ "$(stat -c %a "$cfg")" = 600 ] || fail "configuration mode $(stat -c %a "$cfg"), want 600"
[ -d "$dir" ] || fail "no output directory -d '$dir'"
echo "$dir" >> '@DIRS@'
if [ -n "$execute" ] && [ -z "$load" ]; then
	wants='@RUN@'
elif [ -n "$load" ] && [ -z "$execute" ]; then
	wants='@LOAD@'
else
	fail "want exactly one of --execute=true and --load=true"
fi
for want in $wants; do
	grep -qF -- "$want" "$cfg" || fail "configuration lacks $want"
done
@BODY@
`

// replayBody copies the real run's output files (its console log excepted:
// the agent writes that one) and prints the console log, as Benchbase does.
const replayBody = `for f in '@FIXTURE@'/*; do
	[ "$(basename "$f")" = benchbase-console.log ] || cp "$f" "$dir"/ || fail "cp $f"
done
cat '@FIXTURE@/benchbase-console.log'
exit 0`

// failBody prints the start of the real console log, then an error, and
// exits 1, as Benchbase does when it cannot reach the database.
const failBody = `head -n 24 '@FIXTURE@/benchbase-console.log'
echo '` + bbError + `' >&2
exit 1`

const bbError = "[ERROR] 2026-11-21 11:01:52,001 [main]  com.oltpbenchmark.DBWorkload main - Unexpected error when running benchmarks. org.postgresql.util.PSQLException: Connection to 127.0.0.1:1 refused."

// configWants are the configuration elements Benchbase must get for shard
// sh of kind, from the shard's own fields.
func configWants(kind string, sh contracts.TPCCShard) string {
	rate, duration := "unlimited", sh.DurationS
	if sh.Target > 0 {
		rate = fmt.Sprint(sh.Target)
	}
	if kind == contracts.KindLoad {
		duration = max(duration, 1) // Benchbase wants a work phase even to load
	}
	w := []string{
		fmt.Sprintf("<terminals>%d</terminals>", sh.Terminals),
		fmt.Sprintf("<scalefactor>%d</scalefactor>", sh.Warehouses),
		fmt.Sprintf("<time>%d</time>", duration),
		fmt.Sprintf("<rate>%s</rate>", rate),
		fmt.Sprintf("<newConnectionPerTxn>%t</newConnectionPerTxn>", sh.NewConnection),
	}
	if kind == contracts.KindLoad {
		w = append(w, fmt.Sprintf("<loaderThreads>%d</loaderThreads>", sh.Terminals))
	}
	return strings.Join(w, " ")
}

// fakeBenchbase installs benchbase.jar (empty) and the stand-in JVM, and
// returns the install as the agent finds it from BENCHQ_BENCHBASE_HOME and
// JAVA_HOME, and the file where the stand-in records its -d directories.
func fakeBenchbase(t *testing.T, body string, load, run contracts.TPCCShard) (*benchbase.Install, string) {
	t.Helper()
	home, javaHome := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "benchbase.jar"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fixture, err := filepath.Abs(bbFixture)
	if err != nil {
		t.Fatal(err)
	}
	dirs := filepath.Join(t.TempDir(), "dirs.log")
	script := strings.NewReplacer("@BODY@", body).Replace(fakeJava)
	script = strings.NewReplacer("@JAR@", filepath.Join(home, "benchbase.jar"), "@DIRS@", dirs, "@FIXTURE@", fixture,
		"@LOAD@", configWants(contracts.KindLoad, load), "@RUN@", configWants(contracts.KindRun, run)).Replace(script)
	if err := os.MkdirAll(filepath.Join(javaHome, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(javaHome, "bin", "java"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"JAVA_HOME": javaHome}
	in, err := findBenchbase(home, func(k string) string { return env[k] })
	if err != nil || in == nil {
		t.Fatalf("findBenchbase: %v, %v", in, err)
	}
	return in, dirs
}

// newBenchbaseStack is newStack for agents that run TPC-C on a Benchbase
// install (and need no YCSB).
func newBenchbaseStack(t *testing.T, agents int, in *benchbase.Install) *stack {
	t.Helper()
	return startAgents(t, agents, 5*time.Minute, Config{Benchbase: in})
}

// bbRequest: 2 warehouses, two benchmarking shards of 2 terminals and half
// the target each, 6 s, a new connection per transaction.
func bbRequest() contracts.Request {
	base := 100
	return contracts.Request{Benchmark: "benchbase", DBMS: []string{"PostgreSQL"}, SF: 2, DurationS: 6,
		BenchmarkingPods: []int{2}, BenchmarkingThreads: []int{4}, TargetBase: &base, NewConnection: true}
}

// bbEndpoint: the stand-in needs no database.
var bbEndpoint = contracts.Endpoint{Host: "127.0.0.1", Port: 1, Database: "benchq", User: "postgres", Password: "secret"}

// A loading and a benchmarking phase of engine benchbase on agents with a
// Benchbase install: Benchbase gets the shard's configuration, and the
// finals carry exactly what internal/benchbase reads from the same outputs.
func TestBenchbaseJarThroughAgents(t *testing.T) {
	t.Parallel()
	req := bbRequest()
	loadJobs := phaseJobs(t, "bbjar", req, 0, bbEndpoint)
	runJobs := phaseJobs(t, "bbjar", req, 1, bbEndpoint)
	if len(loadJobs) != 1 || len(runJobs) != 2 {
		t.Fatalf("%d loading and %d benchmarking shards, want 1 and 2", len(loadJobs), len(runJobs))
	}
	sh := *runJobs[0].TPCC
	if sh != *runJobs[1].TPCC || sh.Terminals != 2 || sh.Target != 50 || sh.DurationS != 6 || !sh.NewConnection || sh.Warehouses != 2 {
		t.Fatalf("benchmarking shards %+v and %+v: want 2 warehouses, 2 terminals, target 50, 6 s, new connections", sh, *runJobs[1].TPCC)
	}
	in, dirs := fakeBenchbase(t, replayBody, *loadJobs[0].TPCC, sh)
	s := newBenchbaseStack(t, 2, in)

	// Loading: the runtime is the console's loading time.
	f, err := os.Open(filepath.Join(bbFixture, benchbase.ConsoleFile))
	if err != nil {
		t.Fatal(err)
	}
	wantLoad, err := benchbase.ReadLoad(f, time.Now())
	_ = f.Close()
	if err != nil {
		t.Fatal(err)
	}
	lf := s.runPhase(loadJobs)[1]
	if lf.RuntimeMS != float64(wantLoad.Elapsed)/float64(time.Millisecond) || lf.RuntimeMS == 0 {
		t.Errorf("loading runtime %v ms, the console says %s", lf.RuntimeMS, wantLoad.Elapsed)
	}
	if lf.Threads != wantLoad.Terminals {
		t.Errorf("loading threads %d, the console says %d loader threads", lf.Threads, wantLoad.Terminals)
	}
	if !strings.HasPrefix(lf.Stdout, "benchbase: loaded 2 warehouses") {
		t.Errorf("loading stdout %q", lf.Stdout)
	}

	// Benchmarking: both shards' finals are what ReadDir makes of the run.
	res, err := benchbase.ReadDir(bbFixture, benchbase.DefaultWindowS)
	if err != nil {
		t.Fatal(err)
	}
	var wantOps []contracts.OpResult // as the final travels: JSON
	b, _ := json.Marshal(res.Operations())
	if err := json.Unmarshal(b, &wantOps); err != nil {
		t.Fatal(err)
	}
	run := s.runPhase(runJobs)
	for shard, f := range run {
		if f.Throughput != res.Throughput || f.RuntimeMS != float64(res.Elapsed)/float64(time.Millisecond) || f.Threads != res.Terminals {
			t.Errorf("shard %d: throughput %v, runtime %v ms, threads %d; Benchbase's outputs say %v, %s, %d",
				shard, f.Throughput, f.RuntimeMS, f.Threads, res.Throughput, res.Elapsed, res.Terminals)
		}
		if !reflect.DeepEqual(f.Operations, wantOps) {
			t.Errorf("shard %d: operations\n%+v\nwant\n%+v", shard, f.Operations, wantOps)
		}
		var goodput float64
		for _, op := range f.Operations {
			if op.Name == benchbase.All {
				goodput = float64(op.ReturnCodes[benchbase.CodeOK]) / (f.RuntimeMS / 1000)
			}
		}
		if math.Abs(goodput-res.Goodput) > 1e-9*res.Goodput || res.Goodput == 0 {
			t.Errorf("shard %d: goodput %v, Benchbase's outputs say %v", shard, goodput, res.Goodput)
		}
		if want := fmt.Sprintf("benchbase: %d requests in %s, throughput %.2f/s, goodput %.2f/s", res.MeasuredRequests, res.Elapsed, res.Throughput, res.Goodput); f.Stdout != want {
			t.Errorf("shard %d: stdout %q, want %q", shard, f.Stdout, want)
		}
		if f.StartedAt.IsZero() || f.EndedAt.Before(f.StartedAt) {
			t.Errorf("shard %d: started %v, ended %v", shard, f.StartedAt, f.EndedAt)
		}
	}

	// Every Benchbase run had its own output directory, removed afterwards.
	assertRemoved(t, dirs, 3)
}

// A Benchbase that exits 1 fails its shard, naming the exit status and
// quoting the console's last lines.
func TestBenchbaseJarFailureThroughAgents(t *testing.T) {
	t.Parallel()
	req := bbRequest()
	job := phaseJobs(t, "bbfail", req, 0, bbEndpoint)[0]
	in, dirs := fakeBenchbase(t, failBody, *job.TPCC, *phaseJobs(t, "bbfail", req, 1, bbEndpoint)[0].TPCC)
	s := newBenchbaseStack(t, 1, in)
	f := s.runShard(job)
	if f.Status != contracts.StatusFailed || !strings.Contains(f.Error, "exit status 1") || !strings.Contains(f.Error, bbError) {
		t.Fatalf("final %s: %q; want failed, naming exit status 1 and quoting %q", f.Status, f.Error, bbError)
	}
	lines := strings.Split(f.Stdout, "\n")
	if len(lines) != consoleTail || lines[len(lines)-1] != bbError || !strings.Contains(f.Stdout, "Creating new TPCC database...") {
		t.Errorf("stdout: %d lines, want the console's last %d ending in the error:\n%s", len(lines), consoleTail, f.Stdout)
	}
	assertRemoved(t, dirs, 1)
}

// runShard publishes one shard job, answers its READY with GO and returns
// its final, whatever its status.
func (s *stack) runShard(job contracts.ShardJob) *contracts.Final {
	s.t.Helper()
	ready, finals, unsubscribe := s.listen(job.Code, job.Phase)
	defer unsubscribe()
	if err := s.bus.Publish(s.ctx, contracts.SubjShard, &job); err != nil {
		s.t.Fatal(err)
	}
	deadline := time.After(phaseWait)
	for {
		select {
		case <-ready:
			s.publishGo(job.Code, job.Phase, job.Attempt)
		case m := <-finals:
			var f contracts.Final
			if err := bus.Decode(contracts.SchemaFinal, m.Data, &f); err != nil {
				s.t.Fatalf("final: %v", err)
			}
			return &f
		case <-deadline:
			s.t.Fatalf("no final within %s", phaseWait)
		}
	}
}

// assertRemoved checks that the stand-in ran n times, each in its own
// output directory, and that the agent removed them.
func assertRemoved(t *testing.T, dirs string, n int) {
	t.Helper()
	b, err := os.ReadFile(dirs)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, d := range strings.Fields(string(b)) {
		seen[d] = true
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("output directory %s not removed (%v)", d, err)
		}
	}
	if len(seen) != n {
		t.Errorf("benchbase ran in %d distinct directories, want %d", len(seen), n)
	}
}
