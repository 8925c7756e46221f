-- benchq results schema, version 3: metric samples pulled from Prometheus
-- (docs/monitoring.md). One row per sample of one series of one component in one
-- phase; the collector stores them through storeMetrics (metrics_store.go),
-- which ingests with COPY and skips samples already stored, so a pull
-- repeated after a crash stores every sample once.
--
-- Two layouts, chosen when this migration runs:
--  * TimescaleDB (compose stack, Kubernetes): a hypertable in daily chunks,
--    compressed after a week (ON CONFLICT on compressed chunks needs
--    TimescaleDB 2.11 or later). UNTESTED HERE: the extension cannot be
--    installed on the development machines; the branch is written to the
--    TimescaleDB 2.x API (create_hypertable, add_compression_policy); the
--    table and index statements are shared with the native layout.
--  * Otherwise: native range partitioning by day plus a BRIN index on time.
--    Daily partitions are created on demand by metrics_ensure_partitions,
--    which the store calls before every batch. There is no default
--    partition: rows only arrive through the store, and a default holding a
--    day's rows would forbid creating that day's partition later.
--
-- labels_hash identifies the series within (metric, component): the jsonb's
-- text form is canonical (keys sorted), so equal label sets hash equally.
-- The unique key includes time, the partitioning column, as PostgreSQL and
-- TimescaleDB require of unique indexes on partitioned tables.

DO $migration$
DECLARE
    -- CREATE EXTENSION timescaledb fails unless the library is preloaded:
    -- an installed but not loaded TimescaleDB gets the native layout.
    timescale boolean := EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'timescaledb')
        AND current_setting('shared_preload_libraries') LIKE '%timescaledb%';
BEGIN
    IF timescale THEN
        CREATE EXTENSION IF NOT EXISTS timescaledb;
    END IF;
    EXECUTE $$CREATE TABLE IF NOT EXISTS metrics (
        time          timestamptz NOT NULL,
        code          text NOT NULL,
        phase         text NOT NULL,
        configuration text NOT NULL,
        component     text NOT NULL,          -- sut | loader | benchmarker | service
        metric        text NOT NULL,          -- the catalog's metric name
        labels        jsonb NOT NULL DEFAULT '{}',
        labels_hash   uuid GENERATED ALWAYS AS (md5(labels::text)::uuid) STORED,
        value         double precision NOT NULL
    )$$ || CASE WHEN timescale THEN '' ELSE ' PARTITION BY RANGE (time)' END;
    CREATE UNIQUE INDEX IF NOT EXISTS metrics_sample
        ON metrics (code, phase, configuration, component, metric, labels_hash, time);
    IF timescale THEN
        EXECUTE $$SELECT create_hypertable('metrics', 'time', chunk_time_interval => interval '1 day', if_not_exists => true)$$;
        EXECUTE $$ALTER TABLE metrics SET (timescaledb.compress,
            timescaledb.compress_segmentby = 'code, phase, configuration, component, metric',
            timescaledb.compress_orderby = 'time')$$;
        EXECUTE $$SELECT add_compression_policy('metrics', interval '7 days', if_not_exists => true)$$;
        -- Chunks are created by TimescaleDB itself.
        CREATE OR REPLACE FUNCTION metrics_ensure_partitions(lo timestamptz, hi timestamptz)
            RETURNS void LANGUAGE sql AS $$ SELECT $$;
    ELSE
        CREATE INDEX IF NOT EXISTS metrics_time_brin ON metrics USING brin (time);
        -- Creates the daily partitions (UTC days) covering [lo, hi] that do
        -- not exist yet; concurrent callers are serialised by a lock held
        -- until their transaction ends.
        CREATE OR REPLACE FUNCTION metrics_ensure_partitions(lo timestamptz, hi timestamptz)
            RETURNS void LANGUAGE plpgsql AS $$
        DECLARE
            day timestamptz := date_trunc('day', lo AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
            name text;
        BEGIN
            PERFORM pg_advisory_xact_lock(7262627);
            WHILE day <= hi LOOP
                name := 'metrics_p' || to_char(day AT TIME ZONE 'UTC', 'YYYYMMDD');
                IF to_regclass(name) IS NULL THEN
                    EXECUTE format('CREATE TABLE %I PARTITION OF metrics FOR VALUES FROM (%L) TO (%L)',
                        name, day, day + interval '1 day');
                END IF;
                day := day + interval '1 day';
            END LOOP;
        END
        $$;
    END IF;
END
$migration$;
