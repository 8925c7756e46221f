-- benchq results schema, version 5: views that read the raw results the way
-- the summary does. Grafana's panels (grafana/dashboards) and a
-- user at psql query these instead of repeating the rules; the reporter's
-- tests check that they give the summary's figures.

-- The one reported attempt of each shard of a phase: its highest successful
-- attempt, else its highest. views/reported_shards.sql has replaced it
-- (one attempt per phase, never a mix of two).
CREATE OR REPLACE VIEW reported_shards AS
SELECT DISTINCT ON (code, phase, shard) *
FROM shard_results
ORDER BY code, phase, shard, (status = 'ok') DESC, attempt DESC;

-- phase_figures, first made here, is now made from
-- internal/resultsdb/views/phase_figures.sql (resultsdb.Migrate).
