// Package ycsb_test checks benchq's YCSB bindings and launcher (the Maven
// module in this directory) end to end, the way the driver agent runs them,
// against real servers that internal/localdb starts on free loopback ports:
// a redis-server, a 3-master Redis Cluster, PostgreSQL and a PgBouncer in
// transaction pooling mode in front of it.
//
//   - the barrier protocol: BENCHQ READY on stderr, GO on stdin; exit 3 for
//     an unreachable SUT or a missing table, 4 when stdin closes without GO
//     (or, for a standby JVM, without its arguments); stdout carries only
//     YCSB's summary;
//   - 10,000 records loaded by two loaders released together (halves of the
//     key space) into Redis, PostgreSQL and PostgreSQL batched, the records
//     counted in the server;
//   - workloads A, E (scans) and D, with dataintegrity=true: no error, no
//     value read back that differs from what was written;
//   - two benchmarking shards of D on PostgreSQL (ShardedWorkload) released
//     with "GO <instant>", the second on a standby JVM (Launcher --standby,
//     the arguments on stdin, as the agent runs it): no duplicate key,
//     count(*) = loaded + inserted, both report their window (BENCHQ FIRST_OP / LAST_OP) and write
//     HdrHistogram logs;
//   - Redis Cluster: the same load, A three times on one standby JVM (a JVM
//     that stays for its next job, as an agent's later phases use it; the
//     third job with more threads): each job's summary counts its own
//     operations and is followed by BENCHQ DONE, each prints its window; then E with two
//     shards; data keys = index entries = loaded + inserted, summed over the
//     masters;
//   - PgBouncer with prepareThreshold=0: batched load and workload A without
//     a prepared-statement error (the same workload without it is run too,
//     and its errors logged: they are why the catalog sets it).
//
// Throughput is logged (go test -v), never asserted.
package ycsb_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/testenv"
)

const (
	records   = 10_000          // even: two loaders take half each
	runOps    = 10_000          // per workload run: 1,250 a thread at 8, thousands of each operation
	phaseWait = 5 * time.Minute // bounds one YCSB phase, JVM start included
)

// servers are the SUTs every check uses, in the order the checks need them.
type servers struct {
	redis   *localdb.Redis
	cluster *localdb.RedisCluster
	pg      *localdb.Postgres
	pgb     *localdb.PgBouncer
}

