package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/obs"
	"github.com/benchq/benchq/internal/obs/obstest"
	"github.com/benchq/benchq/internal/plan"
	"github.com/benchq/benchq/internal/resultsdb"
	"github.com/benchq/benchq/internal/testenv"
	"github.com/benchq/benchq/internal/ycsb"
)

// wait bounds every poll: generous, the machine may be loaded.
const wait = 60 * time.Second

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// env is a collector's world: NATS, the results database, a publisher and a
// database pool for the assertions.
type env struct {
	t    *testing.T
	ctx  context.Context
	nats string
	db   string
	pub  *bus.Bus
	// agent publishes what a driver agent does (READY, intervals, finals),
	// signed by its run's key, as an agent's bus does.
	agent *bus.Bus
	pool  *pgxpool.Pool
	reg   *prometheus.Registry // the collector's metrics; nil: none
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	t.Cleanup(cancel)
	e := &env{t: t, ctx: ctx, db: testenv.Postgres(t), nats: testenv.NATS(t)}
	var err error
	if e.pub, err = bus.Connect(ctx, e.nats, "", "collector-test", testenv.Logger(t, "publisher")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.pub.Close)
	signer, err := contracts.NewSigner()
	if err != nil {
		t.Fatal(err)
	}
	e.agent = &bus.Bus{NC: e.pub.NC, JS: e.pub.JS, Log: e.pub.Log, Signer: signer}
	if err := e.pub.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	if e.pool, err = pgxpool.New(ctx, e.db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.pool.Close)
	if err := resultsdb.Migrate(ctx, e.pool); err != nil {
		t.Fatal(err)
	}
	return e
}

// start runs a collector until the returned stop is called (or t ends).
func (e *env) start() (stop func()) {
	e.t.Helper()
	log := testenv.Logger(e.t, "collector")
	return testenv.Go(e.t, func(ctx context.Context) error {
		return Run(ctx, Config{NATSURL: e.nats, DBURL: e.db, Batch: 50, Metrics: e.reg}, log)
	})
}

func (e *env) publish(subject string, m contracts.Message) {
	e.t.Helper()
	if err := e.publisher(subject).Publish(e.ctx, subject, m); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) publishRaw(subject, msgID string, data []byte) {
	e.t.Helper()
	if err := e.publisher(subject).PublishRaw(e.ctx, subject, msgID, data); err != nil {
		e.t.Fatal(err)
	}
}

// publisher is who publishes on subject: the agent (signing) for what
// driver agents say, else the services' bus.
func (e *env) publisher(subject string) *bus.Bus {
	if p, err := contracts.ParseSubject(subject); err == nil && contracts.Signed(p.Topic) {
		return e.agent
	}
	return e.pub
}

// settled waits until the collector's consumers have acknowledged (or
// terminated) every message of both streams: then whatever it stores is in
// the database.
func (e *env) settled() {
	e.t.Helper()
	e.settledWithin(wait)
}

func (e *env) settledWithin(d time.Duration) {
	e.t.Helper()
	testenv.Eventually(e.t, d, func() error {
		for stream, durable := range map[string]string{contracts.StreamEvents: "collector-events", contracts.StreamResults: "collector-results"} {
			s, err := e.pub.JS.Stream(e.ctx, stream)
			if err != nil {
				return err
			}
			si, err := s.Info(e.ctx)
			if err != nil {
				return err
			}
			c, err := e.pub.JS.Consumer(e.ctx, stream, durable)
			if err != nil {
				return fmt.Errorf("consumer %s: %w", durable, err)
			}
			ci, err := c.Info(e.ctx)
			if err != nil {
				return err
			}
			if ci.AckFloor.Stream != si.State.LastSeq || ci.NumAckPending != 0 {
				return fmt.Errorf("%s: ack floor %d of %d, %d unacknowledged (redelivered %d)",
					durable, ci.AckFloor.Stream, si.State.LastSeq, ci.NumAckPending, ci.NumRedelivered)
			}
		}
		return nil
	})
}

