-- benchq results schema, version 9: what a time-series database said it
-- stored (benchmark tsdb, docs/tsdb.md). The first metrics generator of a
-- phase reads the database's own counter of stored points at GO, every
-- second while the generators write, and after they stop until it stops
-- growing (the drain); each reading is a row. A reading that failed has no
-- row: a missing second is missing, never 0.
CREATE TABLE IF NOT EXISTS ingest_readings (
    code      text NOT NULL,
    phase     text NOT NULL,
    attempt   int  NOT NULL,
    shard     int  NOT NULL,             -- the generator that read it
    at        timestamptz NOT NULL,
    total     double precision NOT NULL, -- the counter's value
    after_end boolean NOT NULL,          -- read after the generators stopped (the drain)
    counter   text NOT NULL,             -- the selector read, e.g. vm_rows_inserted_total{type="graphite"}
    PRIMARY KEY (code, phase, attempt, at)
);

-- Whether each phase's counter stopped growing before the drain's limit.
CREATE TABLE IF NOT EXISTS ingest_drains (
    code     text NOT NULL,
    phase    text NOT NULL,
    attempt  int  NOT NULL,
    ended_at timestamptz NOT NULL,       -- the generators stopped
    drained  boolean NOT NULL,
    PRIMARY KEY (code, phase, attempt)
);
