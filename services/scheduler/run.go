package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/atomicfile"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/natsauth"
	"github.com/benchq/benchq/internal/obs"
)

// Config is the scheduler's configuration.
type Config struct {
	NATSURL   string
	TickEvery time.Duration // how often deadlines are checked
	// Metrics receives the scheduler's series (metrics.go); nil: none.
	Metrics *prometheus.Registry
	// HTTPAddr is where the HTTP intake listens ("": no intake), with the
	// bearer token in HTTPTokenFile (intake.go).
	HTTPAddr, HTTPTokenFile string
	HTTPToken               string // the token itself (BENCHQ_HTTP_TOKEN), instead of the file
	// HTTPAddrFile, when set, receives the address the intake listens on
	// once it does (HTTPAddr may have port 0: the kernel's pick, with no
	// moment between a pick and the bind for another process to take it).
	HTTPAddrFile string
}

// Scheduler does the I/O around the pure state machine. All handling is
// serialised by mu: one experiment's state is read, stepped and written
// without interleaving, and throughput is not a concern at this level.
type Scheduler struct {
	bus *bus.Bus
	kv  jetstream.KeyValue
	log *slog.Logger
	mu  sync.Mutex
	now func() time.Time

	// states are the running experiments as stored (states.go): rebuilt
	// from the KV bucket at start, kept by every write after.
	states *states

	metrics *metrics
	// voucher tells late agents that still work from lost ones (vouch.go).
	voucher *voucher
	// lastRuns are the agent runs' signed beats at the last tick (agentRuns).
	lastRuns map[string]contracts.Heartbeat
	// goDelayMS is the slowest GO delivery of the experiment that last
	// reported one: the first GO lead of the experiments planned next
	// (State.SeedGoDelayMS).
	goDelayMS *float64
}

// Run serves until ctx ends.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	b, err := bus.Open(ctx, cfg.NATSURL, natsauth.Scheduler, "benchq-scheduler", log)
	if err != nil {
		return err
	}
	defer b.Close()
	kv, err := b.JS.KeyValue(ctx, contracts.KVExperiments)
	if err != nil {
		return fmt.Errorf("kv %s: %w", contracts.KVExperiments, err)
	}
	reg := obs.Or(cfg.Metrics)
	s := &Scheduler{bus: b, kv: kv, log: log, now: time.Now, states: newStates(), metrics: newMetrics(reg), voucher: newVoucher()}
	s.voucher.podsRunning = askDeployer(b.NC)
	if cfg.TickEvery == 0 {
		cfg.TickEvery = time.Second
	}
	if err := s.recoverStates(ctx); err != nil {
		return fmt.Errorf("read experiment states: %w", err)
	}
	var wg sync.WaitGroup
	// A consumer that stops (its declaration failed for a minute) stops
	// the scheduler: one that ran on without it would look ready and never
	// answer what that consumer reads. The stack, compose or Kubernetes
	// then shows it dead and starts it again.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	consume := func(spec bus.ConsumerSpec, h bus.Handler) {
		spec.AckWait = AckWait
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.Consume(ctx, spec, h); err != nil {
				log.Error("consumer stopped: the scheduler stops", "consumer", spec.Durable, "err", err)
				stop(err)
			}
		}()
	}
	consume(bus.ConsumerSpec{Stream: contracts.StreamRequests, Durable: contracts.DurableSchedulerRequests, Batch: requestBatch}, s.handleRequests)
	// Early events are redelivered every second; MaxDeliver bounds that for an
	// event whose experiment never appears (about five minutes).
	consume(bus.ConsumerSpec{Stream: contracts.StreamEvents, Durable: contracts.DurableSchedulerEvents, MaxDeliver: maxEarly, Filters: []string{
		contracts.TopicSUTReady.All(),
		contracts.TopicSUTFailed.All(),
		contracts.TopicSUTRemoved.All(),
		contracts.TopicBarrierReady.All(),
		contracts.TopicDriverEnded.All(),
		contracts.TopicDriverLost.All(),
	}}, s.each(s.handleEvent))
	consume(bus.ConsumerSpec{Stream: contracts.StreamResults, Durable: contracts.DurableSchedulerResults, MaxDeliver: maxEarly, Filters: []string{
		contracts.TopicFinal.All(),
	}}, s.each(s.handleEvent))
	if cfg.HTTPAddr != "" {
		token, err := readToken(cfg.HTTPTokenFile, cfg.HTTPToken)
		if err != nil {
			return err
		}
		addr, err := serveIntake(ctx, cfg.HTTPAddr, &intake{bus: b, kv: kv, token: token, metrics: reg, log: log, now: time.Now})
		if err != nil {
			return err
		}
		log.Info("http intake", "addr", addr.String())
		if cfg.HTTPAddrFile != "" {
			if err := atomicfile.Write(cfg.HTTPAddrFile, []byte(addr.String()+"\n"), 0o644); err != nil {
				return fmt.Errorf("http intake's address file: %w", err)
			}
		}
	}
	log.Info("scheduler ready", "nats", cfg.NATSURL)
	t := time.NewTicker(cfg.TickEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			if err := context.Cause(ctx); !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		case <-t.C:
			if err := s.tick(ctx); err != nil {
				log.Warn("tick failed", "err", err)
			}
		}
	}
}

