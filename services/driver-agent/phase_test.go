package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/testenv"
)

// phaseJob is a shard job whose DBMS no catalog knows: any agent that takes
// it publishes a failed final at once, which is enough to see which agent
// took which job (no YCSB needed).
func phaseJob(code, phase string, shard int) *contracts.ShardJob {
	startBy := time.Now().Add(2 * time.Minute)
	return &contracts.ShardJob{
		Envelope:      contracts.NewEnvelope(code, contracts.ShardJobID(code, phase, shard, 1), time.Now()),
		Configuration: "c-1", Phase: phase, Kind: contracts.KindRun, Shard: shard, Shards: 1, Attempt: 1,
		Engine: "ycsb", DBMS: "NoSuchDBMS", Endpoint: contracts.Endpoint{Host: "127.0.0.1", Port: 1}, StartBy: &startBy,
		YCSB: &contracts.YCSBShard{Workload: "a", Threads: 1, RecordCount: 10, InsertCount: 10, OperationCount: 10},
	}
}

// An agent bound to a phase (a driver Job's pod) runs only that phase's
// shards, hands the others back — re-queueing one it saw twice, so that no
// job is lost to the consumer's MaxDeliver — and exits without error after
// BENCHQ_AGENT_MAX_SHARDS shards. The job it refused is still there for the
// agent it belongs to.
func TestPhaseBoundAgent(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	url := testenv.NATS(t)
	b := testenv.Bus(t, ctx, url)
	finals := make(chan *nats.Msg, 16)
	sub, err := b.NC.ChanSubscribe(contracts.Subject(contracts.SubjFinal, "", "", ""), finals)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	requeued := make(chan *nats.Msg, 16)
	sub2, err := b.NC.ChanSubscribe(contracts.SubjShard, requeued)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub2.Unsubscribe() }()
	next := func(what string) contracts.Final {
		t.Helper()
		select {
		case m := <-finals:
			var f contracts.Final
			if err := bus.Decode(contracts.SchemaFinal, m.Data, &f); err != nil {
				t.Fatal(err)
			}
			return f
		case <-time.After(30 * time.Second):
			t.Fatalf("no final: %s", what)
		}
		return contracts.Final{}
	}

	// Another phase's job (same phase name, another experiment) and another
	// phase of the same experiment wait in the queue before the agent starts.
	for _, j := range []*contracts.ShardJob{phaseJob("x2", "c-1-0", 1), phaseJob("x1", "c-1-1", 1)} {
		if err := b.Publish(ctx, contracts.SubjShard, j); err != nil {
			t.Fatal(err)
		}
	}
	<-requeued
	<-requeued
	bound := Config{NATSURL: url, Name: "bq-x1-c-1-0-abc", Limits: PhaseLimits{Experiment: "x1", Phase: "c-1-0", MaxShards: 1}}
	exited := make(chan error, 1)
	go func() { exited <- Run(ctx, bound, testenv.Logger(t, bound.Name)) }()

	// Both are handed back and, seen twice, re-queued as fresh messages.
	deadline := time.After(30 * time.Second)
	seen := map[string]bool{}
	for len(seen) < 2 {
		select {
		case m := <-requeued:
			if id := m.Header.Get(nats.MsgIdHdr); strings.Contains(id, ".requeued.") {
				var j contracts.ShardJob
				if err := bus.Decode(contracts.SchemaShardJob, m.Data, &j); err != nil {
					t.Fatal(err)
				}
				seen[j.Code] = true
			}
		case f := <-finals:
			t.Fatalf("the bound agent ran another phase's shard: %s", f.Data)
		case <-deadline:
			t.Fatalf("not re-queued: %v", seen)
		}
	}

	// Its own job: it runs it and exits 0.
	if err := b.Publish(ctx, contracts.SubjShard, phaseJob("x1", "c-1-0", 1)); err != nil {
		t.Fatal(err)
	}
	f := next("the bound agent's shard")
	if f.Code != "x1" || f.Phase != "c-1-0" || f.Agent != bound.Name || f.Status != contracts.StatusFailed {
		t.Errorf("final %+v", f)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("bound agent: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the bound agent did not exit after its one shard")
	}

	// The refused jobs went through more deliveries than the consumer's
	// MaxDeliver (3) and are still served to an agent that takes them.
	free := Config{NATSURL: url, Name: "agent-free"}
	testenv.Go(t, func(ctx context.Context) error { return Run(ctx, free, testenv.Logger(t, free.Name)) })
	got := map[string]string{}
	for range 2 {
		f := next("the refused jobs")
		got[f.Code+"/"+f.Phase] = f.Agent
	}
	if got["x2/c-1-0"] != "agent-free" || got["x1/c-1-1"] != "agent-free" {
		t.Errorf("finals of the refused jobs: %v", got)
	}
	select {
	case m := <-finals:
		t.Errorf("a job ran twice: %s", m.Data)
	case <-time.After(2 * time.Second):
	}
}
