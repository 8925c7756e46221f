// Package catalog is the per-DBMS catalog: the data files beside this code
// (one JSON file per DBMS, and the metric sets in metrics/), embedded into
// the binaries, and the API that parses, validates and serves them: what
// each DBMS is called, how the local and Kubernetes backends start and
// probe it, and how YCSB reaches it.
package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
)

// ErrUnknownDBMS is wrapped by Lookup for a name that is not in the catalog.
var ErrUnknownDBMS = errors.New("unknown DBMS")

// Kinds: what the DBMS is, which decides how it is started and probed. The
// local backend starts the kinds in LocalKinds; every kind runs on the
// kubernetes backend (see Entry.Kubernetes).
const (
	KindRedis            = "redis"
	KindPostgreSQL       = "postgresql"
	KindPgBouncer        = "pgbouncer" // a connection pool in front of PostgreSQL
	KindRedisCluster     = "redis-cluster"
	KindDragonfly        = "dragonfly"
	KindDragonflyCluster = "dragonfly-cluster"
	KindVictoriaMetrics  = "victoriametrics" // a time-series database (benchmark tsdb)
	KindPrometheus       = "prometheus"      // its remote-write receiver as a time-series database (benchmark tsdb)
	KindGraphite         = "graphite"        // carbon-cache with whisper, a carbon-relay in front with -nw (benchmark tsdb)
)

var kinds = []string{KindRedis, KindPostgreSQL, KindPgBouncer, KindRedisCluster, KindDragonfly, KindDragonflyCluster, KindVictoriaMetrics, KindPrometheus, KindGraphite}

// LocalKinds are the kinds the local backend can start, from the Debian
// packages (redis-server, postgresql, pgbouncer, prometheus) and what the
// bootstrap builds or installs (victoria-metrics from its Go module, carbon
// from PyPI). Dragonfly has no Debian package and no build on the
// registries these machines reach: Kubernetes only.
var LocalKinds = []string{KindRedis, KindPostgreSQL, KindRedisCluster, KindPgBouncer, KindVictoriaMetrics, KindPrometheus, KindGraphite}

// RunsLocally reports whether the local backend can start this DBMS.
func (e Entry) RunsLocally() bool { return slices.Contains(LocalKinds, e.Kind) }

// NotLocally says why the local backend cannot start this DBMS, and what
// to do ("" when it can): the dry run's note and the deployer's error both
// begin with it.
func (e Entry) NotLocally() string {
	if e.RunsLocally() {
		return ""
	}
	return "DBMS " + e.Name + " needs the kubernetes backend (BENCHQ_BACKEND=kubernetes)"
}

// Probes: how readiness is checked.
const (
	ProbeRedisPing  = "redis-ping"
	ProbeSQLSelect1 = "sql-select-1"
	ProbeHTTPHealth = "http-health" // GET /health on the client port answers 200
	ProbeTCP        = "tcp-connect" // the client port takes a connection
)

