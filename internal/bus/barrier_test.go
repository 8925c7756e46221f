package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/testenv"
)

// freshBus is a bus on an embedded NATS server of the test's own.
func freshBus(t *testing.T) (context.Context, *bus.Bus) {
	t.Helper()
	ctx := testCtx(t)
	return ctx, testenv.Bus(t, ctx, testenv.NATS(t))
}

func barrierJob(timeoutS int) contracts.ShardJob {
	return contracts.ShardJob{
		Envelope: contracts.NewEnvelope("bar", contracts.ShardJobID("bar", "c-1-1", 2, 3), time.Now()),
		Phase:    "c-1-1", Shard: 2, Attempt: 3, TimeoutS: timeoutS,
	}
}

// phaseFailed publishes the phase.failed of job's phase at attempt.
func phaseFailed(t *testing.T, ctx context.Context, b *bus.Bus, job contracts.ShardJob, attempt int, reason string) {
	t.Helper()
	ev := &contracts.PhaseEvent{
		Envelope:      contracts.NewEnvelope(job.Code, contracts.PhaseEventID(job.Code, job.Phase, attempt, contracts.PhaseFailed), time.Now()),
		Configuration: "c-1", Phase: job.Phase, Attempt: attempt, Reason: reason,
	}
	if err := b.Publish(ctx, contracts.TopicPhaseFailed.For(job.Code), ev); err != nil {
		t.Fatal(err)
	}
}

// join joins job's barrier and returns its READYs as they are published.
func join(t *testing.T, b *bus.Bus, job contracts.ShardJob) (*bus.Barrier, chan *nats.Msg) {
	t.Helper()
	ready := make(chan *nats.Msg, 4)
	unsubscribe, err := b.Listen(ready, contracts.TopicBarrierReady.For(job.Code))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unsubscribe)
	br, err := b.JoinBarrier(job, "agent-7", "run-1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(br.Close)
	return br, ready
}

// READY goes out with the shard's id; only the GO of its own phase and
// attempt opens the barrier, and a phase.failed after GO aborts the run.
func TestBarrierReadyGoThenAbort(t *testing.T) {
	t.Parallel()
	ctx, b := freshBus(t)
	job := barrierJob(60)
	br, ready := join(t, b, job)

	startAt := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	type result struct {
		at  time.Time
		err error
	}
	got := make(chan result, 1)
	go func() {
		at, err := br.Ready(ctx)
		got <- result{at, err}
	}()
	select {
	case m := <-ready:
		var r contracts.BarrierReady
		if err := bus.Decode(contracts.SchemaBarrierReady, m.Data, &r); err != nil {
			t.Fatal(err)
		}
		if r.ID != "bar.c-1-1.2.a3.ready" || r.Phase != job.Phase || r.Shard != 2 || r.Attempt != 3 || r.Agent != "agent-7" || r.Instance != "run-1" {
			t.Errorf("READY %+v", r)
		}
	case <-time.After(wait):
		t.Fatal("no READY")
	}
	// Another attempt's GO and failure, another phase's GO: not this shard's.
	phaseFailed(t, ctx, b, job, 2, "earlier attempt")
	for _, g := range []struct {
		phase   string
		attempt int
	}{{job.Phase, 2}, {"c-1-2", 3}} {
		if err := b.PublishGo(ctx, job.Code, g.phase, g.attempt, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.PublishGo(ctx, job.Code, job.Phase, job.Attempt, startAt); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.err != nil || !r.at.Equal(startAt) {
			t.Fatalf("Ready = %v, %v; want %v", r.at, r.err, startAt)
		}
	case <-time.After(wait):
		t.Fatal("Ready did not return after GO")
	}
	select {
	case <-br.Aborted():
		t.Fatal("aborted before any phase.failed of this attempt")
	default:
	}

	runCtx, stop := br.Context(ctx)
	defer stop()
	phaseFailed(t, ctx, b, job, job.Attempt, "shard 1 failed")
	select {
	case <-br.Aborted():
	case <-time.After(wait):
		t.Fatal("not aborted by the phase.failed")
	}
	<-runCtx.Done()
	if br.Reason() != "shard 1 failed" || context.Cause(runCtx).Error() != "shard 1 failed" || ctx.Err() != nil {
		t.Errorf("reason %q, cause %v", br.Reason(), context.Cause(runCtx))
	}
}

// A phase.failed before GO fails Ready with ErrAborted (even one that came
// before READY was published); no GO in time with ErrNoGo; the end of ctx
// with ctx's error. The messages are those the finals quote.
func TestBarrierReadyFails(t *testing.T) {
	t.Parallel()
	ctx, b := freshBus(t)

	job := barrierJob(60)
	br, _ := join(t, b, job)
	phaseFailed(t, ctx, b, job, job.Attempt, "timeout")
	if err := b.PublishGo(ctx, job.Code, job.Phase, job.Attempt, time.Now()); err != nil {
		t.Fatal(err)
	}
	_, err := br.Ready(ctx)
	if !errors.Is(err, bus.ErrAborted) || err.Error() != "phase aborted: the scheduler failed phase c-1-1" {
		t.Errorf("after phase.failed: %v", err)
	}

	job.Code = "bar2"
	br, _ = join(t, b, job)
	br.Timeout = 50 * time.Millisecond
	_, err = br.Ready(ctx)
	if !errors.Is(err, bus.ErrNoGo) || err.Error() != "no GO within 50ms" {
		t.Errorf("without GO: %v", err)
	}
	if br, _ := join(t, b, barrierJob(0)); br.Timeout != time.Second {
		t.Errorf("timeout of a job without one: %s, want a second", br.Timeout)
	}

	job.Code = "bar3"
	br, _ = join(t, b, job)
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := br.Ready(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("ctx ended: %v", err)
	}
}

// PublishGo publishes what the scheduler publishes: the GO id of the phase
// attempt, its start instant.
func TestPublishGo(t *testing.T) {
	t.Parallel()
	ctx, b := freshBus(t)
	gos := make(chan *nats.Msg, 1)
	unsubscribe, err := b.Listen(gos, contracts.TopicBarrierGo.For("x"))
	if err != nil {
		t.Fatal(err)
	}
	defer unsubscribe()
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := b.PublishGo(ctx, "x", "c-2-0", 4, at); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-gos:
		var g contracts.BarrierGo
		if err := json.Unmarshal(m.Data, &g); err != nil {
			t.Fatal(err)
		}
		if m.Header.Get(nats.MsgIdHdr) != "x.c-2-0.a4.go" || g.ID != "x.c-2-0.a4.go" || g.Phase != "c-2-0" || g.Attempt != 4 || !g.StartAt.Equal(at) {
			t.Errorf("GO %s: %+v", m.Header.Get(nats.MsgIdHdr), g)
		}
		if err := contracts.Validate(contracts.SchemaBarrierGo, m.Data); err != nil {
			t.Error(err)
		}
	case <-time.After(wait):
		t.Fatal("no GO")
	}
}
