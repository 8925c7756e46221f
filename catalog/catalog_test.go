package catalog

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/benchq/benchq/contracts"
)

func TestEveryCatalogFileParses(t *testing.T) {
	paths, err := fs.Glob(Files, "*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("catalog files: %v %v", paths, err)
	}
	for _, p := range paths {
		b, err := fs.ReadFile(Files, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parseEntry(b); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := load(); err != nil {
		t.Fatal(err)
	}
}

func TestNames(t *testing.T) {
	if got, want := Names(), []string{"Dragonfly", "DragonflyCluster", "Graphite", "PgBouncer", "PostgreSQL", "Prometheus", "Redis", "RedisCluster", "VictoriaMetrics"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
}

func TestLookup(t *testing.T) {
	for _, name := range []string{"Redis", "redis", "REDIS", " Redis "} {
		e, err := Lookup(name)
		if err != nil || e.Name != "Redis" || e.Kind != KindRedis {
			t.Errorf("Lookup(%q) = %q/%q, %v", name, e.Name, e.Kind, err)
		}
	}
	e, err := Lookup("postgresql")
	if err != nil || e.Name != "PostgreSQL" || e.Kind != KindPostgreSQL || e.Probe != ProbeSQLSelect1 {
		t.Errorf("Lookup(postgresql) = %+v, %v", e, err)
	}
}

func TestLookupUnknown(t *testing.T) {
	_, err := Lookup("MySQL")
	if !errors.Is(err, ErrUnknownDBMS) {
		t.Fatalf("err = %v, want ErrUnknownDBMS", err)
	}
	if want := `unknown DBMS "MySQL"; known: Dragonfly, DragonflyCluster, Graphite, PgBouncer, PostgreSQL, Prometheus, Redis, RedisCluster, VictoriaMetrics`; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}

func TestYCSBProperties(t *testing.T) {
	redis, _ := Lookup("Redis")
	pg, _ := Lookup("PostgreSQL")
	pgEP := pg.Endpoint("127.0.0.1", 5433)
	if want := "jdbc:postgresql://127.0.0.1:5433/ycsb?reWriteBatchedInserts=true"; pgEP.JDBCURL != want {
		t.Errorf("JDBC URL = %q, want %q", pgEP.JDBCURL, want)
	}
	for _, tc := range []struct {
		name string
		e    Entry
		ep   contracts.Endpoint
		kind string
		want map[string]string
	}{
		{"redis run", redis, contracts.Endpoint{Host: "10.0.0.7", Port: 6380}, contracts.KindRun, map[string]string{"redis.host": "10.0.0.7", "redis.port": "6380"}},
		{"redis password", redis, contracts.Endpoint{Host: "h", Port: 1, Password: "s3cret"}, contracts.KindLoad, map[string]string{"redis.host": "h", "redis.port": "1", "redis.password": "s3cret"}},
		{"postgresql run", pg, pgEP, contracts.KindRun, map[string]string{
			"db.url":  "jdbc:postgresql://127.0.0.1:5433/ycsb?reWriteBatchedInserts=true",
			"db.user": "postgres",
		}},
		{"postgresql load batches", pg, pgEP, contracts.KindLoad, map[string]string{
			"db.url":          "jdbc:postgresql://127.0.0.1:5433/ycsb?reWriteBatchedInserts=true",
			"db.user":         "postgres",
			"db.batchsize":    "1000",
			"jdbc.autocommit": "false",
		}},
		{"postgresql endpoint without url", pg, contracts.Endpoint{Host: "pg", Port: 6432, Database: "other", User: "bench", Password: "pw"}, contracts.KindRun, map[string]string{
			"db.url":    "jdbc:postgresql://pg:6432/other?reWriteBatchedInserts=true",
			"db.user":   "bench",
			"db.passwd": "pw",
		}},
		{"explicit jdbc url wins", pg, contracts.Endpoint{Host: "pg", Port: 6432, JDBCURL: "jdbc:postgresql://pg:6432/ycsb?prepareThreshold=0"}, contracts.KindRun, map[string]string{
			"db.url":  "jdbc:postgresql://pg:6432/ycsb?prepareThreshold=0",
			"db.user": "postgres",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.e.YCSBProperties(tc.ep, tc.kind); !maps.Equal(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestSchema(t *testing.T) {
	pg, _ := Lookup("PostgreSQL")
	if s := pg.Schema("ycsb"); len(s) != 1 || !strings.Contains(s[0], "usertable") || !strings.Contains(s[0], "FIELD9 TEXT") {
		t.Errorf("Schema(ycsb) = %v", s)
	}
	if s := pg.Schema("benchbase"); s != nil {
		t.Errorf("Schema(benchbase) = %v, want none", s)
	}
}

func TestParseRejects(t *testing.T) {
	good := `{"name":"Foo","description":"d","kind":"redis","ports":{"client":1},"probe":"redis-ping",` +
		`"version_command":["foo","--version"],"image":"foo:1","ycsb":{"db":"X","properties":{"a":"b"}},` +
		`"kubernetes":{"topology":"single","readiness":{"tcp_port":"client"},"data_path":"/data","metrics":"foo"}}`
	if _, err := parse(fstest.MapFS{"foo.json": {Data: []byte(good)}}); err != nil {
		t.Fatalf("good entry: %v", err)
	}
	pool := `{"name":"Pool","description":"d","kind":"pgbouncer","ports":{"client":1},"probe":"sql-select-1",` +
		`"version_command":["p","--version"],"image":"p:1","database":"d","jdbc_url":"jdbc:x","ycsb":{"db":"X","properties":{"a":"b"}},` +
		`"kubernetes":{"topology":"pool","readiness":{"tcp_port":"client"},"metrics":"p","pool":{"backend":"Foo","pods":1,"inbound":2,"outbound":1}}}`
	if _, err := parse(fstest.MapFS{"foo.json": {Data: []byte(good)}, "pool.json": {Data: []byte(pool)}}); err != nil {
		t.Fatalf("good pool: %v", err)
	}
	for name, tc := range map[string]struct{ file, data, want string }{
		"missing fields":           {"foo.json", `{"name":"Foo"}`, "kind: must be"},
		"unknown key":              {"foo.json", strings.Replace(good, `"image"`, `"imag"`, 1), `unknown field "imag"`},
		"wrong filename":           {"bar.json", good, "must be named foo.json"},
		"pg needs jdbc":            {"foo.json", strings.Replace(good, `"kind":"redis"`, `"kind":"postgresql"`, 1), "jdbc_url: required"},
		"bad json":                 {"foo.json", `{`, "foo.json"},
		"unknown kind":             {"foo.json", strings.Replace(good, `"kind":"redis"`, `"kind":"mysql"`, 1), "kind: must be one of redis, postgresql"},
		"no kubernetes":            {"foo.json", strings.Replace(good, `,"kubernetes":{"topology":"single","readiness":{"tcp_port":"client"},"data_path":"/data","metrics":"foo"}`, "", 1), "kubernetes: required"},
		"bad topology":             {"foo.json", strings.Replace(good, `"single"`, `"mesh"`, 1), `kubernetes.topology: must be "single", "cluster" or "pool"`},
		"two probes":               {"foo.json", strings.Replace(good, `"readiness":{`, `"readiness":{"exec":["true"],`, 1), "kubernetes.readiness: exactly one"},
		"unknown tcp port":         {"foo.json", strings.Replace(good, `"tcp_port":"client"`, `"tcp_port":"bus"`, 1), "kubernetes.readiness.tcp_port: must name a port"},
		"relative data":            {"foo.json", strings.Replace(good, `"/data"`, `"data"`, 1), "kubernetes.data_path"},
		"bad quantity":             {"foo.json", strings.Replace(good, `"metrics":"foo"`, `"metrics":"foo","resources":{"request_memory":"lots"}`, 1), `kubernetes.resources.request_memory: "lots" is not a Kubernetes quantity`},
		"cluster without cluster":  {"foo.json", strings.Replace(good, `"single"`, `"cluster"`, 1), `kubernetes.cluster: required for topology "cluster"`},
		"cluster bootstrap":        {"foo.json", strings.Replace(strings.Replace(good, `"single"`, `"cluster"`, 1), `"metrics":"foo"`, `"metrics":"foo","cluster":{"min_masters":3,"default_workers":3,"bootstrap":{"image":"x"}}`, 1), "kubernetes.cluster.bootstrap: image and command, or neither"},
		"cluster nothing forms":    {"foo.json", strings.Replace(strings.Replace(good, `"single"`, `"cluster"`, 1), `"metrics":"foo"`, `"metrics":"foo","cluster":{"min_masters":3,"default_workers":3}`, 1), "kubernetes.cluster.bootstrap: required without a master"},
		"master gathers, exporter": {"foo.json", strings.Replace(strings.Replace(good, `"single"`, `"cluster"`, 1), `"metrics":"foo"`, `"metrics":"foo","exporter":{"image":"e","port":9},"cluster":{"min_masters":1,"default_workers":1,"master":{"gathers_metrics":true}}`, 1), "kubernetes.cluster.master.gathers_metrics: not with an exporter"},
		"master gathers, no port":  {"foo.json", strings.Replace(strings.Replace(good, `"single"`, `"cluster"`, 1), `"metrics":"foo"`, `"metrics":"foo","cluster":{"min_masters":1,"default_workers":1,"master":{"gathers_metrics":true}}`, 1), "kubernetes.cluster.master.gathers_metrics: needs metrics_port"},
		"cluster on single":        {"foo.json", strings.Replace(good, `"metrics":"foo"`, `"metrics":"foo","cluster":{"min_masters":1,"default_workers":1}`, 1), `kubernetes.cluster: only for topology "cluster", or topology "single" with workers`},
		"schema job":               {"foo.json", strings.Replace(good, `"properties":{"a":"b"}`, `"properties":{"a":"b"},"schema":["CREATE TABLE t (k int)"]`, 1), "kubernetes.schema: required when ycsb.schema"},
	} {
		_, err := parse(fstest.MapFS{tc.file: {Data: []byte(tc.data)}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to contain %q", name, err, tc.want)
		}
	}
	// A cluster variant must be a clustered catalog DBMS.
	if _, err := parse(fstest.MapFS{"foo.json": {Data: []byte(strings.Replace(good, `"kind"`, `"cluster_variant":"Foo","kind"`, 1))}}); err == nil ||
		!strings.Contains(err.Error(), `cluster_variant "Foo" must be a clustered catalog DBMS`) {
		t.Errorf("a cluster variant that is not a cluster: err = %v", err)
	}
	// A pool's backend must be another catalog DBMS that is not a pool.
	for name, tc := range map[string]struct{ backend, want string }{
		"missing backend": {"Bar", `kubernetes.pool.backend "Bar" must be a catalog DBMS`},
		"pool of a pool":  {"Pool2", `kubernetes.pool.backend "Pool2" must be a catalog DBMS that is not itself a pool`},
	} {
		p2 := strings.NewReplacer(`"name":"Pool"`, `"name":"Pool2"`, `"backend":"Foo"`, `"backend":"Foo"`).Replace(pool)
		p1 := strings.Replace(pool, `"backend":"Foo"`, `"backend":"`+tc.backend+`"`, 1)
		_, err := parse(fstest.MapFS{"foo.json": {Data: []byte(good)}, "pool.json": {Data: []byte(p1)}, "pool2.json": {Data: []byte(p2)}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to contain %q", name, err, tc.want)
		}
	}
}

func TestKubernetesSections(t *testing.T) {
	for _, tc := range []struct {
		name, topology string
		local          bool
	}{
		{"Redis", TopologySingle, true},
		{"PostgreSQL", TopologySingle, true},
		{"PgBouncer", TopologyPool, true},
		{"RedisCluster", TopologyCluster, true},
		{"Dragonfly", TopologySingle, false},
		{"DragonflyCluster", TopologyCluster, false},
	} {
		e, err := Lookup(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if e.Kubernetes.Topology != tc.topology || e.RunsLocally() != tc.local {
			t.Errorf("%s: topology %q, runs locally %v; want %q, %v", tc.name, e.Kubernetes.Topology, e.RunsLocally(), tc.topology, tc.local)
		}
	}
	pgb, _ := Lookup("PgBouncer")
	if pgb.Kind != KindPgBouncer || pgb.Kubernetes.Pool.Backend != "PostgreSQL" {
		t.Errorf("PgBouncer: kind %q, backend %q", pgb.Kind, pgb.Kubernetes.Pool.Backend)
	}
	if ep := pgb.Endpoint("pool", 5432); !strings.Contains(ep.JDBCURL, "prepareThreshold=0") {
		t.Errorf("PgBouncer JDBC URL %q: transaction pooling needs prepareThreshold=0", ep.JDBCURL)
	}
}

func TestSettingArgsList(t *testing.T) {
	pg, _ := Lookup("PostgreSQL")
	got := pg.SettingArgsList()
	want := []string{"-c", "checkpoint_completion_target=0.9", "-c", "checkpoint_timeout=1h", "-c", "max_connections=512",
		"-c", "max_wal_senders=0", "-c", "max_wal_size=8GB", "-c", "shared_buffers=1GB", "-c", "synchronous_commit=off", "-c", "wal_level=minimal"}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	e := Entry{Settings: map[string]string{"b": "2", "a": "1"}, Kubernetes: &Kubernetes{SettingArgs: []string{"--{name}", "{value}"}}}
	if got, want := e.SettingArgsList(), []string{"--a", "1", "--b", "2"}; !slices.Equal(got, want) {
		t.Errorf("redis style: got %q, want %q", got, want)
	}
}

// Graphite is a cluster on the local backend: -nw is its number of
// carbon-caches behind a relay, none is a single carbon-cache. On
// Kubernetes it is one pod (topology single); its tsdb ports resolve
// there. Workers beside a kubernetes cluster, and an entry without a
// kubernetes section, are refused by name.
func TestGraphiteIsALocalCluster(t *testing.T) {
	g, err := Lookup("graphite")
	if err != nil {
		t.Fatal(err)
	}
	if !g.RunsLocally() || g.Kubernetes == nil || g.Kubernetes.Topology != TopologySingle || !g.Clustered() || g.MetricSet() != "graphite" {
		t.Errorf("Graphite: local %v, kubernetes %v, clustered %v, metric set %q", g.RunsLocally(), g.Kubernetes, g.Clustered(), g.MetricSet())
	}
	for _, nw := range []int{0, 3} {
		if c, err := g.ForWorkers(nw); err != nil || c.Name != "Graphite" {
			t.Errorf("ForWorkers(%d) = %s, %v", nw, c.Name, err)
		}
	}
	if g.Masters(0) != 1 || g.Masters(3) != 3 {
		t.Errorf("Masters(0) = %d, Masters(3) = %d", g.Masters(0), g.Masters(3))
	}
	if g.TSDB.QueryPath != "/render" || g.TSDB.QueryAPI != QueryGraphite || g.TSDB.QueryPort != "query" || g.TSDB.MetricsPort != "metrics" || g.TSDB.DrainQuietS != 3 {
		t.Errorf("tsdb %+v", g.TSDB)
	}
	if c, q, m := g.KubePort(g.TSDB.CarbonPort), g.KubePort(g.TSDB.QueryPort), g.KubePort(g.TSDB.MetricsPort); c != 2003 || q != 8080 || m != 9108 {
		t.Errorf("on kubernetes: carbon %d, query %d, metrics %d", c, q, m)
	}
	_, err = parseEntry([]byte(`{"name":"X","description":"d","kind":"redis","ports":{"client":1},"probe":"redis-ping",
		"version_command":["x"],"image":"i","ycsb":{"db":"d","properties":{"a":"b"}}}`))
	if err == nil || !strings.Contains(err.Error(), "kubernetes: required") {
		t.Errorf("a redis without kubernetes: %v", err)
	}
	rc, err := os.ReadFile("rediscluster.json")
	if err != nil {
		t.Fatal(err)
	}
	_, err = parseEntry([]byte(strings.Replace(string(rc), `"kind"`, `"workers": {"min": 1, "default": 0}, "kind"`, 1)))
	if err == nil || !strings.Contains(err.Error(), "workers: only with kubernetes topology single") {
		t.Errorf("workers beside kubernetes.cluster: %v", err)
	}
	// Its queries are graphite-web's /render; an API benchq does not speak
	// is refused by name.
	b, err := os.ReadFile("graphite.json")
	if err != nil {
		t.Fatal(err)
	}
	_, err = parseEntry([]byte(strings.Replace(string(b), `"query_api": "graphite"`, `"query_api": "influxql"`, 1)))
	if err == nil || !strings.Contains(err.Error(), `tsdb.query_api: "prometheus" (the default) or "graphite"`) {
		t.Errorf("query_api influxql: %v", err)
	}
}
