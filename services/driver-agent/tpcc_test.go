package main

import (
	"testing"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/benchbase"
	"github.com/benchq/benchq/internal/tpcc"
	"github.com/benchq/benchq/internal/ycsb"
)

// TestTPCCThroughAgents runs `benchq benchbase -sf 2 -xsd 0.1 -nbp 2`'s
// phases on two real agents against a real PostgreSQL: one loading shard
// fills both warehouses, then two benchmarking shards start together at GO
// and each ships an All operation with its histogram; the agent's numbers
// add up to what the database holds.
func TestTPCCThroughAgents(t *testing.T) {
	pg := postgresSUT(t)
	s := newStack(t, 2, noStandby) // TPC-C runs in the agent: no JVM
	req := contracts.Request{Benchmark: "benchbase", DBMS: []string{"PostgreSQL"}, SF: 2, DurationS: 6,
		BenchmarkingPods: []int{2}, BenchmarkingThreads: []int{4}, StatusInterval: 2}

	load := s.runPhase(phaseJobs(t, "tpcc", req, 0, pg.ep))
	lf := load[1]
	if len(load) != 1 || lf.Status != contracts.StatusOK {
		t.Fatalf("loading: %d finals, first %+v", len(load), lf)
	}
	rows, err := tpcc.CountRows(t.Context(), pg.ep)
	if err != nil {
		t.Fatal(err)
	}
	if rows["warehouse"] != 2 || rows["district"] != 20 || rows["item"] != 100000 {
		t.Errorf("after loading 2 warehouses: %v", rows)
	}
	for _, op := range lf.Operations {
		if op.Count != rows[op.Name] {
			t.Errorf("loading final says %d rows in %s, the database holds %d", op.Count, op.Name, rows[op.Name])
		}
	}
	if len(lf.Operations) != len(benchbase.TPCCTables) {
		t.Errorf("loading final names %d tables, want %d", len(lf.Operations), len(benchbase.TPCCTables))
	}

	run := s.runPhase(phaseJobs(t, "tpcc", req, 1, pg.ep))
	if len(run) != 2 {
		t.Fatalf("benchmarking: %d finals, want 2", len(run))
	}
	var newOrders int64
	for shard, f := range run {
		if f.Status != contracts.StatusOK {
			t.Fatalf("shard %d: %s %s", shard, f.Status, f.Error)
		}
		if f.Threads != 2 {
			t.Errorf("shard %d: %d terminals, want 2 (4 split over 2 shards)", shard, f.Threads)
		}
		if f.FirstOpAt == nil || f.LastOpAt == nil || !f.LastOpAt.After(*f.FirstOpAt) {
			t.Errorf("shard %d: operation window %v..%v", shard, f.FirstOpAt, f.LastOpAt)
		}
		var all *contracts.OpResult
		for i := range f.Operations {
			switch f.Operations[i].Name {
			case benchbase.All:
				all = &f.Operations[i]
			case "NewOrder":
				newOrders += f.Operations[i].ReturnCodes[benchbase.CodeOK]
			}
		}
		if all == nil || all.Count == 0 || all.Histogram == "" {
			t.Fatalf("shard %d: no All operation with a histogram: %+v", shard, f.Operations)
		}
		h, err := ycsb.DecodeHistogram(all.Histogram)
		if err != nil {
			t.Fatal(err)
		}
		if h.TotalCount() != all.Count {
			t.Errorf("shard %d: histogram holds %d latencies, All counts %d", shard, h.TotalCount(), all.Count)
		}
	}
	// Every committed NewOrder adds one orders row; its 1 % intended
	// rollbacks add none (USER_ABORTED). A terminal's last request, ended
	// after the window, is not measured but may commit: up to one per
	// terminal more.
	after, err := tpcc.CountRows(t.Context(), pg.ep)
	if err != nil {
		t.Fatal(err)
	}
	if got := after["orders"] - rows["orders"]; got < newOrders || got > newOrders+4 {
		t.Errorf("orders grew by %d, the shards committed %d NewOrder transactions (+ up to 4 unmeasured)", got, newOrders)
	}
}
