package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/benchbase"
	"github.com/benchq/benchq/internal/tpcc"
)

// runTPCC executes a shard of engine "benchbase" with the embedded TPC-C
// engine (internal/tpcc). A benchmarking shard connects its terminals before
// READY; a loading shard only checks the SUT answers. It returns an error
// only when ctx ends (the agent is stopping): then nothing is published and
// the job is redelivered.
func (a *Agent) runTPCC(ctx context.Context, job contracts.ShardJob) (*contracts.Final, error) {
	sh, err := a.joinInProcess(job, job.TPCC.Terminals, job.TPCC.Target)
	if err != nil {
		return nil, err
	}
	defer sh.leave()
	final, br, live, fail := sh.final, sh.br, sh.live, sh.fail

	// 1. Prepare within the barrier timeout.
	prepCtx, cancelPrep := context.WithTimeout(ctx, br.Timeout)
	defer cancelPrep()
	var bench *tpcc.Bench
	if job.Kind == contracts.KindRun {
		b, err := tpcc.Prepare(prepCtx, job.Endpoint, *job.TPCC, job.Shard)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return fail("prepare: %v", err)
		}
		defer b.Close() //nolint:errcheck // the connections are dropped; the result is what counts
		bench = b
	}

	// 2. Barrier: READY, wait for GO.
	startAt, runCtx, stopRun, err := atGo(ctx, br, final, live)
	if err != nil {
		return barrierFailed(ctx, final, err)
	}
	defer stopRun()

	// 3. Run; the phase attempt failing stops the engine.
	publish := func(iv contracts.Interval) { a.publishInterval(ctx, job, live, iv) }
	var runErr error
	if job.Kind == contracts.KindLoad {
		waitUntil(runCtx, startAt)
		final.StartedAt = time.Now().UTC()
		var load benchbase.Load
		if runErr = runCtx.Err(); runErr == nil {
			load, runErr = tpcc.Load(runCtx, job.Endpoint, *job.TPCC, job.Shard, publish)
		}
		load.FillFinal(final)
	} else {
		final.StartedAt = time.Now().UTC()
		res, err := bench.Run(runCtx, startAt, publish)
		runErr = err
		res.FillFinal(final)
		final.Stdout = fmt.Sprintf("tpcc: %d requests in %s, throughput %.2f/s, goodput %.2f/s", res.MeasuredRequests, res.Elapsed, res.Throughput, res.Goodput)
		if n := bench.Retried(); n > 0 {
			final.Stdout += fmt.Sprintf("\nconnects refused by the pool (max_client_conn) and tried again: %d", n)
		}
		for _, m := range res.ErrorMessages {
			final.Stdout += "\nerror: " + m
		}
	}
	live.cpuNow()
	final.DriverCPU = live.cpuReads()
	final.EndedAt = time.Now().UTC()
	final.TS = final.EndedAt
	return settled(ctx, runCtx, runErr, final)
}

// handleTPCC runs a TPC-C shard (engine benchbase) and publishes its final.
func (a *Agent) handleTPCC(ctx context.Context, m jetstream.Msg, job contracts.ShardJob, log *slog.Logger) error {
	log.Info("tpc-c shard starting", "warehouses", job.TPCC.Warehouses, "terminals", job.TPCC.Terminals, "target", job.TPCC.Target, "duration_s", job.TPCC.DurationS)
	run := a.runTPCC
	if a.cfg.Benchbase != nil {
		run = a.runBenchbaseJar
	}
	return a.runShard(ctx, job, log, func(ctx context.Context) (*contracts.Final, error) { return run(ctx, job) })
}
