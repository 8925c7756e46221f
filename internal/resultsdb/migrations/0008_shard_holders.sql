-- benchq results schema, version 8: who held each shard. The driver agents
-- share one NATS key, so each run of an agent signs what it says for a
-- shard with a key of its own (contracts/sign.go). The scheduler binds a
-- shard to the run whose READY it took and says so in the phase's GO
-- (barrier.go: agents, instances); the collector keeps that here and
-- stores a shard's intervals and final only when that run signed them.
CREATE TABLE IF NOT EXISTS shard_holders (
    code     text NOT NULL,
    phase    text NOT NULL,
    attempt  int  NOT NULL,
    shard    int  NOT NULL,   -- 1-based
    agent    text NOT NULL,   -- the agent's name
    instance text NOT NULL,   -- its run: the public key that signs its results ('' when it named none)
    PRIMARY KEY (code, phase, attempt, shard)
);
