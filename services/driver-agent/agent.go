package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/benchbase"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/natsauth"
	"github.com/benchq/benchq/internal/obs"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/startup"
)

// Config is the agent's configuration.
type Config struct {
	NATSURL   string
	Name      string // unique per agent; appears in results
	Java      string
	YCSBLib   string // directory with the YCSB core, our bindings and their dependencies
	Workloads string // directory with workloada..workloadf
	// Benchbase, when set, runs TPC-C shards (engine benchbase) instead of
	// the embedded engine (benchbase.go).
	Benchbase *benchbase.Install

	// SUT tells each SUT's password (startup.SUTAuth): from the stack's
	// key, or the one SUT's a driver pod was given; the zero value: none.
	SUT startup.SUTAuth

	// Limits bind the agent to one phase (driver Jobs, phase.go).
	Limits PhaseLimits
	// SUTHosts are the hosts it may send a SUT's password to
	// (startup.SUTHostsEnv);
	// none: any.
	SUTHosts []string

	// NoStandby: no standby JVM (standby.go); each shard starts its own.
	NoStandby bool
	// Standbys is how many standby JVMs to keep ready (0: DefaultStandbys).
	Standbys int
	// ReuseJVM: a JVM that ended its shard well runs the agent's next one
	// (warm; docs/adr/0018) instead of being killed.
	ReuseJVM bool

	// Metrics is the registry served on the agent's /metrics (main.go);
	// it receives the shard in flight's driver process tree and live
	// operations (metrics.go). nil: a registry nobody serves.
	Metrics *prometheus.Registry
}

// Agent pulls shard jobs from the shared work queue, one at a time.
type Agent struct {
	cfg      Config
	bus      *bus.Bus
	log      *slog.Logger
	busy     atomic.Value  // string: the id of the shard job in flight, for heartbeats
	beatNow  chan struct{} // a heartbeat at once (the job in flight changed)
	instance string        // this run of the agent (its public key), in READY and heartbeats
	lim      phaseState    // shards ended, for Limits.MaxShards (phase.go)
	standby  standby       // the JVM ready for the next YCSB shard (standby.go)
	metrics  *agentMetrics
	// jobAt is when handle began the job in hand (one at a time): every
	// final of that job carries it (Final.JobAt).
	jobAt time.Time
}

// ackWait: a job not acked or touched (InProgress) within this time goes to
// another agent. An agent touches its job every touchEvery from the moment
// it gets it (handle) until it is settled, so a job whose agent died —
// before its READY too, when the scheduler cannot know who holds it — is
// taken by another agent within ackWait; a live agent would have to stall
// for ackWait to lose its job (and a second copy of it is then dropped as
// stale or counted once: the final's body id is deterministic, and the
// shard's holder alone is counted).
const (
	ackWait    = 5 * time.Second
	touchEvery = time.Second
)

// fetchWait is how long the agent's pull request for a shard job waits
// before it asks again (bus.ConsumerSpec.MaxWait): a job it missed waits at
// most this long, between the phases.
const fetchWait = 250 * time.Millisecond

