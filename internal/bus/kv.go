package bus

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchq/benchq/contracts"
)

// Values reads every entry of a KV bucket: key → value; an empty bucket is
// an empty map. It reads one consistent snapshot (a watch's initial values)
// and fails rather than return part of the bucket: a caller that took a
// missing heartbeat for a silent agent would re-run a healthy phase (seen
// on a loaded machine when single reads timed out and were skipped).
func Values(ctx context.Context, kv jetstream.KeyValue) (map[string][]byte, error) {
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", kv.Bucket(), err)
	}
	defer func() { _ = w.Stop() }()
	out := map[string][]byte{}
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("bucket %s: watch closed before its initial values", kv.Bucket())
			}
			if e == nil { // every entry that existed has been delivered
				return out, nil
			}
			out[e.Key()] = e.Value()
		case <-ctx.Done():
			return nil, fmt.Errorf("bucket %s: %w", kv.Bucket(), ctx.Err())
		}
	}
}

// AgentRuns reads the agents bucket: instance → the last heartbeat of that
// agent run. Only heartbeats signed by their instance and stored under its
// own key count (contracts.VerifyHeartbeat); refused maps the others' keys
// to why.
func AgentRuns(ctx context.Context, js jetstream.JetStream) (runs map[string]contracts.Heartbeat, refused map[string]string, err error) {
	kv, err := js.KeyValue(ctx, contracts.KVAgents)
	if err != nil {
		return nil, nil, fmt.Errorf("bucket %s: %w", contracts.KVAgents, err)
	}
	values, err := Values(ctx, kv)
	if err != nil {
		return nil, nil, err
	}
	runs, refused = map[string]contracts.Heartbeat{}, map[string]string{}
	for k, v := range values {
		var hb contracts.Heartbeat
		if err := json.Unmarshal(v, &hb); err != nil {
			refused[k] = "not a heartbeat"
			continue
		}
		if err := contracts.VerifyHeartbeat(k, hb); err != nil {
			refused[k] = err.Error()
			continue
		}
		runs[hb.Instance] = hb
	}
	return runs, refused, nil
}

// Heartbeats reads the agents bucket: agent name → the last heartbeat of
// its newest run (contracts.NewestRuns); only signed heartbeats count.
func Heartbeats(ctx context.Context, js jetstream.JetStream) (map[string]contracts.Heartbeat, error) {
	runs, _, err := AgentRuns(ctx, js)
	if err != nil {
		return nil, err
	}
	return contracts.NewestRuns(runs), nil
}