func TestBindingsAgainstRealServers(t *testing.T) {
	lib := testenv.YCSBLib(t)
	ctx := t.Context()
	s := startServers(t, ctx)
	y := &ycsb{t: t, lib: lib, dir: t.TempDir()}
	pgURL := fmt.Sprintf("jdbc:postgresql://127.0.0.1:%d/ycsb", s.pg.Port)
	redisArgs := []string{"-db", "io.benchq.ycsb.RedisClient", "-p", "redis.host=127.0.0.1", "-p", fmt.Sprintf("redis.port=%d", s.redis.Port)}
	pgArgs := []string{"-db", "io.benchq.ycsb.JdbcClient", "-p", "db.url=" + pgURL, "-p", "db.user=postgres"}
	pgBatchArgs := []string{"-db", "io.benchq.ycsb.JdbcClient", "-p", "db.url=" + pgURL + "?reWriteBatchedInserts=true",
		"-p", "db.user=postgres", "-p", "db.batchsize=1000", "-p", "jdbc.autocommit=false"}
	// prepareThreshold=0 (PgBouncer's transaction mode) must pass through the URL untouched.
	pgNoPrepArgs := []string{"-db", "io.benchq.ycsb.JdbcClient", "-p", "db.url=" + pgURL + "?prepareThreshold=0", "-p", "db.user=postgres"}
	sql := func(t *testing.T, query string) int64 {
		t.Helper()
		conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/ycsb", s.pg.Port))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var n int64
		if strings.HasPrefix(query, "SELECT") {
			err = conn.QueryRow(ctx, query).Scan(&n)
		} else {
			_, err = conn.Exec(ctx, query)
		}
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return n
	}
	redis := func(t *testing.T, addr string, args ...string) string {
		t.Helper()
		out, err := localdb.RedisCommand(ctx, addr, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	sql(t, "CREATE TABLE usertable (YCSB_KEY VARCHAR(255) PRIMARY KEY, FIELD0 TEXT, FIELD1 TEXT, FIELD2 TEXT, FIELD3 TEXT, "+
		"FIELD4 TEXT, FIELD5 TEXT, FIELD6 TEXT, FIELD7 TEXT, FIELD8 TEXT, FIELD9 TEXT)")

	t.Run("barrier protocol", func(t *testing.T) {
		badPort, err := procs.FreePort() // nothing listens there
		if err != nil {
			t.Fatal(err)
		}
		bad := y.launch(t, "proto-badredis", "-load", "-db", "io.benchq.ycsb.RedisClient", "-p", "redis.host=127.0.0.1",
			"-p", fmt.Sprintf("redis.port=%d", badPort), "-P", workload("a"))
		bad.finish(t, 3)
		if bad.stderr.contains("BENCHQ READY") || !bad.stderr.contains("init failed") {
			t.Errorf("an unreachable SUT: READY printed or no clear init failure: %s", bad.stderr.tail())
		}
		noTable := y.launch(t, "proto-notable", append(append([]string{"-load"}, pgArgs...), "-p", "table=nosuchtable", "-P", workload("a"))...)
		noTable.finish(t, 3)
		if !noTable.stderr.contains("nosuchtable") {
			t.Errorf("the missing table is not named: %s", noTable.stderr.tail())
		}
		noGo := y.launch(t, "proto-nogo", append(append([]string{"-load"}, redisArgs...), "-P", workload("a"), "-p", "recordcount=10")...)
		noGo.ready(t)
		noGo.send(t, "") // stdin closes without GO
		noGo.finish(t, 4)
		if noGo.stdout.String() != "" {
			t.Errorf("stdout without GO: %q", noGo.stdout.String())
		}
		if n := redis(t, s.redis.Addr(), "DBSIZE"); n != "0" {
			t.Errorf("%s records written without GO", n)
		}
		idle := y.launch(t, "proto-standby-idle", "--standby")
		idle.send(t, "") // the agent stops before giving it a job
		idle.finish(t, 4)
		wrong := y.launch(t, "proto-wrong", append(append([]string{"-load"}, redisArgs...), "-P", workload("a"), "-p", "recordcount=10")...)
		wrong.ready(t)
		wrong.send(t, "GOO")
		wrong.finish(t, 4)
	})

	t.Run("redis", func(t *testing.T) {
		y.load(t, "redis", redisArgs)
		if redis(t, s.redis.Addr(), "EXISTS", "_indices") != "1" {
			t.Fatal("index key _indices missing")
		}
		keys, _ := strconv.Atoi(redis(t, s.redis.Addr(), "DBSIZE"))
		indexed, _ := strconv.Atoi(redis(t, s.redis.Addr(), "ZCARD", "_indices"))
		if keys-1 != records || indexed != records {
			t.Fatalf("%d data keys and %d indexed after loading, want %d", keys-1, indexed, records)
		}
		y.workload(t, "redis", "a", runOps, redisArgs)
		y.workload(t, "redis", "e", 2000, redisArgs)
		y.workload(t, "redis", "d", 5000, redisArgs)
	})

	t.Run("postgresql", func(t *testing.T) {
		y.load(t, "pg", pgArgs)
		if n := sql(t, "SELECT count(*) FROM usertable"); n != records {
			t.Fatalf("count(*) = %d after loading, want %d", n, records)
		}
		sql(t, "TRUNCATE usertable")
		loaders := y.load(t, "pg-batched", pgBatchArgs)
		if n := sql(t, "SELECT count(*) FROM usertable"); n != records {
			t.Fatalf("batched: count(*) = %d after loading, want %d", n, records)
		}
		if !strings.Contains(loaders[0].stdout.String(), "Return=BATCHED_OK") {
			t.Error("batched: no BATCHED_OK inserts")
		}
		// E and D both insert keys from recordcount upwards: E's rows go
		// before D, which would otherwise (rightly) fail on duplicate keys.
		sql(t, "CREATE TABLE loaded_keys AS SELECT ycsb_key FROM usertable")
		y.workload(t, "pg", "a", runOps, pgArgs)
		y.workload(t, "pg", "e", 2000, append(append([]string{}, pgArgs...), "-p", "jdbc.fetchsize=50", "-p", "jdbc.autocommit=false"))
		sql(t, "DELETE FROM usertable u WHERE NOT EXISTS (SELECT 1 FROM loaded_keys l WHERE l.ycsb_key = u.ycsb_key)")
		y.workload(t, "pg", "d", 5000, pgNoPrepArgs)
	})

	t.Run("two benchmarking shards of workload D", func(t *testing.T) {
		sql(t, "DELETE FROM usertable u WHERE NOT EXISTS (SELECT 1 FROM loaded_keys l WHERE l.ycsb_key = u.ycsb_key)")
		var shards []*launcher
		for k := 1; k <= 2; k++ {
			args := append(append([]string{"-t"}, pgArgs...), "-P", workload("d"), "-p", fmt.Sprintf("recordcount=%d", records),
				"-p", "operationcount=5000", "-p", "workload=io.benchq.ycsb.ShardedWorkload", "-p", fmt.Sprintf("benchq.shard=%d", k),
				"-p", "benchq.shards=2", "-p", "hdrhistogram.fileoutput=true",
				"-p", "hdrhistogram.output.path="+filepath.Join(y.dir, fmt.Sprintf("pg-shard%d-", k)), "-threads", "4", "-s")
			// The second runs on a standby JVM, as an agent's shard does.
			launch := y.launch
			if k == 2 {
				launch = y.launchStandby
			}
			shards = append(shards, launch(t, fmt.Sprintf("pg-shard%d", k), args...))
		}
		for _, l := range shards {
			l.ready(t)
		}
		// Both connect, then wait for the same instant before their first operation.
		start := time.Now().Add(400 * time.Millisecond).UTC().Format(time.RFC3339Nano)
		for _, l := range shards {
			l.send(t, "GO "+start)
		}
		var inserted int64
		var first []time.Time
		var rate float64
		for k, l := range shards {
			l.finish(t, 0)
			checkSummary(t, l)
			if !l.stderr.contains("BENCHQ LAST_OP ") {
				t.Errorf("%s: no BENCHQ LAST_OP line", l.name)
			}
			at, err := time.Parse(time.RFC3339Nano, l.stderr.after("BENCHQ FIRST_OP "))
			if err != nil {
				t.Fatalf("%s: no BENCHQ FIRST_OP line: %v", l.name, err)
			}
			first = append(first, at)
			if st, err := os.Stat(filepath.Join(y.dir, fmt.Sprintf("pg-shard%d-READ.hdr", k+1))); err != nil || st.Size() == 0 {
				t.Errorf("%s: no HdrHistogram log: %v", l.name, err)
			}
			inserted += operations(l, "INSERT")
			rate += throughput(l)
		}
		if n := sql(t, "SELECT count(*) FROM usertable"); n != records+inserted {
			t.Errorf("count(*) = %d, want %d loaded + %d inserted", n, records, inserted)
		}
		t.Logf("pg workload d, 2 shards x 4 threads: %.0f ops/s, %d inserts, start skew %s", rate, inserted, first[0].Sub(first[1]).Abs())
	})

	t.Run("redis cluster", func(t *testing.T) {
		args := []string{"-db", "io.benchq.ycsb.RedisClient", "-p", "redis.host=127.0.0.1",
			"-p", fmt.Sprintf("redis.port=%d", s.cluster.Nodes[0].Port), "-p", "redis.cluster=true"}
		// rows: data keys and index entries, summed over the masters.
		rows := func() (keys, indexed int) {
			for _, addr := range s.cluster.Addrs()[:s.cluster.Masters] {
				n, _ := strconv.Atoi(redis(t, addr, "DBSIZE"))
				for _, key := range strings.Fields(redis(t, addr, "KEYS", "_indices*")) {
					n--
					z, _ := strconv.Atoi(redis(t, addr, "ZCARD", key))
					indexed += z
				}
				keys += n
			}
			return keys, indexed
		}
		y.load(t, "rc", args)
		if keys, indexed := rows(); keys != records || indexed != records {
			t.Fatalf("%d data keys, %d indexed after loading, want %d", keys, indexed, records)
		}
		// Workload A three times on one standby JVM, as an agent runs its
		// later phases: each job reports its own operations and window
		// only; the third has more threads (so new cluster clients). The
		// first two are the same job: their rates show the warm JVM.
		wlA := func(n, threads int) []string {
			return append(append([]string{"-t"}, args...), "-P", workload("a"), "-p", fmt.Sprintf("recordcount=%d", records),
				"-p", fmt.Sprintf("operationcount=%d", n), "-p", "dataintegrity=true", "-threads", strconv.Itoa(threads), "-s")
		}
		jobs := []struct{ ops, threads int }{{runOps, 8}, {runOps, 8}, {runOps / 2, 12}}
		reused := y.launchStandby(t, "rc-run-a-standby", wlA(jobs[0].ops, jobs[0].threads)...)
		for job, j := range jobs {
			n := j.ops
			if job > 0 {
				reused.next(t, wlA(n, j.threads)...)
			}
			reused.ready(t)
			if _, err := io.WriteString(reused.stdin, "GO\n"); err != nil { // stdin stays open
				t.Fatal(err)
			}
			reused.awaitLines(t, reused.stderr, doneLine, reused.jobs)
			reused.awaitLines(t, reused.stdout, doneLine, reused.jobs)
			checkSummary(t, reused)
			if got := operations(reused, "READ") + operations(reused, "UPDATE"); got != int64(n) {
				t.Errorf("job %d on one JVM: %d operations in its summary, want %d", job+1, got, n)
			}
			for _, marker := range []string{"BENCHQ FIRST_OP ", "BENCHQ LAST_OP "} {
				if c := strings.Count(reused.stderr.String(), marker); c != job+1 {
					t.Errorf("after job %d on one JVM: %d %q lines, want one per job", job+1, c, marker)
				}
			}
			t.Logf("rc workload a, job %d on one JVM (%d operations, %d threads): %.0f ops/s", job+1, n, j.threads, throughput(reused))
		}
		reused.send(t, "") // no more jobs: it ends well
		reused.finish(t, 0)
		// Workload E (scans over the masters' index buckets) with two shards
		// whose inserts must not collide.
		var shards []*launcher
		for k := 1; k <= 2; k++ {
			shards = append(shards, y.launch(t, fmt.Sprintf("rc-shard%d", k), append(append([]string{"-t"}, args...), "-P", workload("e"),
				"-p", fmt.Sprintf("recordcount=%d", records), "-p", "operationcount=2000", "-p", "workload=io.benchq.ycsb.ShardedWorkload",
				"-p", fmt.Sprintf("benchq.shard=%d", k), "-p", "benchq.shards=2", "-p", "dataintegrity=true", "-threads", "4", "-s")...))
		}
		inserted := int64(0)
		for _, l := range y.release(t, shards...) {
			inserted += operations(l, "INSERT")
		}
		if keys, indexed := rows(); int64(keys) != records+inserted || indexed != keys {
			t.Errorf("2 shards of E: %d data keys, %d indexed, want %d loaded + %d inserted", keys, indexed, records, inserted)
		}
	})

	t.Run("pgbouncer", func(t *testing.T) {
		url := fmt.Sprintf("jdbc:postgresql://127.0.0.1:%d/ycsb", s.pgb.Port)
		args := []string{"-db", "io.benchq.ycsb.JdbcClient", "-p", "db.url=" + url + "?prepareThreshold=0", "-p", "db.user=postgres"}
		batch := []string{"-db", "io.benchq.ycsb.JdbcClient", "-p", "db.url=" + url + "?reWriteBatchedInserts=true&prepareThreshold=0",
			"-p", "db.user=postgres", "-p", "db.batchsize=1000", "-p", "jdbc.autocommit=false"}
		sql(t, "TRUNCATE usertable")
		checked := y.load(t, "pgb-batched", batch)
		if n := sql(t, "SELECT count(*) FROM usertable"); n != records {
			t.Fatalf("batched through the pool: count(*) = %d after loading, want %d", n, records)
		}
		checked = append(checked, y.workload(t, "pgb", "a", runOps, args))
		for _, l := range checked {
			if l.stderr.contains("prepared statement") {
				t.Errorf("%s: prepared-statement errors despite prepareThreshold=0: %s", l.name, l.stderr.tail())
			}
		}
		// The control: pgjdbc's default, server-side prepared statements from
		// the 5th execution, which transaction pooling breaks.
		control := y.launch(t, "pgb-noprep", "-t", "-db", "io.benchq.ycsb.JdbcClient", "-p", "db.url="+url, "-p", "db.user=postgres",
			"-P", workload("a"), "-p", fmt.Sprintf("recordcount=%d", records), "-p", fmt.Sprintf("operationcount=%d", runOps), "-threads", "8", "-s")
		control.ready(t)
		control.send(t, "GO")
		control.finish(t, 0)
		t.Logf("pgbouncer without prepareThreshold=0: %d of %d operations failed (%d prepared-statement errors logged)",
			returns(control, "ERROR"), runOps, strings.Count(control.stderr.String(), "prepared statement"))
	})
}

// workload is the path of one of our workload files (a-f).
func workload(name string) string { return filepath.Join("workloads", "workload"+name) }

// ycsb launches YCSB shards as the driver agent does: our Launcher, the
// jars of lib, the outputs kept in memory.
type ycsb struct {
	t   *testing.T
	lib string
	dir string // HdrHistogram logs
}

// load runs two loaders, 4 threads each, halves of the key space, released
// together, and checks their summaries.
func (y *ycsb) load(t *testing.T, tag string, args []string) []*launcher {
	t.Helper()
	var loaders []*launcher
	for k := range 2 {
		loaders = append(loaders, y.launch(t, fmt.Sprintf("%s-load%d", tag, k), append(append([]string{"-load"}, args...),
			"-P", workload("a"), "-p", fmt.Sprintf("recordcount=%d", records), "-p", fmt.Sprintf("insertstart=%d", k*records/2),
			"-p", fmt.Sprintf("insertcount=%d", records/2), "-p", "dataintegrity=true", "-threads", "4", "-s")...))
	}
	y.release(t, loaders...)
	t.Logf("%s load (2 loaders x 4 threads): %.0f + %.0f ops/s", tag, throughput(loaders[0]), throughput(loaders[1]))
	return loaders
}

// workload runs n operations of workload wl by one client of 8 threads.
func (y *ycsb) workload(t *testing.T, tag, wl string, n int, args []string) *launcher {
	t.Helper()
	l := y.launch(t, tag+"-run-"+wl, append(append([]string{"-t"}, args...), "-P", workload(wl), "-p", fmt.Sprintf("recordcount=%d", records),
		"-p", fmt.Sprintf("operationcount=%d", n), "-p", "dataintegrity=true", "-threads", "8", "-s")...)
	y.release(t, l)
	t.Logf("%s workload %s (%d operations, 8 threads): %.0f ops/s", tag, wl, n, throughput(l))
	return l
}

// release waits until every launcher is READY, sends each GO, and checks
// that each ends 0 with a sane summary.
func (y *ycsb) release(t *testing.T, ls ...*launcher) []*launcher {
	t.Helper()
	for _, l := range ls {
		l.ready(t)
	}
	for _, l := range ls {
		l.send(t, "GO")
	}
	for _, l := range ls {
		l.finish(t, 0)
		checkSummary(t, l)
	}
	return ls
}

// launcher is one YCSB process: our Launcher with its stdin for the GO.
type launcher struct {
	name           string
	cmd            *exec.Cmd
	stdin          io.WriteCloser
	stdout, stderr *output
	exited         chan struct{}
	err            error
	jobs           int // a standby's jobs handed over so far (0: not a standby)
}

// doneLine ends each job of a standby JVM, on stdout and then on stderr.
const doneLine = "BENCHQ DONE"

// summary is YCSB's summary of the launcher's last job: its whole stdout,
// or a standby's output between the DONE lines of its jobs.
func (l *launcher) summary() string {
	out := l.stdout.String()
	if l.jobs == 0 {
		return out
	}
	if parts := strings.Split(out, doneLine+"\n"); len(parts) >= l.jobs {
		return parts[l.jobs-1]
	}
	return ""
}

// next hands a standby that finished its job (DONE on stdout and stderr)
// the arguments of its next job, as the agent does.
func (l *launcher) next(t *testing.T, args ...string) {
	t.Helper()
	l.awaitLines(t, l.stderr, doneLine, l.jobs)
	l.awaitLines(t, l.stdout, doneLine, l.jobs)
	if _, err := io.WriteString(l.stdin, strings.Join(args, "\x00")+"\n"); err != nil {
		t.Fatalf("%s: hand over job %d: %v", l.name, l.jobs+1, err)
	}
	l.jobs++
}

// awaitLines waits (bounded) until o holds n lines equal to line.
func (l *launcher) awaitLines(t *testing.T, o *output, line string, n int) {
	t.Helper()
	deadline := time.Now().Add(phaseWait)
	for o.count(line) < n {
		select {
		case <-l.exited:
			t.Fatalf("%s exited before its %d-th %q line: %s", l.name, n, line, l.stderr.tail())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %d-th %q line within %s: %s", l.name, n, line, phaseWait, l.stderr.tail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (y *ycsb) launch(t *testing.T, name string, args ...string) *launcher {
	t.Helper()
	l := &launcher{name: name, stdout: &output{}, stderr: &output{}, exited: make(chan struct{})}
	// Started as the agent starts it (launcher in ../command.go): with the
	// class-data-sharing archive the bootstrap makes, when there is one.
	jvm := []string{"-cp", filepath.Join(y.lib, "*"), "io.benchq.ycsb.Launcher"}
	if archive := filepath.Join(y.lib, "classes.jsa"); isFile(archive) {
		jvm = append([]string{"-XX:SharedArchiveFile=" + archive, "-Xlog:cds*=off"}, jvm...)
	}
	l.cmd = exec.Command("java", append(jvm, args...)...)
	l.cmd.Stdout, l.cmd.Stderr = l.stdout, l.stderr
	var err error
	if l.stdin, err = l.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := l.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() { l.err = l.cmd.Wait(); close(l.exited) }()
	t.Cleanup(func() {
		_ = l.stdin.Close()
		select {
		case <-l.exited:
		default:
			_ = l.cmd.Process.Kill()
			<-l.exited
		}
	})
	return l
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// launchStandby starts a standby JVM (Launcher --standby) and hands it args
// as the agent does: one line on stdin, NUL-separated.
func (y *ycsb) launchStandby(t *testing.T, name string, args ...string) *launcher {
	t.Helper()
	l := y.launch(t, name, "--standby")
	l.next(t, args...)
	return l
}

// ready waits until the launcher printed BENCHQ READY (for a standby: for
// its current job).
func (l *launcher) ready(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for l.stderr.count("BENCHQ READY") < max(1, l.jobs) {
		select {
		case <-l.exited:
			t.Fatalf("%s exited before READY: %s", l.name, l.stderr.tail())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not READY within a minute: %s", l.name, l.stderr.tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// send writes line (if any) to the launcher's stdin and closes it.
func (l *launcher) send(t *testing.T, line string) {
	t.Helper()
	if line != "" {
		if _, err := io.WriteString(l.stdin, line+"\n"); err != nil {
			t.Fatalf("%s: write %q: %v", l.name, line, err)
		}
	}
	_ = l.stdin.Close()
}

// finish waits (bounded) for the launcher's exit and checks its code.
func (l *launcher) finish(t *testing.T, want int) {
	t.Helper()
	select {
	case <-l.exited:
	case <-time.After(phaseWait):
		t.Fatalf("%s still running after %s", l.name, phaseWait)
	}
	got := 0
	var exit *exec.ExitError
	if errors.As(l.err, &exit) {
		got = exit.ExitCode()
	} else if l.err != nil {
		t.Fatalf("%s: %v", l.name, l.err)
	}
	if got != want {
		t.Fatalf("%s exited %d, want %d: %s", l.name, got, want, l.stderr.tail())
	}
}

// checkSummary: YCSB's summary is sane, without errors or data that read
// back differently, and stdout holds nothing but summary lines.
func checkSummary(t *testing.T, l *launcher) {
	t.Helper()
	out := l.summary()
	if l.jobs > 0 && strings.Count(l.stdout.String(), doneLine+"\n") < l.jobs {
		t.Errorf("%s: job %d's summary is not followed by %s on stdout", l.name, l.jobs, doneLine)
	}
	if !strings.Contains(out, "[OVERALL], Throughput(ops/sec), ") || !strings.Contains(out, "Return=OK, ") {
		t.Fatalf("%s: no [OVERALL] Throughput or no Return=OK line:\n%s", l.name, out)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !strings.HasPrefix(line, "["):
			t.Errorf("%s: a stdout line that is not YCSB's summary: %q", l.name, line)
		case strings.Contains(line, "Return=ERROR"):
			t.Errorf("%s: %s (%s)", l.name, line, l.stderr.tail())
		case strings.HasPrefix(line, "[VERIFY], Return=") && !strings.HasPrefix(line, "[VERIFY], Return=OK"):
			t.Errorf("%s: data integrity: %s", l.name, line) // dataintegrity=true checks every value read back
		case strings.Contains(line, "Return=NOT_FOUND"):
			t.Logf("%s: %s", l.name, line)
		}
	}
}

// figure is a value of YCSB's summary line "[block], name, value".
func figure(l *launcher, block, name string) float64 {
	prefix := "[" + block + "], " + name + ", "
	for _, line := range strings.Split(l.summary(), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}

func throughput(l *launcher) float64          { return figure(l, "OVERALL", "Throughput(ops/sec)") }
func operations(l *launcher, op string) int64 { return int64(figure(l, op, "Operations")) }

// returns sums a return code over every operation block.
func returns(l *launcher, code string) int64 {
	var n int64
	for _, line := range strings.Split(l.summary(), "\n") {
		if f := strings.Split(line, ", "); len(f) == 3 && f[1] == "Return="+code {
			v, _ := strconv.ParseInt(f[2], 10, 64)
			n += v
		}
	}
	return n
}

// output is a process's stdout or stderr, read while it runs.
type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

func (o *output) contains(s string) bool { return strings.Contains(o.String(), s) }

// count is how many lines equal s.
func (o *output) count(s string) int {
	n := 0
	for _, line := range strings.Split(o.String(), "\n") {
		if line == s {
			n++
		}
	}
	return n
}

// after is the rest of the first line that starts with prefix.
func (o *output) after(prefix string) string {
	for _, line := range strings.Split(o.String(), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// tail is the last lines of the output, for a failure's message.
func (o *output) tail() string {
	lines := strings.Split(strings.TrimSpace(o.String()), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// startServers starts the SUTs, each stopped when the test ends.
func startServers(t *testing.T, ctx context.Context) servers {
	t.Helper()
	for _, bin := range []func() (string, error){localdb.RedisBinary, localdb.PgBouncerBinary, localdb.PGBinDir} {
		if _, err := bin(); errors.Is(err, localdb.ErrNotInstalled) {
			testenv.SkipUnlessRequired(t, "BENCHQ_YCSB_REQUIRED", "%v", err)
		}
	}
	// The postgres user runs PostgreSQL and PgBouncer when we are root: it
	// must reach their directories.
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	stop := func(what string, f func(context.Context) error) {
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := f(sctx); err != nil {
				t.Errorf("stop %s: %v", what, err)
			}
		})
	}
	var s servers
	var err error
	if s.redis, err = localdb.StartRedis(ctx, filepath.Join(base, "redis"), 0, localdb.RedisOptions{}); err != nil {
		t.Fatal(err)
	}
	stop("redis", s.redis.Stop)
	if s.cluster, err = localdb.StartRedisCluster(ctx, filepath.Join(base, "cluster"), localdb.RedisClusterOptions{Masters: 3}); err != nil {
		t.Fatal(err)
	}
	stop("redis cluster", s.cluster.Stop)
	s.pg = testenv.StartPostgres(t, localdb.PGOptions{Database: "ycsb"})
	if s.pgb, err = localdb.StartPgBouncer(ctx, filepath.Join(base, "pgbouncer"), 0, localdb.PgBouncerOptions{
		BackendPort: s.pg.Port, Database: "ycsb", MaxClientConn: 64, PoolSize: 8,
	}); err != nil {
		t.Fatal(err)
	}
	stop("pgbouncer", s.pgb.Stop)
	return s
}
