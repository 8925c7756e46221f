-- Where an experiment's time goes (psql -v code=CODE -f): every event the
-- services published for it (intervals left out), and from each shard's
-- final when its agent took its job (and whether a JVM was ready for it)
-- and its first and last operation, in time order, as milliseconds
-- since the first line and since the line before. The gaps between a
-- phase's last operation and the next line are the time outside the
-- operations that `make bench-phases` sums up as the overhead.
WITH m AS (
  SELECT ts, regexp_replace(subject, '^benchq\.(exp|results)\.[^.]+\.', '') AS what,
         coalesce(payload->>'phase', payload->>'configuration', '') AS phase
  FROM messages WHERE code = :'code' AND subject NOT LIKE '%.interval'
  UNION ALL
  SELECT (payload->>'job_at')::timestamptz,
         'shard ' || (payload->>'shard') || ' job taken by ' || (payload->>'agent')
           || CASE payload->>'driver_standby' WHEN 'true' THEN ' (a JVM kept ready)'
                                             WHEN 'false' THEN ' (a JVM started for it)' ELSE '' END,
         payload->>'phase'
  FROM messages WHERE code = :'code' AND subject LIKE '%.final' AND payload ? 'job_at'
  UNION ALL
  SELECT (payload->>'first_op_at')::timestamptz, 'first operation of shard ' || (payload->>'shard'), payload->>'phase'
  FROM messages WHERE code = :'code' AND subject LIKE '%.final' AND payload ? 'first_op_at'
  UNION ALL
  SELECT (payload->>'last_op_at')::timestamptz, 'last operation of shard ' || (payload->>'shard'), payload->>'phase'
  FROM messages WHERE code = :'code' AND subject LIKE '%.final' AND payload ? 'last_op_at'
)
SELECT round(extract(epoch FROM ts - min(ts) OVER ()) * 1000) AS at_ms,
       round(extract(epoch FROM ts - lag(ts) OVER (ORDER BY ts)) * 1000) AS after_ms,
       what, phase
FROM m ORDER BY ts;
