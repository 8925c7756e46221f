package deployer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/natsauth"
	"github.com/benchq/benchq/internal/obs"
	"github.com/benchq/benchq/internal/plan"
	"github.com/benchq/benchq/services/deployer/backend"
)

// Config is the deployer's configuration.
type Config struct {
	NATSURL string
	// DriverPoll is how often a backend that runs driver Jobs is asked
	// which ended (default 1s).
	DriverPoll time.Duration
	// Metrics receives the deployer's series and its backend's collectors
	// (metricsCollectors); nil: none.
	Metrics *prometheus.Registry
}

// Deployer turns deploy/teardown jobs into SUTs through a Backend and
// reports the outcome as events. It keeps no state of its own: a backend's
// Deploy and Teardown are idempotent, so a redelivered job is harmless.
type Deployer struct {
	bus     *bus.Bus
	backend backend.Backend
	log     *slog.Logger
	metrics *deployerMetrics
}

// deployerMetrics are the deployer's own series on /metrics.
type deployerMetrics struct {
	start *prometheus.HistogramVec
	alive prometheus.Gauge
	mu    sync.Mutex
	suts  map[string]bool // code/configuration of the SUTs this process deployed and did not tear down
}

func newDeployerMetrics(reg *prometheus.Registry) *deployerMetrics {
	series := obs.Series{Reg: reg}
	return &deployerMetrics{
		start: series.HistogramVec("benchq_deployer_sut_start_seconds",
			"From a deploy job taken to its SUT ready, by DBMS.", prometheus.ExponentialBuckets(0.05, 2, 12), "dbms"),
		alive: series.Gauge("benchq_deployer_suts_alive",
			"SUTs deployed and not torn down, as this deployer process saw them (a restart starts from 0)."),
		suts: map[string]bool{},
	}
}

// up and down keep the alive gauge; a redelivered deploy or teardown
// counts once.
func (m *deployerMetrics) up(code, cfg string)   { m.set(code+"/"+cfg, true) }
func (m *deployerMetrics) down(code, cfg string) { m.set(code+"/"+cfg, false) }

func (m *deployerMetrics) set(key string, alive bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if alive {
		m.suts[key] = true
	} else {
		delete(m.suts, key)
	}
	m.alive.Set(float64(len(m.suts)))
}

// Run serves jobs until ctx ends.
func Run(ctx context.Context, cfg Config, be backend.Backend, log *slog.Logger) error {
	b, err := bus.Open(ctx, cfg.NATSURL, natsauth.Deployer, "benchq-deployer", log)
	if err != nil {
		return err
	}
	defer b.Close()
	reg := obs.Or(cfg.Metrics)
	d := &Deployer{bus: b, backend: be, log: log, metrics: newDeployerMetrics(reg)}
	if mc, ok := be.(backend.MetricsCollectors); ok {
		reg.MustRegister(mc.Collectors()...)
	}
	log.Info("deployer ready", "nats", cfg.NATSURL)
	if vols, ok := be.(backend.Volumes); ok {
		d.syncVolumes(ctx, vols) // volumes kept across benchq down/up, or removed meanwhile
	}
	// Drivers jobs have a consumer of their own, so that a deploy waiting
	// for its SUT (up to its timeout) never holds up another configuration's
	// phase, whose agents would miss their barrier.
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	watched := make(chan struct{})
	if db, ok := be.(backend.DriverBackend); ok {
		poll := cfg.DriverPoll
		if poll <= 0 {
			poll = time.Second
		}
		go func() { defer close(watched); d.watchDrivers(dctx, db, poll) }()
	} else {
		close(watched)
	}
	pods := make(chan struct{})
	if w, ok := be.(backend.DriverPodWatcher); ok {
		sub, err := b.NC.Subscribe(contracts.SubjDriverPods, func(m *nats.Msg) { d.answerPods(w, m) })
		if err != nil {
			stop()
			<-watched
			return fmt.Errorf("answer %s: %w", contracts.SubjDriverPods, err)
		}
		defer func() { _ = sub.Unsubscribe() }()
		go func() {
			defer close(pods)
			w.WatchDriverPods(dctx, func(e contracts.DriverLost) { d.driverLost(dctx, e) })
		}()
	} else {
		close(pods)
	}
	edges := make(chan struct{})
	if r, ok := be.(backend.SUTReader); ok {
		go func() {
			defer close(edges)
			if err := d.watchEdges(dctx, r); err != nil {
				log.Warn("phase edges not watched: their figures are estimated from the scrapes", "err", err)
			}
		}()
	} else {
		close(edges)
	}
	suts := make(chan struct{})
	if w, ok := be.(backend.SUTWatcher); ok {
		go func() { defer close(suts); d.watchSUTs(dctx, w, time.Second) }()
	} else {
		close(suts)
	}
	// Either consumer stopping (its declaration failed for a minute) stops
	// the deployer: one that ran on with the other alone would look ready
	// and never start a phase's drivers, or never deploy.
	cctx, stopConsumers := context.WithCancel(ctx)
	defer stopConsumers()
	drivers := make(chan error, 1)
	go func() {
		defer stopConsumers()
		drivers <- b.Consume(dctx, bus.ConsumerSpec{
			Stream: contracts.StreamJobs, Durable: contracts.DurableDeployerDrivers, Filters: []string{contracts.SubjDrivers},
			AckWait: 30 * time.Second, MaxDeliver: 5,
		}, func(ctx context.Context, msgs []jetstream.Msg) []error {
			errs := make([]error, len(msgs))
			for i, m := range msgs {
				errs[i] = d.handle(ctx, m)
			}
			return errs
		})
	}()
	err = b.Consume(cctx, bus.ConsumerSpec{
		Stream: contracts.StreamJobs, Durable: contracts.DurableDeployer,
		Filters: []string{contracts.SubjDeploy, contracts.SubjTeardown},
		AckWait: 30 * time.Second, MaxDeliver: 5,
	}, func(ctx context.Context, msgs []jetstream.Msg) []error {
		errs := make([]error, len(msgs))
		for i, m := range msgs {
			stop := bus.KeepAlive(m, 5*time.Second) // AckWait 30 s
			errs[i] = d.handle(ctx, m)
			stop()
		}
		return errs
	})
	stop() // the deploy consumer ended (ctx, or it could not start)
	<-watched
	<-suts
	<-pods
	<-edges
	if derr := <-drivers; err == nil {
		err = derr
	}
	return err
}

