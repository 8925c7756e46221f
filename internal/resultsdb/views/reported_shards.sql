-- benchq results schema: a view made again from this file by
-- resultsdb.Migrate whenever its definition differs from the one in place
-- (see phase_figures.sql). Migration 0005 first made it, with each shard's
-- own attempt; phase_figures reads it, so its columns stay shard_results'
-- in their order (CREATE OR REPLACE VIEW only adds columns at the end).
--
-- The shards of each phase's reported attempt: the phase's highest whole
-- attempt — every shard it was to run (phases.shards of that attempt, else
-- the most shards any attempt of the phase has rows for) finished ok — else
-- its highest (the reporter's summary/attempts.py, the same rule). A shard
-- lost with its agent leaves no row, so a whole attempt has all its
-- shards' rows. An attempt's shards are reported together, never mixed
-- with another attempt's: a re-run phase whose second attempt failed a
-- shard the first had finished is reported from the second, as a failure.
CREATE OR REPLACE VIEW reported_shards AS
WITH attempts AS (
    SELECT code, phase, attempt, bool_and(status = 'ok') AS all_ok, count(*) AS n
    FROM shard_results
    GROUP BY code, phase, attempt
), judged AS (
    SELECT a.code, a.phase, a.attempt,
           a.all_ok AND a.n >= COALESCE(NULLIF(p.shards, 0), max(a.n) OVER (PARTITION BY a.code, a.phase)) AS whole
    FROM attempts a
    LEFT JOIN phases p ON p.code = a.code AND p.phase = a.phase AND p.attempt = a.attempt
), chosen AS (
    SELECT DISTINCT ON (code, phase) code, phase, attempt
    FROM judged
    ORDER BY code, phase, whole DESC, attempt DESC
)
SELECT s.*
FROM shard_results s
JOIN chosen c ON c.code = s.code AND c.phase = s.phase AND c.attempt = s.attempt;
