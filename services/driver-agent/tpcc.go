package main

import (
	"context"
	"errors"
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
func (a *Agent) runTPCC(ctx context.Context, job contracts.ShardJob, progress func()) (*contracts.Final, error) {
	final := newFinal(job, a.cfg.Name, job.TPCC.Terminals, job.TPCC.Target)
	fail := func(format string, args ...any) (*contracts.Final, error) {
		return failed(final, format, args...), nil
	}
	signals, unsubscribe, err := a.barrierSignals(job.Code)
	if err != nil {
		return nil, err
	}
	defer unsubscribe()
	// The engine blocks for the whole shard: keep the job alive meanwhile.
	alive, stopAlive := context.WithCancel(ctx)
	defer stopAlive()
	go func() {
		t := time.NewTicker(contracts.HeartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-alive.Done():
				return
			case <-t.C:
				progress()
			}
		}
	}()

	// 1. Prepare within the barrier timeout.
	barrier := time.Duration(max(job.TimeoutS, 1)) * time.Second
	prepCtx, cancelPrep := context.WithTimeout(ctx, barrier)
	defer cancelPrep()
	var bench *tpcc.Bench
	if job.Kind == contracts.KindRun {
		b, err := tpcc.Prepare(prepCtx, job.Endpoint, *job.TPCC)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return fail("prepare: %v", err)
		}
		defer b.Close()
		bench = b
	}
	if err := a.bus.Publish(ctx, contracts.TopicBarrierReady.For(job.Code), &contracts.BarrierReady{
		Envelope: contracts.NewEnvelope(job.Code, contracts.ReadyID(job.Code, job.Phase, job.Shard, job.Attempt), time.Now()),
		Phase:    job.Phase, Shard: job.Shard, Attempt: job.Attempt, Agent: a.cfg.Name,
	}); err != nil {
		return nil, err
	}

	// 2. Barrier: wait for GO (the heartbeat goroutine keeps the job alive).
	r := &shardRun{a: a, job: job}
	startAt, err := r.waitGo(ctx, signals, barrier, nil, func() {})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return fail("%v", err)
	}

	// 3. Run; a phase.failed for this phase and attempt stops the engine.
	runCtx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	go func() {
		for {
			select {
			case m := <-signals:
				if reason, ok := r.phaseFailed(m); ok {
					abort(errors.New(reason))
					return
				}
			case <-runCtx.Done():
				return
			}
		}
	}()
	publish := func(iv contracts.Interval) {
		iv.Envelope = contracts.NewEnvelope(job.Code, contracts.IntervalID(job.Code, job.Phase, job.Shard, job.Attempt, iv.ElapsedS), time.Now())
		iv.Phase, iv.Shard, iv.Attempt = job.Phase, job.Shard, job.Attempt
		subj := contracts.IntervalSubject(job.Code, job.Phase, job.Shard)
		if err := a.bus.Publish(ctx, subj, &iv); err != nil {
			a.log.Warn("interval not published", "err", err)
		}
	}
	var runErr error
	if job.Kind == contracts.KindLoad {
		if d := time.Until(startAt); d > 0 {
			select {
			case <-time.After(d):
			case <-runCtx.Done():
			}
		}
		final.StartedAt = time.Now().UTC()
		var load benchbase.Load
		if runErr = runCtx.Err(); runErr == nil {
			load, runErr = tpcc.Load(runCtx, job.Endpoint, *job.TPCC, publish)
		}
		load.FillFinal(final)
	} else {
		final.StartedAt = time.Now().UTC()
		res, err := bench.Run(runCtx, startAt, publish)
		runErr = err
		res.FillFinal(final)
		final.Stdout = fmt.Sprintf("tpcc: %d requests in %s, throughput %.2f/s, goodput %.2f/s", res.MeasuredRequests, res.Elapsed, res.Throughput, res.Goodput)
		for _, m := range res.ErrorMessages {
			final.Stdout += "\nerror: " + m
		}
	}
	final.EndedAt = time.Now().UTC()
	final.TS = final.EndedAt
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err() // stopping: not acked, redelivered
	case runCtx.Err() != nil:
		final.Status, final.Error = contracts.StatusFailed, "aborted: the phase failed: "+context.Cause(runCtx).Error()
	case runErr != nil:
		final.Status, final.Error = contracts.StatusFailed, runErr.Error()
	default:
		final.Status = contracts.StatusOK
	}
	return final, nil
}

// handleTPCC runs a TPC-C shard (engine benchbase) and publishes its final.
func (a *Agent) handleTPCC(ctx context.Context, m jetstream.Msg, job contracts.ShardJob, log *slog.Logger) error {
	log.Info("tpc-c shard starting", "warehouses", job.TPCC.Warehouses, "terminals", job.TPCC.Terminals, "target", job.TPCC.Target, "duration_s", job.TPCC.DurationS)
	a.busy.Store(job.ID)
	defer a.busy.Store("")
	var final *contracts.Final
	var err error
	if a.cfg.Benchbase != nil {
		final, err = a.runBenchbaseJar(ctx, job, func() { _ = m.InProgress() })
	} else {
		final, err = a.runTPCC(ctx, job, func() { _ = m.InProgress() })
	}
	if err != nil {
		return err // stopping: not acked, redelivered
	}
	log.Info("shard finished", "status", final.Status, "throughput", final.Throughput, "error", final.Error)
	return a.publishFinal(ctx, final)
}
