package catalog

import "embed"

// Files holds every *.json catalog file, one per DBMS, at the root of the
// FS. The data lives beside this code, at the top of the repository, where
// people and the Python reporter find and edit it.
//
//go:embed *.json
var Files embed.FS

// MetricFiles holds the metric sets, metrics/<name>.json: the system set
// and each DBMS's application set (MetricSetByName).
//
//go:embed metrics/*.json
var MetricFiles embed.FS