// Run serves jobs until ctx ends. A job in flight when ctx ends is not acked:
// JetStream redelivers it.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	b, err := bus.Connect(ctx, cfg.NATSURL, natsauth.Agent, "benchq-agent-"+cfg.Name, log)
	if err != nil {
		return err
	}
	defer b.Close()
	if err := b.WaitDeclared(ctx); err != nil {
		return err
	}
	// The run's own key pair signs what it says for a shard, and its public
	// key names this run of the agent (contracts BarrierReady.Instance):
	// the scheduler tells a restarted agent from the one that took a shard
	// by it, and counts a shard's results only when that run signed them
	// (contracts/sign.go).
	signer, err := contracts.NewSigner()
	if err != nil {
		return err
	}
	b.Signer = signer
	a := &Agent{cfg: cfg, bus: b, log: log, instance: signer.Public(), beatNow: make(chan struct{}, 1)}
	if a.metrics, err = newAgentMetrics(obs.Or(cfg.Metrics)); err != nil {
		return err
	}
	ctx = a.withLimits(ctx)
	removeStaleShardDirs(log)
	a.standby.starts = a.metrics.starts
	if !cfg.NoStandby && cfg.YCSBLib != "" && cfg.Limits.Phase == "" && cfg.Limits.MaxShards == 0 {
		a.standby.java, a.standby.lib, a.standby.reuse = cfg.Java, cfg.YCSBLib, cfg.ReuseJVM
		a.standby.size = cmp.Or(cfg.Standbys, DefaultStandbys)
		go a.keepStandby(ctx)
	}
	defer a.standby.stop()
	go a.heartbeat(ctx)
	log.Info("agent ready", "name", cfg.Name, "instance", a.instance, "ycsb", cfg.YCSBLib)
	return b.Consume(ctx, bus.ConsumerSpec{
		Stream: contracts.StreamJobs, Durable: contracts.DurableAgents, Filters: []string{contracts.SubjShard},
		AckWait: ackWait, MaxDeliver: 3, MaxWait: fetchWait,
	}, func(ctx context.Context, msgs []jetstream.Msg) []error {
		errs := make([]error, len(msgs))
		for i, m := range msgs {
			errs[i] = a.handle(ctx, m)
			a.afterJob()
		}
		return errs
	})
}

func (a *Agent) handle(ctx context.Context, m jetstream.Msg) error {
	a.jobAt = time.Now().UTC()
	defer bus.KeepAlive(m, touchEvery)()
	var job contracts.ShardJob
	if err := bus.Decode(contracts.SchemaShardJob, m.Data(), &job); err != nil {
		return err
	}
	if other, err := a.otherPhase(ctx, m, job); other {
		return err
	}
	log := a.log.With("code", job.Code, "phase", job.Phase, "shard", job.Shard, "attempt", job.Attempt)
	if err := mayConnect(a.cfg.SUTHosts, job.Endpoint); err != nil {
		// Never run here, so no password goes to that host. Handed back,
		// not dropped: an agent of another backend sharing the queue (a
		// driver Job's pod) may be the one it is for; a forged one ends
		// after the consumer's MaxDeliver.
		log.Error("shard job handed back, not run", "err", err)
		return fmt.Errorf("shard job %s not run here: %w", job.ID, err)
	}
	// A message never carries the password: the agent knows it.
	job.Endpoint.Password = a.cfg.SUT.PasswordOf(job.Code, job.Configuration)
	entry, err := catalog.Lookup(job.DBMS)
	if err != nil {
		return a.publishFinal(ctx, failedFinal(job, a.cfg.Name, err.Error()))
	}
	if holder := a.heldElsewhere(ctx, m, job.ID); holder != "" {
		// Its agent still runs it (it only missed its touches): running
		// it here too would run the shard twice. Handed back; the holder
		// acks it when done.
		log.Warn("shard job redelivered while its agent still runs it: handed back", "holder", holder)
		return fmt.Errorf("shard job %s is still run by %s on this host", job.ID, holder)
	}
	if stale, why := a.stale(ctx, m, job); stale {
		// A redelivery after its first agent died, for a phase attempt the
		// scheduler no longer waits for (it started without it, re-ran it,
		// or failed it): running it would only hold this agent.
		log.Warn("dropping stale shard job", "why", why)
		return nil
	}
	if job.Engine == "benchbase" && job.TPCC != nil {
		return a.handleTPCC(ctx, m, job, log)
	}
	if job.Engine == "tsdb" && job.TSDB != nil && entry.IsTSDB() {
		return a.handleTSDB(ctx, job, entry, log)
	}
	if job.Engine != "ycsb" || job.YCSB == nil {
		return a.publishFinal(ctx, failedFinal(job, a.cfg.Name, fmt.Sprintf("engine %q is not available on this agent for %s (it runs ycsb, benchbase's TPC-C with its embedded engine, and tsdb's metrics generators against a time-series database)", job.Engine, job.DBMS)))
	}
	hdrDir, err := os.MkdirTemp("", shardDirPrefix(os.Getpid()))
	if err != nil {
		return fmt.Errorf("histogram dir: %w", err) // transient: redelivered
	}
	defer os.RemoveAll(hdrDir)
	props := entry.YCSBProperties(job.Endpoint, job.Kind)
	secretFile, err := writeSecretProperties(hdrDir, props, entry.SecretYCSBProperties())
	if err != nil {
		return fmt.Errorf("shard's secret properties: %w", err) // transient: redelivered
	}
	args := ycsbCommand(a.cfg.Java, a.cfg.YCSBLib, a.cfg.Workloads, hdrDir, job, entry.YCSB.DB, props, secretFile)
	log.Info("shard starting", "cmd", args)
	r := &shardRun{a: a, job: job, args: args, hdrDir: hdrDir, log: log}
	return a.runShard(ctx, job, log, r.run)
}

