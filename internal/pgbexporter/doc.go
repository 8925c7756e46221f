// Package pgbexporter exports PgBouncer's statistics to Prometheus, read from
// its admin console (SHOW STATS, SHOW POOLS). Debian's
// prometheus-pgbouncer-exporter 1.7 fails on pgbouncer 1.18's SHOW STATS, and
// the community exporter is not packaged: this is the small one benchq needs.
//
// The admin console speaks only the simple query protocol, so every
// connection is made with default_query_exec_mode=simple_protocol.
package pgbexporter
