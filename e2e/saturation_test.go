package e2e

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// cpuGroup is a cgroup (v1 cpu controller, or v2) holding processes to a
// share of one CPU (newCPUQuota: a SUT throttled on purpose, whose limit
// does not depend on the drivers), or giving them precedence over the
// machine's other processes (newCPUPriority).
type cpuGroup struct{ dir string }

// newCPUQuota makes a cgroup of percent % of one CPU, removed when t ends;
// the test is skipped (saying why) where no cgroup can be made. The group
// also has the weight of newCPUPriority: its processes get their percent
// while other tests' stacks keep the cores busy.
func newCPUQuota(t *testing.T, percent int) *cpuGroup {
	return newCgroup(t, "quota", percent)
}

// newCPUPriority makes a cgroup without a limit whose processes take the
// CPU they want before the processes outside it: ten times the weight of
// the default group. A test measuring a knee runs its stack in one, beside
// the tests that keep the two cores busy, and measures what it would
// alone as long as it needs less than the machine.
func newCPUPriority(t *testing.T) *cpuGroup {
	return newCgroup(t, "priority", 0)
}

func newCgroup(t *testing.T, kind string, percent int) *cpuGroup {
	t.Helper()
	// One per test: tests of one process may hold cgroups at once.
	name := fmt.Sprintf("benchq-e2e-%d-%s-%s", os.Getpid(), kind, strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()))
	v1 := "/sys/fs/cgroup/cpu"
	q := &cpuGroup{}
	write := func(file, value string) error {
		return os.WriteFile(filepath.Join(q.dir, file), []byte(value), 0o644)
	}
	var err error
	if _, e := os.Stat(filepath.Join(v1, "cpu.cfs_quota_us")); e == nil {
		q.dir = filepath.Join(v1, name)
		if err = os.Mkdir(q.dir, 0o755); err == nil {
			err = write("cpu.shares", "10240")
			if percent > 0 {
				err = errors.Join(err, write("cpu.cfs_period_us", "100000"), write("cpu.cfs_quota_us", strconv.Itoa(1000*percent)))
			}
		}
	} else {
		q.dir = filepath.Join("/sys/fs/cgroup", name)
		if err = os.Mkdir(q.dir, 0o755); err == nil {
			err = write("cpu.weight", "1000")
			if percent > 0 {
				err = errors.Join(err, write("cpu.max", fmt.Sprintf("%d 100000", 1000*percent)))
			}
		}
	}
	if err != nil {
		_ = os.Remove(q.dir)
		t.Skipf("no cgroup can be made here (it needs root and a writable cpu controller): %v", err)
	}
	t.Cleanup(func() {
		// The cgroup can go once its processes have (the SUTs are torn down).
		for i := 0; i < 50 && os.Remove(q.dir) != nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	})
	return q
}

func (q *cpuGroup) add(t *testing.T, pid int) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(q.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		t.Fatalf("put pid %d under the CPU quota: %v", pid, err)
	}
}