// Entry is one DBMS of the catalog.
type Entry struct {
	Name        string `json:"name"` // canonical, as users type it: "PostgreSQL"
	Description string `json:"description"`
	Kind        string `json:"kind"`
	// Ports by role; "client" is the port clients connect to inside the
	// image. The local backend picks free ports instead.
	Ports          map[string]int `json:"ports"`
	Probe          string         `json:"probe"`
	VersionCommand []string       `json:"version_command"`
	Image          string         `json:"image"`
	// User is the database user clients connect as ("" for none).
	User string `json:"user,omitempty"`
	// Database is created by the deployer and used by the drivers ("" when
	// the DBMS has no databases to speak of).
	Database string `json:"database,omitempty"`
	// Settings are server settings (postgres -c name=value, redis
	// directives), applied by both backends.
	Settings map[string]string `json:"settings,omitempty"`
	// VolumeSettings are added to Settings when the SUT keeps its data on a
	// persistent volume (-rst), e.g. Redis's AOF: a server whose data lives
	// only in memory would leave the volume empty.
	VolumeSettings map[string]string `json:"volume_settings,omitempty"`
	// VolumeNotReused says why the DBMS's volume (-rst) keeps no data for
	// the configurations after it ("" when it does): each loads again, and
	// the volume is never marked loaded (Dragonfly runs with its snapshots
	// off, so its volume stays empty).
	VolumeNotReused string `json:"volume_not_reused,omitempty"`
	// JDBCURL is a template with the placeholders of YCSBProperties.
	JDBCURL string `json:"jdbc_url,omitempty"`
	YCSB    YCSB   `json:"ycsb"`
	// Kubernetes is how the kubernetes backend runs it.
	Kubernetes *Kubernetes `json:"kubernetes"`
	// ClusterVariant is the catalog DBMS deployed instead when a request
	// asks for workers (-nw > 0), as bexhoma does: `-dbms Redis -nw 3` is a
	// Redis Cluster of 3 masters, its configurations still named Redis-….
	ClusterVariant string `json:"cluster_variant,omitempty"`
	// ConfigPrefix starts the names of its configurations instead of the
	// DBMS's name, as bexhoma's: pgb-64-4-128-64 for PgBouncer.
	ConfigPrefix string `json:"config_prefix,omitempty"`
	// TSDB says how the metrics workload (benchmark tsdb) reaches a
	// time-series database; nil for the others.
	TSDB *TSDB `json:"tsdb,omitempty"`
	// Workers are the limits of -nw for a DBMS that is one server without
	// them and a cluster with them (Graphite: carbon-caches behind a
	// carbon-relay); its kubernetes topology is single, and its
	// kubernetes.cluster the shape of the cluster there (without one, the
	// Kubernetes backend refuses -nw for it). A DBMS that is always a
	// cluster has its limits in kubernetes.cluster.
	Workers *Workers `json:"workers,omitempty"`
}

// Workers are the limits of -nw: the fewest workers, and how many run
// when the request names none (0: the DBMS runs as a single server).
type Workers struct {
	Min     int `json:"min"`
	Default int `json:"default"`
}

// TSDB is how the metrics generators write to a time-series database and
// how benchq reads back what it stored (docs/tsdb.md).
type TSDB struct {
	// CarbonPort names the port role of its carbon plaintext listener
	// (contracts.Endpoint.Ports); "" when it has none.
	CarbonPort string `json:"carbon_port,omitempty"`
	// RemoteWritePath is its Prometheus remote-write receiver on the
	// client port; "" when it has none.
	RemoteWritePath string `json:"remote_write_path,omitempty"`
	// QueryPath is its range query on the client port, or on the port
	// QueryPort names: the probe's per-second read under load; "" when it
	// has no query API benchq speaks (its queries are then missing).
	QueryPath string `json:"query_path,omitempty"`
	// QueryAPI is QueryPath's language: QueryPrometheus (the default) or
	// QueryGraphite.
	QueryAPI string `json:"query_api,omitempty"`
	// QueryPort names the port role (contracts.Endpoint.Ports) serving
	// QueryPath when the client port does not: graphite-web's.
	QueryPort string `json:"query_port,omitempty"`
	// Ingested is its own counter of the points it stored, per protocol,
	// on the /metrics of the client port, or of the endpoint's port
	// MetricsPort names.
	Ingested map[string]Counter `json:"ingested"`
	// MetricsPort names the port role (contracts.Endpoint.Ports) serving
	// the counters when the client port does not: Graphite's are read
	// from its whisper files by the local deployer, or in its pod by
	// cmd/graphite-pod, which serve them.
	MetricsPort string `json:"metrics_port,omitempty"`
	// DrainQuietS is how long, in seconds, the counter must stay still
	// after the generators stop before the backlog counts as stored
	// (default 2, two of the embedded stack's scrapes): Graphite records
	// its counts once a second, two seconds behind.
	DrainQuietS int `json:"drain_quiet_s,omitempty"`
}

// The query APIs of TSDB.QueryAPI.
const (
	// QueryPrometheus is a Prometheus range query: query, start, end and
	// step; the answer's data.result[].values.
	QueryPrometheus = "prometheus"
	// QueryGraphite is graphite-web's /render: target, from, until and
	// format=json; the answer's [].datapoints that are not null.
	QueryGraphite = "graphite"
)