func (s *Scheduler) each(h func(context.Context, jetstream.Msg) error) bus.Handler {
	return func(ctx context.Context, msgs []jetstream.Msg) []error {
		errs := make([]error, len(msgs))
		for i, m := range msgs {
			s.metrics.handled(m.Subject())
			alive := bus.KeepAlive(m, time.Second)
			s.mu.Lock()
			errs[i] = h(ctx, m)
			s.mu.Unlock()
			alive()
		}
		return errs
	}
}

// AckWait is how long a message the scheduler took stays its own without
// a word: it touches the message every second while it works on it, so a
// killed scheduler's message (one in hand, or delivered to a pull request
// it left behind) goes to its successor after 5 s, not JetStream's usual 30
// (a scheduler killed at a phase switch cost an experiment 27 s, chaos
// seed 996723910).
const AckWait = 5 * time.Second

const maxEarly = 300

var codePattern = contracts.CodePattern

// handleStop cancels a running experiment (benchq stop). Stopping an
// experiment that ended or does not exist is a no-op, logged.
func (s *Scheduler) handleStop(ctx context.Context, m jetstream.Msg) error {
	var stop contracts.Stop
	if err := bus.Decode(contracts.SchemaStop, m.Data(), &stop); err != nil {
		return err
	}
	st, ok, err := s.load(ctx, stop.Code)
	if err != nil {
		return err
	}
	if !ok || st.state.Status != contracts.ExperimentRunning {
		s.log.Info("stop: no running experiment", "code", stop.Code)
		return nil
	}
	s.log.Info("stopping experiment", "code", stop.Code, "reason", stop.Reason)
	return s.step(ctx, stop.Code, Event{Msg: &stop})
}

// track records what is stored of an experiment (for -ms across
// experiments, the tick and the metrics).
func (s *Scheduler) track(st *State, data []byte, rev uint64) {
	s.metrics.track(st)
	s.states.remember(st, data, rev)
}

// busyExcept is the number of SUTs alive in experiments other than code.
func (s *Scheduler) busyExcept(code string) int { return s.states.busyExcept(code) }

// handleEvent feeds a service event or a shard result to its experiment.
func (s *Scheduler) handleEvent(ctx context.Context, m jetstream.Msg) error {
	ev, code, err := decodeEvent(m.Subject(), m.Data())
	if err != nil {
		refused, ok := refusedFinal(m.Subject(), m.Data(), err)
		if !ok {
			return err
		}
		s.log.Error("a shard's final does not match the contract: its shard fails", "subject", m.Subject(), "err", err)
		ev, code = Event{Msg: refused}, refused.Code
	}
	if meta, err := m.Metadata(); err == nil {
		ev.storedAt = meta.Timestamp
	}
	if ev.Signer, err = agentSigner(m.Subject(), m.Data(), m.Headers(), ev.Msg); err != nil {
		return err
	}
	return s.step(ctx, code, ev)
}

