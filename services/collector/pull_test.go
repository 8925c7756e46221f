package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/procmetrics"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/prom"
	"github.com/benchq/benchq/internal/resultsdb"
	"github.com/benchq/benchq/internal/testenv"
)

// cpuSeconds is the CPU time /proc/<pid>/stat reports for pid (utime +
// stime at the usual 100 ticks a second).
func cpuSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	f := procStat(t, pid)
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / 100
}

// procStat is /proc/<pid>/stat's fields after the command's name: the
// state letter first (R running, S sleeping, T stopped…).
func procStat(t *testing.T, pid int) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
}

// resultsDB starts a results database with every migration applied; it is
// closed when t ends.
func resultsDB(t testing.TB, ctx context.Context) *pgxpool.Pool {
	t.Helper()
	db, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := resultsdb.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	return db
}

// addPhase stores an experiment of one configuration with the given
// monitoring (JSON, "" for none) and one ended phase of it.
func addPhase(t *testing.T, ctx context.Context, db *pgxpool.Pool, code, dbms, monitoring string, start, end time.Time) {
	t.Helper()
	sut := `{}`
	if monitoring != "" {
		sut = `{"monitoring":` + monitoring + `}`
	}
	plan := fmt.Sprintf(`{"code":%q,"configurations":[{"name":"cfg-1","dbms":%q,"sut":%s,"phases":[]}]}`, code, dbms, sut)
	if _, err := db.Exec(ctx, `INSERT INTO experiments (code, request, plan, planned_at) VALUES ($1, '{}', $2, now())`, code, plan); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO phases (code, phase, attempt, configuration, kind, status, started_at, ended_at)
		VALUES ($1, 'cfg-1-0', 1, 'cfg-1', 'load', 'done', $2, $3)`, code, start, end); err != nil {
		t.Fatal(err)
	}
}

type summaryRow struct {
	value   *float64
	missing *string
	samples int
}

func summaries(t *testing.T, ctx context.Context, db *pgxpool.Pool, code string) map[string]summaryRow {
	t.Helper()
	rows, err := db.Query(ctx, `SELECT component || '/' || metric, value, missing, samples FROM metric_summaries WHERE code = $1`, code)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]summaryRow{}
	for rows.Next() {
		var k string
		var r summaryRow
		if err := rows.Scan(&k, &r.value, &r.missing, &r.samples); err != nil {
			t.Fatal(err)
		}
		out[k] = r
	}
	return out
}

// A real Prometheus scrapes procmetrics watching a process that burns CPU;
// the puller turns a phase window into summaries whose CPU seconds match
// /proc, stores each sample once, and records missing metrics (no
// exporter, Prometheus down) as NULL with a reason.
func TestPullPhaseMetrics(t *testing.T) {
	if _, err := prom.Binary(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	db := resultsDB(t, ctx)

	// The burner burns only in the phases below: it stops itself at once
	// and is continued when a phase starts (a core kept busy otherwise
	// only slows the tests beside this one).
	burner := exec.Command("sh", "-c", "kill -STOP $$; while :; do :; done")
	if err := burner.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = burner.Process.Kill(); _ = burner.Wait() }()
	pid := burner.Process.Pid
	signal := func(sig syscall.Signal) {
		if err := burner.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
	}
	// Stopped before the first SIGCONT, which would otherwise come first
	// and leave it stopped for good.
	testenv.Eventually(t, 10*time.Second, func() error {
		if st := procStat(t, pid)[0]; st != "T" {
			return fmt.Errorf("burner in state %s, not stopped yet", st)
		}
		return nil
	})

	reg := prometheus.NewRegistry()
	pm, err := procmetrics.New(reg, "/proc")
	if err != nil {
		t.Fatal(err)
	}
	// Experiments m1, m3 (for the kill below) and m4 (edge reads) watch the
	// same burner.
	for _, code := range []string{"m1", "m3", "m4"} {
		labels := procmetrics.Labels{Namespace: "benchq", Pod: "sut", Container: "redis", Experiment: code, Configuration: "cfg-1", DBMS: "Redis", Component: "sut"}
		pm.Set(code+"-sut", pid, labels)
		labels.Component, labels.Phase, labels.Container = "loader", "cfg-1-0", "ycsb"
		pm.Set(code+"-loader", pid, labels)
	}
	app := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer app.Close()

	srv, err := prom.StartServer(ctx, t.TempDir(), prom.ServerOptions{Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = srv.Stop(context.Background())
		}
	})
	if err := srv.Targets.Write("local", prom.Group{Targets: []string{strings.TrimPrefix(app.URL, "http://")}}); err != nil {
		t.Fatal(err)
	}
	client := &prom.Client{URL: srv.URL()}
	// Scraped at least twice before the phase starts: the samples must
	// bracket it (an empty answer is no error, and on a loaded machine
	// the first scrape came 15 ms after the start), and with two before it
	// the phase's start is read off their rate (flat: the burner is
	// stopped), where one alone would be interpolated towards the first
	// scrape inside the phase and take up to a quarter of a scrape
	// interval's CPU off the phase (internal/reduce's edge).
	testenv.Eventually(t, time.Minute, func() error {
		now := time.Now()
		series, err := client.QueryRange(ctx, `count_over_time(container_cpu_usage_seconds_total{experiment="m1",component="sut"}[1m])`, now.Add(-time.Second), now, time.Second)
		if err == nil && (len(series) == 0 || len(series[0].Samples) == 0 || series[0].Samples[len(series[0].Samples)-1].V < 2) {
			err = errors.New("not scraped twice yet")
		}
		return err
	})

	// The phase: about 5 s of the burner, with /proc's word at both ends.
	signal(syscall.SIGCONT)
	start, cpu0 := time.Now(), cpuSeconds(t, pid)
	time.Sleep(5 * time.Second)
	end, cpu1 := time.Now(), cpuSeconds(t, pid)
	truth := cpu1 - cpu0
	// Idle (stopped) until the edge reads below: the phases pulled until
	// then lie in the past.
	signal(syscall.SIGSTOP)
	addPhase(t, ctx, db, "m1", "Redis", `{"cluster":true,"application":true}`, start, end)
	addPhase(t, ctx, db, "none", "Redis", "", start, end)

	p := newPuller(db, srv.URL(), time.Second, testenv.Logger(t, "puller"))
	testenv.Eventually(t, 30*time.Second, func() error {
		if err := p.sweep(ctx); err != nil {
			return err
		}
		if n := len(summaries(t, ctx, db, "m1")); n == 0 {
			return fmt.Errorf("no summaries yet")
		}
		return nil
	})
	got := summaries(t, ctx, db, "m1")
	// -mc: system metrics of sut and loader; -ma: Redis' set, absent here.
	if len(got) != 4+4+6 {
		t.Errorf("%d summaries, want 14: %v", len(got), got)
	}
	for _, comp := range []string{"sut", "loader"} {
		cpu := got[comp+"/cpu_seconds"]
		if cpu.value == nil {
			t.Fatalf("%s cpu_seconds missing: %v", comp, *cpu.missing)
		}
		t.Logf("%s CPU seconds %.3f, /proc %.3f", comp, *cpu.value, truth)
		if d := *cpu.value - truth; d > 0.1*truth || d < -0.1*truth {
			t.Errorf("%s CPU seconds %.3f, /proc says %.3f", comp, *cpu.value, truth)
		}
		if r := got[comp+"/max_ram"]; r.value == nil || *r.value <= 0 {
			t.Errorf("%s max_ram %+v", comp, r)
		}
		if r := got[comp+"/max_cpu"]; r.value == nil || *r.value <= 0 {
			t.Errorf("%s max_cpu %+v", comp, r)
		}
	}
	if r := got["sut/redis_commands"]; r.value != nil || r.missing == nil || !strings.HasPrefix(*r.missing, "no samples") {
		t.Errorf("redis_commands without an exporter: %+v", r)
	}
	if n := len(summaries(t, ctx, db, "none")); n != 0 {
		t.Errorf("%d summaries for a phase without monitoring", n)
	}

	// The samples stored are the scrapes themselves, each once: as many as
	// Prometheus holds raw between the first and the last stored (counted
	// with count_over_time over that span, half a step wider each side).
	var first, last time.Time
	var stored int
	if err := db.QueryRow(ctx, `SELECT min(time), max(time), count(*) FROM metrics WHERE code = 'm1' AND component = 'sut' AND metric = 'cpu_seconds'`).Scan(&first, &last, &stored); err != nil {
		t.Fatal(err)
	}
	if first.After(start) || last.Before(end) {
		t.Errorf("stored samples from %v to %v: want the edges of %v..%v inside", first, last, start, end)
	}
	span := last.Sub(first) + time.Second
	at := last.Add(time.Second / 2)
	raw, err := client.QueryRange(ctx, fmt.Sprintf(`count_over_time(container_cpu_usage_seconds_total{experiment="m1",configuration="cfg-1",component="sut"}[%dms])`, span.Milliseconds()),
		at, at, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if want := int(raw[0].Samples[0].V); stored != want || got["sut/cpu_seconds"].samples != want {
		t.Errorf("stored %d samples, summary says %d, Prometheus holds %d scrapes in %v..%v", stored, got["sut/cpu_seconds"].samples, want, first, last)
	}
	var all int
	_ = db.QueryRow(ctx, `SELECT count(*) FROM metrics WHERE code = 'm1'`).Scan(&all)

	// A collector killed after storing samples but before the summaries:
	// the phase is pulled again and no sample is stored twice.
	if _, err := db.Exec(ctx, `DELETE FROM metric_summaries WHERE code = 'm1'`); err != nil {
		t.Fatal(err)
	}
	if err := p.sweep(ctx); err != nil {
		t.Fatal(err)
	}
	var again int
	_ = db.QueryRow(ctx, `SELECT count(*) FROM metrics WHERE code = 'm1'`).Scan(&again)
	if again != all || len(summaries(t, ctx, db, "m1")) != 14 {
		t.Errorf("after a re-pull: %d samples (was %d), %d summaries", again, all, len(summaries(t, ctx, db, "m1")))
	}

	// The collector process SIGKILLed in the middle of a pull (a proxy holds
	// its sixth query to Prometheus, after the first columns' samples are
	// stored) and started again: every sample stored exactly once.
	addPhase(t, ctx, db, "m3", "Redis", `{"cluster":true,"application":true}`, start, end)
	killMidPull(t, ctx, db, srv.URL(), "m3")
	if n := len(summaries(t, ctx, db, "m3")); n != 14 {
		t.Errorf("%d summaries after the restart, want 14", n)
	}
	var samples, distinct int
	if err := db.QueryRow(ctx, `SELECT count(*), count(DISTINCT (time, component, metric, labels)) FROM metrics WHERE code = 'm3'`).Scan(&samples, &distinct); err != nil {
		t.Fatal(err)
	}
	var reported int
	_ = db.QueryRow(ctx, `SELECT sum(samples) FROM metric_summaries WHERE code = 'm3'`).Scan(&reported)
	if samples != distinct || samples != reported || samples == 0 {
		t.Errorf("after the kill: %d samples stored, %d distinct, the summaries' answers hold %d", samples, distinct, reported)
	}

	// A phase of 1.2 s with the deployer's reads of the counter at its edges
	// (contracts.SUTEdge; at the end, two reads after it): the burner idles
	// (stopped, since the 5 s phase) before the phase, burns during it and
	// idles after it until "the next phase" burns again 0.3 s later — which the scrapes alone
	// would take for this phase's rate after its end, and take its last
	// second's work off it. Its CPU seconds are within 5 % of /proc; the
	// reads are stored with the scrapes.
	read := func() contracts.EdgeRead {
		v, err := pm.CPU("m4-sut")
		if err != nil || len(v) != 1 {
			t.Fatalf("read the burner's CPU: %v %v", v, err)
		}
		return contracts.EdgeRead{At: time.Now().UTC(), CPU: map[string]float64{"sut": v["m4-sut"]}}
	}
	time.Sleep(2200 * time.Millisecond)
	r0 := read()
	short0 := cpuSeconds(t, pid)
	signal(syscall.SIGCONT)
	time.Sleep(1200 * time.Millisecond)
	signal(syscall.SIGSTOP)
	shortEnd := time.Now().UTC()
	short1 := cpuSeconds(t, pid)
	r1 := read()
	time.Sleep(200 * time.Millisecond)
	r2 := read()
	time.Sleep(100 * time.Millisecond)
	signal(syscall.SIGCONT) // the next phase
	time.Sleep(2500 * time.Millisecond)
	for edge, reads := range map[string][]contracts.EdgeRead{contracts.EdgeStart: {r0}, contracts.EdgeEnd: {r1, r2}} {
		m := contracts.SUTEdge{Envelope: contracts.NewEnvelope("m4", contracts.SUTEdgeID("m4", "cfg-1-0", 1, edge), reads[0].At),
			Configuration: "cfg-1", Phase: "cfg-1-0", Attempt: 1, Edge: edge, Reads: reads}
		raw, _ := json.Marshal(m)
		if err := contracts.Validate(contracts.SchemaSUTEdge, raw); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(ctx, `INSERT INTO messages (id, code, subject, ts, payload) VALUES ($1, 'm4', $2, $3, $4)`,
			m.ID, contracts.TopicSUTEdge.For("m4"), m.TS, raw); err != nil {
			t.Fatal(err)
		}
	}
	addPhase(t, ctx, db, "m4", "Redis", `{"sut":true}`, r0.At, shortEnd)
	testenv.Eventually(t, 30*time.Second, func() error {
		if err := p.sweep(ctx); err != nil {
			return err
		}
		if len(summaries(t, ctx, db, "m4")) == 0 {
			return fmt.Errorf("no summaries yet")
		}
		return nil
	})
	short := summaries(t, ctx, db, "m4")["sut/cpu_seconds"]
	shortTruth := short1 - short0
	if short.value == nil {
		t.Fatalf("m4: cpu_seconds missing: %v", *short.missing)
	}
	t.Logf("1.2 s phase with edge reads: CPU seconds %.3f, /proc %.3f", *short.value, shortTruth)
	if d := *short.value - shortTruth; d > 0.05*shortTruth || d < -0.05*shortTruth {
		t.Errorf("1.2 s phase with edge reads: CPU seconds %.3f, /proc says %.3f (more than 5 %% apart)", *short.value, shortTruth)
	}
	var edgeRows int
	_ = db.QueryRow(ctx, `SELECT count(*) FROM metrics WHERE code = 'm4' AND metric = 'cpu_seconds' AND time IN ($1, $2, $3)`, r0.At, r1.At, r2.At).Scan(&edgeRows)
	if edgeRows != 3 {
		t.Errorf("%d of the 3 edge reads stored with the scrapes", edgeRows)
	}
	signal(syscall.SIGSTOP) // no phase reads it after this

	// Prometheus down: every figure missing with the reason, none 0; the
	// phase stays due for a re-pull.
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	stopped = true
	addPhase(t, ctx, db, "m2", "Redis", `{"sut":true}`, start, end)
	if err := p.sweep(ctx); err != nil {
		t.Fatal(err)
	}
	down := summaries(t, ctx, db, "m2")
	if len(down) != 4 {
		t.Errorf("%d summaries with Prometheus down, want 4: %v", len(down), down)
	}
	for k, r := range down {
		if r.value != nil || r.missing == nil || !strings.Contains(*r.missing, "Prometheus at "+srv.URL()+" unreachable") {
			t.Errorf("%s with Prometheus down: value %v, missing %v", k, r.value, r.missing)
		}
	}
	due, err := p.due(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 1 || due[0].code != "m2" || !due[0].pulled {
		t.Errorf("due after Prometheus went down: %+v, want m2 for a re-pull", due)
	}

	// A time-series database's phase is watched until its drain ended:
	// the generators' writes (here 5 ms of them) can fall between two
	// scrapes, and the database stores them after. The drain ends at the
	// first reading of the final total (1 s after the writes), not at the
	// last (3 s: the quiet seconds the drain waits for).
	writes := end.Add(-5 * time.Millisecond)
	addPhase(t, ctx, db, "m5", "VictoriaMetrics", `{"application":true}`, writes, end)
	for i, at := range []time.Time{writes.Add(-time.Second), end.Add(500 * time.Millisecond), end.Add(time.Second), end.Add(3 * time.Second)} {
		if _, err := db.Exec(ctx, `INSERT INTO ingest_readings (code, phase, attempt, shard, at, total, after_end, counter)
			VALUES ('m5', 'cfg-1-0', 1, 1, $1, $2, $3, 'vm_rows_inserted_total')`, at, 100*min(i, 2), at.After(end)); err != nil {
			t.Fatal(err)
		}
	}
	if due, err = p.due(ctx); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(due, func(ph endedPhase) bool { return ph.code == "m5" })
	same := func(a, b time.Time) bool { return a.Sub(b).Abs() <= time.Microsecond } // stored to the µs
	if i < 0 || !same(due[i].start, writes) || !same(due[i].end, end.Add(time.Second)) {
		t.Errorf("due tsdb phase: %+v, want its window from %s to its drain's end %s", due, writes, end.Add(time.Second))
	}
}

// The collector itself pulls when a phase's end is stored: with Prometheus
// unreachable it records every figure missing with the reason and goes on
// storing events.
func TestCollectorPullsWhenAPhaseEnds(t *testing.T) {
	port, err := procs.FreePort() // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	promURL := fmt.Sprintf("http://127.0.0.1:%d", port)
	t.Setenv("BENCHQ_PROMETHEUS_URL", promURL)
	e := newEnv(t)
	e.start()
	x := newExperiment(t, "mon1")
	x.plan.Configurations[0].SUT.Monitoring = &contracts.Monitoring{SUT: true}
	x.cfg = x.plan.Configurations[0]
	e.publish(x.planned(t))
	e.loadPhase(x)
	testenv.Eventually(t, wait, func() error {
		rows, err := e.rows(`SELECT component || '/' || metric || ': ' || coalesce(value::text, 'NULL') || ' ' || coalesce(missing, '')
			FROM metric_summaries WHERE code = 'mon1' ORDER BY position`)
		if err != nil {
			return err
		}
		want := "Prometheus at " + promURL + " unreachable"
		if len(rows) != 4 {
			return fmt.Errorf("%d summaries: %v", len(rows), rows)
		}
		for _, r := range rows {
			if !strings.Contains(r, ": NULL "+want) {
				return fmt.Errorf("summary %q, want NULL and %q", r, want)
			}
		}
		return nil
	})
	e.publish(x.phaseEvent(1, contracts.PhaseStarted))
	e.settled()
	e.expect("run phase stored", []string{"started"}, `SELECT status FROM phases WHERE code = 'mon1' AND phase = $1`, x.cfg.Phases[1].Name)
}

// killMidPull runs the collector binary against the results database with
// a proxy in front of Prometheus that holds its sixth query: with the
// first columns of code's phase stored and none of its summaries, it
// SIGKILLs the collector, then runs it again until the phase's summaries
// are written.
func killMidPull(t *testing.T, ctx context.Context, db *pgxpool.Pool, promURL, code string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "collector")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	target, _ := url.Parse(promURL)
	forward := httputil.NewSingleHostReverseProxy(target)
	forward.ErrorLog = log.New(io.Discard, "", 0) // the held query's cancellation is expected
	var queries atomic.Int32
	held, release := make(chan struct{}), make(chan struct{})
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/query_range" && queries.Add(1) == 6 {
			close(held)
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		forward.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	natsURL := testenv.NATS(t)
	testenv.Bus(t, ctx, natsURL) // declares the streams, which the collector waits for
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "-nats", natsURL, "-db", db.Config().ConnString())
		cmd.Env = append(os.Environ(), "BENCHQ_PROMETHEUS_URL="+proxy.URL, "BENCHQ_SCRAPE_INTERVAL=1s", "BENCHQ_METRICS_ADDR=")
		cmd.Stdout = testenv.Writer(t)
		cmd.Stderr = cmd.Stdout
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	first := start()
	select {
	case <-held:
	case <-time.After(time.Minute):
		t.Fatal("the collector did not pull within a minute")
	}
	var stored, sums int
	_ = db.QueryRow(ctx, `SELECT count(*) FROM metrics WHERE code = $1`, code).Scan(&stored)
	_ = db.QueryRow(ctx, `SELECT count(*) FROM metric_summaries WHERE code = $1`, code).Scan(&sums)
	if stored == 0 || sums != 0 {
		t.Fatalf("when killed: %d samples, %d summaries stored; want some samples and no summaries (mid-pull)", stored, sums)
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	close(release)
	start()
	testenv.Eventually(t, time.Minute, func() error {
		if n := len(summaries(t, ctx, db, code)); n == 0 {
			return fmt.Errorf("no summaries after the restart")
		}
		return nil
	})
}