func (d *Deployer) handle(ctx context.Context, m jetstream.Msg) error {
	if m.Subject() == contracts.SubjDrivers {
		var job contracts.Drivers
		if err := bus.Decode(contracts.SchemaDrivers, m.Data(), &job); err != nil {
			return err
		}
		return d.drivers(ctx, job)
	}
	if m.Subject() == contracts.SubjTeardown {
		var job contracts.Teardown
		if err := bus.Decode(contracts.SchemaTeardown, m.Data(), &job); err != nil {
			return err
		}
		return d.teardown(ctx, job)
	}
	var job contracts.Deploy
	if err := bus.Decode(contracts.SchemaDeploy, m.Data(), &job); err != nil {
		return err
	}
	return d.deploy(ctx, job)
}

func (d *Deployer) deploy(ctx context.Context, job contracts.Deploy) error {
	log := d.log.With("code", job.Code, "configuration", job.Configuration)
	timeout := time.Duration(job.TimeoutS) * time.Second
	if timeout <= 0 {
		timeout = time.Duration(plan.DefaultTimeouts.SUTReadyS) * time.Second
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	dep, err := d.backend.Deploy(dctx, backend.Spec{Code: job.Code, Configuration: job.Configuration, DBMS: job.DBMS, Benchmark: job.Benchmark, SUT: job.SUT, DeployID: job.ID})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // stopping: redeliver
		}
		reason := err.Error()
		if errors.Is(err, catalog.ErrUnknownDBMS) {
			reason += " (add a catalog file under catalog/ or fix the request's dbms)"
		}
		log.Warn("deploy failed", "err", err)
		return d.bus.Publish(ctx, contracts.TopicSUTFailed.For(job.Code), &contracts.SUTFailed{
			Envelope:      contracts.NewEnvelope(job.Code, contracts.SUTFailedID(job.ID), time.Now()),
			Configuration: job.Configuration, DBMS: job.DBMS, Reason: reason,
		})
	}
	log.Info("sut ready", "endpoint", fmt.Sprintf("%s:%d", dep.Endpoint.Host, dep.Endpoint.Port), "after", time.Since(start))
	d.metrics.start.WithLabelValues(job.DBMS).Observe(time.Since(start).Seconds())
	d.metrics.up(job.Code, job.Configuration)
	return d.bus.Publish(ctx, contracts.TopicSUTReady.For(job.Code), &contracts.SUTReady{
		Envelope:      contracts.NewEnvelope(job.Code, contracts.SUTReadyID(job.ID), time.Now()),
		Configuration: job.Configuration, DBMS: job.DBMS, Endpoint: dep.Endpoint, Backend: dep.Backend, Volume: dep.Volume,
		Info: dep.Info, ReadyAfterMS: time.Since(start).Milliseconds(),
	})
}

