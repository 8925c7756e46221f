package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/benchq/benchq/contracts"
)

func TestPlanShardsIsOneUnthrottledShardEachWay(t *testing.T) {
	t.Parallel()
	cfg := Config{Workload: "a", Records: 100_000, Operations: 500_000, Threads: 8, StatusInterval: 1}
	sh, err := planShards(cfg, 6380)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	run := sh.job("bench-1-2", sh.run, now)
	want := contracts.YCSBShard{Workload: "a", Threads: 8, RecordCount: 100_000, InsertStart: 0, InsertCount: 100_000,
		OperationCount: 500_000, InsertOrder: "hashed", StatusInterval: 1}
	if *run.YCSB != want {
		t.Errorf("run shard %+v, want %+v", *run.YCSB, want)
	}
	if run.Kind != contracts.KindRun || run.Code != "bench-1-2" || run.Shard != 1 || run.Shards != 1 || run.Attempt != 1 ||
		run.Engine != "ycsb" || run.DBMS != "Redis" || run.Endpoint.Host != "127.0.0.1" || run.Endpoint.Port != 6380 || run.TimeoutS <= 0 {
		t.Errorf("run job %+v", run)
	}
	load := sh.job("bench-1-0", sh.load, now)
	if load.Kind != contracts.KindLoad || load.YCSB.InsertCount != 100_000 || load.YCSB.Threads != 8 || load.YCSB.Target != 0 {
		t.Errorf("load job %+v (%+v)", load, *load.YCSB)
	}
	if load.ID == run.ID {
		t.Error("load and run jobs share a message id")
	}
	data, err := json.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	if err := contracts.Validate(contracts.SchemaShardJob, data); err != nil {
		t.Errorf("the run job breaks its schema: %v", err)
	}
}
