package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/testenv"
)

const wait = 30 * time.Second // generous: the machine may be loaded

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func event(code, id string) *contracts.ExperimentEnd {
	return &contracts.ExperimentEnd{Envelope: contracts.NewEnvelope(code, id, time.Now()), Status: contracts.ExperimentDone}
}

func TestSetupIsIdempotentAndDeclaresEverything(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	url := testenv.NATS(t)
	b := testenv.Bus(t, ctx, url)
	if err := b.Setup(ctx); err != nil {
		t.Fatalf("second Setup: %v", err)
	}
	// Every service calls Setup at start, so two may well do it at once.
	// Not under -race: the embedded nats-server (v2.12.1) itself races on
	// concurrent stream updates (nats-io/nats-server#8171, #8114).
	if !raceDetector {
		other := testenv.Bus(t, ctx, url)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, x := range []*bus.Bus{b, other} {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = x.Setup(ctx) }()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("concurrent Setup: %v", err)
		}
	}

	want := map[string]struct {
		subjects  []string
		retention jetstream.RetentionPolicy
	}{
		contracts.StreamRequests: {contracts.StreamRequestsSubjects, jetstream.LimitsPolicy},
		contracts.StreamEvents:   {contracts.StreamEventsSubjects, jetstream.LimitsPolicy},
		contracts.StreamJobs:     {contracts.StreamJobsSubjects, jetstream.WorkQueuePolicy},
		contracts.StreamResults:  {contracts.StreamResultsSubjects, jetstream.LimitsPolicy},
	}
	for name, w := range want {
		s, err := b.JS.Stream(ctx, name)
		if err != nil {
			t.Errorf("stream %s: %v", name, err)
			continue
		}
		cfg := s.CachedInfo().Config
		if !slices.Equal(cfg.Subjects, w.subjects) || cfg.Retention != w.retention || cfg.Duplicates != bus.DupWindow {
			t.Errorf("stream %s: subjects %v retention %v duplicates %v; want %v %v %v",
				name, cfg.Subjects, cfg.Retention, cfg.Duplicates, w.subjects, w.retention, bus.DupWindow)
		}
	}
	var streams []string
	for n := range b.JS.StreamNames(ctx).Name() {
		if !slices.Contains([]string{"KV_" + contracts.KVExperiments, "KV_" + contracts.KVVolumes, "KV_" + contracts.KVAgents}, n) {
			streams = append(streams, n)
		}
	}
	slices.Sort(streams)
	if want := []string{contracts.StreamEvents, contracts.StreamJobs, contracts.StreamRequests, contracts.StreamResults}; !slices.Equal(streams, want) {
		t.Errorf("streams %v, want %v", streams, want)
	}
	for _, bucket := range []string{contracts.KVExperiments, contracts.KVVolumes, contracts.KVAgents} {
		kv, err := b.JS.KeyValue(ctx, bucket)
		if err != nil {
			t.Errorf("kv %s: %v", bucket, err)
			continue
		}
		if _, err := kv.Put(ctx, "k", []byte("v")); err != nil {
			t.Errorf("kv %s put: %v", bucket, err)
		}
	}
}

func TestPublishDeduplicatesOnMessageID(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	b := testenv.Bus(t, ctx, testenv.NATS(t))
	subj := contracts.Subject(contracts.SubjExperimentDone, "c1", "", "")
	for range 2 {
		// A re-publish after a crash carries the same id (and a new ts).
		if err := b.Publish(ctx, subj, event("c1", "c1.end")); err != nil {
			t.Fatal(err)
		}
	}
	if n := streamMsgs(t, ctx, b, contracts.StreamEvents); n != 1 {
		t.Fatalf("stream holds %d messages after publishing one id twice, want 1", n)
	}
	if err := b.Publish(ctx, subj, event("c1", "c1.other")); err != nil {
		t.Fatal(err)
	}
	if n := streamMsgs(t, ctx, b, contracts.StreamEvents); n != 2 {
		t.Fatalf("stream holds %d messages after a second id, want 2", n)
	}
}

