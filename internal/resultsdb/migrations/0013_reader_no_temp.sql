-- benchq results schema, version 13: the readers make no temporary tables.
-- PostgreSQL grants TEMPORARY on every database to PUBLIC. The readers'
-- transactions are read-only by default only (0007): a reader may turn
-- that off for its session, and temporary tables were then what it could
-- write, as much as the disk holds. The readers need none; the collector
-- keeps them (its samples go through one, metrics_store.go).
DO $$
BEGIN
    EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC', current_database());
    EXECUTE format('GRANT TEMPORARY ON DATABASE %I TO benchq_collector', current_database());
END
$$;
