package e2e

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/natsauth"
)

// forger is another driver agent of the stack — it holds the agents' NATS
// key, as every agent does — that tries to speak for the agent holding a
// shard of a running phase (docs/security.md, "One key for all agents"):
//
//   - a final for the shard, in the holder's name, signed by its own key;
//   - the same final carrying the holder's key, with its own signature;
//   - the same final unsigned, under the final's plain id (the id the
//     holder's final had before finals were signed: JetStream would drop the
//     real one as its duplicate);
//   - heartbeats of a new run under the holder's name (a restart, which
//     would lose the shard), every second until stopped;
//   - a heartbeat written under the holder's own run's key, not signed by it.
//
// The forged final says the shard did 999,999 ops/s over a window in 2000.
// check then proves that NATS let every forgery through (they are in the
// streams and the bucket: the hole the signatures close is there) and that
// none counted: the phase ran once, its window and its shard's result are
// the holder's.
type forger struct {
	b     *bus.Bus
	rogue *contracts.Signer
	code  string
	goMsg contracts.BarrierGo
	stop  context.CancelFunc
	wg    sync.WaitGroup
}

const forgedThroughput = 999999

func (s *stack) forge(t *testing.T, code, configuration string, g contracts.BarrierGo) *forger {
	t.Helper()
	if len(g.Instances) == 0 || g.Instances[0] == "" {
		t.Fatalf("the GO of %s names no run holding shard 1: %+v", g.Phase, g)
	}
	b, err := bus.DialAs(s.info.NATSURL, natsauth.Agent, "e2e-forger", natsauth.SeedFile(s.info.NATSKeys, natsauth.Agent), nil)
	if err != nil {
		t.Fatal(err)
	}
	rogue, err := contracts.NewSigner()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &forger{b: b, rogue: rogue, code: code, goMsg: g, stop: cancel}
	holder, instance := g.Agents[0], g.Instances[0]
	year2000 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	fin := &contracts.Final{
		Envelope:      contracts.NewEnvelope(code, contracts.FinalID(code, g.Phase, 1, g.Attempt), time.Now()),
		Configuration: configuration, Phase: g.Phase, Kind: contracts.KindRun, Shard: 1, Attempt: g.Attempt, Agent: holder, Status: contracts.StatusOK,
		StartedAt: year2000, EndedAt: year2000.Add(time.Second), FirstOpAt: &year2000, LastOpAt: &year2000,
		Throughput: forgedThroughput, RuntimeMS: 1000,
		Operations: []contracts.OpResult{{Name: "READ", Count: forgedThroughput, ReturnCodes: map[string]int64{"OK": forgedThroughput}}},
	}
	subject := contracts.FinalSubject(code, g.Phase, 1)
	data, _ := json.Marshal(fin)
	// Well-formed, or it would be refused for its form and prove nothing.
	if err := contracts.Validate(contracts.SchemaFinal, data); err != nil {
		t.Fatalf("the forged final is not a valid final: %v", err)
	}
	publish := func(what, msgID string, header nats.Header) {
		if _, err := b.JS.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: data, Header: header}, jetstream.WithMsgID(msgID)); err != nil {
			t.Errorf("the forger could not publish %s: %v", what, err)
		}
	}
	_, sig, _ := rogue.Sign(subject, data)
	publish("a final signed by its own key", contracts.SignedMsgID(fin.ID, sig), nats.Header{contracts.SignerHeader: {rogue.Public()}, contracts.SignatureHeader: {sig}})
	publish("a final with the holder's key", fin.ID+"~as-holder", nats.Header{contracts.SignerHeader: {instance}, contracts.SignatureHeader: {sig}})
	publish("an unsigned final", fin.ID, nats.Header{})

	kv, err := b.JS.KeyValue(ctx, contracts.KVAgents)
	if err != nil {
		t.Fatal(err)
	}
	stale, _ := json.Marshal(contracts.Heartbeat{Name: holder, Instance: instance, At: year2000, Signature: sig})
	if _, err := kv.Put(ctx, contracts.HeartbeatKey(holder, instance), stale); err != nil {
		t.Errorf("the forger could not write the holder's heartbeat: %v", err)
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for ctx.Err() == nil {
			hb := contracts.Heartbeat{Name: holder, At: time.Now().UTC(), Host: "elsewhere", Pid: 1}
			_ = rogue.SignHeartbeat(&hb)
			raw, _ := json.Marshal(hb)
			_, _ = kv.Put(ctx, contracts.HeartbeatKey(holder, hb.Instance), raw)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return f
}

// check stops the forger's heartbeats and checks that nothing it forged
// counted, once the experiment has ended.
func (f *forger) check(t *testing.T, s *stack) {
	t.Helper()
	f.stop()
	f.wg.Wait()
	defer f.b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g := f.goMsg

	// The forged finals are in the results stream: NATS let them through
	// (read as the CLI reads it: an agent may not).
	client, err := bus.DialAs(s.info.NATSURL, natsauth.Client, "e2e-forgery-check", natsauth.SeedFile(s.info.NATSKeys, natsauth.Client), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := client.JS.OrderedConsumer(ctx, contracts.StreamResults, jetstream.OrderedConsumerConfig{FilterSubjects: []string{contracts.FinalSubject(f.code, g.Phase, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	forged, holders := 0, 0
	for {
		m, err := c.Next(jetstream.FetchMaxWait(2 * time.Second))
		if err != nil {
			break
		}
		var fin contracts.Final
		_ = json.Unmarshal(m.Data(), &fin)
		if fin.Throughput == forgedThroughput {
			forged++
		} else if m.Headers().Get(contracts.SignerHeader) == g.Instances[0] {
			holders++
		}
	}
	if forged != 3 || holders != 1 {
		t.Errorf("the results stream holds %d forged finals of shard 1 of %s and %d of its holder, want 3 and 1: the test did not deliver its forgeries", forged, g.Phase, holders)
	}

	conn, err := pgx.Connect(ctx, s.info.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var attempts int
	var start time.Time
	var agent string
	var throughput float64
	var forgedRows int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM phases WHERE code = $1 AND phase = $2),
			(SELECT started_at FROM phases WHERE code = $1 AND phase = $2 AND attempt = $3),
			(SELECT agent FROM shard_results WHERE code = $1 AND phase = $2 AND attempt = $3 AND shard = 1),
			(SELECT throughput FROM shard_results WHERE code = $1 AND phase = $2 AND attempt = $3 AND shard = 1),
			(SELECT count(*) FROM messages WHERE code = $1 AND (payload->>'throughput')::float8 = $4)`,
		f.code, g.Phase, g.Attempt, forgedThroughput).Scan(&attempts, &start, &agent, &throughput, &forgedRows); err != nil {
		t.Fatalf("the benchmarking phase's rows: %v", err)
	}
	switch {
	case attempts != 1:
		t.Errorf("phase %s ran %d times: a forged heartbeat passed for the holder's restart", g.Phase, attempts)
	case start.Year() == 2000 || throughput == forgedThroughput || forgedRows != 0:
		t.Errorf("a forged final counted: phase started %s, shard 1's throughput %.0f, %d forged messages stored", start, throughput, forgedRows)
	case agent != g.Agents[0]:
		t.Errorf("shard 1 reported by %q, want its holder %s", agent, g.Agents[0])
	}
	if t.Failed() {
		return
	}
	t.Logf("forgeries for shard 1 of %s (held by %s, run %s): 3 finals and heartbeats delivered by NATS, none counted (%d attempt, %.0f ops/s from %s)",
		g.Phase, g.Agents[0], contracts.ShortKey(g.Instances[0]), attempts, throughput, agent)
}
