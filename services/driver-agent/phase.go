package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchq/benchq/contracts"
)

// Phase-bound agents. On Kubernetes the deployer starts one Job of agent
// pods per phase attempt (docs/kubernetes.md): each pod must run a shard of
// that phase, then exit so that the Job completes. Such an agent is told so
// by BENCHQ_AGENT_EXPERIMENT, BENCHQ_AGENT_PHASE and BENCHQ_AGENT_MAX_SHARDS
// (flags -experiment, -phase, -max-shards); without them an agent serves
// every shard job for as long as it runs (the local stack).

// PhaseLimits bind an agent to one phase and a number of shards.
type PhaseLimits struct {
	Experiment string // only shard jobs of this experiment ("" = any)
	Phase      string // only shard jobs of this phase ("" = any)
	MaxShards  int    // exit (0) after this many shards ended, ok or not (0 = never)
}

// phaseState counts the shards this agent ended and stops it.
type phaseState struct {
	ended atomic.Int64
	stop  context.CancelFunc
}

// handBackDelay is how long another phase's job is kept from agents (by
// JetStream) after it was handed back.
const handBackDelay = time.Second

// errOtherPhase hands a job back (Nak, redelivered after a short delay).
var errOtherPhase = errors.New("shard job of another phase: handed back for its own agents")

// withLimits returns the context Run serves with: with MaxShards it is
// cancelled once that many shards ended, which ends Run without error.
func (a *Agent) withLimits(ctx context.Context) context.Context {
	if a.cfg.Limits.MaxShards <= 0 {
		return ctx
	}
	ctx, a.lim.stop = context.WithCancel(ctx)
	return ctx
}

// otherPhase reports whether job belongs to other agents, and what to
// return for it then. All agents share one work-queue consumer and
// JetStream cannot filter it per agent on the message body, so an agent
// bound to a phase receives other phases' jobs too (several phases
// dispatched at once: -ms above 1, concurrent experiments). It hands such a
// job back to the queue rather than run it: its own phase's pods are
// waiting for their shards, and it must exit after MaxShards of its own.
//
// A hand-back (Nak) counts as a delivery, and the agents' consumer gives up
// on a job after MaxDeliver (3) deliveries; so a job handed back once
// already is re-queued instead — published again as a fresh message, under
// an id of its own (JetStream de-duplicates a re-queue repeated after a
// crash), and the delivered one acked. A job past its barrier deadline is
// left to handle(), which drops it: nobody waits for it.
func (a *Agent) otherPhase(ctx context.Context, m jetstream.Msg, job contracts.ShardJob) (bool, error) {
	lim := a.cfg.Limits
	if (lim.Experiment == "" || job.Code == lim.Experiment) && (lim.Phase == "" || job.Phase == lim.Phase) {
		return false, nil
	}
	if job.StartBy != nil && time.Now().After(*job.StartBy) {
		return false, nil // stale: handle() drops it
	}
	log := a.log.With("code", job.Code, "phase", job.Phase, "shard", job.Shard, "attempt", job.Attempt, "bound_to", lim.Phase)
	meta, err := m.Metadata()
	if err != nil || meta.NumDelivered < 2 {
		log.Debug("handing back a shard job of another phase")
		return true, errOtherPhase
	}
	// Keep it from coming straight back to this agent (the queue may hold
	// nothing else), then re-queue it.
	select {
	case <-ctx.Done():
		return true, ctx.Err() // stopping: handed back at once
	case <-time.After(handBackDelay):
	}
	id := contracts.RequeuedID(job.ID, meta.Sequence.Stream)
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := a.bus.PublishRaw(pctx, m.Subject(), id, m.Data()); err != nil {
		return true, fmt.Errorf("re-queue shard job %s: %w", job.ID, err)
	}
	log.Info("re-queued a shard job of another phase", "delivered", meta.NumDelivered)
	return true, nil // acked: its fresh copy is in the queue
}

// shardEnded counts a published final: the shard ended on this agent.
func (a *Agent) shardEnded() {
	a.lim.ended.Add(1)
}

// afterJob stops the agent once it ended MaxShards shards; the job just
// handled is still acked (bus.Consume settles it before it stops).
func (a *Agent) afterJob() {
	if n := a.cfg.Limits.MaxShards; n > 0 && a.lim.ended.Load() >= int64(n) && a.lim.stop != nil {
		a.log.Info("ended as many shards as it may; exiting", "max_shards", n)
		a.lim.stop()
	}
}
