package bus_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchq/benchq/contracts"
)

// Unsettled counts a job first as pending, then, fetched, as unacked, and
// not at all once acked.
func TestUnsettled(t *testing.T) {
	t.Parallel()
	ctx, b := freshBus(t)
	if _, _, err := b.Unsettled(ctx, contracts.StreamJobs, "nobody"); err == nil {
		t.Error("no such consumer: want an error")
	}
	cons, err := b.JS.CreateOrUpdateConsumer(ctx, contracts.StreamJobs, jetstream.ConsumerConfig{
		Durable: "unsettled", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: contracts.SubjShard,
	})
	if err != nil {
		t.Fatal(err)
	}
	// The consumer's counts follow a publish or an ack asynchronously (a
	// loaded machine showed 0 pending just after a publish): wait for them,
	// a bounded while.
	check := func(wantPending, wantUnacked uint64) {
		t.Helper()
		var pending, unacked uint64
		var err error
		for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			pending, unacked, err = b.Unsettled(ctx, contracts.StreamJobs, "unsettled")
			if (err == nil && pending == wantPending && unacked == wantUnacked) || time.Now().After(deadline) {
				break
			}
		}
		if err != nil || pending != wantPending || unacked != wantUnacked {
			t.Errorf("Unsettled = %d pending, %d unacked (%v); want %d, %d", pending, unacked, err, wantPending, wantUnacked)
		}
	}
	check(0, 0)
	if err := b.PublishRaw(ctx, contracts.SubjShard, "u.1", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	check(1, 0)
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(wait))
	if err != nil {
		t.Fatal(err)
	}
	var got []jetstream.Msg
	for m := range batch.Messages() {
		got = append(got, m)
	}
	if len(got) != 1 {
		t.Fatalf("fetched %d messages", len(got))
	}
	check(0, 1)
	if err := got[0].DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	check(0, 0)
}