// A message the caller encoded already goes out as those bytes; one it did
// not is encoded; both are deduplicated on their envelope's id.
func TestPublishAllSendsTheCallersEncoding(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	b := testenv.Bus(t, ctx, testenv.NATS(t))
	subj := contracts.Subject(contracts.SubjExperimentDone, "c1", "", "")
	pre := event("c1", "c1.pre")
	data, err := json.Marshal(pre)
	if err != nil {
		t.Fatal(err)
	}
	data = append([]byte(" "), data...) // as given, not encoded again
	pubs := []bus.Pub{{Subject: subj, Msg: pre, Data: data}, {Subject: subj, Msg: event("c1", "c1.plain")}, {Subject: subj, Msg: pre, Data: data}}
	for i, err := range b.PublishAll(ctx, pubs) {
		if err != nil {
			t.Fatalf("pubs[%d]: %v", i, err)
		}
	}
	s, err := b.JS.Stream(ctx, contracts.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	if n := streamMsgs(t, ctx, b, contracts.StreamEvents); n != 2 {
		t.Fatalf("stream holds %d messages, want 2 (the third repeats the first's id)", n)
	}
	first, err := s.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if string(first.Data) != string(data) {
		t.Errorf("first message %q, want the caller's bytes %q", first.Data, data)
	}
	second, err := s.GetMsg(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	var end contracts.ExperimentEnd
	if err := json.Unmarshal(second.Data, &end); err != nil || end.ID != "c1.plain" {
		t.Errorf("second message %q (%v), want c1.plain encoded", second.Data, err)
	}
}

func streamMsgs(t *testing.T, ctx context.Context, b *bus.Bus, stream string) uint64 {
	t.Helper()
	s, err := b.JS.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// delivery is one call of the handler for one message.
type delivery struct {
	id        string
	delivered uint64 // JetStream's delivery count
}

// consume runs b.Consume with a handler that records every delivery and
// answers with answer(id, delivery count); it returns the deliveries seen so
// far (a snapshot function).
func consume(t *testing.T, b *bus.Bus, spec bus.ConsumerSpec, answer func(id string, n uint64) error) func() []delivery {
	t.Helper()
	var mu sync.Mutex
	var seen []delivery
	testenv.Go(t, func(ctx context.Context) error {
		return b.Consume(ctx, spec, func(ctx context.Context, msgs []jetstream.Msg) []error {
			errs := make([]error, len(msgs))
			for i, m := range msgs {
				var head contracts.Envelope
				if err := json.Unmarshal(m.Data(), &head); err != nil {
					t.Errorf("undecodable message: %v", err)
				}
				meta, err := m.Metadata()
				if err != nil {
					t.Errorf("metadata: %v", err)
					continue
				}
				mu.Lock()
				seen = append(seen, delivery{head.ID, meta.NumDelivered})
				mu.Unlock()
				errs[i] = answer(head.ID, meta.NumDelivered)
			}
			return errs
		})
	})
	return func() []delivery {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// settled waits until the consumer holds no unacknowledged message and its
// ack floor reached the stream's last message.
func settled(t *testing.T, ctx context.Context, b *bus.Bus, stream, durable string) *jetstream.ConsumerInfo {
	t.Helper()
	var info *jetstream.ConsumerInfo
	testenv.Eventually(t, wait, func() error {
		c, err := b.JS.Consumer(ctx, stream, durable)
		if err != nil {
			return err
		}
		s, err := b.JS.Stream(ctx, stream)
		if err != nil {
			return err
		}
		si, err := s.Info(ctx)
		if err != nil {
			return err
		}
		if info, err = c.Info(ctx); err != nil {
			return err
		}
		if info.NumAckPending != 0 || info.AckFloor.Stream != si.State.LastSeq || info.NumPending != 0 {
			return fmt.Errorf("consumer %s: ack pending %d, ack floor %d of %d, pending %d",
				durable, info.NumAckPending, info.AckFloor.Stream, si.State.LastSeq, info.NumPending)
		}
		return nil
	})
	return info
}

func TestConsumeAcksWhenHandlerSucceeds(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	b := testenv.Bus(t, ctx, testenv.NATS(t))
	spec := bus.ConsumerSpec{Stream: contracts.StreamEvents, Durable: "ack-test", AckWait: time.Second}
	seen := consume(t, b, spec, func(string, uint64) error { return nil })
	if err := b.Publish(ctx, "benchq.exp.c1.done", event("c1", "m1")); err != nil {
		t.Fatal(err)
	}
	info := settled(t, ctx, b, spec.Stream, spec.Durable)
	if info.NumRedelivered != 0 || info.Delivered.Consumer != 1 {
		t.Errorf("consumer delivered %d times, %d redelivered; want once", info.Delivered.Consumer, info.NumRedelivered)
	}
	if got := seen(); !slices.Equal(got, []delivery{{"m1", 1}}) {
		t.Errorf("handler saw %v, want m1 once", got)
	}
}

func TestConsumeRedeliversTransientErrors(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	b := testenv.Bus(t, ctx, testenv.NATS(t))
	spec := bus.ConsumerSpec{Stream: contracts.StreamEvents, Durable: "transient-test", AckWait: 10 * time.Second}
	seen := consume(t, b, spec, func(_ string, n uint64) error {
		if n == 1 {
			return errors.New("database unreachable")
		}
		return nil
	})
	if err := b.Publish(ctx, "benchq.exp.c1.done", event("c1", "m1")); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		if got := seen(); len(got) < 2 {
			return fmt.Errorf("handler saw %v, want m1 twice", got)
		}
		return nil
	})
	settled(t, ctx, b, spec.Stream, spec.Durable)
	if got := seen(); !slices.Equal(got, []delivery{{"m1", 1}, {"m1", 2}}) {
		t.Errorf("handler saw %v, want m1 delivered twice, then acked", got)
	}
}

func TestConsumeTerminatesPermanentErrors(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	b := testenv.Bus(t, ctx, testenv.NATS(t))
	spec := bus.ConsumerSpec{Stream: contracts.StreamEvents, Durable: "permanent-test", AckWait: 500 * time.Millisecond}
	terminated := make(chan *nats.Msg, 4)
	sub, err := b.NC.ChanSubscribe(fmt.Sprintf("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.%s.%s", spec.Stream, spec.Durable), terminated)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := b.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	seen := consume(t, b, spec, func(id string, _ uint64) error {
		if id == "bad" {
			return bus.Permanent(errors.New("malformed"))
		}
		return nil
	})
	if err := b.Publish(ctx, "benchq.exp.c1.done", event("c1", "bad")); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-terminated:
		var adv struct {
			StreamSeq uint64 `json:"stream_seq"`
		}
		if err := json.Unmarshal(m.Data, &adv); err != nil || adv.StreamSeq != 1 {
			t.Errorf("termination advisory %s (%v), want stream_seq 1", m.Data, err)
		}
	case <-time.After(wait):
		t.Fatal("no termination advisory for the permanently failing message")
	}
	// The consumer goes on with the next message, and the terminated one is
	// not pending redelivery (the server counts it as acknowledged).
	if err := b.Publish(ctx, "benchq.exp.c1.done", event("c1", "good")); err != nil {
		t.Fatal(err)
	}
	info := settled(t, ctx, b, spec.Stream, spec.Durable)
	if info.NumRedelivered != 0 {
		t.Errorf("%d redelivered", info.NumRedelivered)
	}
	if got := seen(); !slices.Equal(got, []delivery{{"bad", 1}, {"good", 1}}) {
		t.Errorf("handler saw %v, want bad once, then good", got)
	}
}

func TestDecodeFailuresArePermanent(t *testing.T) {
	t.Parallel()
	var m contracts.PhaseEvent
	err := bus.Decode(contracts.SchemaPhase, []byte(`{"nonsense":1}`), &m)
	if !errors.Is(err, bus.ErrPermanent) || !errors.Is(err, contracts.ErrInvalid) {
		t.Fatalf("Decode(malformed) = %v, want permanent and invalid", err)
	}
	for _, c := range []struct{ subject, data string }{
		{"benchq.exp.c1.done", `{"nonsense":1}`}, // invalid for its schema
		{"benchq.exp.c1.done", `{`},              // not JSON
		{"benchq.nowhere", `{}`},                 // no such subject
	} {
		if _, err := bus.DecodeSubject(c.subject, []byte(c.data)); !errors.Is(err, bus.ErrPermanent) {
			t.Errorf("DecodeSubject(%s, %s) = %v, want a permanent error", c.subject, c.data, err)
		}
	}
}

// inFlightAtShutdown runs a consumer whose handler is busy with m1 when the
// consumer's context ends, answers result, and returns once Consume returned.
func inFlightAtShutdown(t *testing.T, ctx context.Context, b *bus.Bus, spec bus.ConsumerSpec, result func(ctx context.Context) error) {
	t.Helper()
	busy := make(chan struct{})
	stop := testenv.Go(t, func(ctx context.Context) error {
		return b.Consume(ctx, spec, func(ctx context.Context, msgs []jetstream.Msg) []error {
			close(busy)
			<-ctx.Done()
			return []error{result(ctx)}
		})
	})
	if err := b.Publish(ctx, "benchq.exp.c1.done", event("c1", "m1")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-busy:
	case <-time.After(wait):
		t.Fatal("handler not called")
	}
	stop()
}

// A message whose handler succeeded is acknowledged even when the consumer
// is stopping meanwhile: the work is done, and a redelivery (after AckWait,
// to the next instance) would only repeat it late.
func TestConsumeAcksWhatWasHandledWhileStopping(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	b := testenv.Bus(t, ctx, testenv.NATS(t))
	spec := bus.ConsumerSpec{Stream: contracts.StreamEvents, Durable: "stopping-ack", AckWait: time.Minute}
	inFlightAtShutdown(t, ctx, b, spec, func(context.Context) error { return nil })
	testenv.Eventually(t, 10*time.Second, func() error {
		c, err := b.JS.Consumer(ctx, spec.Stream, spec.Durable)
		if err != nil {
			return err
		}
		info, err := c.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumAckPending != 0 || info.AckFloor.Stream != 1 {
			return fmt.Errorf("handled message not acknowledged: %d unacknowledged, ack floor %d", info.NumAckPending, info.AckFloor.Stream)
		}
		return nil
	})
}

// A message left unfinished by a stopping consumer is handed back at once,
// so that the next instance (a restarted service) takes it up in seconds,
// not after AckWait.
func TestConsumeReleasesUnfinishedMessagesWhenStopping(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	b := testenv.Bus(t, ctx, testenv.NATS(t))
	spec := bus.ConsumerSpec{Stream: contracts.StreamEvents, Durable: "stopping-release", AckWait: time.Minute}
	inFlightAtShutdown(t, ctx, b, spec, func(ctx context.Context) error { return ctx.Err() })

	started := time.Now()
	seen := consume(t, b, spec, func(string, uint64) error { return nil })
	testenv.Eventually(t, 15*time.Second, func() error {
		if got := seen(); len(got) == 0 {
			return fmt.Errorf("the next consumer did not get m1 back (AckWait is %s)", spec.AckWait)
		}
		return nil
	})
	t.Logf("redelivered after %s", time.Since(started).Round(time.Millisecond))
}
