-- benchq results schema, version 1.
-- Every row is written idempotently by the collector: the natural key of each
-- table is its primary key, and inserts use ON CONFLICT. The raw message of
-- every event and result is kept in "messages", so each figure of a summary
-- can be traced back to what a service published.

CREATE TABLE IF NOT EXISTS messages (
    id          text PRIMARY KEY,              -- Nats-Msg-Id / envelope id
    code        text NOT NULL,
    subject     text NOT NULL,
    ts          timestamptz NOT NULL,
    payload     jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_code_ts ON messages (code, ts);

CREATE TABLE IF NOT EXISTS experiments (
    code          text PRIMARY KEY,
    request       jsonb NOT NULL,              -- as received
    plan          jsonb NOT NULL,              -- internal/plan.Plan, effective values
    status        text NOT NULL DEFAULT 'running',  -- running | done | failed | cancelled
    reason        text,
    planned_at    timestamptz NOT NULL,
    started_at    timestamptz,
    ended_at      timestamptz
);

-- One row per SUT configuration (one SUT each, loaded once).
CREATE TABLE IF NOT EXISTS configurations (
    code           text NOT NULL,               -- no FK: results may arrive before the planned event is stored
    name           text NOT NULL,
    dbms           text NOT NULL,
    experiment_run int  NOT NULL,              -- -nc repetition, 1-based
    endpoint       jsonb,
    info           jsonb,                      -- version and host facts (Connections section)
    backend        text,
    ready_at       timestamptz,
    ready_after_ms bigint,
    removed_at     timestamptz,
    failure        text,
    PRIMARY KEY (code, name)
);

-- One row per phase attempt: the loading phase and each benchmarking phase.
CREATE TABLE IF NOT EXISTS phases (
    code          text NOT NULL,               -- no FK: results may arrive before the planned event is stored
    phase         text NOT NULL,
    attempt       int  NOT NULL,
    configuration text NOT NULL,
    kind          text NOT NULL,               -- load | run
    status        text NOT NULL,               -- started | done | failed
    shards        int,
    started_at    timestamptz,
    ended_at      timestamptz,
    reason        text,
    PRIMARY KEY (code, phase, attempt)
);

-- One row per shard result (the final result of one driver process).
CREATE TABLE IF NOT EXISTS shard_results (
    code          text NOT NULL,               -- no FK: results may arrive before the planned event is stored
    phase         text NOT NULL,
    shard         int  NOT NULL,
    attempt       int  NOT NULL,
    configuration text NOT NULL,
    kind          text NOT NULL,
    agent         text NOT NULL,
    status        text NOT NULL,               -- ok | failed
    error         text,
    threads       int,
    target        int,
    started_at    timestamptz NOT NULL,
    ended_at      timestamptz NOT NULL,
    runtime_ms    double precision,
    throughput    double precision,            -- ops/s as the tool reported it
    message_id    text NOT NULL,
    stdout        text,                        -- the tool's summary as printed
    PRIMARY KEY (code, phase, shard, attempt)
);

-- Per operation type of a shard result ([READ], [UPDATE], [INSERT], ...).
CREATE TABLE IF NOT EXISTS shard_operations (
    code          text NOT NULL,
    phase         text NOT NULL,
    shard         int  NOT NULL,
    attempt       int  NOT NULL,
    operation     text NOT NULL,               -- READ, UPDATE, INSERT, CLEANUP, READ-FAILED ...
    count         bigint NOT NULL,
    avg_us        double precision,
    min_us        double precision,
    max_us        double precision,
    p95_us        double precision,
    p99_us        double precision,
    return_codes  jsonb NOT NULL DEFAULT '{}', -- {"OK": n, "ERROR": m, "NOT_FOUND": k}
    PRIMARY KEY (code, phase, shard, attempt, operation),
    FOREIGN KEY (code, phase, shard, attempt) REFERENCES shard_results (code, phase, shard, attempt)
);

-- Streamed status intervals of each shard (time series).
CREATE TABLE IF NOT EXISTS intervals (
    code          text NOT NULL,
    phase         text NOT NULL,
    shard         int  NOT NULL,
    attempt       int  NOT NULL,
    elapsed_s     bigint NOT NULL,
    at            timestamptz NOT NULL,
    operations    bigint NOT NULL,
    ops_per_sec   double precision NOT NULL,
    per_op        jsonb,
    PRIMARY KEY (code, phase, shard, attempt, elapsed_s)
);
CREATE INDEX IF NOT EXISTS intervals_at_brin ON intervals USING brin (at);
