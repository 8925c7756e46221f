package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/plan"
	"github.com/benchq/benchq/internal/testenv"
	"github.com/benchq/benchq/internal/ycsb"
)

// phaseWait bounds one phase of these small runs (JVM start included);
// generous, the machine may be busy.
const phaseWait = 3 * time.Minute

// stack is NATS with n driver agents serving shard jobs, and the test in
// the scheduler's seat.
type stack struct {
	t   *testing.T
	ctx context.Context
	bus *bus.Bus
	// regs are the agents' metrics registries (Config.Metrics), as main
	// serves them.
	regs []*prometheus.Registry
}

// testStandbys is the test agents' standby JVMs: fewer than the default,
// so that the package's tests, beside the others on two cores, start fewer
// JVMs (the count itself is TestAStandbyRunsOneJobUnlessReused's).
const testStandbys = 2

// noStandby is newStack's option for tests whose jobs take no standby JVM
// (TPC-C runs in the agent; a job that arrives before the idle agent's
// standbys are started starts its own JVM): the standbys would only be
// started and killed.
func noStandby(c *Config) { c.NoStandby = true }

func newStack(t *testing.T, agents int, opts ...func(*Config)) *stack {
	t.Helper()
	cfg := Config{Java: "java", YCSBLib: testenv.YCSBLib(t), Workloads: "ycsb/workloads", Standbys: testStandbys}
	for _, o := range opts {
		o(&cfg)
	}
	return startAgents(t, agents, 10*time.Minute, cfg)
}

// startAgents starts NATS and n agents configured as base (named agent-1
// ... agent-n), bounded by timeout.
func startAgents(t *testing.T, n int, timeout time.Duration, base Config) *stack {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	url := testenv.NATS(t)
	b := testenv.Bus(t, ctx, url)
	s := &stack{t: t, ctx: ctx, bus: b}
	for i := range n {
		cfg := base
		cfg.NATSURL, cfg.Name = url, fmt.Sprintf("agent-%d", i+1)
		cfg.Metrics = prometheus.NewPedanticRegistry()
		s.regs = append(s.regs, cfg.Metrics)
		log := testenv.Logger(t, cfg.Name)
		testenv.Go(t, func(ctx context.Context) error { return Run(ctx, cfg, log) })
	}
	return s
}

// runPhase does what the scheduler does for one phase: publish its shard
// jobs, wait for every READY, publish GO half a second ahead, and collect
// the finals (keyed by shard).
func (s *stack) runPhase(jobs []contracts.ShardJob) map[int]*contracts.Final {
	s.t.Helper()
	code, phase := jobs[0].Code, jobs[0].Phase
	ready, finals, unsubscribe := s.listen(code, phase)
	defer unsubscribe()
	for i := range jobs {
		if err := s.bus.Publish(s.ctx, contracts.SubjShard, &jobs[i]); err != nil {
			s.t.Fatal(err)
		}
	}
	deadline := time.After(phaseWait)
	got := map[int]*contracts.Final{}
	readyShards := map[int]bool{}
	for len(got) < len(jobs) {
		select {
		case m := <-ready:
			var r contracts.BarrierReady
			if err := json.Unmarshal(m.Data, &r); err != nil || r.Phase != phase {
				continue
			}
			readyShards[r.Shard] = true
			if len(readyShards) == len(jobs) {
				s.publishGo(code, phase, 1)
			}
		case m := <-finals:
			var f contracts.Final
			if err := bus.Decode(contracts.SchemaFinal, m.Data, &f); err != nil {
				s.t.Fatalf("final: %v", err)
			}
			got[f.Shard] = &f
		case <-deadline:
			s.t.Fatalf("phase %s: %d of %d finals within %s (READY: %v)", phase, len(got), len(jobs), phaseWait, readyShards)
		}
	}
	for shard, f := range got {
		if f.Status != contracts.StatusOK {
			s.t.Fatalf("phase %s shard %d failed: %s", phase, shard, f.Error)
		}
	}
	return got
}

