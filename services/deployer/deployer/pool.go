package deployer

import (
	"context"
	"fmt"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/services/deployer/backend"
)

// topUp starts the agents a phase lacks: its shards minus the pool's live
// agents.
func (d *Deployer) topUp(ctx context.Context, pa backend.PhaseAgents, job contracts.Drivers) error {
	beats, err := bus.Heartbeats(ctx, d.bus.JS)
	if err != nil {
		return fmt.Errorf("agents bucket: %w", err) // redelivered
	}
	pool := pa.PoolAgents(beats, time.Now())
	missing := job.Shards - pool
	if missing <= 0 {
		return nil
	}
	spec := backend.DriverSpec{Code: job.Code, Configuration: job.Configuration, DBMS: job.DBMS, Phase: job.Phase, Kind: job.Kind,
		Attempt: job.Attempt, Shards: job.Shards, Node: job.Node}
	names, err := pa.StartPhaseAgents(ctx, spec, missing)
	if err != nil {
		return fmt.Errorf("start agents for %s: %w", job.Phase, err)
	}
	d.log.Info("started agents for a phase the pool is too small for", "code", job.Code, "phase", job.Phase,
		"shards", job.Shards, "pool", pool, "agents", names)
	return nil
}