// Counter is one counter of a /metrics page: the samples of Series whose
// labels equal Matchers, summed.
type Counter struct {
	Series   string            `json:"series"`
	Matchers map[string]string `json:"matchers,omitempty"`
}

// Set is the counter as a metric set of one metric, key, for
// prom.ReadSet.
func (c Counter) Set(key string) MetricSet {
	return MetricSet{Name: key, Metrics: []Metric{{Key: key, Title: key, Aggregate: AggregateSum, Series: c.Series, Matchers: c.Matchers, Reduction: ReduceLast, Scale: 1}}}
}

// String is the counter as PromQL's selector.
func (c Counter) String() string { return Metric{Series: c.Series, Matchers: c.Matchers}.selector() }

// Protocols are the metrics protocols the database ingests, in the
// contracts' names (ProtocolCarbon, ProtocolRemoteWrite).
func (t TSDB) Protocols() []string {
	var out []string
	if t.CarbonPort != "" {
		out = append(out, "carbon")
	}
	if t.RemoteWritePath != "" {
		out = append(out, "remote-write")
	}
	return out
}

// IsTSDB reports whether the entry is a time-series database (benchmark
// tsdb), not a store YCSB or Benchbase drive.
func (e Entry) IsTSDB() bool { return e.TSDB != nil }

// DataOwner is the DBMS whose data a volume of e holds (-rst): a pool's
// backend (PgBouncer's data is PostgreSQL's: the backend's pod mounts it),
// else e. So a PgBouncer experiment and a PostgreSQL one share the volume,
// as bexhoma's "Every PGBouncer experiment (and every PostgreSQL
// experiment) will take the database from this volume".
func (e Entry) DataOwner() Entry {
	if e.Kubernetes == nil || e.Kubernetes.Pool == nil {
		return e
	}
	if b, err := Lookup(e.Kubernetes.Pool.Backend); err == nil {
		return b
	}
	return e
}

// Clustered reports whether the DBMS is itself a cluster of -nw workers.
func (e Entry) Clustered() bool {
	return (e.Kubernetes != nil && e.Kubernetes.Cluster != nil) || e.Workers != nil
}

// WorkerLimits are the fewest -nw workers of a Clustered entry, and how
// many it runs when none are asked for.
func (e Entry) WorkerLimits() (least, dflt int) {
	if w := e.Workers; w != nil {
		return w.Min, w.Default
	}
	return e.Kubernetes.Cluster.MinMasters, e.Kubernetes.Cluster.DefaultWorkers
}

// Masters is the number of masters (servers holding data) a cluster runs
// with -nw workers: the catalog's default when none is asked for, and at
// least one. Only for a Clustered entry.
func (e Entry) Masters(workers int) int {
	if workers > 0 {
		return workers
	}
	_, dflt := e.WorkerLimits()
	return max(dflt, 1)
}

// Shape is how many masters a cluster runs for -nw workers and -nwr
// replicas, and how many replicas each: Masters(workers) and replicas,
// or, for master-copy replication with replicas asked for, one master and
// the other workers as its replicas (bexhoma's Dragonfly: -nw 3 -nwr 1 is
// 3 servers, not 6). Only for a Clustered entry.
func (e Entry) Shape(workers, replicas int) (masters, replicasEach int) {
	masters = e.Masters(workers)
	if replicas > 0 && e.MasterCopy() {
		return 1, masters - 1
	}
	return masters, replicas
}

// MasterCopy reports whether the cluster replicates master-copy (see
// Cluster.Replication).
func (e Entry) MasterCopy() bool {
	k := e.Kubernetes
	return k != nil && k.Cluster != nil && k.Cluster.Replication == ReplicationMasterCopy
}

// MetricSet names the DBMS's application metric set (-ma).
func (e Entry) MetricSet() string {
	if e.Kubernetes == nil {
		return ""
	}
	return e.Kubernetes.Metrics
}

