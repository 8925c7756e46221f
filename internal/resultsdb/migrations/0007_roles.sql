-- benchq results schema, version 7: the roles the stack's processes log in
-- as (internal/resultsdb, docs/security.md). The owner that runs these
-- migrations keeps everything else: creating and changing tables, roles,
-- and the server-side functions that reach files and programs.
--
--   benchq_collector  reads and writes benchq's tables (the collector)
--   benchq_reader     reads them and the views (the reporter, the CLI,
--                     Grafana); every transaction read-only
--
-- Neither is a superuser or a member of pg_read_server_files,
-- pg_write_server_files or pg_execute_server_program, so neither may run
-- COPY ... TO/FROM PROGRAM or read the server's files. Both are made
-- without a login; whoever sets up a stack gives each its password
-- (resultsdb.SetPassword), which turns the login on.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'benchq_collector') THEN
        CREATE ROLE benchq_collector NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'benchq_reader') THEN
        CREATE ROLE benchq_reader NOLOGIN;
    END IF;
END
$$;

ALTER ROLE benchq_reader SET default_transaction_read_only = on;

REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO benchq_collector, benchq_reader;

GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO benchq_collector;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO benchq_collector;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO benchq_reader;

-- Tables and views of later migrations (made by the same owner) too.
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO benchq_collector;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO benchq_collector;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO benchq_reader;

-- The collector makes the metrics table's daily partitions (0003) through
-- this function, which runs as the owner: the partitions are the owner's,
-- and the collector needs no CREATE on the schema nor the parent table.
-- Its search_path is fixed, as for any SECURITY DEFINER function.
ALTER FUNCTION metrics_ensure_partitions(timestamptz, timestamptz) SECURITY DEFINER SET search_path = public, pg_temp;
REVOKE EXECUTE ON FUNCTION metrics_ensure_partitions(timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION metrics_ensure_partitions(timestamptz, timestamptz) TO benchq_collector;
