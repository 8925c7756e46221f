package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/benchq/benchq/contracts"
)

// The start barrier (docs/events.md): every shard of a phase attempt
// prepares, publishes READY and waits; once all are READY the scheduler
// publishes GO with a common start instant, or the phase's phase.failed when
// it gives up on the attempt. A phase.failed also stops shards already
// running (another shard died, a timeout, benchq stop).

// Errors of Barrier.Ready that fail the shard rather than hand its job back.
var (
	// ErrAborted: the scheduler failed the phase attempt before GO.
	ErrAborted = errors.New("phase aborted")
	// ErrNoGo: GO did not come within the barrier timeout.
	ErrNoGo = errors.New("no GO")
)

// Barrier is one shard's side of its phase attempt's barrier. It listens
// from JoinBarrier until Close, so neither GO nor phase.failed can be
// missed, whenever they come.
type Barrier struct {
	// Timeout bounds each wait of the shard before it starts: preparing,
	// then GO (the shard job's TimeoutS, at least a second).
	Timeout time.Duration

	b           *Bus
	job         contracts.ShardJob
	agent       string
	instance    string
	msgs        chan *nats.Msg
	unsubscribe func()
	done        chan struct{}

	mu      sync.Mutex
	startAt *time.Time    // GO's instant, if GO came before any phase.failed
	goDelay time.Duration // from GO's publication (its ts) to its arrival here
	gotGo   chan struct{} // closed when startAt is set
	aborted chan struct{} // closed on phase.failed, with reason set
	reason  string
}

// JoinBarrier starts listening for the GO and phase.failed of job's phase
// attempt; call it before the shard can become READY. agent and instance
// name the shard's agent and its run in READY.
func (b *Bus) JoinBarrier(job contracts.ShardJob, agent, instance string) (*Barrier, error) {
	br := &Barrier{
		Timeout: time.Duration(max(job.TimeoutS, 1)) * time.Second,
		b:       b, job: job, agent: agent, instance: instance,
		msgs: make(chan *nats.Msg, 16), done: make(chan struct{}),
		gotGo: make(chan struct{}), aborted: make(chan struct{}),
	}
	unsubscribe, err := b.Listen(br.msgs, contracts.TopicBarrierGo.For(job.Code), contracts.TopicPhaseFailed.For(job.Code))
	if err != nil {
		return nil, err
	}
	br.unsubscribe = unsubscribe
	go br.dispatch()
	return br, nil
}

// Close stops listening.
func (br *Barrier) Close() {
	br.unsubscribe()
	close(br.done)
}

// dispatch reads the signals in the order they arrived, so a GO followed by
// a phase.failed starts the shard and then stops it.
func (br *Barrier) dispatch() {
	for {
		select {
		case m := <-br.msgs:
			br.signal(m)
		case <-br.done:
			return
		}
	}
}

// signal records a GO or phase.failed of this phase attempt; others (other
// phases, earlier attempts) are ignored.
func (br *Barrier) signal(m *nats.Msg) {
	p, err := contracts.ParseSubject(m.Subject)
	if err != nil {
		return
	}
	var head struct {
		TS      time.Time `json:"ts"`
		Phase   string    `json:"phase"`
		Attempt int       `json:"attempt"`
		StartAt time.Time `json:"start_at"`
		Reason  string    `json:"reason"`
	}
	arrived := time.Now()
	if json.Unmarshal(m.Data, &head) != nil || head.Phase != br.job.Phase || head.Attempt != br.job.Attempt {
		return
	}
	br.mu.Lock()
	defer br.mu.Unlock()
	if isClosed(br.aborted) {
		return
	}
	switch {
	case p.Topic == contracts.TopicBarrierGo && br.startAt == nil:
		br.startAt, br.goDelay = &head.StartAt, arrived.Sub(head.TS)
		close(br.gotGo)
	case p.Topic == contracts.TopicPhaseFailed:
		br.reason = head.Reason
		close(br.aborted)
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Ready publishes the shard's READY and waits for GO; it returns GO's
// common start instant. It fails with ErrAborted when the phase attempt
// failed first, ErrNoGo after Timeout, ctx.Err() when ctx ends; any other
// error means READY was not published.
func (br *Barrier) Ready(ctx context.Context) (time.Time, error) {
	job := br.job
	if err := br.b.Publish(ctx, contracts.TopicBarrierReady.For(job.Code), &contracts.BarrierReady{
		Envelope: contracts.NewEnvelope(job.Code, contracts.ReadyID(job.Code, job.Phase, job.Shard, job.Attempt), time.Now()),
		Phase:    job.Phase, Shard: job.Shard, Attempt: job.Attempt, Agent: br.agent, Instance: br.instance,
	}); err != nil {
		return time.Time{}, err
	}
	deadline := time.NewTimer(br.Timeout)
	defer deadline.Stop()
	select {
	case <-br.gotGo:
		return *br.startAt, nil
	case <-br.aborted:
		return time.Time{}, fmt.Errorf("%w: the scheduler failed phase %s", ErrAborted, job.Phase)
	case <-deadline.C:
		return time.Time{}, fmt.Errorf("%w within %s", ErrNoGo, br.Timeout)
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

// GoDelayMS is how long GO took to reach this shard, in ms, for its final
// (contracts.Final.GoDelayMS); nil before GO.
func (br *Barrier) GoDelayMS() *float64 {
	br.mu.Lock()
	defer br.mu.Unlock()
	if br.startAt == nil {
		return nil
	}
	ms := float64(br.goDelay.Microseconds()) / 1000
	return &ms
}

// Aborted is closed when the phase attempt fails after GO (see Reason):
// the running shard must stop.
func (br *Barrier) Aborted() <-chan struct{} { return br.aborted }

// Reason is the phase.failed's reason, once Aborted is closed.
func (br *Barrier) Reason() string {
	br.mu.Lock()
	defer br.mu.Unlock()
	return br.reason
}

// Context is ctx, also cancelled when the phase attempt fails, with its
// reason as the cause (context.Cause): for engines that stop on their
// context.
func (br *Barrier) Context(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-br.aborted:
			cancel(errors.New(br.Reason()))
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(nil) }
}

// PublishGo opens phase's barrier for attempt: every shard starts at
// startAt. The scheduler does so once every shard is READY; cmd/bench and
// tests stand in for it with this.
func (b *Bus) PublishGo(ctx context.Context, code, phase string, attempt int, startAt time.Time) error {
	return b.Publish(ctx, contracts.TopicBarrierGo.For(code), &contracts.BarrierGo{
		Envelope: contracts.NewEnvelope(code, contracts.GoID(code, phase, attempt), time.Now()),
		Phase:    phase, Attempt: attempt, StartAt: startAt,
	})
}

// Listen delivers what is published on subjects from now on to ch (core
// NATS, not JetStream), until unsubscribe. The server has the subscriptions
// when it returns, so a message published afterwards, by anyone, reaches ch.
func (b *Bus) Listen(ch chan *nats.Msg, subjects ...string) (unsubscribe func(), err error) {
	var subs []*nats.Subscription
	unsubscribe = func() {
		for _, sub := range subs {
			_ = sub.Unsubscribe()
		}
	}
	for _, s := range subjects {
		sub, err := b.NC.ChanSubscribe(s, ch)
		if err != nil {
			unsubscribe()
			return nil, fmt.Errorf("subscribe %s: %w", s, err)
		}
		subs = append(subs, sub)
	}
	if err := b.NC.Flush(); err != nil {
		unsubscribe()
		return nil, fmt.Errorf("nats flush: %w", err)
	}
	return unsubscribe, nil
}