// ForWorkers is the catalog DBMS that runs this one with workers (-nw):
// the entry itself when it is a cluster or workers is 0, its cluster
// variant otherwise; an error names the minimum of workers, or says that
// the DBMS has no cluster.
func (e Entry) ForWorkers(workers int) (Entry, error) {
	if workers == 0 {
		return e, nil
	}
	c := e
	if !e.Clustered() {
		if e.ClusterVariant == "" {
			var clustered []string
			for _, n := range Names() {
				if o, err := Lookup(n); err == nil && (o.Clustered() || o.ClusterVariant != "") {
					clustered = append(clustered, n)
				}
			}
			return Entry{}, fmt.Errorf("%s has no cluster in benchq's catalog; workers (-nw) apply to %s", e.Name, strings.Join(clustered, ", "))
		}
		var err error
		if c, err = Lookup(e.ClusterVariant); err != nil {
			return Entry{}, err
		}
	}
	if m, _ := c.WorkerLimits(); workers < m {
		return Entry{}, fmt.Errorf("%s needs at least %d workers (-nw), got %d", c.Name, m, workers)
	}
	return c, nil
}

// YCSB says how the YCSB driver talks to the DBMS.
type YCSB struct {
	DB string `json:"db"` // the site.ycsb.DB class
	// Properties are templates for every phase; LoadProperties are added
	// (and win) for loading phases.
	Properties     map[string]string `json:"properties"`
	LoadProperties map[string]string `json:"load_properties,omitempty"`
	// Schema statements are run by the deployer before loading.
	Schema []string `json:"schema,omitempty"`
}

type loaded struct {
	byKey map[string]Entry // lower-cased name
	names []string
}

var load = sync.OnceValues(func() (loaded, error) { return parse(Files) })

// Lookup finds a DBMS by name, case-insensitively.
func Lookup(name string) (Entry, error) {
	c, err := load()
	if err != nil {
		return Entry{}, err
	}
	e, ok := c.byKey[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return Entry{}, fmt.Errorf("%w %q; known: %s", ErrUnknownDBMS, name, strings.Join(c.names, ", "))
	}
	return e, nil
}

// Names returns the canonical names of the catalog, sorted. It is empty if
// the catalog does not parse (Lookup returns that error).
func Names() []string {
	c, _ := load()
	return append([]string(nil), c.names...)
}

// parse reads and validates every *.json file at the root of fsys.
func parse(fsys fs.FS) (loaded, error) {
	paths, err := fs.Glob(fsys, "*.json")
	if err != nil {
		return loaded{}, fmt.Errorf("catalog: %w", err)
	}
	c := loaded{byKey: map[string]Entry{}}
	for _, p := range paths {
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return loaded{}, fmt.Errorf("catalog: %w", err)
		}
		e, err := parseEntry(b)
		if err != nil {
			return loaded{}, fmt.Errorf("catalog %s: %w", p, err)
		}
		key := strings.ToLower(e.Name)
		if want := key + ".json"; path.Base(p) != want {
			return loaded{}, fmt.Errorf("catalog %s: holds %q, so it must be named %s", p, e.Name, want)
		}
		c.byKey[key] = e
		c.names = append(c.names, e.Name)
	}
	if len(c.names) == 0 {
		return loaded{}, errors.New("catalog: no *.json files")
	}
	for _, e := range c.byKey {
		if v := e.ClusterVariant; v != "" {
			if o, ok := c.byKey[strings.ToLower(v)]; !ok || !o.Clustered() || e.Clustered() {
				return loaded{}, fmt.Errorf("catalog %s: cluster_variant %q must be a clustered catalog DBMS (kubernetes.cluster), of a DBMS that is not one", strings.ToLower(e.Name)+".json", v)
			}
		}
		if e.Kubernetes == nil {
			continue
		}
		if p := e.Kubernetes.Pool; p != nil {
			b, ok := c.byKey[strings.ToLower(p.Backend)]
			if !ok || b.Kubernetes.Topology == TopologyPool {
				return loaded{}, fmt.Errorf("catalog %s: kubernetes.pool.backend %q must be a catalog DBMS that is not itself a pool", strings.ToLower(e.Name)+".json", p.Backend)
			}
		}
	}
	sort.Strings(c.names)
	return c, nil
}