// listen subscribes to the READYs of experiment code and the finals of its
// phase, before the test publishes what they answer, until unsubscribe.
func (s *stack) listen(code, phase string) (ready, finals chan *nats.Msg, unsubscribe func()) {
	s.t.Helper()
	ready, finals = make(chan *nats.Msg, 64), make(chan *nats.Msg, 64)
	stopReady, err := s.bus.Listen(ready, contracts.TopicBarrierReady.For(code))
	if err != nil {
		s.t.Fatal(err)
	}
	stopFinals, err := s.bus.Listen(finals, contracts.Subject(contracts.SubjFinal, code, phase, "*"))
	if err != nil {
		stopReady()
		s.t.Fatal(err)
	}
	return ready, finals, func() { stopReady(); stopFinals() }
}

// publishGo opens phase's barrier half a second ahead, as the scheduler does.
func (s *stack) publishGo(code, phase string, attempt int) {
	s.t.Helper()
	if err := s.bus.PublishGo(s.ctx, code, phase, attempt, time.Now().Add(500*time.Millisecond)); err != nil {
		s.t.Fatal(err)
	}
}

// phaseJobs are the shard jobs the scheduler would send for phase p of the
// request's only configuration.
func phaseJobs(t *testing.T, code string, req contracts.Request, p int, ep contracts.Endpoint) []contracts.ShardJob {
	t.Helper()
	req.SchemaVersion = 1
	pl, err := plan.Expand(code, req)
	if err != nil {
		t.Fatal(err)
	}
	c := pl.Configurations[0]
	ph := c.Phases[p]
	var jobs []contracts.ShardJob
	for k, sh := range ph.Shards {
		jobs = append(jobs, contracts.ShardJob{
			Envelope:      contracts.NewEnvelope(code, contracts.ShardJobID(code, ph.Name, k+1, 1), time.Now()),
			Configuration: c.Name, Phase: ph.Name, Kind: ph.Kind, Shard: k + 1, Shards: len(ph.Shards), Attempt: 1,
			Engine: "ycsb", DBMS: c.DBMS, Endpoint: ep, TimeoutS: 120, YCSB: sh.YCSB, TPCC: sh.TPCC,
		})
		if sh.TPCC != nil {
			jobs[k].Engine = "benchbase"
		}
	}
	return jobs
}

// sut is a real database under test: its endpoint, how to empty it and how
// many records it holds.
type sut struct {
	dbms  string
	ep    contracts.Endpoint
	reset func() error
	count func() (int64, error)
}

func redisSUT(t *testing.T) sut {
	t.Helper()
	if _, err := localdb.RedisBinary(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r, err := localdb.StartRedis(ctx, dir, 0, localdb.RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := r.Stop(ctx); err != nil {
			t.Errorf("stop redis: %v", err)
		}
	})
	cmd := func(args ...string) (string, error) { return localdb.RedisCommand(t.Context(), r.Addr(), args...) }
	entry, _ := catalog.Lookup("Redis")
	return sut{
		dbms: "Redis", ep: entry.Endpoint("127.0.0.1", r.Port),
		reset: func() error { _, err := cmd("FLUSHALL"); return err },
		count: func() (int64, error) {
			// Data keys: every key but the binding's scan index, which must
			// hold every data key too.
			keys, err := cmd("DBSIZE")
			if err != nil {
				return 0, err
			}
			indexed, err := cmd("ZCARD", "_indices")
			if err != nil {
				return 0, err
			}
			n, _ := strconv.ParseInt(keys, 10, 64)
			i, _ := strconv.ParseInt(indexed, 10, 64)
			if n > 0 && n-1 != i {
				return 0, fmt.Errorf("%d keys but %d in the scan index", n, i)
			}
			return i, nil
		},
	}
}