func (d *Deployer) teardown(ctx context.Context, job contracts.Teardown) error {
	vols, persistent := d.backend.(backend.Volumes)
	if job.Loaded != nil && persistent {
		// Before the SUT goes: a crash in between redelivers the job, and
		// marking again is harmless.
		if err := vols.MarkLoaded(ctx, job.Loaded.Volume, time.Duration(job.Loaded.LoadingTimeS*float64(time.Second)), job.Loaded.By, job.Loaded.At); err != nil {
			return fmt.Errorf("mark volume %s loaded: %w", job.Loaded.Volume, err) // redelivered
		}
	}
	died := d.diedBeforeTeardown(ctx, job.Code, job.Configuration)
	if err := d.backend.Teardown(ctx, job.Code, job.Configuration); err != nil {
		return fmt.Errorf("teardown %s: %w", job.Configuration, err) // redelivered
	}
	d.metrics.down(job.Code, job.Configuration)
	if persistent {
		d.syncVolumes(ctx, vols)
	}
	d.log.Info("sut removed", "code", job.Code, "configuration", job.Configuration, "reason", job.Reason)
	return d.bus.Publish(ctx, contracts.TopicSUTRemoved.For(job.Code), &contracts.SUTRemoved{
		Envelope:      contracts.NewEnvelope(job.Code, contracts.SUTRemovedID(job.ID), time.Now()),
		Configuration: job.Configuration, DBMS: job.DBMS, Died: died,
	})
}

// diedBeforeTeardown says how a SUT had died when its teardown came, ""
// when it had not or the backend cannot tell. The watch (watchSUTs) looks
// once a second; a driver that cannot connect fails its phase sooner, and
// the experiment would then name only that symptom.
func (d *Deployer) diedBeforeTeardown(ctx context.Context, code, configuration string) string {
	w, ok := d.backend.(backend.SUTWatcher)
	if !ok {
		return ""
	}
	reason, err := w.DeadSUT(ctx, code, configuration)
	if err != nil {
		d.log.Warn("could not tell whether the SUT had died before its teardown", "code", code, "configuration", configuration, "err", err)
	}
	if reason != "" {
		d.log.Warn("sut had died before its teardown", "code", code, "configuration", configuration, "reason", reason)
	}
	return reason
}

// syncVolumes mirrors the backend's volumes into the volumes KV bucket for
// benchq status, dropping the entries of volumes that are gone. Best effort:
// the backend's own record (PVC annotations, volume.json) is the truth, and
// the next teardown syncs again.
func (d *Deployer) syncVolumes(ctx context.Context, vols backend.Volumes) {
	entries, err := vols.VolumeEntries(ctx)
	if err != nil {
		d.log.Warn("volumes not listed", "err", err)
		return
	}
	kv, err := d.bus.JS.KeyValue(ctx, contracts.KVVolumes)
	if err != nil {
		d.log.Warn("no volumes bucket", "err", err)
		return
	}
	keep := map[string]bool{}
	for _, e := range entries {
		keep[e.Name] = true
		data, _ := json.Marshal(e)
		if _, err := kv.Put(ctx, e.Name, data); err != nil {
			d.log.Warn("volume not recorded", "volume", e.Name, "err", err)
		}
	}
	if keys, err := kv.ListKeys(ctx); err == nil {
		for k := range keys.Keys() {
			if !keep[k] {
				_ = kv.Delete(ctx, k)
			}
		}
	}
}

// drivers starts the driver Job of a phase attempt on a backend that runs
// them. A Job the backend refuses (a name too long, say) is reported at
// once as a driver.ended that nothing succeeded, so the phase fails naming
// it instead of waiting for its barrier timeout.
func (d *Deployer) drivers(ctx context.Context, job contracts.Drivers) error {
	if pa, ok := d.backend.(backend.PhaseAgents); ok {
		return d.topUp(ctx, pa, job) // local: the pool, topped up if too small
	}
	db, ok := d.backend.(backend.DriverBackend)
	if !ok {
		return nil
	}
	log := d.log.With("code", job.Code, "phase", job.Phase, "attempt", job.Attempt)
	spec := backend.DriverSpec{Code: job.Code, Configuration: job.Configuration, DBMS: job.DBMS, Phase: job.Phase, Kind: job.Kind,
		Attempt: job.Attempt, Shards: job.Shards, Node: job.Node}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	name, err := db.StartDrivers(cctx, spec)
	if err == nil {
		log.Info("driver job started", "job", name, "shards", job.Shards)
		return nil
	}
	if ctx.Err() != nil || !errors.Is(err, backend.ErrRefused) {
		return fmt.Errorf("start drivers of %s: %w", job.Phase, err) // redelivered
	}
	log.Warn("driver job refused", "err", err)
	now := time.Now().UTC()
	ended := &contracts.DriverEnded{
		Envelope:  contracts.Envelope{Code: job.Code},
		DriverJob: contracts.DriverJob{Configuration: job.Configuration, Phase: job.Phase, Kind: job.Kind, Attempt: job.Attempt, Job: "(not created)"},
		Shards:    job.Shards, StartedAt: &now, EndedAt: &now,
		Reason: "the driver Job was not created: " + err.Error(),
	}
	ended.Stamp(now)
	return d.bus.Publish(ctx, contracts.TopicDriverEnded.For(job.Code), ended)
}

