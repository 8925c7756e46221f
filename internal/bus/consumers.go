package bus

import (
	"context"
	"fmt"
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