func postgresSUT(t *testing.T) sut {
	t.Helper()
	dbURL := testenv.Postgres(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	entry, _ := catalog.Lookup("PostgreSQL")
	ep := entry.Endpoint("127.0.0.1", port)
	ep.Database, ep.User, ep.JDBCURL = strings.TrimPrefix(u.Path, "/"), u.User.Username(), ""
	exec := func(sql string, dest ...any) error {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		if len(dest) > 0 {
			return conn.QueryRow(ctx, sql).Scan(dest...)
		}
		_, err = conn.Exec(ctx, sql)
		return err
	}
	for _, stmt := range entry.Schema("ycsb") {
		if err := exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	return sut{
		dbms: "PostgreSQL", ep: ep,
		reset: func() error { return exec("TRUNCATE usertable") },
		count: func() (n int64, err error) { err = exec("SELECT count(*) FROM usertable", &n); return n, err },
	}
}

// insertsOK adds up the INSERTs that returned OK, and fails on any other
// return code: a duplicate key is an ERROR in the JDBC binding.
func insertsOK(t *testing.T, finals map[int]*contracts.Final) int64 {
	t.Helper()
	var n int64
	for shard, f := range finals {
		for _, op := range f.Operations {
			if op.Name != "INSERT" {
				continue
			}
			for rc, c := range op.ReturnCodes {
				if rc != "OK" {
					t.Errorf("shard %d: %d INSERTs returned %s", shard, c, rc)
				}
			}
			n += op.ReturnCodes["OK"]
		}
	}
	return n
}

// Workloads that insert while benchmarking (D, E) with 2 and 3 benchmarking
// shards on one key space: every shard inserts its own new keys, so after
// the run the store holds exactly the loaded records plus every successful
// insert, and no insert hit an existing key. Each shard also ships its
// histograms and its measured window.
func TestShardsInsertWithoutCollisions(t *testing.T) {
	t.Parallel()
	const records = 2000
	for name, newSUT := range map[string]func(*testing.T) sut{"Redis": redisSUT, "PostgreSQL": postgresSUT} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := newSUT(t)
			// Redis's agents run each shard on the JVM of the last
			// (-reuse-jvm), PostgreSQL's each on a fresh one.
			reuse := name == "Redis"
			s := newStack(t, 3, func(c *Config) { c.ReuseJVM = reuse })
			var driverJobs []int // of every final
			zero := 0
			for _, wl := range []string{"d", "e"} {
				for _, shards := range []int{2, 3} {
					name := fmt.Sprintf("%s-%s-%d", strings.ToLower(db.dbms), wl, shards)
					t.Run(name, func(t *testing.T) {
						// 2,000 operations: about 100 inserts (5 % of D's and
						// E's), some 30 a shard, for the collision check.
						req := contracts.Request{DBMS: []string{db.dbms}, SF: records / 1e6, Operations: 0.002, Workload: wl,
							LoadingPods: []int{2}, LoadingThreads: []int{4}, BenchmarkingPods: []int{shards}, BenchmarkingThreads: []int{2 * shards},
							StatusInterval: 1}
						if wl == "e" {
							req.TargetBase = &zero // scans as fast as they go; D runs throttled (intended latencies)
						} else {
							base := 6000
							req.TargetBase = &base
						}
						if err := db.reset(); err != nil {
							t.Fatal(err)
						}
						load := phaseJobs(t, name, req, 0, db.ep)
						watch := s.watchDriverMetrics(load[0].Phase)
						for shard, f := range s.runPhase(load) {
							checkJobTaken(t, shard, f)
							driverJobs = append(driverJobs, f.DriverJob)
						}
						watch.check(t, "loader")
						if n, err := db.count(); err != nil || n != records {
							t.Fatalf("after loading: %d records (%v), want %d", n, err, records)
						}
						finals := s.runPhase(phaseJobs(t, name, req, 1, db.ep))
						inserted := insertsOK(t, finals)
						n, err := db.count()
						if err != nil {
							t.Fatal(err)
						}
						t.Logf("%s: %d loaded + %d inserted by %d shards = %d records", name, records, inserted, shards, n)
						if n != records+inserted {
							t.Errorf("%d records after the run, want %d loaded + %d inserted = %d", n, records, inserted, records+inserted)
						}
						for shard, f := range finals {
							checkMeasurements(t, shard, f, wl == "d")
							checkJobTaken(t, shard, f)
							driverJobs = append(driverJobs, f.DriverJob)
						}
					})
				}
			}
			// 18 jobs. Reused, an agent's JVM stays for its later jobs: at
			// most its standbys and one started with an early job are
			// started. Else every job has a JVM of its own.
			starts, later := s.driverStarts(), 0
			for _, j := range driverJobs {
				if j != 1 {
					later++
				}
			}
			switch {
			case len(driverJobs) != 18:
				t.Errorf("%d finals, want 18", len(driverJobs))
			case reuse && (starts > (testStandbys+1)*len(s.regs) || later == 0):
				t.Errorf("reused: %d JVMs started for 18 jobs on %d agents (want at most %d), %d jobs on a used JVM (driver_job %v)",
					starts, len(s.regs), (testStandbys+1)*len(s.regs), later, driverJobs)
			case !reuse && (starts < 18 || later != 0):
				t.Errorf("not reused: %d JVMs started for 18 jobs, %d jobs on a used JVM (driver_job %v)", starts, later, driverJobs)
			}
		})
	}
}

