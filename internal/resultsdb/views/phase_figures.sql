-- benchq results schema: a view made again from this file by
-- resultsdb.Migrate, after the numbered migrations, whenever its definition
-- filled in differs from the one in place (schema_views): a view holds no
-- data, so one definition here replaces the copies each change of it would
-- otherwise add as a new migration.
--
-- One row per phase of an experiment, from its reported shards:
--   operations    every executed operation, failed ones included, as the
--                 summary counts them. YCSB: its blocks but CLEANUP, the
--                 Intended-<OP> latency blocks and the JVM samples, a
--                 composite block (READ-MODIFY-WRITE) weighing 1 minus its
--                 number of parts, as YCSB's throughput counts: the rule of
--                 contracts/names.json's ycsb_operations, whose lists fill
--                 the {{...}} below (resultsdb.Migrate; the collector's
--                 TestPhaseFiguresCountOperationsByTheContract checks the
--                 outcome). Benchbase (TPC-C): the requests of the ALL
--                 operation, which the five transaction types' counts add up
--                 to (never added to them);
--   failed        YCSB: the operations of the <OP>-FAILED blocks, at most
--                 operations (a read-modify-write whose read and update both
--                 failed is in two of them); Benchbase: ALL's requests with
--                 an error outcome (ERROR, UNKNOWN);
--   window_s      the common window: earliest first operation of a shard to
--                 the latest last one (Benchbase: a shard's first request
--                 plus its measured runtime, as the summary's Aggregated
--                 Parallel); NULL unless every shard is ok and reported both
--                 (a window that leaves out a shard would be wrong);
--   throughput    operations / window_s (the summary's "Throughput common
--                 window(ops/sec)");
--   goodput       successful operations / window_s (YCSB: not failed;
--                 Benchbase: ALL's OK outcome, so aborted and retried
--                 requests are neither failed nor good, as in the summary);
--   error_share   failed / operations (0..1).
-- operations, failed, throughput, goodput and error_share are NULL (missing,
-- never 0) when no shard of the phase reported its operations: a phase
-- stopped or failed before any shard's final counted them.
-- p99_max_us is the highest p99 of a shard over all operations: an upper
-- bound of the phase's p99, exact for a phase of one shard; the summary's
-- percentiles come from the shards' merged HdrHistograms, which SQL cannot
-- decode.
CREATE OR REPLACE VIEW phase_figures AS
WITH ops AS (
    SELECT o.code, o.phase, o.shard, o.attempt,
           sum(o.count * coalesce(({{composite_weights}} ->> o.operation)::bigint, 1)) AS operations,
           coalesce(sum(o.count) FILTER (WHERE right(o.operation, length({{failed_suffix}})) = {{failed_suffix}}), 0) AS failed,
           max(o.p99_us) AS p99_max_us
    FROM shard_operations o
    WHERE o.operation <> ALL ({{not_operations}})
      AND o.operation <> {{benchbase_all}}
      AND NOT starts_with(o.operation, {{intended_prefix}})
    GROUP BY 1, 2, 3, 4
), requests AS (
    SELECT a.code, a.phase, a.shard, a.attempt, a.count AS operations,
           (SELECT coalesce(sum(n::bigint), 0) FROM jsonb_each_text(a.return_codes) AS r(outcome, n)
             WHERE r.outcome = ANY ({{benchbase_errors}})) AS failed,
           coalesce((a.return_codes ->> {{benchbase_ok}})::bigint, 0) AS successes,
           a.p99_us
    FROM shard_operations a
    WHERE a.operation = {{benchbase_all}}
), shards AS (
    SELECT s.code, s.phase, s.configuration, s.kind, s.status, s.first_op_at,
           CASE WHEN r.shard IS NULL THEN s.last_op_at
                ELSE s.first_op_at + s.runtime_ms * interval '1 millisecond' END AS last_op_at,
           coalesce(r.operations, o.operations) AS operations,
           coalesce(r.failed, o.failed) AS failed,
           coalesce(r.successes, o.operations - o.failed) AS successes,
           greatest(r.p99_us, o.p99_max_us) AS p99_max_us
    FROM reported_shards s
    LEFT JOIN ops o USING (code, phase, shard, attempt)
    LEFT JOIN requests r USING (code, phase, shard, attempt)
), phases AS (
    SELECT code, phase, min(configuration) AS configuration, min(kind) AS kind,
           count(*) AS shards,
           count(*) FILTER (WHERE status <> 'ok') AS failed_shards,
           min(first_op_at) AS first_op_at,
           max(last_op_at) AS last_op_at,
           CASE WHEN bool_and(status = 'ok' AND first_op_at IS NOT NULL AND last_op_at IS NOT NULL)
                THEN extract(epoch FROM max(last_op_at) - min(first_op_at))::double precision END AS window_s,
           sum(operations) AS operations,
           -- least() skips a NULL: a phase without counts has no failed either.
           CASE WHEN sum(operations) IS NOT NULL THEN least(coalesce(sum(failed), 0), sum(operations)) END AS failed,
           CASE WHEN sum(operations) IS NOT NULL THEN coalesce(sum(successes), 0) END AS successes,
           max(p99_max_us) AS p99_max_us
    FROM shards
    GROUP BY code, phase
)
SELECT code, phase, configuration, kind, shards, failed_shards, first_op_at, last_op_at,
       window_s, operations, failed,
       operations / nullif(window_s, 0) AS throughput,
       successes / nullif(window_s, 0) AS goodput,
       failed::double precision / nullif(operations, 0) AS error_share,
       p99_max_us
FROM phases;