// query returns the first column of every row, as text.
func (e *env) query(sql string, args ...any) []string {
	e.t.Helper()
	out, err := e.rows(sql, args...)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func (e *env) rows(sql string, args ...any) ([]string, error) {
	rows, err := e.pool.Query(e.ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sql, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s *string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("%s: %w", sql, err)
		}
		if s == nil {
			out = append(out, "NULL")
		} else {
			out = append(out, *s)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", sql, err)
	}
	return out, nil
}

// expect compares the text rows of sql with want.
func (e *env) expect(what string, want []string, sql string, args ...any) {
	e.t.Helper()
	got := e.query(sql, args...)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		e.t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// experiment is a small planned experiment: Redis, 1000 rows loaded by two
// shards, then one benchmarking phase with one shard.
type experiment struct {
	code string
	plan plan.Plan
	cfg  plan.Configuration
}

func newExperiment(t *testing.T, code string) experiment {
	t.Helper()
	req := contracts.Request{SchemaVersion: 1, DBMS: []string{"Redis"}, SF: 0.001,
		LoadingPods: []int{2}, LoadingThreads: []int{2}, BenchmarkingPods: []int{1}, BenchmarkingThreads: []int{1}}
	p, err := plan.Expand(code, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Configurations) != 1 || len(p.Configurations[0].Phases) != 2 || len(p.Configurations[0].Phases[0].Shards) != 2 {
		t.Fatalf("unexpected plan shape: %+v", p)
	}
	return experiment{code: code, plan: p, cfg: p.Configurations[0]}
}

func (x experiment) planned(t *testing.T) (string, *contracts.Planned) {
	req, err := json.Marshal(x.plan.Settings)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := json.Marshal(x.plan)
	if err != nil {
		t.Fatal(err)
	}
	return contracts.Subject(contracts.SubjPlanned, x.code, "", ""),
		&contracts.Planned{Envelope: contracts.NewEnvelope(x.code, x.code+".planned", t0), Request: req, Plan: pl}
}

func (x experiment) sutReady() (string, *contracts.SUTReady) {
	return contracts.Subject(contracts.SubjSUTReady, x.code, "", ""), &contracts.SUTReady{
		Envelope:      contracts.NewEnvelope(x.code, x.code+".sut.ready", t0.Add(time.Second)),
		Configuration: x.cfg.Name, DBMS: x.cfg.DBMS, Backend: "local",
		Endpoint: contracts.Endpoint{Host: "127.0.0.1", Port: 7000},
		Info:     map[string]any{"version": "7.0.15", "cores": 2}, ReadyAfterMS: 1234,
	}
}

func (x experiment) phaseEvent(p int, status string) (string, *contracts.PhaseEvent) {
	ph := x.cfg.Phases[p]
	start := t0.Add(10 * time.Second)
	m := &contracts.PhaseEvent{
		Envelope:      contracts.NewEnvelope(x.code, fmt.Sprintf("%s.%s.a1.%s", x.code, ph.Name, status), start),
		Configuration: x.cfg.Name, Phase: ph.Name, Kind: ph.Kind, Status: status, Attempt: 1, Shards: len(ph.Shards), StartedAt: &start,
	}
	subj := contracts.SubjPhaseStarted
	if status == contracts.PhaseDone {
		end := start.Add(5 * time.Second)
		m.EndedAt, m.TS = &end, end
		subj = contracts.SubjPhaseDone
	}
	return contracts.Subject(subj, x.code, "", ""), m
}

func (x experiment) interval(p, shard int, elapsed int64) (string, *contracts.Interval) {
	ph := x.cfg.Phases[p]
	at := t0.Add(time.Duration(10+elapsed) * time.Second)
	return contracts.Subject(contracts.SubjInterval, x.code, ph.Name, strconv.Itoa(shard)), &contracts.Interval{
		Envelope: contracts.NewEnvelope(x.code, fmt.Sprintf("%s.%s.%d.a1.i%d", x.code, ph.Name, shard, elapsed), at),
		Phase:    ph.Name, Shard: shard, Attempt: 1, At: at, ElapsedS: elapsed, Operations: 100 * elapsed, OpsPerSec: 100,
		PerOp: map[string]map[string]float64{"INSERT": {"count": float64(100 * elapsed), "avg_us": 50}},
	}
}

func (x experiment) final(p, shard int) (string, *contracts.Final) {
	ph := x.cfg.Phases[p]
	y := ph.Shards[shard-1].YCSB
	start, end := t0.Add(10*time.Second), t0.Add(time.Duration(14+shard)*time.Second)
	op := "INSERT"
	if ph.Kind == contracts.KindRun {
		op = "READ"
	}
	firstOp, lastOp := start.Add(time.Duration(shard)*time.Millisecond), end.Add(-time.Millisecond)
	return contracts.Subject(contracts.SubjFinal, x.code, ph.Name, strconv.Itoa(shard)), &contracts.Final{
		Envelope:      contracts.NewEnvelope(x.code, fmt.Sprintf("%s.%s.%d.a1.final", x.code, ph.Name, shard), end),
		Configuration: x.cfg.Name, Phase: ph.Name, Kind: ph.Kind, Shard: shard, Attempt: 1,
		Agent: fmt.Sprintf("agent-%d", shard), Status: contracts.StatusOK, StartedAt: start, EndedAt: end,
		FirstOpAt: &firstOp, LastOpAt: &lastOp,
		Threads: y.Threads, Target: y.Target, RuntimeMS: float64(end.Sub(start).Milliseconds()), Throughput: 125.5,
		Operations: []contracts.OpResult{
			{Name: op, Count: y.OperationCount, AvgUS: 50, MinUS: 10, MaxUS: 900, P50US: 45, P95US: 120, P99US: 300, P999US: 800,
				ReturnCodes: map[string]int64{"OK": y.OperationCount}, Histogram: x.histogram(t0Histogram, y.OperationCount)},
			{Name: "CLEANUP", Count: int64(y.Threads), AvgUS: 5},
		},
		Stdout: "[OVERALL], Throughput(ops/sec), 125.5\n",
	}
}

// t0Histogram is the latency every operation of a test final took (µs).
const t0Histogram = 50

// histogram encodes n latencies of v µs, as an agent ships them.
func (experiment) histogram(v, n int64) string {
	h := ycsb.NewHistogram()
	_ = h.RecordValues(v, n)
	enc, err := ycsb.EncodeHistogram(h)
	if err != nil {
		panic(err)
	}
	return enc
}

// loadPhase publishes the load phase of x, both shards, as the scheduler and
// two agents would: started, two intervals per shard, the finals, done.
func (e *env) loadPhase(x experiment) {
	e.t.Helper()
	e.publish(x.phaseEvent(0, contracts.PhaseStarted))
	for shard := 1; shard <= 2; shard++ {
		for el := int64(1); el <= 2; el++ {
			e.publish(x.interval(0, shard, el))
		}
		e.publish(x.final(0, shard))
	}
	e.publish(x.phaseEvent(0, contracts.PhaseDone))
}

func TestCollectorStoresAnExperiment(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start()
	x := newExperiment(t, "c1")
	load, run := x.cfg.Phases[0].Name, x.cfg.Phases[1].Name

	e.publish(x.planned(t))
	e.publish(x.sutReady())
	e.loadPhase(x)
	end := t0.Add(time.Minute)
	e.publish(contracts.Subject(contracts.SubjExperimentDone, x.code, "", ""), &contracts.ExperimentEnd{
		Envelope: contracts.NewEnvelope(x.code, x.code+".end", end), Status: contracts.ExperimentDone, EndedAt: &end})
	e.settled()

	e.expect("experiments", []string{"c1 done 2026-11-21T10:00:00Z 2026-11-21T10:01:00Z Redis-2-2-16384-1 1000 [\"Redis\"]"},
		`SELECT concat_ws(' ', code, status, to_char(planned_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
			to_char(ended_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), plan->'configurations'->0->>'name', plan->>'recordcount', request->>'dbms') FROM experiments`)
	e.expect("configurations", []string{"c1 Redis-2-2-16384-1 Redis 1 127.0.0.1:7000 local 7.0.15 1234"},
		`SELECT concat_ws(' ', code, name, dbms, experiment_run, (endpoint->>'host') || ':' || (endpoint->>'port'), backend, info->>'version', ready_after_ms) FROM configurations`)
	// The summary's Connections section lists the backend among the facts,
	// as when it travelled in info.
	e.expect("configuration info", []string{"local 2"}, `SELECT concat_ws(' ', info->>'backend', info->>'cores') FROM configurations`)
	e.expect("phases", []string{fmt.Sprintf("c1 %s 1 load done 2 5", load)},
		`SELECT concat_ws(' ', code, phase, attempt, kind, status, shards, extract(epoch FROM ended_at - started_at)::int) FROM phases`)
	e.expect("shard_results", []string{
		fmt.Sprintf("%s 1 agent-1 ok 1 c1.%s.1.a1.final 125.5", load, load),
		fmt.Sprintf("%s 2 agent-2 ok 1 c1.%s.2.a1.final 125.5", load, load),
	}, `SELECT concat_ws(' ', phase, shard, agent, status, threads, message_id, throughput) FROM shard_results ORDER BY shard`)
	e.expect("shard_operations", []string{
		"1 CLEANUP 1 {}", "1 INSERT 500 {\"OK\": 500}", "2 CLEANUP 1 {}", "2 INSERT 500 {\"OK\": 500}",
	}, `SELECT concat_ws(' ', shard, operation, count, return_codes) FROM shard_operations ORDER BY shard, operation`)
	// The histogram as shipped, and the window of the shard.
	_, f1 := x.final(0, 1)
	e.expect("histograms and percentiles", []string{"CLEANUP NULL NULL NULL", "INSERT 45 800 " + f1.Operations[0].Histogram},
		`SELECT concat_ws(' ', operation, coalesce(nullif(p50_us, 0)::text, 'NULL'), coalesce(nullif(p999_us, 0)::text, 'NULL'),
			coalesce(histogram, 'NULL')) FROM shard_operations WHERE shard = 1 ORDER BY operation`)
	e.expect("window", []string{"1 2026-11-21T10:00:10.001Z 2026-11-21T10:00:14.999Z", "2 2026-11-21T10:00:10.002Z 2026-11-21T10:00:15.999Z"},
		`SELECT concat_ws(' ', shard, to_char(first_op_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
			to_char(last_op_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) FROM shard_results WHERE phase = $1 ORDER BY shard`, load)
	e.expect("intervals", []string{"1 1 100", "1 2 200", "2 1 100", "2 2 200"},
		`SELECT concat_ws(' ', shard, elapsed_s, operations) FROM intervals ORDER BY shard, elapsed_s`)
	// Every message is kept raw: planned, sut.ready, 2 phase events,
	// 4 intervals, 2 finals, the end.
	e.expect("messages", []string{"11"}, `SELECT count(*)::text FROM messages WHERE code = 'c1'`)
	e.expect("raw final", []string{"125.5"}, `SELECT payload->>'throughput' FROM messages WHERE id = $1`, "c1."+load+".1.a1.final")

	// The benchmarking phase follows; a late "started" (redelivered after
	// "done") must not move the phase back.
	e.publish(x.phaseEvent(1, contracts.PhaseStarted))
	e.publish(x.final(1, 1))
	e.publish(x.phaseEvent(1, contracts.PhaseDone))
	late, started := x.phaseEvent(1, contracts.PhaseStarted)
	started.ID = "c1." + run + ".a1.started-again"
	e.publish(late, started)
	e.settled()
	e.expect("phases after run", []string{load + " done", run + " done"}, `SELECT phase || ' ' || status FROM phases ORDER BY phase`)

	// A saturation step's judgement is a row of its own; its p95 was not
	// measured: NULL, never 0.
	subj, pe := x.phaseEvent(1, contracts.PhaseDone)
	pe.ID, pe.Attempt = "c1."+run+".a2.done", 2
	p99 := 4.5
	pe.Saturation = &contracts.SaturationStep{Step: 1, Role: contracts.RoleStep, Offered: 1000, Shards: 2, Threads: 16, Seconds: 17,
		Achieved: 990, Goodput: 985, ErrorShare: 0.5, P99MS: &p99, CV: 2.5, WorstSecond: 950, Busy: 12, Verdict: contracts.VerdictPass,
		Why: "goodput 985 ops/s ≥ 95 % of 1000", Next: "the search is over", Knee: &contracts.Knee{Offered: 1000, Goodput: 985, Step: 1}}
	e.publish(subj, pe)
	e.settled()
	e.expect("saturation_steps", []string{run + " 2 1 step 1000 985 NULL 4.5 pass 1000"},
		`SELECT concat_ws(' ', phase, attempt, step, role, offered, goodput, coalesce(p95_ms::text, 'NULL'), p99_ms, verdict, knee->>'offered') FROM saturation_steps`)
}

// The collector's /metrics: the messages it stored by stream (planned,
// sut.ready and two phase events; four intervals and two finals), one row
// each, the batches timed, and no lag once settled.
func TestCollectorServesItsMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.reg = obs.NewRegistry()
	addr := obstest.Serve(t, e.reg)
	e.start()
	x := newExperiment(t, "c9")
	e.publish(x.planned(t))
	e.publish(x.sutReady())
	e.loadPhase(x)
	e.settled()
	testenv.Eventually(t, wait, func() error {
		if missing := obstest.Lacks(obstest.Get(t, addr),
			`benchq_collector_messages_stored_total{stream="BENCHQ_EVENTS"} 4`,
			`benchq_collector_messages_stored_total{stream="BENCHQ_RESULTS"} 6`,
			`benchq_collector_rows_stored_total 10`,
			`benchq_collector_batch_seconds_count{stream="BENCHQ_RESULTS"}`,
			`benchq_collector_consumer_lag{consumer="collector-events",stream="BENCHQ_EVENTS"} 0`,
			`benchq_collector_consumer_lag{consumer="collector-results",stream="BENCHQ_RESULTS"} 0`,
		); len(missing) > 0 {
			return fmt.Errorf("/metrics lacks %q", missing)
		}
		return nil
	})
}

func TestCollectorIsIdempotent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	stop := e.start()
	x := newExperiment(t, "c2")
	load, run := x.cfg.Phases[0].Name, x.cfg.Phases[1].Name
	e.publish(x.planned(t))
	e.publish(x.sutReady())
	e.loadPhase(x)
	e.settled()

	results := `SELECT concat_ws(' ', phase, shard, throughput, message_id) FROM shard_results ORDER BY phase, shard`
	operations := `SELECT concat_ws(' ', phase, shard, operation, count) FROM shard_operations ORDER BY phase, shard, operation`
	wantResults := e.query(results)
	wantOps := e.query(operations)
	if len(wantResults) != 2 || len(wantOps) != 4 {
		t.Fatalf("before the duplicates: results %q, operations %q", wantResults, wantOps)
	}

	// The same final again under another Nats-Msg-Id, so JetStream does
	// not de-duplicate it: the collector must.
	subj, f := x.final(0, 1)
	raw, _ := json.Marshal(f)
	e.publishRaw(subj, "redelivered-1", raw)
	// And a changed copy with the same envelope id: the first version wins.
	f.Throughput, f.Operations = 999, []contracts.OpResult{{Name: "INSERT", Count: 1}, {Name: "UPDATE", Count: 7}}
	raw, _ = json.Marshal(f)
	e.publishRaw(subj, "redelivered-2", raw)
	e.settled()
	e.expect("shard_results after duplicates", wantResults, results)
	e.expect("shard_operations after duplicates", wantOps, operations)
	e.expect("messages after duplicates", []string{"10"}, `SELECT count(*)::text FROM messages`)

	// A restart: what was stored is not stored again, and what was published
	// while the collector was down is stored when it is back.
	stop()
	e.publish(x.phaseEvent(1, contracts.PhaseStarted))
	e.publish(x.interval(1, 1, 1))
	e.publish(x.final(1, 1))
	e.publish(x.phaseEvent(1, contracts.PhaseDone))
	e.start()
	e.settled()
	e.expect("shard_results after restart", append(wantResults, run+" 1 125.5 c2."+run+".1.a1.final"), results)
	e.expect("shard_operations after restart", append(wantOps, run+" 1 CLEANUP 1", run+" 1 READ 1000"), operations)
	e.expect("phases after restart", []string{load + " done", run + " done"}, `SELECT phase || ' ' || status FROM phases ORDER BY phase`)
	e.expect("intervals after restart", []string{"5"}, `SELECT count(*)::text FROM intervals`)
	e.expect("messages after restart", []string{"14"}, `SELECT count(*)::text FROM messages`)
}

