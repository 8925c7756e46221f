package main

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/testenv"
)

// What an agent says for a shard reaches the state machine only signed:
// a READY by the run it names, a final by any run (the machine matches it
// against the run holding the shard). Everything else is refused for good.
func TestAgentMessagesAreRefusedUnlessSigned(t *testing.T) {
	a, _ := contracts.NewSigner()
	b, _ := contracts.NewSigner()
	signed := func(s *contracts.Signer, subject string, m contracts.Message) ([]byte, nats.Header) {
		data, _ := json.Marshal(m)
		h := nats.Header{}
		if s != nil {
			signer, sig, _ := s.Sign(subject, data)
			h.Set(contracts.SignerHeader, signer)
			h.Set(contracts.SignatureHeader, sig)
		}
		return data, h
	}
	readySubj, finalSubj := contracts.TopicBarrierReady.For("17"), contracts.FinalSubject("17", "r", 1)
	ready := &contracts.BarrierReady{Phase: "r", Shard: 1, Attempt: 1, Agent: "a1", Instance: a.Public()}
	fin := &contracts.Final{Phase: "r", Shard: 1, Attempt: 1, Agent: "a1", Status: contracts.StatusOK}
	for name, c := range map[string]struct {
		signer  *contracts.Signer
		subject string
		msg     contracts.Message
		want    string // the signer, "" when refused
	}{
		"READY signed by the run it names":       {a, readySubj, ready, a.Public()},
		"READY unsigned":                         {nil, readySubj, ready, ""},
		"READY naming a, signed by b":            {b, readySubj, ready, ""},
		"final signed":                           {b, finalSubj, fin, b.Public()},
		"final unsigned":                         {nil, finalSubj, fin, ""},
		"a SUT's answer: no signature concerned": {nil, contracts.TopicSUTReady.For("17"), &contracts.SUTReady{}, ""},
	} {
		data, h := signed(c.signer, c.subject, c.msg)
		got, err := agentSigner(c.subject, data, h, c.msg)
		refusable := c.want == "" && c.subject != contracts.TopicSUTReady.For("17")
		switch {
		case got != c.want:
			t.Errorf("%s: signer %q, want %q (%v)", name, got, c.want, err)
		case refusable && !errors.Is(err, bus.ErrPermanent):
			t.Errorf("%s: %v, want a permanent refusal", name, err)
		case !refusable && err != nil:
			t.Errorf("%s: %v", name, err)
		}
	}
	// A READY whose body was changed after signing (another shard).
	_, h := signed(a, readySubj, ready)
	changed := *ready
	changed.Shard = 2
	cdata, _ := json.Marshal(&changed)
	if _, err := agentSigner(readySubj, cdata, h, &changed); !errors.Is(err, bus.ErrPermanent) {
		t.Errorf("a changed READY: %v", err)
	}
}

// A heartbeat another agent writes over a run's own entry is refused, and
// the run's last signed beat stands until it beats again: the forgery
// neither hides the run nor replaces it. Nor does deleting its entry: the
// last signed beat stands until the bucket's TTL would have removed it.
func TestAForgedHeartbeatDoesNotHideARun(t *testing.T) {
	ctx := t.Context()
	b := testenv.Bus(t, ctx, testenv.NATS(t))
	clock := time.Now()
	s := &Scheduler{bus: b, log: testenv.Logger(t, "scheduler"), now: func() time.Time { return clock }}
	if b.Signer, _ = contracts.NewSigner(); b.Signer == nil {
		t.Fatal("no signer")
	}
	at := time.Now().UTC().Truncate(time.Millisecond)
	if err := b.PutHeartbeat(ctx, contracts.Heartbeat{Name: "a1", At: at}); err != nil {
		t.Fatal(err)
	}
	run := b.Signer.Public()
	if runs := s.agentRuns(ctx); !runs[run].At.Equal(at) {
		t.Fatalf("runs %v", runs)
	}
	kv, err := b.JS.KeyValue(ctx, contracts.KVAgents)
	if err != nil {
		t.Fatal(err)
	}
	key := contracts.HeartbeatKey("a1", run)
	forged, _ := json.Marshal(contracts.Heartbeat{Name: "a1", Instance: run, At: at.Add(time.Hour), Signature: "forged"})
	if _, err := kv.Put(ctx, key, forged); err != nil {
		t.Fatal(err)
	}
	if runs := s.agentRuns(ctx); len(runs) != 1 || !runs[run].At.Equal(at) {
		t.Errorf("after a forgery over its entry: %v, want the run's last signed beat", runs)
	}
	if err := kv.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if runs := s.agentRuns(ctx); len(runs) != 1 || !runs[run].At.Equal(at) {
		t.Errorf("after its entry was deleted: %v, want the run's last signed beat", runs)
	}
	clock = at.Add(contracts.AgentsTTL)
	if runs := s.agentRuns(ctx); len(runs) != 0 {
		t.Errorf("a TTL after its last beat: %v, want it gone", runs)
	}
}
