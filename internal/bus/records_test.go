package bus_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/plan"
)

// ShardAwaited answers from the scheduler's stored state; without a state
// it cannot tell and says so with an error.
func TestShardAwaited(t *testing.T) {
	t.Parallel()
	ctx, b := freshBus(t)
	if _, err := b.ShardAwaited(ctx, "nostate", "c-run1", 1, 1); err == nil {
		t.Error("no stored state: want an error")
	}
	st := contracts.ExperimentState{Code: "aw", Status: contracts.ExperimentRunning,
		Plan: plan.Plan{Configurations: []plan.Configuration{{Name: "c", Phases: []plan.Phase{{Name: "c-load"}, {Name: "c-run1"}}}}},
		Configs: []contracts.ConfigState{{Status: contracts.ConfigRunning, Phase: 1,
			Current: &contracts.PhaseState{Attempt: 2, Status: contracts.PhasePreparing, Ready: []bool{true, false}}}}}
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := b.JS.KeyValue(ctx, contracts.KVExperiments)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "aw", data); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		attempt, shard int
		want           bool
	}{{2, 2, true}, {2, 1, false}, {1, 2, false}} {
		got, err := b.ShardAwaited(ctx, "aw", "c-run1", c.attempt, c.shard)
		if err != nil || got != c.want {
			t.Errorf("ShardAwaited(attempt %d, shard %d) = %v, %v; want %v", c.attempt, c.shard, got, err, c.want)
		}
	}
	if _, err := kv.Put(ctx, "bad", []byte("{")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ShardAwaited(ctx, "bad", "c-run1", 2, 2); err == nil {
		t.Error("unreadable state: want an error")
	}
}

// PutHeartbeat stores the agent's beat under its name.
func TestPutHeartbeat(t *testing.T) {
	t.Parallel()
	ctx, b := freshBus(t)
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	hb := contracts.Heartbeat{Name: "agent-1", At: at, Busy: "x.c-load.1.a1.job"}
	if err := b.PutHeartbeat(ctx, hb); err == nil {
		t.Error("a bus without a signer put a heartbeat")
	}
	var err error
	if b.Signer, err = contracts.NewSigner(); err != nil {
		t.Fatal(err)
	}
	if err := b.PutHeartbeat(ctx, hb); err != nil {
		t.Fatal(err)
	}
	kv, err := b.JS.KeyValue(ctx, contracts.KVAgents)
	if err != nil {
		t.Fatal(err)
	}
	// Under the run's own key, signed by it.
	key := contracts.HeartbeatKey("agent-1", b.Signer.Public())
	e, err := kv.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var got contracts.Heartbeat
	if err := json.Unmarshal(e.Value(), &got); err != nil || got.Name != "agent-1" || !got.At.Equal(at) || got.Busy != "x.c-load.1.a1.job" ||
		got.Instance != b.Signer.Public() || contracts.VerifyHeartbeat(key, got) != nil {
		t.Errorf("stored %s (%v)", e.Value(), err)
	}
}

// An agent's bus signs what it says for a shard, under a signed id, and
// nothing else: a shard job it hands back keeps its plain id, so the same
// hand-back re-published by another run (after a crash) is a duplicate.
func TestAgentsSignOnlyWhatTheySayForAShard(t *testing.T) {
	t.Parallel()
	ctx, b := freshBus(t)
	run1 := &bus.Bus{NC: b.NC, JS: b.JS}
	run2 := &bus.Bus{NC: b.NC, JS: b.JS}
	run1.Signer, _ = contracts.NewSigner()
	run2.Signer, _ = contracts.NewSigner()
	job := []byte(`{"requeued":true}`)
	for _, r := range []*bus.Bus{run1, run2} {
		if err := r.PublishRaw(ctx, contracts.SubjShard, "x.p.1.a1.job.requeued.7", job); err != nil {
			t.Fatal(err)
		}
	}
	final := contracts.FinalSubject("x", "p", 1)
	if err := run1.PublishRaw(ctx, final, "x.p.1.a1.final", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	for subject, want := range map[string]struct {
		n      uint64
		signer string
	}{contracts.SubjShard: {1, ""}, final: {1, run1.Signer.Public()}} {
		stream := contracts.StreamJobs
		if subject == final {
			stream = contracts.StreamResults
		}
		s, err := b.JS.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
		if err != nil {
			t.Fatal(err)
		}
		m, err := s.GetLastMsgForSubject(ctx, subject)
		if err != nil {
			t.Fatal(err)
		}
		if n := info.State.Subjects[subject]; n != want.n || m.Header.Get(contracts.SignerHeader) != want.signer {
			t.Errorf("%s: %d messages, signer %q; want %d, %q", subject, n, m.Header.Get(contracts.SignerHeader), want.n, want.signer)
		}
	}
}