func TestCollectorDropsMalformedMessages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start()
	x := newExperiment(t, "c3")
	e.publishRaw("benchq.exp.x.phase.done", "nonsense-1", []byte(`{"nonsense":1}`))
	e.publishRaw("benchq.results.x.p.1.final", "nonsense-2", []byte(`not even json`))
	e.publishRaw("benchq.exp.x.whatever", "nonsense-3", []byte(`{}`)) // no schema for the subject
	e.publish(x.planned(t))
	e.publish(x.phaseEvent(0, contracts.PhaseStarted))
	e.publish(x.final(0, 1))
	e.settled() // the malformed ones are terminated, not pending

	e.expect("experiments", []string{"c3"}, `SELECT code FROM experiments`)
	e.expect("shard_results", []string{"1"}, `SELECT shard::text FROM shard_results`)
	e.expect("messages", []string{"c3.planned", "c3." + x.cfg.Phases[0].Name + ".a1.started", "c3." + x.cfg.Phases[0].Name + ".1.a1.final"}, `SELECT id FROM messages ORDER BY id DESC`)

	// Still serving.
	e.publish(x.sutReady())
	e.settled()
	e.expect("configurations", []string{"local"}, `SELECT backend FROM configurations`)
}

// There is no foreign key to experiments: results of an experiment whose
// planned event is not stored yet are kept (no GO named the shard's
// holder: holders.go).
func TestCollectorStoresResultsBeforeThePlan(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start()
	x := newExperiment(t, "c4")
	e.publish(x.final(0, 2))
	e.publish(x.interval(0, 2, 1))
	e.settled()
	e.expect("shard_results", []string{"c4 2"}, `SELECT code || ' ' || shard FROM shard_results`)
	e.expect("shard_operations", []string{"2"}, `SELECT count(*)::text FROM shard_operations`)
	e.expect("intervals", []string{"1"}, `SELECT count(*)::text FROM intervals`)
	e.expect("experiments before the plan", nil, `SELECT code FROM experiments`)

	e.publish(x.planned(t))
	e.settled()
	e.expect("experiments", []string{"c4 running"}, `SELECT code || ' ' || status FROM experiments`)
	e.expect("shard_results still", []string{"c4 2"}, `SELECT code || ' ' || shard FROM shard_results`)
}

