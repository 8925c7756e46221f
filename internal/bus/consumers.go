package bus

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Unsettled counts what durable consumer durable of stream still holds:
// messages not yet delivered (pending) and delivered but not acknowledged
// (unacked). Both zero: its service settled everything published so far.
func (b *Bus) Unsettled(ctx context.Context, stream, durable string) (pending, unacked uint64, err error) {
	cons, err := b.JS.Consumer(ctx, stream, durable)
	if err != nil {
		return 0, 0, fmt.Errorf("consumer %s on %s: %w", durable, stream, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("consumer %s on %s: %w", durable, stream, err)
	}
	return info.NumPending, uint64(info.NumAckPending), nil
}

// KeepAlive tells JetStream that m is still being worked on (InProgress,
// every touchEvery: a few times within the consumer's AckWait) until stop
// is called, so that work longer than the AckWait is not redelivered to
// another service meanwhile.
func KeepAlive(m jetstream.Msg, touchEvery time.Duration) (stop func()) {
	return KeepAliveAll([]jetstream.Msg{m}, touchEvery)
}

// KeepAliveAll is KeepAlive for a batch of messages worked on together.
func KeepAliveAll(msgs []jetstream.Msg, touchEvery time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(touchEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				for _, m := range msgs {
					_ = m.InProgress()
				}
			}
		}
	}()
	return func() { close(done) }
}
