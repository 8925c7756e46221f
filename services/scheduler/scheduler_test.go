package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/obs"
	"github.com/benchq/benchq/internal/obs/obstest"
	"github.com/benchq/benchq/internal/testenv"
)

// wait bounds every poll: generous, the machine may be loaded, and a
// message left unacknowledged by a stopped scheduler comes back only after
// the consumers' AckWait (30s).
const wait = 90 * time.Second

// world is a scheduler's surroundings, played by the test: NATS, the
// deployer (deploy and teardown jobs), the driver agents (shard jobs), and an
// observer of every event.
type world struct {
	t       *testing.T
	ctx     context.Context
	url     string
	b       *bus.Bus
	deploys jetstream.Consumer // benchq.jobs.deploy and .teardown
	shards  jetstream.Consumer // benchq.jobs.shard
	events  *recorder
	reg     *prometheus.Registry // the scheduler's metrics; nil: none

	mu     sync.Mutex
	agents map[string]bool // agent name → silenced (its heartbeats stop)
	// runs are the fake agents' runs, each with its own key, which signs
	// the agent's heartbeats, READYs and finals as a real agent's does.
	runs map[string]*bus.Bus
}

// run is agent name's bus: the world's connection, signing with the
// agent's run key (made on first use).
func (w *world) run(name string) *bus.Bus {
	w.mu.Lock()
	defer w.mu.Unlock()
	if b, ok := w.runs[name]; ok {
		return b
	}
	signer, err := contracts.NewSigner()
	if err != nil {
		w.t.Fatal(err)
	}
	b := &bus.Bus{NC: w.b.NC, JS: w.b.JS, Log: w.b.Log, Signer: signer}
	w.runs[name] = b
	return b
}

