package bus

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// Values reads every entry of a KV bucket: key → value; an empty bucket is
// an empty map. An entry that expires between the listing and its read is
// left out.
func Values(ctx context.Context, kv jetstream.KeyValue) (map[string][]byte, error) {
	out := map[string][]byte{}
	keys, err := kv.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for k := range keys.Keys() {
		if e, err := kv.Get(ctx, k); err == nil {
			out[k] = e.Value()
		}
	}
	return out, nil
}
