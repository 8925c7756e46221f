package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/attacks"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/testenv"
)

// A push consumer of a bucket's stream delivers the entry a role put there
// onto the request subject, which that role may not publish on (the
// attack no permission stops, attacks.Inject): the requests stream stores
// it under the entry's subject. A consumer of the stream (bus.Consume with
// no filters named) reads the stream's own subjects only, so it sees the
// request published after it and never the injected one.
func TestConsumeNeverReadsWhatAPushConsumerInjected(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	b := testenv.Bus(t, ctx, testenv.NATS(t))
	forged, _ := json.Marshal(contracts.Envelope{SchemaVersion: contracts.SchemaVersion, ID: "forged"})
	if err := attacks.Inject(ctx, b, contracts.KVAgents, "forged", contracts.SubjRequest, forged); err != nil {
		t.Fatal(err)
	}
	// The hole is there: the requests stream holds the entry.
	stream, err := b.JS.Stream(ctx, contracts.StreamRequests)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		m, err := stream.GetLastMsgForSubject(ctx, "$KV."+contracts.KVAgents+".forged")
		if err != nil {
			return fmt.Errorf("the injected entry is not in the requests stream (yet): %w", err)
		}
		if string(m.Data) != string(forged) {
			return fmt.Errorf("the requests stream holds %q under the entry's subject", m.Data)
		}
		return nil
	})
	genuine, _ := json.Marshal(contracts.Envelope{SchemaVersion: contracts.SchemaVersion, ID: "genuine"})
	if _, err := b.PublishNew(ctx, contracts.SubjRequest, "genuine", genuine); err != nil {
		t.Fatal(err)
	}
	seen := make(chan string, 4)
	testenv.Go(t, func(ctx context.Context) error {
		return b.Consume(ctx, bus.ConsumerSpec{Stream: contracts.StreamRequests, Durable: "inject-test"},
			func(_ context.Context, msgs []jetstream.Msg) []error {
				for _, m := range msgs {
					seen <- m.Subject()
				}
				return make([]error, len(msgs))
			})
	})
	var got []string
	testenv.Eventually(t, wait, func() error {
		for len(seen) > 0 {
			got = append(got, <-seen)
		}
		c, err := b.JS.Consumer(ctx, contracts.StreamRequests, "inject-test")
		if err != nil {
			return err
		}
		info, err := c.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumPending != 0 || info.NumAckPending != 0 || len(got) == 0 {
			return fmt.Errorf("consumer: %d pending, %d unacknowledged, saw %v", info.NumPending, info.NumAckPending, got)
		}
		return nil
	})
	if !slices.Equal(got, []string{contracts.SubjRequest}) || slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "$KV.") }) {
		t.Errorf("the consumer read %v; want the genuine request only, never the injected entry", got)
	}
}

// A consumer whose declaration fails (here: its stream is not there yet,
// as while JetStream starts) is declared again until it is, then reads:
// a service never runs on without it.
func TestConsumeDeclaresItsConsumerAgainUntilItIs(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	b := testenv.Bus(t, ctx, testenv.NATS(t))
	seen := make(chan string, 1)
	testenv.Go(t, func(ctx context.Context) error {
		return b.Consume(ctx, bus.ConsumerSpec{Stream: "LATE", Durable: "late", Filters: []string{"late.>"}},
			func(_ context.Context, msgs []jetstream.Msg) []error {
				for _, m := range msgs {
					seen <- m.Subject()
				}
				return make([]error, len(msgs))
			})
	})
	time.Sleep(time.Second) // a few failed declarations
	if _, err := b.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "LATE", Subjects: []string{"late.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.JS.Publish(ctx, "late.one", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-seen:
		if got != "late.one" {
			t.Errorf("read %s", got)
		}
	case <-time.After(wait):
		t.Fatal("the consumer never read the stream that appeared after its first declaration")
	}
}