func parseEntry(b []byte) (Entry, error) {
	var e Entry
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields() // a misspelt key must not silently become a default
	if err := dec.Decode(&e); err != nil {
		return Entry{}, err
	}
	return e, e.validate()
}

func (e Entry) validate() error {
	var errs []error
	need := func(ok bool, field, what string) {
		if !ok {
			errs = append(errs, fmt.Errorf("%s: %s", field, what))
		}
	}
	need(e.Name != "" && !strings.ContainsAny(e.Name, " /"), "name", "required, without spaces or slashes")
	need(e.Description != "", "description", "required")
	need(slices.Contains(kinds, e.Kind), "kind", "must be one of "+strings.Join(kinds, ", "))
	need(e.Ports["client"] > 0 && e.Ports["client"] < 65536, "ports.client", "required, 1-65535")
	need(slices.Contains([]string{ProbeRedisPing, ProbeSQLSelect1, ProbeHTTPHealth, ProbeTCP}, e.Probe), "probe", `must be "redis-ping", "sql-select-1", "http-health" or "tcp-connect"`)
	need(len(e.VersionCommand) > 0 && e.VersionCommand[0] != "", "version_command", "required")
	need(e.Image != "" || e.Kubernetes == nil, "image", "required (the kubernetes backend's)")
	if t := e.TSDB; t != nil {
		need(len(t.Protocols()) > 0, "tsdb", "carbon_port or remote_write_path required (the protocols it ingests)")
		for _, r := range [][2]string{{"carbon_port", t.CarbonPort}, {"query_port", t.QueryPort}, {"metrics_port", t.MetricsPort}} {
			need(r[1] == "" || e.Kubernetes == nil || e.KubePort(r[1]) > 0, "tsdb."+r[0], "must name client, metrics (kubernetes.metrics_port) or one of kubernetes.ports")
		}
		need(t.QueryPath == "" || strings.HasPrefix(t.QueryPath, "/"), "tsdb.query_path", "a path")
		need(slices.Contains([]string{"", QueryPrometheus, QueryGraphite}, t.QueryAPI), "tsdb.query_api", `"prometheus" (the default) or "graphite"`)
		need((t.QueryAPI == "" && t.QueryPort == "") || t.QueryPath != "", "tsdb.query_api", "and tsdb.query_port need tsdb.query_path")
		need(t.DrainQuietS >= 0, "tsdb.drain_quiet_s", "not negative")
		for _, p := range t.Protocols() {
			need(t.Ingested[p].Series != "", "tsdb.ingested."+p, "required: its own counter of the points it stored over "+p)
		}
		need(e.YCSB.DB == "", "ycsb", "a time-series database is driven by benchq tsdb, not YCSB")
	} else {
		need(e.YCSB.DB != "", "ycsb.db", "required (the site.ycsb.DB class)")
		need(len(e.YCSB.Properties) > 0, "ycsb.properties", "required")
	}
	if e.Kind == KindPostgreSQL {
		need(e.JDBCURL != "", "jdbc_url", "required for postgresql")
		need(e.Database != "", "database", "required for postgresql")
		need(len(e.YCSB.Schema) > 0, "ycsb.schema", "required for postgresql")
	}
	if e.Kind == KindPgBouncer {
		need(e.JDBCURL != "", "jdbc_url", "required for pgbouncer")
		need(e.Database != "", "database", "required for pgbouncer")
	}
	need(e.Kubernetes != nil, "kubernetes", "required (how the kubernetes backend runs it)")
	if e.Kubernetes != nil {
		need(e.Workers == nil || e.Kubernetes.Topology == TopologySingle, "workers", "only with kubernetes topology single (its kubernetes.cluster, if any, is the cluster -nw runs as there); a DBMS that is always a cluster has them in kubernetes.cluster")
		if err := e.Kubernetes.validate(e); err != nil {
			errs = append(errs, err)
		}
	}
	if w := e.Workers; w != nil {
		need(w.Min >= 1 && w.Default >= 0 && (w.Default == 0 || w.Default >= w.Min), "workers", "min at least 1; default 0 (a single server) or at least min")
	}
	return errors.Join(errs...)
}
