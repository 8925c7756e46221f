// Package plan expands an experiment request into the grid of SUT
// configurations and their phases, in bexhoma's loop order, and computes the
// per-shard parameters of each engine (YCSB, TPC-C). Everything here is
// pure: no I/O, no clock.
//
// Files by concern: defaults.go (bexhoma's defaults, timeouts), validate.go
// (what cannot be expanded), grid.go (the loops), phase.go (splitting a
// phase over its shards), shard_ycsb.go and shard_tpcc.go (one shard per
// engine), request.go (a raw request to a plan, for the scheduler and the
// CLI's --dry-run).
package plan

import "github.com/benchq/benchq/contracts"

// The plan's data types are contracts (the planned event publishes them);
// these aliases keep the package's vocabulary: plan.Plan, plan.Phase, ….
type (
	Plan          = contracts.Plan
	Configuration = contracts.PlanConfiguration
	Phase         = contracts.PlanPhase
	Shard         = contracts.PlanShard
)