// agentSigner checks what a driver agent says for a shard — a READY, a
// final — against its signature (contracts/sign.go) and returns the signer.
// A READY counts only when signed by the run it names (its Instance); a
// final is matched against the run that took the shard by the state
// machine (onFinal). Anything else is refused, for good: another agent may
// have written it.
func agentSigner(subject string, data []byte, header nats.Header, msg contracts.Message) (string, error) {
	switch m := msg.(type) {
	case *contracts.BarrierReady:
		signer, err := bus.VerifyMsg(subject, data, header)
		if err == nil && signer != m.Instance {
			err = fmt.Errorf("signed by %s, but it names run %s", contracts.ShortKey(signer), contracts.ShortKey(m.Instance))
		}
		if err != nil {
			return "", bus.Permanent(fmt.Errorf("READY of shard %d of %s refused: %w", m.Shard, m.Phase, err))
		}
		return signer, nil
	case *contracts.Final:
		signer, err := bus.VerifyMsg(subject, data, header)
		if err != nil {
			return "", bus.Permanent(fmt.Errorf("final of shard %d of %s refused: %w", m.Shard, m.Phase, err))
		}
		return signer, nil
	}
	return "", nil
}

// refusedFinal is what the scheduler makes of a final that does not
// match its schema (an agent of another benchq version, say): when it
// still names its shard, a failed final of that shard saying why, so that
// the phase fails at once, naming the problem, rather than waiting out the
// shard's timeout. It counts only as its signer's, as any final (onFinal).
func refusedFinal(subject string, data []byte, err error) (*contracts.Final, bool) {
	p, perr := contracts.ParseSubject(subject)
	if perr != nil || p.Topic != contracts.TopicFinal || !errors.Is(err, contracts.ErrInvalid) {
		return nil, false
	}
	var f contracts.Final
	_ = json.Unmarshal(data, &f) // as far as it goes: a field of the wrong type is left out
	if !codePattern.MatchString(f.Code) || f.Code != p.Code || f.Phase != p.Phase || f.Shard != p.Shard || f.Shard < 1 || f.Attempt < 1 {
		return nil, false
	}
	now := time.Now().UTC()
	if f.StartedAt.IsZero() {
		f.StartedAt = now
	}
	if f.EndedAt.IsZero() {
		f.EndedAt = now
	}
	why := err.Error()
	if ve := (*contracts.ValidationError)(nil); errors.As(err, &ve) {
		why = ve.Error() // the fields, without the bus' "permanent"
	}
	f.Status = contracts.StatusFailed
	f.Error = fmt.Sprintf("its final was refused: %s (are the agent and the scheduler of the same benchq version? `benchq --version`)", why)
	return &f, true
}

func decodeEvent(subject string, data []byte) (Event, string, error) {
	msg, err := bus.DecodeSubject(subject, data)
	if err != nil {
		return Event{}, "", err
	}
	switch msg.(type) {
	case *contracts.SUTReady, *contracts.SUTFailed, *contracts.SUTRemoved, *contracts.BarrierReady, *contracts.Final, *contracts.DriverEnded, *contracts.DriverLost:
		return Event{Msg: msg}, msg.Head().Code, nil
	}
	return Event{}, "", bus.Permanent(fmt.Errorf("the scheduler does not consume %s", subject))
}

type stored struct {
	state *State
	rev   uint64
}

// errEarly: the event answers something whose state is not stored yet; it
// is redelivered (see State.Early).
var errEarly = errors.New("event arrived before the state it answers was stored; redelivering")

