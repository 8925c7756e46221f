package main

import (
	"fmt"
	"time"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/plan"
)

// benchDBMS is the system under test: the issue asks for a Redis workload.
const benchDBMS = "Redis"

// request is the experiment whose shards the bench runs: one loader and
// one benchmarking shard, unthrottled (-xtb 0). It is what
// `benchq ycsb -dbms Redis -sf <records/1e6> -xop <operations/1e6> -xwl <w>
// -nlp 1 -nlt <threads> -nbp 1 -nbt <threads> -xtb 0 -xli <s>` submits.
func request(cfg Config) contracts.Request {
	zero := 0
	return contracts.Request{
		SchemaVersion:       contracts.SchemaVersion,
		DBMS:                []string{benchDBMS},
		SF:                  float64(cfg.Records) / 1e6,
		Operations:          float64(cfg.Operations) / 1e6,
		Workload:            cfg.Workload,
		TargetBase:          &zero,
		LoadingPods:         []int{1},
		LoadingThreads:      []int{cfg.Threads},
		BenchmarkingPods:    []int{1},
		BenchmarkingThreads: []int{cfg.Threads},
		StatusInterval:      cfg.StatusInterval,
	}
}

// shards are the planned loading and benchmarking shard of the request.
type shards struct {
	cfgName         string
	load, run       plan.Phase
	endpoint        contracts.Endpoint
	barrierTimeoutS int
}

// planShards expands the request as the scheduler does and checks it is the
// one-loader, one-benchmarker experiment the bench expects.
func planShards(cfg Config, redisPort int) (shards, error) {
	pl, err := plan.Expand("bench", request(cfg))
	if err != nil {
		return shards{}, fmt.Errorf("plan the bench experiment: %w", err)
	}
	if len(pl.Configurations) != 1 || len(pl.Configurations[0].Phases) != 2 {
		return shards{}, fmt.Errorf("plan the bench experiment: want 1 configuration with 2 phases, got %d configurations", len(pl.Configurations))
	}
	c := pl.Configurations[0]
	load, run := c.Phases[0], c.Phases[1]
	if len(load.Shards) != 1 || len(run.Shards) != 1 || run.Shards[0].YCSB == nil {
		return shards{}, fmt.Errorf("plan the bench experiment: want one loading and one benchmarking YCSB shard")
	}
	entry, err := catalog.Lookup(c.DBMS)
	if err != nil {
		return shards{}, err
	}
	return shards{
		cfgName: c.Name, load: load, run: run,
		endpoint:        entry.Endpoint("127.0.0.1", redisPort),
		barrierTimeoutS: pl.Timeouts.BarrierS,
	}, nil
}

// job is the ShardJob the scheduler would send for phase ph, under the
// experiment code (one code per run, so no message id repeats).
func (s shards) job(code string, ph plan.Phase, now time.Time) contracts.ShardJob {
	return contracts.ShardJob{
		Envelope:      contracts.NewEnvelope(code, contracts.ShardJobID(code, ph.Name, 1, 1), now),
		Configuration: s.cfgName, Phase: ph.Name, Kind: ph.Kind, Shard: 1, Shards: 1, Attempt: 1,
		Engine: plan.BenchmarkYCSB, DBMS: benchDBMS, Endpoint: s.endpoint, TimeoutS: s.barrierTimeoutS,
		YCSB: ph.Shards[0].YCSB,
	}
}