// throttled starts a benchmark's experiment args (detached) and puts its
// SUT under q as soon as it runs, then waits for the end and returns the
// summary.
func (s *stack) throttled(t *testing.T, q *cpuGroup, benchmark, code string, timeout time.Duration, args ...string) string {
	t.Helper()
	s.cli(t, time.Minute, append([]string{benchmark, "-e", code, "-detach"}, args...)...)
	deadline := time.Now().Add(time.Minute)
	for {
		if pid, _ := s.sutPid(code); pid > 0 {
			q.add(t, pid)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no SUT within a minute", code)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if status, reason := s.waitEnded(t, code, time.Now().Add(timeout)); status != "done" {
		t.Fatalf("%s ended %s: %s", code, status, reason)
	}
	// A bound, not a goal: a search's summary under the other stacks'
	// load took more than a minute once (before the CLI ran in the stack's
	// cgroup).
	return s.cli(t, 3*time.Minute, "summary", "-e", code)
}

// TestSaturationFindsTheKneeOfAThrottledRedis: a saturation search on the
// embedded stack against a Redis held to 5 % of a CPU finds its knee in
// bounded time, and the knee lies between 80 % and 135 % of what the same
// throttled Redis sustains when nothing holds the drivers back (a closed-loop phase
// with the search's threads, no target: its capacity, measured
// independently).
// Every step's figures trace back to the stored results.
//
// It runs beside the other parallel tests, its stack in a cgroup of ten
// times the others' CPU weight: the search needs about a third of the two
// cores, and takes it first (alone, it left the rest idle for 3 minutes).
func TestSaturationFindsTheKneeOfAThrottledRedis(t *testing.T) {
	t.Parallel() // its own stack, with precedence (see the package comment)
	q := newCPUQuota(t, 5)
	s := startStackIn(t, newCPUPriority(t))
	base := []string{"-dbms", "Redis", "-sf", "0.01", "-xwl", "c", "-nlp", "1", "-nlt", "4", "-nbp", "1"}

	// The limit: the search's driver shape (1 shard, 16 threads) without a
	// target for 15 s, closed loop — as much as the throttled Redis serves
	// — before and after the search, averaged. (32 threads measured 5,238
	// and then 4,217 ops/s: more connections cost a throttled Redis more
	// CPU per operation; 16 threads measured 5,185 and 4,978.)
	capacity := func(n int) float64 {
		code := fmt.Sprintf("e2e-satcap%d-%d", n, time.Now().Unix())
		out := s.throttled(t, q, "ycsb", code, 3*time.Minute, append(base, "-nbt", "16", "-xtb", "0", "-xop", "10", "-xsd", "0.25", "run")...)
		return cell(t, out, "#### Per Phase", "Redis-4-1-0-1-1", "Goodput common window(ops/sec)")
	}
	before := capacity(1)

	// The search: from 500 ops/s, 10 s steps, 2 % precision.
	code := fmt.Sprintf("e2e-sat-%d", time.Now().Unix())
	start := time.Now()
	out := s.throttled(t, q, "ycsb", code, 10*time.Minute, append(base, "-nbt", "16", "-xtb", "500", "-xsat", "-xsats", "10", "-xsatprec", "2", "-tr", "run")...)
	t.Logf("the search took %s", time.Since(start).Round(time.Second))
	checkSummary(t, out, "### Saturation", "#### Steps", "maximum sustainable throughput", "* TEST passed: Workflow as planned")
	after := []float64{capacity(2), capacity(3)}
	t.Logf("capacity of Redis under a 5 %% CPU quota: %.0f ops/s before the search, %.0f and %.0f after", before, after[0], after[1])

	// The capacity itself drifts while the search runs (2,015 ops/s before
	// and 1,796 after on one run, 11 %; 1,729 and 1,981 on another, 15 %: a
	// throttled process's share depends on what else the machine does), and
	// the open-loop knee lands on either side of the closed-loop capacity
	// (−9.3 … +14.7 % in the runs of docs/saturation.md), so the knee is
	// held below to 25 % of the range the measurements span: a search that
	// stops early or overshoots still fails. (20 % until a CI run of
	// 2026-11-28: a knee of 2,204 against 2,814 before and 3,344 and 2,816
	// after, while the search's own flat-out step achieved 2,545: the
	// quota served less during the search than around it.) The measurement before the
	// search runs while the other tests start their stacks, the busiest
	// time of the package: a knee of 5,152 ops/s against 3,515 before and
	// 4,256 after failed once (2026-11-27), so the capacity is measured
	// twice after it. Above the range the knee may go further, to 35 %:
	// the closed-loop capacity is a lower bound under the other tests'
	// load (its 16 threads re-issue only as fast as their starved JVM
	// runs, and the throttled Redis then idles inside its quota), and the
	// open-loop knee came 21 and 26 % above the highest of them in two CI
	// runs (2026-11-27), never more than 12 % below the lowest.
	k := s.knee(t, code)
	goodput, offered, firstBad, steps := k.goodput, k.offered, k.firstBad, k.steps
	low, high := min(before, after[0], after[1]), max(before, after[0], after[1])
	t.Logf("knee %.0f ops/s (offered %d, first failing %d) after %d steps; capacity %.0f–%.0f ops/s", goodput, offered, firstBad, steps, low, high)
	if goodput < 0.75*low || goodput > 1.35*high {
		t.Errorf("knee %.0f ops/s is not between 75 %% of the throttled Redis's lowest capacity and 135 %% of its highest (%.0f before the search, %.0f and %.0f after)", goodput, before, after[0], after[1])
	}
	if firstBad == 0 || float64(firstBad-offered) > 0.02*float64(offered)+1 {
		t.Errorf("the knee is bracketed by %d (passed) and %d (failed): not within the 2 %% asked", offered, firstBad)
	}
	if !strings.Contains(out, fmt.Sprintf("maximum sustainable throughput %s ops/s", thousands(goodput))) {
		t.Errorf("the summary does not print the stored knee %.0f ops/s", goodput)
	}
	// The HTML report draws both saturation plots, and the dashboards'
	// saturation panels have rows for this experiment.
	report := filepath.Join(t.TempDir(), "report.html")
	s.python(t, "benchq_reporter", "report", "--db", s.info.DBURL, "-e", code, "-o", report)
	if page, err := os.ReadFile(report); err != nil || !strings.Contains(string(page), `id="saturation-throughput"`) ||
		!strings.Contains(string(page), `id="saturation-latency"`) {
		t.Errorf("the HTML report lacks the saturation plots (%v)", err)
	}
	s.python(t, "benchq_reporter.grafana.queries", "--db", s.info.DBURL, "--prometheus", s.info.PrometheusURL, "--scrape-interval", "1", "-e", code,
		"--rows-in", "Saturation: goodput against the offered load", "--rows-in", "Saturation: p99 against goodput",
		"--rows-in", "Saturation steps")

	// Traceable: each step's achieved rate is its shards' stored seconds
	// (intervals, between the first operation at 0 and the last at the
	// shard's executed operations) over its stored steady window.
	s.withDB(t, func(ctx context.Context, conn *pgx.Conn) {
		rows, err := conn.Query(ctx, `SELECT st.phase, st.achieved, st.steady_from, st.steady_to, r.shard, r.first_op_at, r.last_op_at,
				(SELECT sum(count) FROM shard_operations o WHERE o.code = r.code AND o.phase = r.phase AND o.shard = r.shard AND o.attempt = r.attempt
				   AND o.operation NOT LIKE 'Intended-%' AND o.operation <> 'CLEANUP')::bigint,
				array(SELECT extract(epoch FROM i.at) FROM intervals i WHERE i.code = r.code AND i.phase = r.phase AND i.shard = r.shard AND i.attempt = r.attempt ORDER BY i.at),
				array(SELECT i.operations FROM intervals i WHERE i.code = r.code AND i.phase = r.phase AND i.shard = r.shard AND i.attempt = r.attempt ORDER BY i.at)
			FROM saturation_steps st JOIN shard_results r ON r.code = st.code AND r.phase = st.phase AND r.attempt = st.attempt
			WHERE st.code = $1 ORDER BY st.step, r.shard`, code)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		type step struct {
			achieved, ops float64
			secs          float64
		}
		steps := map[string]*step{}
		for rows.Next() {
			var phase string
			var achieved float64
			var from, to, first, last time.Time
			var shard int
			var total int64
			var at []float64
			var ops []int64
			if err := rows.Scan(&phase, &achieved, &from, &to, &shard, &first, &last, &total, &at, &ops); err != nil {
				t.Fatal(err)
			}
			t0, t1 := float64(first.UnixNano())/1e9, float64(last.UnixNano())/1e9
			xs, ys := []float64{t0}, []float64{0}
			for k, x := range at {
				if x > t0 && x < t1 {
					xs, ys = append(xs, x), append(ys, float64(ops[k]))
				}
			}
			xs, ys = append(xs, t1), append(ys, float64(total))
			st := steps[phase]
			if st == nil {
				st = &step{achieved: achieved, secs: to.Sub(from).Seconds()}
				steps[phase] = st
			}
			st.ops += interpolate(xs, ys, float64(to.UnixNano())/1e9) - interpolate(xs, ys, float64(from.UnixNano())/1e9)
		}
		if len(steps) == 0 {
			t.Fatal("no stored step")
		}
		for phase, st := range steps {
			if got := st.ops / st.secs; math.Abs(got-st.achieved) > 0.01*st.achieved+1 {
				t.Errorf("%s: stored achieved %.1f ops/s, its stored seconds give %.1f", phase, st.achieved, got)
			}
		}
	})
}

// interpolate is y at x, linear between the points (xs ascending).
func interpolate(xs, ys []float64, x float64) float64 {
	if x <= xs[0] {
		return ys[0]
	}
	for k := 1; k < len(xs); k++ {
		if x <= xs[k] {
			if xs[k] == xs[k-1] {
				return ys[k]
			}
			return ys[k-1] + (ys[k]-ys[k-1])*(x-xs[k-1])/(xs[k]-xs[k-1])
		}
	}
	return ys[len(ys)-1]
}

// knee is a search's result as stored.
type knee struct {
	goodput                  float64
	offered, firstBad, steps int
}

func (s *stack) knee(t *testing.T, code string) knee {
	t.Helper()
	var k knee
	s.withDB(t, func(ctx context.Context, conn *pgx.Conn) {
		if err := conn.QueryRow(ctx, `SELECT (knee->>'sustained')::float8, (knee->>'offered')::int, coalesce((knee->>'first_bad')::int, 0),
				(SELECT count(*)::int FROM saturation_steps WHERE code = $1)
			FROM saturation_steps WHERE code = $1 AND knee IS NOT NULL`, code).Scan(&k.goodput, &k.offered, &k.firstBad, &k.steps); err != nil {
			t.Fatalf("the knee of %s: %v", code, err)
		}
	})
	return k
}

// TestSaturationRepeats is make bench-saturation (BENCHQ_SATURATION_BENCH=1):
// two searches each for Redis held to 5 % of a CPU and for PostgreSQL on
// the machine as it is, with the time each took and whether the two knees
// agree within the precision asked (5 %). The agreement is printed, never
// asserted (how reproducible a knee is on a machine is a figure, not a
// test); what fails it is a search that did not end as a search must: no
// knee stored, a knee above its offered load or at or above its first
// failing load, fewer than two steps.
func TestSaturationRepeats(t *testing.T) {
	if os.Getenv("BENCHQ_SATURATION_BENCH") == "" {
		t.Skip("make bench-saturation runs it (BENCHQ_SATURATION_BENCH=1)")
	}
	q := newCPUQuota(t, 5)
	s := startStack(t)
	const precision = 5.0
	for _, c := range []struct {
		dbms      string
		throttled bool
		from      string
	}{{"Redis", true, "500"}, {"PostgreSQL", false, "500"}} {
		var knees []knee
		for run := 1; run <= 2; run++ {
			code := fmt.Sprintf("bench-sat-%s-%d-%d", strings.ToLower(c.dbms), run, time.Now().Unix())
			args := []string{"-dbms", c.dbms, "-sf", "0.01", "-xwl", "c", "-nlp", "1", "-nlt", "4", "-nbp", "1", "-nbt", "16",
				"-xtb", c.from, "-xsat", "-xsats", "10", "-xsatprec", fmt.Sprint(precision), "run"}
			start := time.Now()
			if c.throttled {
				s.throttled(t, q, "ycsb", code, 15*time.Minute, args...)
			} else {
				s.cli(t, 15*time.Minute, append([]string{"ycsb", "-e", code}, args...)...)
			}
			k := s.knee(t, code)
			if k.steps < 2 || k.offered <= 0 || k.goodput <= 0 || k.goodput > float64(k.offered) || (k.firstBad != 0 && k.firstBad <= k.offered) {
				t.Errorf("%s: a search that did not end as one must: knee %.0f ops/s at offered %d, first failing %d, %d steps", code, k.goodput, k.offered, k.firstBad, k.steps)
			}
			knees = append(knees, k)
			t.Logf("   %-10s run %d (%s): knee %s ops/s (offered %d, first failing %d), %d steps, %s",
				c.dbms, run, map[bool]string{true: "5 % CPU quota", false: "unthrottled"}[c.throttled], thousands(k.goodput), k.offered, k.firstBad, k.steps,
				time.Since(start).Round(time.Second))
		}
		diff := 100 * math.Abs(knees[0].goodput-knees[1].goodput) / math.Max(knees[0].goodput, knees[1].goodput)
		verdict := "agree"
		if diff > precision {
			verdict = "DO NOT agree"
		}
		t.Logf("   %-10s the two knees differ by %.1f %%: they %s within the %g %% precision", c.dbms, diff, verdict, precision)
	}
}

// thousands formats x as the summary does (1,234).
func thousands(x float64) string {
	s := strconv.FormatFloat(math.Round(x), 'f', 0, 64)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
