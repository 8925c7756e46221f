package local

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/testenv"
	"github.com/benchq/benchq/internal/ycsb"
	"github.com/benchq/benchq/services/deployer/backend"
)

// These tests run the real YCSB (our launcher and bindings, as the driver
// agent runs them: the catalog's properties, ShardedWorkload, several
// shards released together) against SUTs of the local backend.

// phase is one YCSB phase of a few shards.
type phase struct {
	kind     string // contracts.KindLoad or KindRun
	workload string // a-f
	shards   int
	threads  int   // per shard
	records  int64 // loaded (the key space)
	ops      int64 // per benchmarking shard
}

type shardOutput struct {
	summary ycsb.Summary
	stderr  string
}

// lockedBuffer is a bytes.Buffer written by a child process and read by
// the test while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runPhase starts the phase's shards, waits until every one is READY,
// releases them together with GO and returns their parsed summaries. It
// fails the test on a shard that exits non-zero, or with any operation
// that did not return OK (BATCHED_OK for a queued insert; NOT_FOUND, which
// reads of absent keys may).
func runPhase(t *testing.T, ctx context.Context, lib string, entry catalog.Entry, ep contracts.Endpoint, p phase) []shardOutput {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	type shard struct {
		cmd            *exec.Cmd
		stdin          io.WriteCloser
		stdout, stderr *lockedBuffer
	}
	var shards []*shard
	t.Cleanup(func() { // a failed test must not leave a JVM behind
		for _, s := range shards {
			if s.cmd.Process != nil && s.cmd.ProcessState == nil {
				_ = s.cmd.Process.Kill()
			}
		}
	})
	mode := "-t"
	if p.kind == contracts.KindLoad {
		mode = "-load"
	}
	for i := 1; i <= p.shards; i++ {
		props := entry.YCSBProperties(ep, p.kind)
		per := p.records / int64(p.shards)
		start := per * int64(i-1)
		if i == p.shards {
			per = p.records - start
		}
		props["recordcount"] = strconv.FormatInt(p.records, 10)
		props["insertstart"] = strconv.FormatInt(start, 10)
		props["insertcount"] = strconv.FormatInt(per, 10)
		props["operationcount"] = strconv.FormatInt(p.ops, 10)
		props["workload"] = "io.benchq.ycsb.ShardedWorkload"
		props["benchq.shard"] = strconv.Itoa(i)
		props["benchq.shards"] = strconv.Itoa(p.shards)
		args := []string{"-cp", filepath.Join(lib, "*"), "io.benchq.ycsb.Launcher", mode,
			"-db", entry.YCSB.DB, "-P", "../../driver-agent/ycsb/workloads/workload" + p.workload,
			"-threads", strconv.Itoa(p.threads)}
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			args = append(args, "-p", k+"="+props[k])
		}
		s := &shard{stdout: &lockedBuffer{}, stderr: &lockedBuffer{}}
		s.cmd = exec.CommandContext(ctx, "java", args...)
		s.cmd.Stdout, s.cmd.Stderr = s.stdout, s.stderr
		var err error
		if s.stdin, err = s.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		if err := s.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		shards = append(shards, s)
	}
	for i, s := range shards {
		err := procs.WaitFor(ctx, fmt.Sprintf("shard %d READY", i+1), 50*time.Millisecond, func(context.Context) error {
			if strings.Contains(s.stderr.String(), "BENCHQ READY\n") {
				return nil
			}
			if syscall.Kill(s.cmd.Process.Pid, 0) != nil {
				return procs.Permanent(fmt.Errorf("exited: %s", s.stderr.String()))
			}
			return fmt.Errorf("not yet")
		})
		if err != nil {
			t.Fatalf("%s phase, workload %s: %v", p.kind, p.workload, err)
		}
	}
	for _, s := range shards {
		if _, err := io.WriteString(s.stdin, "GO\n"); err != nil {
			t.Fatal(err)
		}
		s.stdin.Close()
	}
	var out []shardOutput
	for i, s := range shards {
		if err := s.cmd.Wait(); err != nil {
			t.Fatalf("shard %d of %s %s: %v\n%s", i+1, p.kind, p.workload, err, tail(s.stderr.String(), 20))
		}
		sum, err := ycsb.ParseSummary(strings.NewReader(s.stdout.String()))
		if err != nil {
			t.Fatalf("shard %d: %v", i+1, err)
		}
		for _, op := range sum.Ops {
			for code, n := range op.ReturnCodes {
				if code != "OK" && code != "BATCHED_OK" && code != "NOT_FOUND" && n > 0 {
					t.Errorf("shard %d of %s workload %s: %s Return=%s %d\n%s", i+1, p.kind, p.workload, op.Name, code, n, tail(s.stderr.String(), 10))
				}
			}
		}
		t.Logf("%s workload %s shard %d/%d: %.0f ops/s", p.kind, p.workload, i+1, p.shards, sum.Throughput)
		out = append(out, shardOutput{summary: sum, stderr: s.stderr.String()})
	}
	return out
}

