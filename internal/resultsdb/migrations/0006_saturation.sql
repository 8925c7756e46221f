-- benchq results schema, version 6: the saturation search (-xsat,
-- docs/saturation.md). One row per judged step (or hold) of a search, from
-- the saturation block of its phase.done / phase.failed event (the raw event
-- stays in messages); the step's shards are in shard_results, their
-- seconds in intervals, so every figure can be traced.
CREATE TABLE IF NOT EXISTS saturation_steps (
    code          text NOT NULL,
    phase         text NOT NULL,
    attempt       int  NOT NULL,
    configuration text NOT NULL,
    step          int  NOT NULL,               -- 1-based, the hold included
    role          text NOT NULL,               -- step | hold
    offered       int  NOT NULL,               -- ops/s over all shards
    shards        int  NOT NULL,
    threads       int  NOT NULL,
    steady_from   timestamptz,
    steady_to     timestamptz,
    seconds       int  NOT NULL,
    achieved      double precision NOT NULL,   -- all operations / s over the steady window
    goodput       double precision NOT NULL,   -- successful operations / s
    error_share   double precision NOT NULL,   -- percent
    p95_ms        double precision,            -- NULL: no histogram (missing, not 0)
    p99_ms        double precision,
    cv            double precision NOT NULL,   -- percent, per-second throughput
    worst_second  double precision NOT NULL,
    busy          double precision NOT NULL,   -- percent of the drivers' thread time
    verdict       text NOT NULL,               -- pass | fail | driver-limited | stable | unstable
    why           text NOT NULL,
    next          text NOT NULL,
    knee          jsonb,                       -- on the step that ended the search
    PRIMARY KEY (code, phase, attempt)
);
