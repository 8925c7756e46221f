-- benchq results schema, version 10: benchmark tsdb's QUERY (the read its
-- first generator sends every second while the others write, docs/tsdb.md)
-- is not an executed operation of the phase's throughput, as YCSB's
-- CLEANUP is not (contracts/names.json, ycsb_operations.not_operations):
-- phase_figures leaves it out. The rest of the view is 0005's.
CREATE OR REPLACE VIEW phase_figures AS
WITH ops AS (
    SELECT o.code, o.phase, o.shard, o.attempt,
           sum(o.count) AS operations,
           sum(o.count) FILTER (WHERE o.operation LIKE '%-FAILED') AS failed,
           max(o.p99_us) AS p99_max_us
    FROM shard_operations o
    WHERE o.operation <> 'CLEANUP'
      AND o.operation NOT LIKE 'Intended-%'
      AND o.operation NOT IN ('THREAD_COUNT', 'USED_MEM_MB', 'SYS_LOAD_AVG', 'GCS', 'GCS_TIME', 'QUERY')
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
