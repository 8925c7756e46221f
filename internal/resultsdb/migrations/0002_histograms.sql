-- benchq results schema, version 2: what exact cross-shard statistics need.
-- Idempotent like 0001 (IF NOT EXISTS), so a half-applied run can be repeated.

-- The shard's measured window (the driver's first operation start and last
-- operation end): a phase's common window and its start skew come from these.
-- NULL for results of drivers that did not report them.
ALTER TABLE shard_results
    ADD COLUMN IF NOT EXISTS first_op_at timestamptz,
    ADD COLUMN IF NOT EXISTS last_op_at  timestamptz;

-- Every latency of an operation as an HdrHistogram (µs, V2 compressed
-- encoding, base64): histograms of several shards merge into the exact
-- percentiles of a phase. "Intended-<OP>" rows hold latencies measured from
-- the intended start time (a target rate was set).
ALTER TABLE shard_operations
    ADD COLUMN IF NOT EXISTS p50_us    double precision,
    ADD COLUMN IF NOT EXISTS p999_us   double precision,
    ADD COLUMN IF NOT EXISTS histogram text;
