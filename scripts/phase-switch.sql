-- Phase-to-phase switch latency of one experiment (psql -v code=CODE -f):
-- from the end of a phase (its latest shard's end, in phase.done) to the
-- next phase of the same configuration starting (its GO instant, in
-- phase.started) and to its first shard really starting (phase.done's
-- window start). Includes shard jobs, JVM start-up, READY and the GO
-- lead. Prints every switch and p50/p99/max.
WITH ev AS (
  SELECT payload->>'configuration' AS configuration, payload->>'phase' AS phase,
         (payload->>'attempt')::int AS attempt, payload->>'status' AS status,
         (payload->>'started_at')::timestamptz AS started_at, (payload->>'ended_at')::timestamptz AS ended_at
  FROM messages WHERE code = :'code' AND subject LIKE '%.phase.%'
), ph AS (
  SELECT d.configuration, d.phase, d.started_at AS first_start, d.ended_at, s.started_at AS go_at
  FROM ev d JOIN ev s ON s.phase = d.phase AND s.attempt = d.attempt AND s.status = 'started'
  WHERE d.status = 'done'
), sw AS (
  SELECT phase,
         extract(epoch FROM go_at - lag(ended_at) OVER w) * 1000 AS to_go_ms,
         extract(epoch FROM first_start - lag(ended_at) OVER w) * 1000 AS to_first_op_ms
  FROM ph WINDOW w AS (PARTITION BY configuration ORDER BY go_at)
)
SELECT phase, round(to_go_ms::numeric, 1) AS to_go_ms, round(to_first_op_ms::numeric, 1) AS to_first_op_ms
FROM sw WHERE to_go_ms IS NOT NULL
UNION ALL
SELECT '(p50 / p99 / max of ' || count(*) || ')',
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY to_go_ms)::numeric, 1),
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY to_first_op_ms)::numeric, 1)
FROM sw WHERE to_go_ms IS NOT NULL
UNION ALL
SELECT '', round(percentile_cont(0.99) WITHIN GROUP (ORDER BY to_go_ms)::numeric, 1),
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY to_first_op_ms)::numeric, 1)
FROM sw WHERE to_go_ms IS NOT NULL
UNION ALL
SELECT '', round(max(to_go_ms)::numeric, 1), round(max(to_first_op_ms)::numeric, 1)
FROM sw WHERE to_go_ms IS NOT NULL;
