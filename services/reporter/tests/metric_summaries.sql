-- The metric_summaries table as MONSPEC declares it, for a test database whose
-- migrations predate 0004 (written at the same time on another branch). Once
-- services/collector/migrations/0004_metric_summaries.sql is merged it runs
-- first and this is a no-op (IF NOT EXISTS): the reporter reads the real table.
CREATE TABLE IF NOT EXISTS metric_summaries (
    code          text NOT NULL,
    configuration text NOT NULL,
    phase         text NOT NULL,
    attempt       int NOT NULL,
    kind          text NOT NULL,
    component     text NOT NULL,
    section       text NOT NULL,
    position      int NOT NULL,
    metric        text NOT NULL,
    title         text NOT NULL,
    value         double precision,
    missing       text,
    samples       int NOT NULL DEFAULT 0,
    window_start  timestamptz NOT NULL,
    window_end    timestamptz NOT NULL,
    PRIMARY KEY (code, phase, attempt, component, metric),
    CHECK ((value IS NULL) = (missing IS NOT NULL))
);