// heartbeats keeps the fake agents (agent-N, named after their shard)
// alive in the agents bucket, as real agents do, unless silenced.
func (w *world) heartbeats(ctx context.Context) {
	for {
		for n := 1; n <= 8; n++ {
			name := fmt.Sprintf("agent-%d", n)
			w.mu.Lock()
			silenced := w.agents[name]
			w.mu.Unlock()
			if !silenced {
				_ = w.run(name).PutHeartbeat(ctx, contracts.Heartbeat{Name: name, At: time.Now().UTC()})
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// silence stops an agent's heartbeats and removes its run's entry, as when
// its process dies and the TTL expires.
func (w *world) silence(name string) {
	instance := w.run(name).Signer.Public()
	w.mu.Lock()
	w.agents[name] = true
	w.mu.Unlock()
	if kv, err := w.b.JS.KeyValue(w.ctx, contracts.KVAgents); err == nil {
		_ = kv.Delete(w.ctx, contracts.HeartbeatKey(name, instance))
	}
}

// restart gives agent name a new run (a new key) that beats again.
func (w *world) restart(name string) {
	w.mu.Lock()
	delete(w.runs, name)
	w.agents[name] = false
	w.mu.Unlock()
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	t.Cleanup(cancel)
	w := &world{t: t, ctx: ctx, url: testenv.NATS(t)}
	var err error
	if w.b, err = bus.Connect(ctx, w.url, "", "scheduler-test", testenv.Logger(t, "world")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.b.Close)
	if err := w.b.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	consumer := func(durable string, filters ...string) jetstream.Consumer {
		c, err := w.b.JS.CreateOrUpdateConsumer(ctx, contracts.StreamJobs, jetstream.ConsumerConfig{
			Durable: durable, FilterSubjects: filters, AckPolicy: jetstream.AckExplicitPolicy,
		})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	w.deploys = consumer("test-deployer", contracts.SubjDeploy, contracts.SubjTeardown)
	w.shards = consumer("test-agents", contracts.SubjShard)
	w.events = record(t, ctx, w.b.JS, contracts.StreamEvents)
	w.agents = map[string]bool{}
	w.runs = map[string]*bus.Bus{}
	go w.heartbeats(ctx)
	return w
}

// start runs a scheduler until the returned stop is called (or t ends), and
// waits until its consumers exist (the first time: until it is set up).
func (w *world) start() (stop func()) {
	w.t.Helper()
	log := testenv.Logger(w.t, "scheduler")
	stop = testenv.Go(w.t, func(ctx context.Context) error {
		return Run(ctx, Config{NATSURL: w.url, TickEvery: 50 * time.Millisecond, Metrics: w.reg}, log)
	})
	testenv.Eventually(w.t, wait, func() error {
		for stream, durable := range map[string]string{contracts.StreamRequests: "scheduler-requests", contracts.StreamEvents: "scheduler-events", contracts.StreamResults: "scheduler-results"} {
			if _, err := w.b.JS.Consumer(w.ctx, stream, durable); err != nil {
				return fmt.Errorf("consumer %s: %w", durable, err)
			}
		}
		return nil
	})
	return stop
}

func (w *world) request(id, raw string) {
	w.t.Helper()
	if err := w.b.PublishRaw(w.ctx, contracts.SubjRequest, id, []byte(raw)); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) publish(subject string, m contracts.Message) {
	w.t.Helper()
	if err := w.b.Publish(w.ctx, subject, m); err != nil {
		w.t.Fatal(err)
	}
}

// job takes the next job of c off the work queue, decoded into v.
func (w *world) job(c jetstream.Consumer, v any) string {
	w.t.Helper()
	subject, err := w.tryJob(c, v, wait)
	if err != nil {
		w.t.Fatal(err)
	}
	return subject
}

// tryJob is job that returns an error when no job comes within timeout.
func (w *world) tryJob(c jetstream.Consumer, v any, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		batch, err := c.Fetch(1, jetstream.FetchMaxWait(500*time.Millisecond))
		if err != nil {
			return "", err
		}
		for m := range batch.Messages() {
			if err := json.Unmarshal(m.Data(), v); err != nil {
				return "", fmt.Errorf("job %s: %w", m.Data(), err)
			}
			return m.Subject(), m.DoubleAck(w.ctx)
		}
		if err := batch.Error(); err != nil {
			return "", err
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no job on %v within %s", c.CachedInfo().Config.FilterSubjects, timeout)
		}
	}
}

// noJob asserts that c holds no job now.
func (w *world) noJob(c jetstream.Consumer) {
	w.t.Helper()
	info, err := c.Info(w.ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	if info.NumPending != 0 || info.NumAckPending != 0 {
		w.t.Errorf("unexpected jobs on %v: %d pending, %d unacknowledged", info.Config.FilterSubjects, info.NumPending, info.NumAckPending)
	}
}

// recorder keeps every message of a stream, in stream order.
type recorder struct {
	mu   sync.Mutex
	msgs []recorded
}

type recorded struct {
	Subject string
	Data    []byte
}

func record(t *testing.T, ctx context.Context, js jetstream.JetStream, stream string) *recorder {
	t.Helper()
	c, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	cc, err := c.Consume(func(m jetstream.Msg) {
		r.mu.Lock()
		r.msgs = append(r.msgs, recorded{m.Subject(), m.Data()})
		r.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)
	return r
}

func (r *recorder) all() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.msgs...)
}

// wait returns the first message on subject for which match (nil: any)
// holds, decoded into v.
func (r *recorder) wait(t *testing.T, subject string, v any, match func() bool) {
	t.Helper()
	r.waitWithin(t, wait, subject, v, match)
}

func (r *recorder) waitWithin(t *testing.T, timeout time.Duration, subject string, v any, match func() bool) {
	t.Helper()
	testenv.Eventually(t, timeout, func() error {
		var seen []string
		for _, m := range r.all() {
			if !subjectMatches(subject, m.Subject) {
				seen = append(seen, m.Subject)
				continue
			}
			if err := json.Unmarshal(m.Data, v); err != nil {
				return fmt.Errorf("%s: %w", m.Subject, err)
			}
			if match == nil || match() {
				return nil
			}
			seen = append(seen, m.Subject+" (not the one)")
		}
		return fmt.Errorf("no %s among the events %v", subject, seen)
	})
}

// count counts the messages on subject, by their "phase" field ("" for
// messages without one).
func (r *recorder) count(subject string) map[string]int {
	n := map[string]int{}
	for _, m := range r.all() {
		if subjectMatches(subject, m.Subject) {
			var head struct{ Phase string }
			_ = json.Unmarshal(m.Data, &head)
			n[head.Phase]++
		}
	}
	return n
}

// subjectMatches is NATS subject matching with "*" wildcards.
func subjectMatches(pattern, subject string) bool {
	p, s := strings.Split(pattern, "."), strings.Split(subject, ".")
	if len(p) != len(s) {
		return false
	}
	for i := range p {
		if p[i] != "*" && p[i] != s[i] {
			return false
		}
	}
	return true
}

func TestSchedulerRejectsBadRequestsAndKeepsServing(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.start()

	w.request("r1", `{"schema_version":1,"code":"bad1","dbms":["NoSuchDB"]}`)
	var rej contracts.Rejected
	w.events.wait(t, "benchq.exp.bad1.rejected", &rej, nil)
	if len(rej.Errors) != 1 || rej.Errors[0].Field != "dbms[0]" || rej.Code != "bad1" || !strings.HasPrefix(rej.RequestID, "request-") {
		t.Errorf("unknown DBMS: %+v", rej)
	}
	// The DBMSs YCSB (the default benchmark) runs are listed; the
	// time-series databases, which only benchq tsdb writes to, are not.
	for _, name := range catalog.Names() {
		e, _ := catalog.Lookup(name)
		if listed := strings.Contains(rej.Reason, name); listed == e.IsTSDB() {
			t.Errorf("reason %q: the DBMS %s listed %v, time-series database %v", rej.Reason, name, listed, e.IsTSDB())
		}
	}

	// No code to answer on: the scheduler picks one.
	w.request("r2", `{"schema_version":`)
	w.events.wait(t, "benchq.exp.*.rejected", &rej, func() bool {
		return len(rej.Errors) > 0 && rej.Errors[0].Field == "(message)"
	})
	if !codePattern.MatchString(rej.Code) || rej.Code == "bad1" {
		t.Errorf("malformed request rejected on code %q", rej.Code)
	}

	w.request("r3", `{"schema_version":1,"code":"bad3","dbms":["Redis"],"colour":"blue"}`)
	w.events.wait(t, "benchq.exp.bad3.rejected", &rej, nil)
	if len(rej.Errors) != 1 || rej.Errors[0].Field != "colour" || !strings.Contains(rej.Errors[0].Message, "dbms") {
		t.Errorf("unknown field: %+v", rej.Errors)
	}

	// A request of many bad values: its rejection lists 20 and counts the
	// rest (one message, whatever the request held).
	w.request("r5", `{"schema_version":1,"code":"bad5","dbms":["Redis"],"loading_pods":[`+strings.Repeat("0,", 199)+`0]}`)
	w.events.wait(t, "benchq.exp.bad5.rejected", &rej, nil)
	if len(rej.Errors) != 21 || rej.Errors[20].Message != "180 more problems not listed" {
		t.Errorf("200 bad values: %d errors, the last %+v", len(rej.Errors), rej.Errors[len(rej.Errors)-1])
	}
	// A small request whose plan is larger than NATS carries is rejected,
	// naming why (it was retried forever: no publish of it could succeed).
	var pods []string
	for i := 1; i <= 40; i++ {
		pods = append(pods, strconv.Itoa(i))
	}
	w.request("r6", `{"schema_version":1,"code":"big6","dbms":["Redis"],"sf":0.001,"benchmarking_pods":[`+strings.Join(pods, ",")+`],"benchmarking_threads":[40],"clients":[8]}`)
	w.events.wait(t, "benchq.exp.big6.rejected", &rej, nil)
	if len(rej.Errors) != 1 || !strings.Contains(rej.Errors[0].Message, "more than the") || !strings.Contains(rej.Errors[0].Message, "make the grid smaller") {
		t.Errorf("a plan too large: %+v", rej.Errors)
	}

	// Still serving.
	w.request("r4", `{"schema_version":1,"code":"ok1","dbms":["redis"],"sf":0.001}`)
	var planned contracts.Planned
	w.events.wait(t, "benchq.exp.ok1.planned", &planned, nil)
	var deploy contracts.Deploy
	if subj := w.job(w.deploys, &deploy); subj != contracts.SubjDeploy || deploy.Code != "ok1" || deploy.DBMS != "Redis" || deploy.Configuration != "Redis-64-1-16384-1" {
		t.Errorf("job on %s: %+v", subj, deploy)
	}
	if got := w.events.count("benchq.exp.*.rejected")[""]; got != 5 {
		t.Errorf("%d rejections, want 5 (one each)", got)
	}
}

// experimentRequest is the request every run-through test uses: Redis, 1000 rows
// loaded by 2 shards, one benchmarking phase with 1 shard.
func experimentRequest(code, extra string) string {
	return fmt.Sprintf(`{"schema_version":1,"code":%q,"dbms":["Redis"],"sf":0.001,"loading_pods":[2],"loading_threads":[2],
		"benchmarking_pods":[1],"benchmarking_threads":[1]%s}`, code, extra)
}

// deploy answers the next deploy job with sut.ready and returns it.
func (w *world) deploy(code string) contracts.Deploy {
	w.t.Helper()
	var d contracts.Deploy
	if subj := w.job(w.deploys, &d); subj != contracts.SubjDeploy || d.Code != code {
		w.t.Fatalf("expected a deploy job of %s, got %s %+v", code, subj, d)
	}
	w.publish(contracts.Subject(contracts.SubjSUTReady, code, "", ""), &contracts.SUTReady{
		Envelope:      contracts.NewEnvelope(code, code+"."+d.Configuration+".sut.ready", time.Now()),
		Configuration: d.Configuration, DBMS: d.DBMS, Endpoint: contracts.Endpoint{Host: "127.0.0.1", Port: 7000}, Backend: "local",
	})
	return d
}

// shardJobs takes the n jobs of the next phase.
func (w *world) shardJobs(code string, n int) []contracts.ShardJob {
	w.t.Helper()
	jobs := make([]contracts.ShardJob, n)
	for i := range jobs {
		w.job(w.shards, &jobs[i])
		j := jobs[i]
		if j.Code != code || j.Shards != n || j.Attempt != 1 || j.Phase != jobs[0].Phase || j.Endpoint.Port != 7000 {
			w.t.Fatalf("shard job %d: %+v", i+1, j)
		}
	}
	return jobs
}

func (w *world) ready(j contracts.ShardJob) {
	w.t.Helper()
	agent := fmt.Sprintf("agent-%d", j.Shard)
	b := w.run(agent)
	if err := b.Publish(w.ctx, contracts.Subject(contracts.SubjBarrierReady, j.Code, "", ""), &contracts.BarrierReady{
		Envelope: contracts.NewEnvelope(j.Code, fmt.Sprintf("%s.%s.%d.a%d.ready", j.Code, j.Phase, j.Shard, j.Attempt), time.Now()),
		Phase:    j.Phase, Shard: j.Shard, Attempt: j.Attempt, Agent: agent, Instance: b.Signer.Public(),
	}); err != nil {
		w.t.Fatal(err)
	}
}

// started waits for the barrier's GO and phase.started of j's phase.
func (w *world) started(j contracts.ShardJob) {
	w.t.Helper()
	var g contracts.BarrierGo
	w.events.wait(w.t, contracts.Subject(contracts.SubjBarrierGo, j.Code, "", ""), &g, func() bool { return g.Phase == j.Phase })
	var pe contracts.PhaseEvent
	w.events.wait(w.t, contracts.Subject(contracts.SubjPhaseStarted, j.Code, "", ""), &pe, func() bool { return pe.Phase == j.Phase })
	if pe.StartedAt == nil || !pe.StartedAt.Equal(g.StartAt) || pe.Shards != j.Shards {
		w.t.Errorf("phase.started %+v after GO at %v", pe, g.StartAt)
	}
}

// finalGoDelayMS is how long GO took to reach the agents of w.final.
var finalGoDelayMS = 4.5

func (w *world) final(j contracts.ShardJob) {
	w.t.Helper()
	now := time.Now().UTC()
	agent := fmt.Sprintf("agent-%d", j.Shard)
	if err := w.run(agent).Publish(w.ctx, contracts.Subject(contracts.SubjFinal, j.Code, j.Phase, fmt.Sprint(j.Shard)), &contracts.Final{
		Envelope:      contracts.NewEnvelope(j.Code, fmt.Sprintf("%s.%s.%d.a%d.final", j.Code, j.Phase, j.Shard, j.Attempt), now),
		Configuration: j.Configuration, Phase: j.Phase, Kind: j.Kind, Shard: j.Shard, Attempt: j.Attempt,
		Agent: agent, Status: contracts.StatusOK, StartedAt: now.Add(-time.Second), EndedAt: now, GoDelayMS: &finalGoDelayMS,
	}); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) phaseDone(j contracts.ShardJob) {
	w.t.Helper()
	var pe contracts.PhaseEvent
	w.events.wait(w.t, contracts.Subject(contracts.SubjPhaseDone, j.Code, "", ""), &pe, func() bool { return pe.Phase == j.Phase })
	if pe.Status != contracts.PhaseDone || pe.Kind != j.Kind || pe.Reason != "" {
		w.t.Errorf("phase.done %+v", pe)
	}
}

// teardown answers the teardown job of d with sut.removed.
func (w *world) teardown(d contracts.Deploy) contracts.Teardown {
	w.t.Helper()
	var td contracts.Teardown
	if subj := w.job(w.deploys, &td); subj != contracts.SubjTeardown || td.Configuration != d.Configuration {
		w.t.Fatalf("expected the teardown of %s, got %s %+v", d.Configuration, subj, td)
	}
	w.publish(contracts.Subject(contracts.SubjSUTRemoved, td.Code, "", ""), &contracts.SUTRemoved{
		Envelope: contracts.NewEnvelope(td.Code, td.Code+"."+td.Configuration+".sut.removed", time.Now()), Configuration: td.Configuration, DBMS: td.DBMS,
	})
	return td
}

// state reads the experiment's state from the experiments KV bucket.
func (w *world) state(code string) State {
	w.t.Helper()
	st, err := w.tryState(code)
	if err != nil {
		w.t.Fatal(err)
	}
	return st
}

func (w *world) tryState(code string) (State, error) {
	var st State
	kv, err := w.b.JS.KeyValue(w.ctx, contracts.KVExperiments)
	if err != nil {
		return st, err
	}
	e, err := kv.Get(w.ctx, code)
	if err != nil {
		return st, fmt.Errorf("state of %s: %w", code, err)
	}
	return st, json.Unmarshal(e.Value(), &st)
}

func (w *world) waitState(code string, ok func(State) bool) {
	w.t.Helper()
	testenv.Eventually(w.t, wait, func() error {
		st, err := w.tryState(code)
		if err != nil {
			return err
		}
		if !ok(st) {
			return fmt.Errorf("state of %s: %+v", code, st)
		}
		return nil
	})
}

// intoBenchmark requests the default experiment, deploys its SUT, plays its
// loading phase through and starts its benchmarking phase (every shard
// READY, phase.started seen); it returns the deploy and the run's jobs.
func intoBenchmark(w *world, code string) (contracts.Deploy, []contracts.ShardJob) {
	w.t.Helper()
	w.request("req-"+code, experimentRequest(code, ""))
	d := w.deploy(code)
	load := w.shardJobs(code, 2)
	for _, j := range load {
		w.ready(j)
	}
	w.started(load[0])
	for _, j := range load {
		w.final(j)
	}
	w.phaseDone(load[0])
	run := w.shardJobs(code, 1)
	w.ready(run[0])
	w.started(run[0])
	return d, run
}

// runThrough plays one whole experiment; restart, if not nil, is called
// after the load phase's READYs are sent and before its finals.
func runThrough(t *testing.T, w *world, code string, restart func()) {
	t.Helper()
	w.request("req-"+code, experimentRequest(code, ""))
	d := w.deploy(code)

	load := w.shardJobs(code, 2)
	if load[0].Kind != contracts.KindLoad || load[0].Phase != d.Configuration+"-0" || load[0].Shard == load[1].Shard {
		t.Fatalf("load jobs %+v", load)
	}
	if restart != nil {
		// Only once the state of the load phase is stored: READYs that
		// overtake it are another matter (TestSchedulerKeepsReadiesThatOvertakeAnUnstoredStep).
		w.waitState(code, func(st State) bool { return st.Configs[0].Current != nil })
	}
	for _, j := range load {
		w.ready(j)
	}
	if restart != nil {
		restart()
	}
	w.started(load[0])
	for _, j := range load {
		w.final(j)
	}
	w.phaseDone(load[0])

	run := w.shardJobs(code, 1)
	if run[0].Kind != contracts.KindRun || run[0].Phase != d.Configuration+"-1" {
		t.Fatalf("run jobs %+v", run)
	}
	w.ready(run[0])
	w.started(run[0])
	w.final(run[0])
	w.phaseDone(run[0])

	w.teardown(d)
	var end contracts.ExperimentEnd
	w.events.wait(t, contracts.Subject(contracts.SubjExperimentDone, code, "", ""), &end, nil)
	if end.Status != contracts.ExperimentDone || end.StartedAt == nil || end.EndedAt == nil {
		t.Errorf("end %+v", end)
	}
	// The end is published before the state is stored (publish, store, ack).
	w.waitState(code, func(st State) bool { return st.Status != contracts.ExperimentRunning })
	if st := w.state(code); st.Status != contracts.ExperimentDone || st.EndedAt == nil || len(st.Failures) != 0 || st.Configs[0].Status != cfgRemoved {
		t.Errorf("stored state: status %s, ended %v, failures %v, configs %+v", st.Status, st.EndedAt, st.Failures, st.Configs)
	}

	// Every event once: a step repeated after a crash re-publishes with the
	// same ids, which JetStream drops.
	loadPhase, runPhase := load[0].Phase, run[0].Phase
	for subj, want := range map[string]map[string]int{
		contracts.SubjPlanned:          {"": 1},
		contracts.SubjBarrierGo:        {loadPhase: 1, runPhase: 1},
		contracts.SubjPhaseStarted:     {loadPhase: 1, runPhase: 1},
		contracts.SubjPhaseDone:        {loadPhase: 1, runPhase: 1},
		contracts.SubjPhaseFailed:      {},
		contracts.SubjExperimentDone:   {"": 1},
		contracts.SubjExperimentFailed: {},
	} {
		s := contracts.Subject(subj, code, "", "")
		if got := w.events.count(s); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %v, want %v", s, got, want)
		}
	}
	w.noJob(w.shards)
	w.noJob(w.deploys)
}

func TestSchedulerRunsAnExperimentThrough(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.start()
	runThrough(t, w, "run1", nil)
	// The next experiment's first GO lead follows run1's delivery.
	w.request("req-run2", experimentRequest("run2", ""))
	w.waitState("run2", func(st State) bool { return st.SeedGoDelayMS != nil && *st.SeedGoDelayMS == finalGoDelayMS })
}

// The scheduler keeps its state in KV and its place in the streams in
// durable consumers: a new one carries on where the old one stopped.
// The scheduler's /metrics counts what it handled: a whole experiment's
// events by topic, its one phase switch (load → run) and the experiment done.
func TestSchedulerServesItsMetrics(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.reg = obs.NewRegistry()
	addr := obstest.Serve(t, w.reg)
	w.start()
	runThrough(t, w, "metrics1", nil)
	var text string
	testenv.Eventually(t, wait, func() error {
		text = obstest.Get(t, addr)
		if missing := obstest.Lacks(text,
			`benchq_scheduler_events_total{topic="request"} 1`,
			`benchq_scheduler_events_total{topic="final"} 3`,
			`benchq_scheduler_events_total{topic="sut_removed"} 1`,
			`benchq_scheduler_phase_switch_seconds_count 1`,
			`benchq_scheduler_experiments{status="done"} 1`,
			`benchq_scheduler_experiments{status="running"} 0`,
			`benchq_scheduler_phases{state="running"} 0`,
			`go_goroutines`); len(missing) > 0 {
			return fmt.Errorf("/metrics lacks %q", missing)
		}
		return nil
	})
}

func TestSchedulerResumesAfterARestart(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	stop := w.start()
	runThrough(t, w, "crash1", func() {
		stop()
		w.start()
	})
}

func TestSchedulerFailsAPhaseWhoseShardsAreNotReady(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.start()
	code := "late1"
	w.request("req-"+code, experimentRequest(code, `,"timeouts":{"barrier_s":1}`))
	d := w.deploy(code)
	load := w.shardJobs(code, 2)
	w.ready(load[0])

	var pe contracts.PhaseEvent
	w.events.wait(t, contracts.Subject(contracts.SubjPhaseFailed, code, "", ""), &pe, nil)
	if pe.Phase != load[0].Phase || !strings.Contains(pe.Reason, "shards 2 not READY within 1s") {
		t.Errorf("phase.failed %+v", pe)
	}
	if td := w.teardown(d); !strings.HasPrefix(td.Reason, "load phase ") {
		t.Errorf("teardown reason %q", td.Reason)
	}
	var end contracts.ExperimentEnd
	w.events.wait(t, contracts.Subject(contracts.SubjExperimentFailed, code, "", ""), &end, nil)
	if end.Status != contracts.ExperimentFailed || !strings.Contains(end.Reason, "shards 2 not READY") {
		t.Errorf("end %+v", end)
	}
	if got := w.events.count(contracts.Subject(contracts.SubjBarrierGo, code, "", "")); len(got) != 0 {
		t.Errorf("GO although shard 2 never was READY: %v", got)
	}
	w.noJob(w.shards)
}

// step publishes a step's outputs before it stores the new state, so that a
// crash in between repeats the step (the outputs are de-duplicated). But the
// outputs are out: agents answer the shard jobs with READY while the event
// that produced them waits for redelivery, and the scheduler meets those
// READYs with the old state. It must not throw them away. Here the state
// write fails for a while (as a KV timeout would, or a crash before the
// write); the experiment must go on once it succeeds.
func TestSchedulerKeepsReadiesThatOvertakeAnUnstoredStep(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.start()
	code := "overtake1"
	w.request("req-"+code, experimentRequest(code, ""))
	var d contracts.Deploy
	w.job(w.deploys, &d)
	w.waitState(code, func(State) bool { return true })

	// The state after sut.ready is some 130 bytes bigger than the stored
	// one; a limit just above the current size refuses that write.
	kv, err := w.b.JS.KeyValue(w.ctx, contracts.KVExperiments)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(w.ctx, code)
	if err != nil {
		t.Fatal(err)
	}
	w.limitStateSize(int32(len(e.Value()) + 100))
	w.publish(contracts.Subject(contracts.SubjSUTReady, code, "", ""), &contracts.SUTReady{
		Envelope:      contracts.NewEnvelope(code, code+".sut.ready", time.Now()),
		Configuration: d.Configuration, DBMS: d.DBMS, Endpoint: contracts.Endpoint{Host: "127.0.0.1", Port: 7000},
	})

	var load []contracts.ShardJob
	for range 2 {
		var j contracts.ShardJob
		if _, err := w.tryJob(w.shards, &j, 15*time.Second); err != nil {
			// The scheduler publishes a step's outputs before it stores the
			// state (docs/adr/0003): that order is what this test holds it to.
			t.Fatalf("no shard jobs while the state cannot be stored (%v): the scheduler no longer publishes before it stores (docs/adr/0003)", err)
		}
		load = append(load, j)
	}
	if st := w.state(code); st.Configs[0].Status != cfgDeploying {
		t.Fatalf("precondition: the state write should have failed, but the stored state is %+v", st.Configs[0])
	}
	for _, j := range load {
		w.ready(j)
	}
	// Let the scheduler meet both READYs while the state is still the old
	// one: all but the retried sut.ready acknowledged, or the READYs back for
	// another try.
	w.met(1, 3)
	w.limitStateSize(-1)
	w.waitState(code, func(st State) bool { return st.Configs[0].Current != nil })
	// Within a second or two when the READYs were kept; the barrier would
	// fail the phase after 120s.
	var g contracts.BarrierGo
	w.events.waitWithin(t, 30*time.Second, contracts.Subject(contracts.SubjBarrierGo, code, "", ""), &g, nil)
}

// The same as TestSchedulerKeepsReadiesThatOvertakeAnUnstoredStep, one step
// earlier: the deploy job is published before the experiment's first state
// is stored, and the deployer's sut.ready must not be lost if that store
// fails for a while.
func TestSchedulerKeepsSUTReadyThatOvertakesTheFirstState(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.start()
	code := "overtake2"
	w.limitStateSize(200) // far below any experiment's state
	w.request("req-"+code, experimentRequest(code, ""))
	var d contracts.Deploy
	if _, err := w.tryJob(w.deploys, &d, 15*time.Second); err != nil {
		t.Fatalf("no deploy job while the state cannot be stored (%v): the scheduler no longer publishes before it stores (docs/adr/0003)", err)
	}
	if _, err := w.tryState(code); err == nil {
		t.Fatal("precondition: the state should not be stored yet")
	}
	w.publish(contracts.Subject(contracts.SubjSUTReady, code, "", ""), &contracts.SUTReady{
		Envelope:      contracts.NewEnvelope(code, code+".sut.ready", time.Now()),
		Configuration: d.Configuration, DBMS: d.DBMS, Endpoint: contracts.Endpoint{Host: "127.0.0.1", Port: 7000},
	})
	// Let the scheduler meet the sut.ready before the state exists.
	w.met(0, 1)
	w.limitStateSize(-1)
	w.waitState(code, func(State) bool { return true })
	var j contracts.ShardJob
	if _, err := w.tryJob(w.shards, &j, 30*time.Second); err != nil {
		t.Fatalf("the SUT is ready but no load phase starts: %v (state %+v)", err, w.state(code).Configs)
	}
}

// met waits until the scheduler has met every event delivered to it so far:
// either all but unacked of them are acknowledged (for the events these
// tests send: taken as handled), or retried of them came back for another
// try (the scheduler postponed them). A scheduler that does neither within
// 20s fails the test, naming what it waited for.
func (w *world) met(unacked, retried int) {
	w.t.Helper()
	c, err := w.b.JS.Consumer(w.ctx, contracts.StreamEvents, contracts.DurableSchedulerEvents)
	if err != nil {
		w.t.Fatal(err)
	}
	var ci *jetstream.ConsumerInfo
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if ci, err = c.Info(w.ctx); err != nil {
			w.t.Fatal(err)
		}
		if ci.NumPending == 0 && (ci.NumAckPending == unacked || ci.NumRedelivered >= retried) {
			return
		}
	}
	w.t.Fatalf("the scheduler did not meet its events within 20s: want none pending and %d unacknowledged or %d redelivered; "+
		"got %d pending, %d unacknowledged, %d redelivered", unacked, retried, ci.NumPending, ci.NumAckPending, ci.NumRedelivered)
}

// limitStateSize sets the largest state the experiments bucket accepts
// (-1: no limit), so that the scheduler's state writes fail.
func (w *world) limitStateSize(n int32) {
	w.t.Helper()
	s, err := w.b.JS.Stream(w.ctx, "KV_"+contracts.KVExperiments)
	if err != nil {
		w.t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.MaxMsgSize = n
	if _, err := w.b.JS.UpdateStream(w.ctx, cfg); err != nil {
		w.t.Fatal(err)
	}
}

// An event that arrives while the experiment's state cannot be read (a KV
// timeout, JetStream briefly unavailable) must be retried, not taken for an
// event of an unknown experiment and acknowledged. Here the bucket stops
// answering reads for a while: its direct gets are switched off under the
// scheduler.
func TestSchedulerDoesNotDropEventsWhileItsStateIsUnreadable(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.start()
	code := "unreadable1"
	w.request("req-"+code, experimentRequest(code, ""))
	var d contracts.Deploy
	w.job(w.deploys, &d)
	w.waitState(code, func(State) bool { return true })

	allowDirect := func(on bool) {
		t.Helper()
		s, err := w.b.JS.Stream(w.ctx, "KV_"+contracts.KVExperiments)
		if err != nil {
			t.Fatal(err)
		}
		cfg := s.CachedInfo().Config
		cfg.AllowDirect = on
		if _, err := w.b.JS.UpdateStream(w.ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	allowDirect(false)
	w.publish(contracts.Subject(contracts.SubjSUTReady, code, "", ""), &contracts.SUTReady{
		Envelope:      contracts.NewEnvelope(code, code+".sut.ready", time.Now()),
		Configuration: d.Configuration, DBMS: d.DBMS, Endpoint: contracts.Endpoint{Host: "127.0.0.1", Port: 7000},
	})
	// Let the scheduler meet the sut.ready while it cannot read the state.
	w.met(0, 1)
	allowDirect(true)

	var j contracts.ShardJob
	if _, err := w.tryJob(w.shards, &j, 30*time.Second); err != nil {
		t.Fatalf("the SUT is ready but no load phase starts: %v (state %+v)", err, w.state(code).Configs)
	}
}

// Two experiments with -ms 1 share one SUT slot: the second is deployed only
// once the first's SUT is removed, oldest first.
func TestSchedulerBoundsSUTsAcrossExperiments(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.start()
	w.request("req-ms-a", experimentRequest("ms-a", `,"max_suts":1,"action":"start"`))
	d := w.deploy("ms-a")
	w.waitState("ms-a", func(st State) bool { return st.Configs[0].Status == cfgRunning })
	w.request("req-ms-b", experimentRequest("ms-b", `,"max_suts":1,"action":"start"`))
	w.waitState("ms-b", func(st State) bool { return st.Configs[0].Status == cfgPending })
	time.Sleep(300 * time.Millisecond) // several ticks: still no deploy for ms-b
	w.noJob(w.deploys)

	w.stop("ms-a")
	w.teardown(d)
	w.deploy("ms-b") // the freed slot goes to ms-b
	w.stop("ms-b")
	var end contracts.ExperimentEnd
	w.events.wait(t, contracts.Subject(contracts.SubjExperimentCancelled, "ms-a", "", ""), &end, nil)
}

// benchq stop during a benchmark phase: phase.failed (so agents stop their
// shards), teardown, experiment cancelled; the finished load phase stays done.
func TestSchedulerStopCancelsARunningExperiment(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.start()
	code := "stop1"
	d, run := intoBenchmark(w, code)
	w.stop(code)
	var pe contracts.PhaseEvent
	w.events.wait(t, contracts.Subject(contracts.SubjPhaseFailed, code, "", ""), &pe, nil)
	if pe.Phase != run[0].Phase || !strings.Contains(pe.Reason, "cancelled by benchq stop: test") {
		t.Errorf("phase.failed %+v", pe)
	}
	w.teardown(d)
	var end contracts.ExperimentEnd
	w.events.wait(t, contracts.Subject(contracts.SubjExperimentCancelled, code, "", ""), &end, nil)
	if end.Status != contracts.ExperimentCancelled || w.state(code).Status != contracts.ExperimentCancelled {
		t.Errorf("end %+v", end)
	}
}

// An agent that dies mid-phase (its heartbeats stop): the scheduler re-runs
// the phase as attempt 2; the experiment completes.
func TestSchedulerReRunsAPhaseThatLostItsAgent(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.start()
	code := "lost1"
	d, run := intoBenchmark(w, code)
	w.silence("agent-1")
	var pe contracts.PhaseEvent
	w.events.wait(t, contracts.Subject(contracts.SubjPhaseFailed, code, "", ""), &pe, nil)
	if pe.Attempt != 1 || !strings.Contains(pe.Reason, "agent agent-1 silent") {
		t.Errorf("phase.failed %+v", pe)
	}
	var retry contracts.ShardJob
	if subj := w.job(w.shards, &retry); subj != contracts.SubjShard || retry.Attempt != 2 || retry.Phase != run[0].Phase {
		t.Fatalf("retry %s %+v", subj, retry)
	}
	w.restart("agent-1") // another agent named agent-1 takes over
	w.ready(retry)
	w.final(retry)
	w.teardown(d)
	var end contracts.ExperimentEnd
	w.events.wait(t, contracts.Subject(contracts.SubjExperimentDone, code, "", ""), &end, nil)
	if st := w.state(code); len(st.Configs[0].Reruns) != 1 {
		t.Errorf("reruns %v", st.Configs[0].Reruns)
	}
}

// stop publishes benchq stop for code.
func (w *world) stop(code string) {
	w.t.Helper()
	w.publish(contracts.SubjStop, &contracts.Stop{Envelope: contracts.NewEnvelope(code, code+".stop", time.Now()), Reason: "test"})
}

// A final that does not match the contract (here: a field this scheduler
// does not know, as an agent of a newer version sends) fails its shard at
// once, naming the field and the likely cause, instead of leaving the
// phase to wait out its shards' timeout.
func TestSchedulerFailsAShardWhoseFinalBreaksTheContract(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.start()
	code := "skew1"
	w.request("req-"+code, experimentRequest(code, ""))
	w.deploy(code)
	load := w.shardJobs(code, 2)
	for _, j := range load {
		w.ready(j)
	}
	w.started(load[0])
	w.final(load[0])
	j := load[1]
	now := time.Now().UTC()
	data, err := json.Marshal(map[string]any{
		"schema_version": contracts.SchemaVersion, "id": fmt.Sprintf("%s.%s.%d.a%d.final", j.Code, j.Phase, j.Shard, j.Attempt),
		"code": j.Code, "ts": now, "configuration": j.Configuration, "phase": j.Phase, "kind": j.Kind, "shard": j.Shard,
		"attempt": j.Attempt, "agent": "agent-2", "status": contracts.StatusOK, "started_at": now.Add(-time.Second), "ended_at": now,
		"from_a_newer_agent": 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	if err := w.run("agent-2").PublishRaw(w.ctx, contracts.Subject(contracts.SubjFinal, j.Code, j.Phase, fmt.Sprint(j.Shard)), fmt.Sprintf("%s.%s.%d.a%d.final", j.Code, j.Phase, j.Shard, j.Attempt), data); err != nil {
		t.Fatal(err)
	}
	var pe contracts.PhaseEvent
	w.events.wait(t, contracts.Subject(contracts.SubjPhaseFailed, code, "", ""), &pe, nil)
	if pe.Phase != j.Phase || !strings.Contains(pe.Reason, "final was refused") || !strings.Contains(pe.Reason, "from_a_newer_agent") || !strings.Contains(pe.Reason, "benchq version") {
		t.Errorf("phase.failed %+v, want the shard's final refused, naming the field and the versions", pe)
	}
	t.Logf("phase failed %s after the final: %s", time.Since(started).Round(time.Millisecond), pe.Reason)
}