// shardDirPrefix names the temporary directories of the shards of the agent
// process pid (their histogram logs, and the SUT's password in a 0600 file):
// the pid is in it, so that any agent can tell a killed agent's leftovers.
func shardDirPrefix(pid int) string { return fmt.Sprintf("benchq-shard-%d-", pid) }

// removeStaleShardDirs removes the shard directories that killed agents left
// behind (their deferred clean-up never ran): those whose agent process is
// gone. Another stack's live agents on this host keep theirs.
func removeStaleShardDirs(log *slog.Logger) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "benchq-shard-*-*"))
	removed := 0
	for _, d := range dirs {
		pidText, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(d), "benchq-shard-"), "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue // not ours to judge, or its agent lives
		}
		if err := os.RemoveAll(d); err != nil {
			log.Warn("a shard directory left by a killed agent not removed", "dir", d, "err", err)
			continue
		}
		removed++
	}
	if removed > 0 {
		log.Info("removed the shard directories killed agents left", "count", removed)
	}
}

// runShard runs a shard job with run and publishes its final (handle keeps
// the job alive meanwhile: a shard may wait at its barrier and run for
// longer than ackWait).
func (a *Agent) runShard(ctx context.Context, job contracts.ShardJob, log *slog.Logger, run func(context.Context) (*contracts.Final, error)) error {
	a.setBusy(job.ID)
	defer a.setBusy("")
	final, err := run(ctx)
	if err != nil {
		return err // stopping: not acked, redelivered
	}
	log.Info("shard finished", "status", final.Status, "throughput", final.Throughput, "error", final.Error)
	return a.publishFinal(ctx, final)
}

// heldElsewhere names the agent that still runs a redelivered job: its
// heartbeat says it runs the job, and it is a live driver agent of that
// name on this host (procs.IsDriverAgent). A job whose agent died, or runs
// on another host, is not held: it is run here.
func (a *Agent) heldElsewhere(ctx context.Context, m jetstream.Msg, jobID string) string {
	meta, err := m.Metadata()
	if err != nil || meta.NumDelivered < 2 {
		return ""
	}
	return a.holderOf(ctx, jobID)
}

// holderOf names another live driver agent of this host whose heartbeat
// says it runs jobID ("" when none).
func (a *Agent) holderOf(ctx context.Context, jobID string) string {
	beats, err := bus.Heartbeats(ctx, a.bus.JS)
	if err != nil {
		return ""
	}
	host, _ := os.Hostname()
	for name, hb := range beats {
		if name != a.cfg.Name && hb.Busy == jobID && hb.Host == host && hb.Pid > 0 && procs.IsDriverAgent(hb.Pid, name) {
			return name
		}
	}
	return ""
}

