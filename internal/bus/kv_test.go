package bus_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/testenv"
)

// Heartbeats reads every agent's entry; an entry that does not decode (a
// garbled write) is left out rather than counted as an agent.
func TestHeartbeatsSkipsUndecodableEntries(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	b := connect(t, ctx, testenv.NATS(t))
	kv, err := b.JS.KeyValue(ctx, contracts.KVAgents)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	good, _ := json.Marshal(contracts.Heartbeat{Name: "driver-agent-1", At: at, Busy: "job-1"})
	for key, val := range map[string][]byte{"driver-agent-1": good, "garbled": []byte("{")} {
		if _, err := kv.Put(ctx, key, val); err != nil {
			t.Fatal(err)
		}
	}
	beats, err := bus.Heartbeats(ctx, b.JS)
	if err != nil {
		t.Fatal(err)
	}
	if len(beats) != 1 || !beats["driver-agent-1"].At.Equal(at) || beats["driver-agent-1"].Busy != "job-1" {
		t.Errorf("heartbeats = %+v, want only driver-agent-1 at %s busy job-1", beats, at)
	}
}