// Text with a NUL character (PostgreSQL cannot store it in text or jsonb; a
// driver's output may well hold one) must neither hold back the messages
// fetched in the same batch nor be redelivered forever: the collector stores
// it with U+FFFD in place of the NUL, so nothing is lost.
func TestCollectorPoisonMessageDoesNotBlockItsBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := newExperiment(t, "c5")
	subj, bad := x.final(0, 1)
	bad.Error, bad.Status = "driver failed: \x00garbage", contracts.StatusFailed
	e.publish(x.phaseEvent(0, contracts.PhaseStarted))
	e.publish(subj, bad)
	e.publish(x.final(0, 2))
	e.start() // after publishing, so that both arrive in one batch
	// A healthy collector stores within about a second; 20s is generous.
	testenv.Eventually(t, 20*time.Second, func() error {
		got, err := e.rows(`SELECT shard::text FROM shard_results`)
		if err != nil {
			return err
		}
		if len(got) != 2 {
			return fmt.Errorf("not both finals stored (shard_results: %q)", got)
		}
		return nil
	})
	e.settledWithin(20 * time.Second)
	e.expect("NUL replaced", []string{"driver failed: \ufffdgarbage"}, `SELECT error FROM shard_results WHERE shard = 1`)
}

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	db, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The views are made once: a second migration leaves them (and their
	// readers) alone.
	var made [2]time.Time
	for i := range 2 {
		if err := resultsdb.Migrate(ctx, db); err != nil {
			t.Fatalf("migrate #%d: %v", i+1, err)
		}
		if err := db.QueryRow(ctx, `SELECT made_at FROM schema_views WHERE name = 'phase_figures'`).Scan(&made[i]); err != nil {
			t.Fatalf("after migrate #%d: %v", i+1, err)
		}
	}
	if !made[0].Equal(made[1]) {
		t.Errorf("the second migration made phase_figures again (%v, then %v)", made[0], made[1])
	}
	// A view not as this build defines it (an older build migrated) is
	// waited for by name, and made again by the next migration.
	if err := resultsdb.WaitMigrated(ctx, db, nil); err != nil {
		t.Fatalf("migrated, but WaitMigrated: %v", err)
	}
	if _, err := db.Exec(ctx, `UPDATE schema_views SET sha256 = 'older' WHERE name = 'phase_figures'`); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 5*time.Second)
	err = resultsdb.WaitMigrated(short, db, nil)
	cancelShort()
	if err == nil || !strings.Contains(err.Error(), "views not made as this build defines them: phase_figures") {
		t.Errorf("with an older phase_figures, WaitMigrated: %q", err)
	}
	if err := resultsdb.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := resultsdb.WaitMigrated(ctx, db, nil); err != nil {
		t.Errorf("migrated again, but WaitMigrated: %v", err)
	}
	var versions []string
	rows, _ := db.Query(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	for rows.Next() {
		var v string
		_ = rows.Scan(&v)
		versions = append(versions, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(versions) != "[0001_init 0002_histograms 0003_metrics 0004_metric_summaries 0005_views 0006_saturation 0007_roles 0008_shard_holders 0009_ingest 0011_schema_views 0012_no_summary_figures 0013_reader_no_temp]" {
		t.Errorf("schema_migrations = %v", versions)
	}
	var tables int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'
		AND table_name IN ('messages', 'experiments', 'configurations', 'phases', 'shard_results', 'shard_operations', 'intervals', 'saturation_steps')`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 8 {
		t.Errorf("%d of 8 tables", tables)
	}
}

// Collectors that start at once on an empty database (several replicas, or a
// restart racing the old process) must all come up.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	admin, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for round := range 5 {
		name := fmt.Sprintf("concurrent%d", round)
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
			t.Fatal(err)
		}
		cfg := admin.Config().Copy()
		cfg.ConnConfig.Database = name
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				db, err := pgxpool.NewWithConfig(ctx, cfg)
				if err != nil {
					errs <- err
					return
				}
				defer db.Close()
				if err := resultsdb.Migrate(ctx, db); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("round %d: concurrent migrate: %v", round, err)
		}
	}
}

// Only a NUL character is replaced: the six characters \u0000 written out in
// a driver's output (a backslash, then u0000) are text like any other.
func TestCollectorKeepsTextThatSpellsOutANUL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start()
	x := newExperiment(t, "c6")
	subj, f := x.final(0, 1)
	f.Stdout = `path C:\u0000 and a real NUL: ` + "\x00"
	e.publish(x.phaseEvent(0, contracts.PhaseStarted))
	e.publish(subj, f)
	e.settled()
	e.expect("stdout", []string{`path C:\u0000 and a real NUL: ` + "\ufffd"}, `SELECT stdout FROM shard_results`)
	e.expect("raw message", []string{`path C:\u0000 and a real NUL: ` + "\ufffd"}, `SELECT payload->>'stdout' FROM messages WHERE subject LIKE '%.final'`)
}

// Only the run the GO names as a shard's holder may report for it: another
// agent's final or interval — signed by its own key, or carrying the
// holder's key with a signature that does not match, or unsigned — is
// refused (terminated, stored nowhere), and the holder's own final, which
// comes after the forgery under the same message id, is stored.
func TestCollectorStoresOnlyTheShardHoldersResults(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start()
	x := newExperiment(t, "c7")
	load := x.cfg.Phases[0].Name
	rogue, _ := contracts.NewSigner()
	rogueBus := &bus.Bus{NC: e.pub.NC, JS: e.pub.JS, Log: e.pub.Log, Signer: rogue}
	e.publish(x.planned(t))
	e.publish(contracts.TopicBarrierGo.For("c7"), &contracts.BarrierGo{
		Envelope: contracts.NewEnvelope("c7", "c7."+load+".a1.go", t0.Add(9*time.Second)), Phase: load, Attempt: 1, StartAt: t0.Add(10 * time.Second),
		Agents: []string{"agent-1", "agent-2"}, Instances: []string{e.agent.Signer.Public(), e.agent.Signer.Public()},
	})
	e.publish(x.phaseEvent(0, contracts.PhaseStarted))

	// Signed by the rogue's own key.
	subj, forged := x.final(0, 1)
	forged.Throughput = 999999
	if err := rogueBus.Publish(e.ctx, subj, forged); err != nil {
		t.Fatal(err)
	}
	isubj, iv := x.interval(0, 1, 1)
	iv.OpsPerSec = 999999
	if err := rogueBus.Publish(e.ctx, isubj, iv); err != nil {
		t.Fatal(err)
	}
	// The holder's key, the rogue's signature.
	data, _ := json.Marshal(forged)
	_, sig, _ := rogue.Sign(subj, data)
	m := &nats.Msg{Subject: subj, Data: data, Header: nats.Header{}}
	m.Header.Set(contracts.SignerHeader, e.agent.Signer.Public())
	m.Header.Set(contracts.SignatureHeader, sig)
	if _, err := e.pub.JS.PublishMsg(e.ctx, m, jetstream.WithMsgID("forged-as-holder")); err != nil {
		t.Fatal(err)
	}
	// Unsigned.
	if err := e.pub.PublishRaw(e.ctx, subj, "unsigned", data); err != nil {
		t.Fatal(err)
	}
	e.settled()
	e.expect("nothing of the forgeries", nil, `SELECT shard::text FROM shard_results UNION ALL SELECT shard::text FROM intervals UNION ALL SELECT id FROM messages WHERE subject LIKE 'benchq.results.%'`)

	// The holder's own, after them.
	e.publish(x.final(0, 1))
	e.publish(x.interval(0, 1, 1))
	e.settled()
	e.expect("the holder's final", []string{"agent-1 125.5"}, `SELECT agent || ' ' || throughput FROM shard_results`)
	e.expect("the holder's interval", []string{"100"}, `SELECT ops_per_sec::text FROM intervals`)
	e.expect("holders", []string{"1 agent-1", "2 agent-2"}, `SELECT shard || ' ' || agent FROM shard_holders ORDER BY shard`)
}

// The events and the results are read by two consumers, so a collector
// started on a backlog may come to a shard's final before the GO that names
// its holder: the final waits for it (holders.go). Whatever the order, the
// holder's final is stored and another run's refused.
func TestCollectorWaitsForTheGOThatNamesTheHolder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := newExperiment(t, "c8")
	load := x.cfg.Phases[0].Name
	rogue, _ := contracts.NewSigner()
	rogueBus := &bus.Bus{NC: e.pub.NC, JS: e.pub.JS, Log: e.pub.Log, Signer: rogue}
	e.publish(x.planned(t))
	// A backlog of events before the GO, so that the results are read first.
	for i := range 300 {
		e.publish(contracts.TopicSUTRemoved.For("c8"), &contracts.SUTRemoved{Envelope: contracts.NewEnvelope("c8", fmt.Sprintf("c8.filler.%d", i), t0), Configuration: "none"})
	}
	e.publish(contracts.TopicBarrierGo.For("c8"), &contracts.BarrierGo{
		Envelope: contracts.NewEnvelope("c8", "c8."+load+".a1.go", t0.Add(9*time.Second)), Phase: load, Attempt: 1, StartAt: t0.Add(10 * time.Second),
		Agents: []string{"agent-1", "agent-2"}, Instances: []string{e.agent.Signer.Public(), e.agent.Signer.Public()},
	})
	subj, forged := x.final(0, 1)
	forged.Throughput = 999999
	if err := rogueBus.Publish(e.ctx, subj, forged); err != nil {
		t.Fatal(err)
	}
	e.publish(x.final(0, 1))
	e.start()
	e.settled()
	e.expect("the holder's final alone", []string{"agent-1 125.5"}, `SELECT agent || ' ' || throughput FROM shard_results`)
}

// A shard whose driver printed no summary (stopped, killed, failed before
// it) has no runtime in its final, and no rate: both are stored NULL, not
// 0. A measured rate of 0 over a runtime is stored as it is.
func TestAShardWithoutItsSummaryStoresNoFigures(t *testing.T) {
	if r, tp := figures(&contracts.Final{Status: contracts.StatusFailed}); r != nil || tp != nil {
		t.Errorf("no runtime: %v, %v; want NULL, NULL", r, tp)
	}
	if r, tp := figures(&contracts.Final{Status: contracts.StatusFailed, RuntimeMS: 2500}); r != 2500.0 || tp != 0.0 {
		t.Errorf("2.5 s without an operation: %v, %v; want 2500, 0", r, tp)
	}
}

// An operation without latencies (a TPC-C loader's rows of a table) stores
// NULL, not 0; one with any latency or a histogram stores them as given.
func TestUntimedOperationsStoreNoLatency(t *testing.T) {
	if got := latencies(contracts.OpResult{Name: "customer", Count: 30000}); slices.ContainsFunc(got, func(v any) bool { return v != nil }) {
		t.Errorf("untimed: %v, want 7 NULLs", got)
	}
	if got := latencies(contracts.OpResult{Name: "CLEANUP", Count: 8, AvgUS: 5}); got[0] != 5.0 || got[5] != 0.0 {
		t.Errorf("timed: %v, want avg 5 and the zeros as given", got)
	}
	if got := latencies(contracts.OpResult{Name: "READ", Count: 1, Histogram: "HISTFAAAA"}); got[0] != 0.0 {
		t.Errorf("with a histogram: %v, want the values as given", got)
	}
}
