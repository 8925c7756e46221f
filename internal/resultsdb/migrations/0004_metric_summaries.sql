-- benchq results schema, version 4: one figure per metric, component and
-- phase attempt, reduced by the collector (pull.go) from the samples it
-- stored in metrics. The reporter's Monitoring and Application Metrics
-- sections read this table.
--
-- value is NULL exactly when the metric could not be had, and missing then
-- says why (Prometheus unreachable, no samples, ...): a figure that was not
-- collected is never stored as 0. A phase has rows here once it has been
-- pulled; all rows of a phase are written in one transaction.
CREATE TABLE IF NOT EXISTS metric_summaries (
    code          text NOT NULL,
    configuration text NOT NULL,
    phase         text NOT NULL,
    attempt       int NOT NULL,
    kind          text NOT NULL,                 -- load | run
    component     text NOT NULL,                 -- sut | pool | loader | benchmarker
    section       text NOT NULL,                 -- system | application
    position      int NOT NULL,                  -- column order within its set
    metric        text NOT NULL,                 -- the set's key
    title         text NOT NULL,
    value         double precision,
    missing       text,
    samples       int NOT NULL DEFAULT 0,
    window_start  timestamptz NOT NULL,
    window_end    timestamptz NOT NULL,
    PRIMARY KEY (code, phase, attempt, component, metric),
    CHECK ((value IS NULL) = (missing IS NOT NULL))
);
