-- benchq results schema: a view made again from this file by
-- resultsdb.Migrate, after the numbered migrations, whenever its definition
-- filled in differs from the one in place (schema_views): a view holds no
-- data, so one definition here replaces the copies each change of it would
-- otherwise add as a new migration.
--
-- One row per phase of an experiment, from its reported shards:
--   operations    every executed operation (YCSB's blocks but CLEANUP, the
--                 Intended-<OP> latency blocks and the JVM samples), failed
--                 ones (<OP>-FAILED blocks) included, as YCSB's throughput counts:
--                 the rule of contracts/names.json's ycsb_operations, whose
--                 lists fill the {{...}} below (resultsdb.Migrate; the
--                 collector's TestPhaseFiguresCountOperationsByTheContract
--                 checks the outcome);
--   failed        the operations of the <OP>-FAILED blocks;
--   window_s      the common window: earliest first operation of a shard to
--                 the latest last one; NULL unless every shard is ok and
--                 reported both (a window that leaves out a shard would be wrong);
--   throughput    operations / window_s (the summary's "Throughput common
--                 window(ops/sec)");
--   goodput       successful operations / window_s;
--   error_share   failed / operations (0..1).
-- p99_max_us is the highest p99 of a shard over all operations: an upper
-- bound of the phase's p99, exact for a phase of one shard; the summary's
-- percentiles come from the shards' merged HdrHistograms, which SQL cannot
-- decode.
CREATE OR REPLACE VIEW phase_figures AS
WITH ops AS (
    SELECT o.code, o.phase, o.shard, o.attempt,
           sum(o.count) AS operations,
           sum(o.count) FILTER (WHERE right(o.operation, length({{failed_suffix}})) = {{failed_suffix}}) AS failed,
           max(o.p99_us) AS p99_max_us
    FROM shard_operations o
    WHERE o.operation <> ALL ({{not_operations}})
      AND NOT starts_with(o.operation, {{intended_prefix}})
    GROUP BY 1, 2, 3, 4
), phases AS (
    SELECT s.code, s.phase, min(s.configuration) AS configuration, min(s.kind) AS kind,
           count(*) AS shards,
           count(*) FILTER (WHERE s.status <> 'ok') AS failed_shards,
           min(s.first_op_at) AS first_op_at,
           max(s.last_op_at) AS last_op_at,
           CASE WHEN bool_and(s.status = 'ok' AND s.first_op_at IS NOT NULL AND s.last_op_at IS NOT NULL)
                THEN extract(epoch FROM max(s.last_op_at) - min(s.first_op_at))::double precision END AS window_s,
           coalesce(sum(o.operations), 0) AS operations,
           coalesce(sum(o.failed), 0) AS failed,
           max(o.p99_max_us) AS p99_max_us
    FROM reported_shards s
    LEFT JOIN ops o USING (code, phase, shard, attempt)
    GROUP BY s.code, s.phase
)
SELECT code, phase, configuration, kind, shards, failed_shards, first_op_at, last_op_at,
       window_s, operations, failed,
       operations / nullif(window_s, 0) AS throughput,
       (operations - failed) / nullif(window_s, 0) AS goodput,
       failed::double precision / nullif(operations, 0) AS error_share,
       p99_max_us
FROM phases;
