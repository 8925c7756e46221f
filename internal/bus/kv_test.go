package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
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
	b := testenv.Bus(t, ctx, testenv.NATS(t))
	kv, err := b.JS.KeyValue(ctx, contracts.KVAgents)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	run, _ := contracts.NewSigner()
	other, _ := contracts.NewSigner()
	hb := contracts.Heartbeat{Name: "driver-agent-1", At: at, Busy: "job-1"}
	_ = run.SignHeartbeat(&hb)
	good, _ := json.Marshal(hb)
	// Another run's heartbeat in driver-agent-1's name, newer, put under
	// the first run's key; an unsigned one; a run's own under its name only.
	forged := contracts.Heartbeat{Name: "driver-agent-1", At: at.Add(time.Hour), Busy: "job-9"}
	_ = other.SignHeartbeat(&forged)
	forgedData, _ := json.Marshal(forged)
	unsigned, _ := json.Marshal(contracts.Heartbeat{Name: "driver-agent-2", At: at})
	key := contracts.HeartbeatKey(hb.Name, hb.Instance)
	for k, val := range map[string][]byte{key: good, "garbled": []byte("{"), "driver-agent-2": unsigned, "driver-agent-1": forgedData} {
		if _, err := kv.Put(ctx, k, val); err != nil {
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
	runs, refused, err := bus.AgentRuns(ctx, b.JS)
	if err != nil || len(runs) != 1 || runs[run.Public()].Busy != "job-1" || len(refused) != 3 || refused["garbled"] != "not a heartbeat" {
		t.Errorf("runs %v, refused %q (%v)", runs, refused, err)
	}
}

// Values returns the whole bucket or an error, never a part of it: every
// key written, none deleted, and an empty map for an empty bucket.
func TestValuesReadsTheWholeBucket(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	b := testenv.Bus(t, ctx, testenv.NATS(t))
	kv, err := b.JS.KeyValue(ctx, contracts.KVVolumes)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := bus.Values(ctx, kv); err != nil || len(got) != 0 {
		t.Fatalf("empty bucket: %v, %v", got, err)
	}
	for i := range 50 {
		if _, err := kv.Put(ctx, fmt.Sprintf("v%02d", i), []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kv.Put(ctx, "v07", []byte("seven")); err != nil { // a newer value wins
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, "v13"); err != nil {
		t.Fatal(err)
	}
	got, err := bus.Values(ctx, kv)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 49 || string(got["v07"]) != "seven" || string(got["v42"]) != "42" {
		t.Errorf("values: %d entries, v07=%q v42=%q; want 49, seven, 42", len(got), got["v07"], got["v42"])
	}
	if _, ok := got["v13"]; ok {
		t.Error("deleted key v13 listed")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := bus.Values(cctx, kv); err == nil {
		t.Error("a cancelled read returned values instead of an error")
	}
}
