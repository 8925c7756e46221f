package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchq/benchq/contracts"
)

// TestIntakeLoad is `make bench-intake` (docs/bench.md), skipped unless
// BENCHQ_INTAKE_BENCH=1: k6 (BENCHQ_K6) submits small experiments with -ms 1
// to the HTTP intake of an embedded stack, ramping up to RATE a second held
// for HOLD, while an experiment started with `start` holds the one SUT slot,
// so every submitted experiment waits in the queue. It prints the figures
// and the goals (met or not), and fails only when requests were lost:
//   - lost: accepted (202) but not planned, or not ended after the stops;
//   - accept latency p99 (goal ≤ 50 ms);
//   - the scheduler's CPU with the queue full against its idle cost (goal ≤ 2×).
func TestIntakeLoad(t *testing.T) {
	if os.Getenv("BENCHQ_INTAKE_BENCH") != "1" {
		t.Skip("make bench-intake runs it (BENCHQ_INTAKE_BENCH=1)")
	}
	k6 := os.Getenv("BENCHQ_K6")
	if k6 == "" {
		t.Fatal("BENCHQ_K6: the k6 binary (make bench-intake installs it)")
	}
	window := envDuration("BENCHQ_CPU_WINDOW", 30*time.Second)
	s := startStack(t)
	base, token := s.info.IntakeURL, ""
	if b, err := os.ReadFile(s.info.IntakeToken); err == nil {
		token = strings.TrimSpace(string(b))
	}
	if base == "" || token == "" {
		t.Fatal("the stack has no HTTP intake")
	}
	report := func(format string, args ...any) { fmt.Printf("   "+format+"\n", args...) }

	// The experiment that holds the one slot: its SUT stays until stopped.
	hold := fmt.Sprintf("bench-hold-%d", time.Now().Unix())
	s.cli(t, time.Minute, "ycsb", "-e", hold, "-dbms", "Redis", "-sf", "0.001", "-ms", "1", "--detach", "start")
	s.waitCount(t, 1, `SELECT count(*) FROM configurations WHERE code = $1 AND ready_at IS NOT NULL`, hold)
	sched := s.pid("scheduler")

	idle := cpuSeconds(t, sched, window)
	idleRSS := statusKiB(sched, "VmRSS:")
	report("scheduler idle (one experiment holding the SUT slot, none queued): %.4f cores over %s, %d KiB resident", idle, window, idleRSS)

	// k6.
	start := time.Now()
	cmd := exec.Command(k6, "run", "--quiet", "--no-usage-report", filepath.Join(s.repo, "e2e", "k6", "submit.js"))
	cmd.Env = append(os.Environ(), "BENCHQ_INTAKE_URL="+base, "BENCHQ_INTAKE_TOKEN="+token,
		"RATE="+envOr("RATE", "1000"), "HOLD="+envOr("HOLD", "60s"), "RAMP="+envOr("RAMP", "5s"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("k6: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	k6End := time.Now()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var k struct {
		Requests, Accepted, Refused, Dropped, FailedHTTP int
		Rate, P50, P95, P99, Max                         float64
	}
	var raw map[string]float64
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &raw); err != nil {
		t.Fatalf("k6 summary: %v\n%s", err, out.String())
	}
	k.Requests, k.Accepted, k.Refused, k.Dropped, k.FailedHTTP = int(raw["requests"]), int(raw["accepted"]), int(raw["refused"]), int(raw["dropped"]), int(raw["failed_http"])
	k.Rate, k.P50, k.P95, k.P99, k.Max = raw["rate"], raw["p50_ms"], raw["p95_ms"], raw["p99_ms"], raw["max_ms"]
	report("k6: %d requests in %s (%.0f/s; %d iterations k6 dropped), %d accepted, %d refused",
		k.Requests, time.Since(start).Round(time.Second), k.Rate, k.Dropped, k.Accepted, k.Refused)
	report("accept latency: p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms (goal p99 <= 50 ms: %s)", k.P50, k.P95, k.P99, k.Max, verdict(k.P99 <= 50))

	// Every accepted request planned: the collector stores the planned event.
	planned := waitFor(t, 15*time.Minute, func() (int, bool) {
		n := s.count(t, `SELECT count(*) FROM experiments WHERE request->>'id' LIKE 'http-%'`)
		return n, n >= k.Accepted
	})
	report("planned: %d of %d accepted, the last %s after k6 ended", planned, k.Accepted, time.Since(k6End).Round(time.Second))
	// The scheduler's planning rate: from its first plan to its last.
	if span := planningSpan(t, s, "http-%"); span > 0 {
		rate := float64(planned) / span
		// The scheduler plans what k6 offers: the backlog below measures
		// what it can plan.
		kept := "it kept up"
		if rate < 0.95*k.Rate {
			kept = "it did NOT keep up"
		}
		report("planning rate while k6 submits: %.0f requests/s over %.0f s, against %.0f/s offered: %s", rate, span, k.Rate, kept)
	}

	// The planning rate without k6 as the limit: BACKLOG requests (default
	// 10,000) published straight to the requests stream, as benchq's CLI
	// does, while the scheduler is stopped (SIGSTOP); then it resumes and
	// plans them all.
	backlog := 10000
	if v, err := strconv.Atoi(envOr("BACKLOG", "10000")); err == nil && v > 0 {
		backlog = v
	}
	if err := syscall.Kill(sched, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for i := range backlog {
		id := fmt.Sprintf("backlog-%d-%d", time.Now().Unix(), i)
		body := fmt.Sprintf(`{"schema_version":1,"id":%q,"dbms":["Redis"],"sf":0.001,"max_suts":1,"loading_pods":[1],"loading_threads":[1],"benchmarking_pods":[1],"benchmarking_threads":[1]}`, id)
		if _, err := s.js.PublishAsync(contracts.SubjRequest, []byte(body), jetstream.WithMsgID(id)); err != nil {
			_ = syscall.Kill(sched, syscall.SIGCONT)
			t.Fatalf("backlog request %d: %v", i, err)
		}
	}
	select {
	case <-s.js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		t.Error("the backlog's publishes were not all acknowledged within a minute")
	}
	if err := syscall.Kill(sched, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	drained := waitFor(t, 15*time.Minute, func() (int, bool) {
		n := s.count(t, `SELECT count(*) FROM experiments WHERE request->>'id' LIKE 'backlog-%'`)
		return n, n >= backlog
	})
	if span := planningSpan(t, s, "backlog-%"); span > 0 {
		rate := float64(drained) / span
		report("planning rate from a backlog: %d requests planned in %.1f s, %.0f requests/s (goal >= 2,000/s: %s); all stored by the collector %s after the scheduler resumed",
			drained, span, rate, verdict(rate >= 2000), time.Since(resumed).Round(time.Second))
	}
	if drained < backlog {
		t.Errorf("%d of %d backlog requests planned", drained, backlog)
	}
	queued := s.count(t, `SELECT count(*) FROM experiments WHERE status = $1 AND (request->>'id' LIKE 'http-%' OR request->>'id' LIKE 'backlog-%')`, contracts.ExperimentRunning)

	busy := cpuSeconds(t, sched, window)
	ratio := busy / idle
	report("scheduler with %d experiments queued: %.4f cores over %s, %.2fx idle (goal <= 2x: %s)", queued, busy, window, ratio, verdict(ratio <= 2))
	peak := statusKiB(sched, "VmHWM:")
	report("scheduler peak RSS: %d KiB", peak)
	if queued > 0 && peak > 0 && idleRSS > 0 {
		per := float64(peak-idleRSS) / float64(queued)
		report("memory per queued experiment: %.2f KiB (peak RSS minus the idle one, over %d queued; goal <= 1 KiB: %s)", per, queued, verdict(per <= 1))
	}

	// Stop them all, as a client would (benchq stop's message), and wait
	// until every one has ended.
	stopStart := time.Now()
	codes := s.column(t, `SELECT code FROM experiments WHERE status = $1`, contracts.ExperimentRunning)
	var wg sync.WaitGroup
	work := make(chan string)
	for range 4 * runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for code := range work {
				now := time.Now().UTC()
				data, _ := json.Marshal(&contracts.Stop{Envelope: contracts.NewEnvelope(code, contracts.StopID(code, now), now), Reason: "bench-intake"})
				if _, err := s.js.Publish(context.Background(), contracts.SubjStop, data); err != nil {
					t.Errorf("stop %s: %v", code, err)
				}
			}
		}()
	}
	for _, c := range codes {
		work <- c
	}
	close(work)
	wg.Wait()
	running := waitFor(t, 15*time.Minute, func() (int, bool) {
		n := s.count(t, `SELECT count(*) FROM experiments WHERE status = $1`, contracts.ExperimentRunning)
		return n, n == 0
	})
	ended := s.count(t, `SELECT count(*) FROM experiments WHERE status <> $1 AND request->>'id' LIKE 'http-%'`, contracts.ExperimentRunning)
	report("stopped %d experiments in %s; still running: %d", len(codes), time.Since(stopStart).Round(time.Second), running)
	endedBacklog := s.count(t, `SELECT count(*) FROM experiments WHERE status <> $1 AND request->>'id' LIKE 'backlog-%'`, contracts.ExperimentRunning)
	lost := k.Accepted - ended + backlog - endedBacklog
	report("lost: %d (accepted %d and %d of the backlog, ended %d and %d; goal 0: %s)", lost, k.Accepted, backlog, ended, endedBacklog, verdict(lost == 0))
	if lost != 0 || planned < k.Accepted {
		t.Errorf("%d accepted requests were not planned and ended", lost)
	}
}

// planningSpan is the seconds from the first to the last planned_at of the
// experiments whose request id is LIKE pattern.
func planningSpan(t *testing.T, s *stack, pattern string) (span float64) {
	t.Helper()
	s.withDB(t, func(ctx context.Context, conn *pgx.Conn) {
		q := `SELECT coalesce(extract(epoch FROM max(planned_at) - min(planned_at)), 0)::float8 FROM experiments WHERE request->>'id' LIKE $1`
		if err := conn.QueryRow(ctx, q, pattern).Scan(&span); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	})
	return span
}

// cpuSeconds is the CPU pid used over window, in cores (CPU-seconds a second).
func cpuSeconds(t *testing.T, pid int, window time.Duration) float64 {
	t.Helper()
	before, at := procCPU(t, pid), time.Now()
	time.Sleep(window)
	return (procCPU(t, pid) - before) / time.Since(at).Seconds()
}

// procCPU is utime + stime of pid in seconds (/proc/<pid>/stat, USER_HZ 100).
func procCPU(t *testing.T, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / 100
}

// statusKiB is a "<field> N kB" line of /proc/<pid>/status (VmRSS,
// VmHWM: the peak), in KiB; 0 when it cannot be read.
func statusKiB(pid int, field string) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

func waitFor(t *testing.T, timeout time.Duration, f func() (int, bool)) int {
	t.Helper()
	end := time.Now().Add(timeout)
	for {
		n, ok := f()
		if ok || time.Now().After(end) {
			return n
		}
		time.Sleep(time.Second)
	}
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func envDuration(key string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(key)); err == nil {
		return d
	}
	return def
}

// column is the first column of query's rows.
func (s *stack) column(t *testing.T, query string, args ...any) []string {
	t.Helper()
	var out []string
	s.withDB(t, func(ctx context.Context, conn *pgx.Conn) {
		rows, err := conn.Query(ctx, query, args...)
		if err == nil {
			out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	})
	return out
}
