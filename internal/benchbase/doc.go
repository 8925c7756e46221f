// Package benchbase speaks Benchbase's TPC-C: its result, read from the files
// a real Benchbase run writes, and the command line and configuration that
// make Benchbase run one shard.
//
// Result is the one result type of the "benchbase" engine, whoever measured
// it: Parse and ReadDir fill it from Benchbase's outputs (summary.json,
// results.csv, samples.csv, results.<Type>.csv, raw.csv and the console
// log), and the embedded engine (internal/tpcc) fills it from its own
// measurements. FillFinal turns either into a contracts.Final.
//
// The parsers are pure functions over readers; ReadDir is the only one that
// opens files. The fixtures under testdata/ are a real Benchbase run (TPC-C,
// PostgreSQL 15, 2 warehouses, 8 terminals, 60 s).
//
// Benchbase's definitions, which Result keeps:
//   - Throughput (requests/second) = measured requests / measured window,
//     whatever their outcome; Goodput = successful requests / the same
//     window. Benchbase counts successes over its whole run (the second it
//     spends before measuring included), so its Goodput can exceed the
//     success share of the measured requests by a few per mille.
//   - A request is one execution of a transaction type, retries included;
//     the outcome counters of the console log (Completed, Aborted, Rejected
//     …) count events, so "Rejected (Server Retry)" can exceed the requests
//     of a type.
//   - Latencies are microseconds from the start of a request to its end.
package benchbase