// step applies ev to the experiment: publish first, then store, then (by the
// caller) ack. A crash in between repeats the step; the outputs carry the same
// ids and JetStream drops them as duplicates.
func (s *Scheduler) step(ctx context.Context, code string, ev Event) error {
	st, ok, err := s.load(ctx, code)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("experiment %s: %w", code, errEarly)
	}
	if st.state.Early(ev) {
		return fmt.Errorf("experiment %s: %w", code, errEarly)
	}
	st.state.Busy = s.busyExcept(code)
	out := st.state.Step(ev, s.now())
	if prev, ok := s.publishedGo(ctx, out); ok {
		// Step again from the stored state, starting at that instant with
		// the holders that GO named.
		if st, _, err = s.load(ctx, code); err != nil {
			return err
		}
		st.state.Busy = s.busyExcept(code)
		ev.PublishedGo = prev
		out = st.state.Step(ev, s.now())
	}
	if len(out) == 0 && !ev.changes() && !st.state.dirty {
		return nil
	}
	if err := s.publish(ctx, out); err != nil {
		return err
	}
	s.metrics.switched(out, ev.storedAt, s.now())
	data, _ := json.Marshal(st.state)
	rev, err := s.kv.Update(ctx, code, data, st.rev)
	if err != nil {
		s.states.forget(code) // stored by someone else? read it again next time
		return fmt.Errorf("store state of %s: %w", code, err)
	}
	s.track(st.state, data, rev)
	if d := st.state.GoDelayMS; d != nil {
		v := *d
		s.goDelayMS = &v
	}
	for _, o := range out {
		s.log.Info("published", "code", code, "subject", o.Subject, "id", o.Msg.Head().ID)
	}
	return nil
}

// publishedGo finds whether the GO in out was published already, otherwise,
// by a step that was not stored: JetStream would drop the new one as a
// duplicate (same id), so the agents start at the old instant, the
// collector keeps the old holders, and the phase must say so too.
func (s *Scheduler) publishedGo(ctx context.Context, out []Out) (*contracts.BarrierGo, bool) {
	for _, o := range out {
		g, ok := o.Msg.(*contracts.BarrierGo)
		if !ok {
			continue
		}
		data, found, err := s.bus.Published(ctx, contracts.StreamEvents, o.Subject, g.ID)
		if err != nil {
			s.log.Warn("could not look for an earlier GO", "id", g.ID, "err", err)
			return nil, false
		}
		var prev contracts.BarrierGo
		if !found || json.Unmarshal(data, &prev) != nil ||
			prev.StartAt.Equal(g.StartAt) && slices.Equal(prev.Agents, g.Agents) && slices.Equal(prev.Instances, g.Instances) {
			return nil, false
		}
		s.log.Info("GO published before a restart: the phase starts at its instant, with its holders", "id", g.ID, "start_at", prev.StartAt)
		return &prev, true
	}
	return nil, false
}

// changes: every event but a tick may change state without output (a READY
// that is not the last one).
func (e Event) changes() bool { return !e.Tick }

func (s *Scheduler) publish(ctx context.Context, out []Out) error {
	for _, o := range out {
		if err := s.bus.Publish(ctx, o.Subject, o.Msg); err != nil {
			return err
		}
	}
	return nil
}

// agentRuns reads the agents' runs and their last signed beats; nil (no
// lost-agent check) when the bucket cannot be read. A heartbeat not signed
// by its run is logged and left out: another agent wrote it. A run whose
// entry another agent wrote over or deleted keeps its last signed beat
// (lastRuns) until the bucket's TTL would have removed it: its silence,
// not a forgery, decides when it is lost. (A scheduler that restarts
// forgets them: after a restart, a run whose entry is gone is gone.)
func (s *Scheduler) agentRuns(ctx context.Context) map[string]contracts.Heartbeat {
	runs, refused, err := bus.AgentRuns(ctx, s.bus.JS)
	if err != nil {
		s.log.Warn("agent heartbeats unreadable", "err", err)
		return nil
	}
	for key, why := range refused {
		s.log.Warn("heartbeat refused", "key", key, "why", why)
	}
	now := s.now()
	for instance, last := range s.lastRuns {
		if _, ok := runs[instance]; !ok && now.Sub(last.At) < contracts.AgentsTTL {
			runs[instance] = last
		}
	}
	s.lastRuns = runs
	return runs
}