// watchSUTs publishes, once per process, every ready SUT found dead
// (sut.failed with running: true): the scheduler fails its running phase.
// A restarted deployer finds a dead SUT not yet torn down again; JetStream
// drops the repeat (same id), and the scheduler ignores a SUT no longer running.
func (d *Deployer) watchSUTs(ctx context.Context, w backend.SUTWatcher, every time.Duration) {
	reportOnce(ctx, d, every, "SUTs not checked", w.DeadSUTs, func(x backend.DeadSUT) finding {
		return finding{
			key:     x.Code + "/" + x.Configuration,
			subject: contracts.TopicSUTFailed.For(x.Code),
			msg: &contracts.SUTFailed{
				Envelope:      contracts.NewEnvelope(x.Code, contracts.SUTFailedID(contracts.DeployID(x.Code, x.Configuration)), time.Now()),
				Configuration: x.Configuration, DBMS: x.DBMS, Reason: x.Reason, Running: true,
			},
			published: func() {
				d.log.Warn("sut died", "code", x.Code, "configuration", x.Configuration, "reason", x.Reason)
			},
		}
	})
}

// watchDrivers reports every driver Job that ended, once per process (see
// ../kube/drivers.go): a restarted deployer lists the Jobs again and
// re-publishes, which JetStream drops as duplicates.
func (d *Deployer) watchDrivers(ctx context.Context, db backend.DriverBackend, every time.Duration) {
	reportOnce(ctx, d, every, "driver jobs not listed", db.EndedDrivers, func(e contracts.DriverEnded) finding {
		e.Stamp(time.Now())
		return finding{key: e.Job, subject: contracts.TopicDriverEnded.For(e.Code), msg: &e, published: func() {
			d.log.Info("driver job ended", "code", e.Code, "phase", e.Phase, "job", e.Job,
				"succeeded", e.Succeeded, "failed", e.Failed, "simulated", e.Simulated)
		}}
	})
}

// driverLost publishes that a driver pod was lost (../kube/drivers.go),
// trying again each second while the bus is down: the scheduler needs it
// to re-run the phase before the agent's silence would tell.
func (d *Deployer) driverLost(ctx context.Context, e contracts.DriverLost) {
	e.Stamp(time.Now())
	d.log.Warn("driver pod lost", "code", e.Code, "phase", e.Phase, "attempt", e.Attempt, "pod", e.Pod, "how", e.Reason, "simulated", e.Simulated)
	for tries := 1; ; tries++ {
		err := d.bus.Publish(ctx, contracts.TopicDriverLost.For(e.Code), &e)
		if err == nil || ctx.Err() != nil {
			return
		}
		if tries == 10 {
			d.log.Warn("driver.lost not published; the agent's silence will tell", "pod", e.Pod, "err", err)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// answerPods answers the scheduler's question which driver pods are Running
// (contracts.PodsQuery): it does not call an agent lost whose pod runs.
func (d *Deployer) answerPods(w backend.DriverPodWatcher, m *nats.Msg) {
	var q contracts.PodsQuery
	if err := json.Unmarshal(m.Data, &q); err != nil {
		d.log.Warn("pods query not understood", "err", err)
		return
	}
	a, err := json.Marshal(contracts.PodsAnswer{Running: w.RunningDriverPods(q.Pods)})
	if err == nil {
		err = m.Respond(a)
	}
	if err != nil {
		d.log.Warn("pods query not answered", "err", err)
	}
}

// finding is one event a watch publishes: key marks it reported, published
// logs it once it is out.
type finding struct {
	key, subject string
	msg          contracts.Message
	published    func()
}

// reportOnce polls list every period and publishes each finding this
// process has not reported yet; one whose publish failed is tried again at
// the next round.
func reportOnce[T any](ctx context.Context, d *Deployer, every time.Duration, listFailed string,
	list func(context.Context, map[string]bool) ([]T, error), event func(T) finding) {
	reported := map[string]bool{}
	poll(ctx, every, func() {
		found, err := list(ctx, reported)
		if err != nil && ctx.Err() == nil {
			d.log.Warn(listFailed, "err", err)
		}
		for _, x := range found {
			f := event(x)
			if err := d.bus.Publish(ctx, f.subject, f.msg); err != nil {
				if ctx.Err() == nil {
					d.log.Warn("not published", "subject", f.subject, "id", f.msg.Head().ID, "err", err)
				}
				continue // next round
			}
			reported[f.key] = true
			f.published()
		}
	})
}

// poll calls f at once, then every period, until ctx ends.
func poll(ctx context.Context, every time.Duration, f func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		f()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
