-- benchq results schema, version 11: which definition of each view of
-- internal/resultsdb/views is in place (the SHA-256 of its SQL as
-- resultsdb.Migrate filled it in), so that a migration makes a view again
-- only when its definition changed (CREATE OR REPLACE VIEW locks the view
-- against every reader), and a collector waits until this build's views
-- are there (resultsdb.WaitMigrated).
CREATE TABLE IF NOT EXISTS schema_views (
    name    text PRIMARY KEY,
    sha256  text NOT NULL,
    made_at timestamptz NOT NULL DEFAULT now()
);
