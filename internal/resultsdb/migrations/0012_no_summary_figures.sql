-- benchq results schema, version 12: a shard whose driver printed no
-- summary (stopped, killed, or failed before it) measured no runtime and
-- no rate. The collector stores both as NULL since (its final has no
-- runtime_ms); rows stored before hold 0 for both, which read as a rate of
-- 0: they become NULL too.
UPDATE shard_results SET runtime_ms = NULL, throughput = NULL WHERE runtime_ms = 0;
