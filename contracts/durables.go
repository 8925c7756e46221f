package contracts

import "time"

// Durable consumer names (names.json "durables"). benchq status and the
// stack's readiness check look consumers up by these names, so a service
// that renamed its consumer would look dead.
const (
	DurableSchedulerRequests = "scheduler-requests"
	DurableSchedulerEvents   = "scheduler-events"
	DurableSchedulerResults  = "scheduler-results"
	DurableDeployer          = "deployer"
	DurableDeployerDrivers   = "deployer-drivers"
	DurableCollectorEvents   = "collector-events"
	DurableCollectorResults  = "collector-results"
	DurableAgents            = "agents"
)

// Agent liveness: an agent writes its Heartbeat every HeartbeatEvery; one
// silent for AgentLiveness counts as gone (the scheduler fails or re-runs its
// shards, the deployer does not count it in the pool), and the agents bucket
// forgets it after AgentsTTL. A silent agent whose process the scheduler
// can see (same host) and that used CPU since the scheduler last looked is
// not lost until its entry expires: a busy machine delays heartbeats, it
// does not stop a working agent.
const (
	HeartbeatEvery = 5 * time.Second
	AgentLiveness  = 15 * time.Second
	AgentsTTL      = 30 * time.Second
)