// stale reports whether a shard job is out of date: past its attempt's
// barrier deadline, or — when redelivered — no longer awaited according to
// the scheduler's stored state.
func (a *Agent) stale(ctx context.Context, m jetstream.Msg, job contracts.ShardJob) (bool, string) {
	if job.StartBy != nil && time.Now().After(*job.StartBy) {
		return true, fmt.Sprintf("past its barrier deadline %s", job.StartBy.Format(time.RFC3339))
	}
	meta, err := m.Metadata()
	if err != nil || meta.NumDelivered < 2 {
		return false, ""
	}
	awaited, err := a.bus.ShardAwaited(ctx, job.Code, job.Phase, job.Attempt, job.Shard)
	if err != nil {
		return false, "" // cannot tell: run it; the scheduler ignores stale attempts
	}
	if !awaited {
		return true, fmt.Sprintf("delivery %d: the experiment no longer waits for shard %d of %s attempt %d", meta.NumDelivered, job.Shard, job.Phase, job.Attempt)
	}
	return false, ""
}

// publishFinal publishes a shard's final with a context of its own, as
// bus.settle's acks do: a SIGTERM while the publish waits for its PubAck
// would fail it although JetStream stored the final, the job would be handed
// back, and another agent would pick up a shard that already ran.
func (a *Agent) publishFinal(ctx context.Context, f *contracts.Final) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if f.JobAt == nil && !a.jobAt.IsZero() {
		at := a.jobAt
		f.JobAt = &at
	}
	subj := contracts.FinalSubject(f.Code, f.Phase, f.Shard)
	if err := a.bus.Publish(ctx, subj, f); err != nil {
		return err
	}
	a.shardEnded()
	return nil
}

// publishInterval publishes a status interval of job's shard and updates
// its live figures (live may be nil); an interval that is lost is only
// logged, the final holds the shard's result.
func (a *Agent) publishInterval(ctx context.Context, job contracts.ShardJob, live *liveShard, iv contracts.Interval) {
	iv.Envelope = contracts.NewEnvelope(job.Code, contracts.IntervalID(job.Code, job.Phase, job.Shard, job.Attempt, iv.ElapsedS), time.Now())
	iv.Phase, iv.Shard, iv.Attempt = job.Phase, job.Shard, job.Attempt
	live.interval(&iv)
	if err := a.bus.Publish(ctx, contracts.IntervalSubject(job.Code, job.Phase, job.Shard), &iv); err != nil {
		a.log.Warn("interval not published", "err", err)
	}
}

func failedFinal(job contracts.ShardJob, agent, reason string) *contracts.Final {
	return failed(newFinal(job, agent, 0, 0), "%s", reason)
}

// heartbeat keeps this agent's entry alive in the agents KV bucket (its TTL
// removes agents that stopped), for `benchq status`.
func (a *Agent) heartbeat(ctx context.Context) {
	t := time.NewTicker(contracts.HeartbeatEvery)
	defer t.Stop()
	host, _ := os.Hostname()
	for {
		busy, _ := a.busy.Load().(string)
		hb := contracts.Heartbeat{Name: a.cfg.Name, At: time.Now().UTC(), Busy: busy, Instance: a.instance, Host: host, Pid: os.Getpid()}
		err := a.bus.PutHeartbeat(ctx, hb)
		switch took := time.Since(hb.At); {
		case err != nil && ctx.Err() == nil:
			a.log.Warn("heartbeat failed", "err", err, "took", took)
		case took > contracts.HeartbeatEvery/2:
			// Slow enough to eat into the scheduler's patience (AgentLiveness).
			a.log.Warn("heartbeat slow", "took", took)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.beatNow:
		}
	}
}

// setBusy records the shard job in flight ("" when none) and says so in a
// heartbeat at once: another agent that gets the job redelivered asks the
// heartbeats whether it still runs here (heldElsewhere).
func (a *Agent) setBusy(jobID string) {
	a.busy.Store(jobID)
	select {
	case a.beatNow <- struct{}{}:
	default: // one is due already
	}
}