// okCount sums Return=OK of op over the shards.
func okCount(shards []shardOutput, op string) int64 {
	var n int64
	for _, s := range shards {
		for _, o := range s.summary.Ops {
			if o.Name == op {
				n += o.ReturnCodes["OK"]
			}
		}
	}
	return n
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func TestLocalRedisClusterYCSB(t *testing.T) {
	t.Parallel()
	requireServer(t, catalog.KindRedis)
	lib := testenv.YCSBLib(t)
	ctx := localTestCtx(t)
	l := newLocal(t)
	const code, conf = "1700000021", "RedisCluster-4-2-16384-1"
	teardownAtEnd(t, l, code, conf)
	d, err := l.Deploy(ctx, backend.Spec{Code: code, Configuration: conf, DBMS: "RedisCluster", Benchmark: "ycsb", SUT: &contracts.SUTSpec{Workers: 3}})
	if err != nil {
		t.Fatal(err)
	}
	entry := catalogEntry(t, "RedisCluster")
	addr := fmt.Sprintf("127.0.0.1:%d", d.Endpoint.Port)
	const records = 10000

	load := runPhase(t, ctx, lib, entry, d.Endpoint, phase{kind: contracts.KindLoad, workload: "a", shards: 2, threads: 4, records: records})
	if n := okCount(load, "INSERT"); n != records {
		t.Errorf("loaded %d, want %d", n, records)
	}
	if keys, indexed := redisClusterRows(t, ctx, addr); keys != records || indexed != records {
		t.Fatalf("after loading: %d data keys, %d indexed; want %d", keys, indexed, records)
	}

	runA := runPhase(t, ctx, lib, entry, d.Endpoint, phase{kind: contracts.KindRun, workload: "a", shards: 2, threads: 4, records: records, ops: 5000})
	if n := okCount(runA, "READ") + okCount(runA, "UPDATE"); n != 10000 {
		t.Errorf("workload a: %d reads and updates OK, want 10000", n)
	}
	if keys, indexed := redisClusterRows(t, ctx, addr); keys != records || indexed != records {
		t.Errorf("after workload a: %d data keys, %d indexed; want %d", keys, indexed, records)
	}

	// Workload E scans across the masters' index buckets and inserts with
	// per-shard keys: rows = loaded + inserted, every key indexed once.
	runE := runPhase(t, ctx, lib, entry, d.Endpoint, phase{kind: contracts.KindRun, workload: "e", shards: 2, threads: 4, records: records, ops: 1000})
	scans, inserts := okCount(runE, "SCAN"), okCount(runE, "INSERT")
	if scans == 0 || inserts == 0 || scans+inserts != 2000 {
		t.Errorf("workload e: %d scans and %d inserts OK, want 2000 in all", scans, inserts)
	}
	if keys, indexed := redisClusterRows(t, ctx, addr); keys != records+int(inserts) || indexed != keys {
		t.Errorf("after workload e: %d data keys, %d indexed; want %d loaded + %d inserted", keys, indexed, records, inserts)
	}
}

func TestLocalPgBouncerYCSB(t *testing.T) {
	t.Parallel()
	requirePgBouncer(t)
	lib := testenv.YCSBLib(t)
	ctx := localTestCtx(t)
	l := newLocal(t)
	const code, conf = "1700000022", "PgBouncer-8-2-16384-2-8-4-1"
	teardownAtEnd(t, l, code, conf)
	// Exactly as many inbound connections as client threads (2 shards x 4):
	// each pool process admits 4, so the shards' connections must be spread
	// evenly over the two (the binding does; with pgJDBC's random pick and
	// fail-over alone, 9 of 64 threads were refused in an e2e run).
	d, err := l.Deploy(ctx, backend.Spec{Code: code, Configuration: conf, DBMS: "PgBouncer", Benchmark: "ycsb",
		SUT: &contracts.SUTSpec{Pool: &contracts.Pool{Pods: 2, Inbound: 8, Outbound: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	entry := catalogEntry(t, "PgBouncer")
	count := func() int64 {
		t.Helper()
		conn, err := pgx.Connect(ctx, fmt.Sprintf("postgresql://postgres@127.0.0.1:%d/ycsb?sslmode=disable&default_query_exec_mode=simple_protocol", d.Endpoint.Port))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var n int64
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM usertable").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const records = 10000
	// Loading with the catalog's batched inserts (db.batchsize=1000,
	// autocommit off, reWriteBatchedInserts) through transaction pooling.
	load := runPhase(t, ctx, lib, entry, d.Endpoint, phase{kind: contracts.KindLoad, workload: "a", shards: 2, threads: 4, records: records})
	if n := count(); n != records {
		t.Errorf("count(*) = %d after loading, want %d", n, records)
	}
	run := runPhase(t, ctx, lib, entry, d.Endpoint, phase{kind: contracts.KindRun, workload: "a", shards: 2, threads: 4, records: records, ops: 5000})
	if n := okCount(run, "READ") + okCount(run, "UPDATE"); n != 10000 {
		t.Errorf("workload a: %d reads and updates OK, want 10000", n)
	}
	// prepareThreshold=0 (in the catalog's JDBC URL): without it pgjdbc's
	// server-side prepared statements collide on the pooled connections.
	for _, s := range append(load, run...) {
		if strings.Contains(s.stderr, "prepared statement") {
			t.Errorf("prepared-statement errors:\n%s", tail(s.stderr, 10))
		}
	}
	if n := count(); n != records {
		t.Errorf("count(*) = %d after workload a, want %d", n, records)
	}
}
