package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchq/benchq/contracts"
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

// Heartbeats reads the agents bucket: agent name → its last heartbeat. An
// entry that is not a heartbeat is left out.
func Heartbeats(ctx context.Context, js jetstream.JetStream) (map[string]contracts.Heartbeat, error) {
	kv, err := js.KeyValue(ctx, contracts.KVAgents)
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", contracts.KVAgents, err)
	}
	values, err := Values(ctx, kv)
	if err != nil {
		return nil, err
	}
	beats := map[string]contracts.Heartbeat{}
	for k, v := range values {
		var hb contracts.Heartbeat
		if json.Unmarshal(v, &hb) == nil {
			beats[k] = hb
		}
	}
	return beats, nil
}

// LastBeats is when each agent of beats last beat (contracts.LiveAgents).
func LastBeats(beats map[string]contracts.Heartbeat) map[string]time.Time {
	at := make(map[string]time.Time, len(beats))
	for k, hb := range beats {
		at[k] = hb.At
	}
	return at
}
