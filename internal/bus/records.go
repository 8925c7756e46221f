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

// ExperimentState reads the scheduler's stored state of experiment code
// (the experiments KV bucket).
func (b *Bus) ExperimentState(ctx context.Context, code string) (*contracts.ExperimentState, error) {
	kv, err := b.JS.KeyValue(ctx, contracts.KVExperiments)
	if err != nil {
		return nil, fmt.Errorf("kv %s: %w", contracts.KVExperiments, err)
	}
	e, err := kv.Get(ctx, code)
	if err != nil {
		return nil, fmt.Errorf("state of %s: %w", code, err)
	}
	var st contracts.ExperimentState
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		return nil, fmt.Errorf("state of %s: %w", code, err)
	}
	return &st, nil
}

// ShardAwaited reports whether the scheduler, as its stored state says,
// still waits for the READY of shard of phase's attempt (contracts.ExperimentState.Waits).
// An error means it cannot tell (no state stored, unreadable).
func (b *Bus) ShardAwaited(ctx context.Context, code, phase string, attempt, shard int) (bool, error) {
	st, err := b.ExperimentState(ctx, code)
	if err != nil {
		return false, err
	}
	return st.Waits(phase, attempt, shard), nil
}

// PutHeartbeat stores an agent run's heartbeat, signed by the bus's Signer
// (required), under its own key in the agents KV bucket, whose TTL forgets
// runs that stopped beating.
func (b *Bus) PutHeartbeat(ctx context.Context, h contracts.Heartbeat) error {
	if b.Signer == nil {
		return errors.New("heartbeat: the bus has no signer")
	}
	kv, err := b.JS.KeyValue(ctx, contracts.KVAgents)
	if err != nil {
		return fmt.Errorf("kv %s: %w", contracts.KVAgents, err)
	}
	if err := b.Signer.SignHeartbeat(&h); err != nil {
		return err
	}
	data, err := json.Marshal(h)
	if err != nil {
		return err
	}
	_, err = kv.Put(ctx, contracts.HeartbeatKey(h.Name, h.Instance), data)
	return err
}

// Published finds the message with id among those stored under subject in
// stream (an ordered consumer over that subject alone, read to its end).
// found is false when there is none.
func (b *Bus) Published(ctx context.Context, stream, subject, id string) (data []byte, found bool, err error) {
	cons, err := b.JS.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", subject, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", subject, err)
	}
	for pending := info.NumPending; pending > 0; pending-- {
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			return nil, false, fmt.Errorf("read %s: %w", subject, err)
		}
		if m.Headers().Get(jetstream.MsgIDHeader) == id {
			return m.Data(), true, nil
		}
	}
	return nil, false, nil
}
