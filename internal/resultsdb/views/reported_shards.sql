-- benchq results schema: a view made again from this file by
-- resultsdb.Migrate whenever its definition differs from the one in place
-- (see phase_figures.sql). Migration 0005 first made it, with each shard's
-- own attempt; phase_figures reads it, so its columns stay shard_results'
-- in their order (CREATE OR REPLACE VIEW only adds columns at the end).
--
-- The shards of each phase's reported attempt: the phase's highest attempt
-- whose shards all finished ok, else its highest (the reporter's
-- summary/attempts.py, the same rule). An attempt's shards are reported
-- together, never mixed with another attempt's: a re-run phase whose
-- second attempt failed a shard the first had finished is reported from
-- the second attempt, as a failure.
CREATE OR REPLACE VIEW reported_shards AS
WITH attempts AS (
    SELECT code, phase, attempt, bool_and(status = 'ok') AS whole
    FROM shard_results
    GROUP BY code, phase, attempt
), chosen AS (
    SELECT DISTINCT ON (code, phase) code, phase, attempt
    FROM attempts
    ORDER BY code, phase, whole DESC, attempt DESC
)
SELECT s.*
FROM shard_results s
JOIN chosen c ON c.code = s.code AND c.phase = s.phase AND c.attempt = s.attempt;
