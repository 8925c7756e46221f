// Package prom runs and reads the embedded stack's Prometheus: it writes its
// configuration and the file_sd target files that say what to scrape while
// a SUT or driver lives (config.go, targets.go), starts and stops Debian's
// prometheus binary (server.go), and pulls time series back out with
// query_range in chunks under Prometheus' points-per-series limit
// (query.go).
package prom
