// Package catalog holds the per-DBMS catalog data files, one JSON file per
// DBMS, embedded into the binaries. This package only carries the files:
// //go:embed cannot reach outside its package directory, and the data lives
// here, at the top of the repository, where people (and the Python reporter)
// find and edit it. The Go API that parses and validates it is
// internal/catalog.
package catalog

import "embed"

// Files holds every *.json catalog file at the root of the FS.
//
//go:embed *.json
var Files embed.FS

// MetricFiles holds the metric sets, metrics/<name>.json: the system set
// and each DBMS's application set (internal/catalog.MetricSetByName).
//
//go:embed metrics/*.json
var MetricFiles embed.FS