// checkJobTaken checks what a YCSB final says of its job's start: when the
// agent took the job (before GO was written and the first operation) and
// whether a JVM was ready for it, which one that ran an earlier job was.
func checkJobTaken(t *testing.T, shard int, f *contracts.Final) {
	t.Helper()
	switch {
	case f.JobAt == nil:
		t.Errorf("shard %d: no job_at", shard)
	case f.JobAt.After(f.StartedAt) || (f.FirstOpAt != nil && f.JobAt.After(*f.FirstOpAt)):
		t.Errorf("shard %d: job taken at %s, after GO was written (%s) or its first operation (%v)", shard, f.JobAt, f.StartedAt, f.FirstOpAt)
	}
	switch {
	case f.DriverStandby == nil:
		t.Errorf("shard %d: no driver_standby", shard)
	case f.DriverJob > 1 && !*f.DriverStandby:
		t.Errorf("shard %d: job %d of its JVM, yet driver_standby false (a JVM started for it)", shard, f.DriverJob)
	}
}

// driverStarts is how many driver processes the agents started.
func (s *stack) driverStarts() int {
	s.t.Helper()
	n := 0.0
	for _, reg := range s.regs {
		mfs, err := reg.Gather()
		if err != nil {
			s.t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "benchq_agent_driver_starts_total" {
				n += mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
	}
	return int(n)
}

// checkMeasurements: every measured operation carries its histogram, which
// holds exactly its operations; the window is set; intended-start latencies
// exist exactly when the shard had a target.
func checkMeasurements(t *testing.T, shard int, f *contracts.Final, throttled bool) {
	t.Helper()
	if f.FirstOpAt == nil || f.LastOpAt == nil || f.LastOpAt.Before(*f.FirstOpAt) || f.FirstOpAt.Before(f.StartedAt) {
		t.Errorf("shard %d: window %v … %v (started %v)", shard, f.FirstOpAt, f.LastOpAt, f.StartedAt)
	}
	intended := false
	for _, op := range f.Operations {
		intended = intended || strings.HasPrefix(op.Name, "Intended-")
		if op.Count == 0 {
			continue
		}
		h, err := ycsb.DecodeHistogram(op.Histogram)
		if err != nil {
			t.Errorf("shard %d %s: %v", shard, op.Name, err)
			continue
		}
		if h.TotalCount() != op.Count || float64(ycsb.ValueAtPercentile(h, 99)) != op.P99US {
			t.Errorf("shard %d %s: histogram of %d values, p99 %d; YCSB printed %d operations, p99 %v",
				shard, op.Name, h.TotalCount(), ycsb.ValueAtPercentile(h, 99), op.Count, op.P99US)
		}
	}
	if intended != throttled {
		t.Errorf("shard %d: Intended- operations %v, target set %v", shard, intended, throttled)
	}
}

// A shard whose driver cannot reach its SUT never reports READY: it fails at
// once with the driver's reason (the scheduler then fails the phase naming
// the shard, services/scheduler), instead of holding the barrier.
func TestUnreachableSUTFailsBeforeReady(t *testing.T) {
	t.Parallel()
	s := newStack(t, 1, noStandby)
	entry, _ := catalog.Lookup("Redis")
	ep := entry.Endpoint("127.0.0.1", 1) // nothing listens on port 1
	job := phaseJobs(t, "unreachable", contracts.Request{DBMS: []string{"Redis"}, SF: 0.001}, 0, ep)[0]
	ready, finals, unsubscribe := s.listen(job.Code, job.Phase)
	defer unsubscribe()
	if err := s.bus.Publish(s.ctx, contracts.SubjShard, &job); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ready:
		t.Fatal("READY from a driver that cannot reach its SUT")
	case m := <-finals:
		var f contracts.Final
		if err := bus.Decode(contracts.SchemaFinal, m.Data, &f); err != nil {
			t.Fatal(err)
		}
		if f.Status != contracts.StatusFailed || !strings.Contains(f.Error, "before READY") || !strings.Contains(f.Error, "init failed") {
			t.Errorf("final %s: %q", f.Status, f.Error)
		}
	case <-time.After(phaseWait):
		t.Fatalf("no final within %s", phaseWait)
	}
}

// driverWatch polls the agents' registries while a phase runs, for the
// series of its shards' driver process trees and live operations.
type driverWatch struct {
	stop     context.CancelFunc
	done     chan struct{}
	phase    string
	regs     []*prometheus.Registry
	maxCPU   map[string]float64 // component → the highest CPU seconds seen
	mem      float64
	ops      float64
	pedantic error
}

func (s *stack) watchDriverMetrics(phase string) *driverWatch {
	ctx, stop := context.WithCancel(s.ctx)
	w := &driverWatch{stop: stop, done: make(chan struct{}), phase: phase, regs: s.regs, maxCPU: map[string]float64{}}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			w.poll()
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return w
}

func (w *driverWatch) poll() {
	for _, reg := range w.regs {
		mfs, err := reg.Gather()
		if err != nil {
			w.pedantic = err
			continue
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				l := map[string]string{}
				for _, lp := range m.GetLabel() {
					l[lp.GetName()] = lp.GetValue()
				}
				if l["phase"] != w.phase {
					continue
				}
				switch mf.GetName() {
				case "container_cpu_usage_seconds_total":
					w.maxCPU[l["component"]] = max(w.maxCPU[l["component"]], m.GetCounter().GetValue())
				case "container_memory_working_set_bytes":
					w.mem = max(w.mem, m.GetGauge().GetValue())
				case "benchq_agent_operations":
					if l["operation"] == allOps {
						w.ops = max(w.ops, m.GetGauge().GetValue())
					}
				}
			}
		}
	}
}

// check stops the watch: the phase's driver trees were exported under
// component while it ran (CPU and memory above 0, operations counted),
// and no longer are.
func (w *driverWatch) check(t *testing.T, component string) {
	t.Helper()
	w.stop()
	<-w.done
	if w.pedantic != nil {
		t.Errorf("agent registry: %v", w.pedantic)
	}
	if w.maxCPU[component] <= 0 || w.mem <= 0 || len(w.maxCPU) != 1 {
		t.Errorf("phase %s: driver CPU seconds by component %v, memory %.0f bytes; want %s only, above 0", w.phase, w.maxCPU, w.mem, component)
	}
	// A small load may end within one poll of its only status line, so the
	// live operations are not required here (TestLiveShardFigures is).
	w.maxCPU, w.mem = map[string]float64{}, 0
	w.poll()
	if len(w.maxCPU) != 0 || w.mem != 0 {
		t.Errorf("phase %s ended: its driver trees are still exported: %v", w.phase, w.maxCPU)
	}
	t.Logf("phase %s: drivers exported as %s, %.0f operations seen live", w.phase, component, w.ops)
}
