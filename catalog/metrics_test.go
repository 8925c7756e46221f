package catalog

import (
	"strings"
	"testing"
	"testing/fstest"
)

// Every DBMS names a metric set that exists and is valid; the system set
// has bexhoma's four columns.
func TestMetricSets(t *testing.T) {
	sys, err := MetricSetByName(SystemSet)
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, m := range sys.Metrics {
		titles = append(titles, m.Title)
	}
	if got := strings.Join(titles, "|"); got != "CPU [CPUs]|Max CPU|Max RAM [Gb]|Max RAM Cached [Gb]" {
		t.Errorf("system titles %s", got)
	}
	for _, name := range Names() {
		e, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		sets, err := e.ApplicationSets()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(sets["sut"].Metrics) == 0 {
			t.Errorf("%s: no application metrics for the sut", name)
		}
		if (e.Kubernetes != nil && e.Kubernetes.Pool != nil) != (len(sets["pool"].Metrics) > 0) {
			t.Errorf("%s: pool set %v", name, sets["pool"])
		}
	}
	pgb, _ := Lookup("PgBouncer")
	sets, _ := pgb.ApplicationSets()
	if sets["sut"].Name != "postgresql" || sets["pool"].Name != "pgbouncer" {
		t.Errorf("PgBouncer sets: sut %q, pool %q", sets["sut"].Name, sets["pool"].Name)
	}
	df, _ := MetricSetByName("dragonfly")
	titles = nil
	for _, m := range df.Metrics {
		titles = append(titles, m.Title)
	}
	if got := strings.Join(titles, "|"); got != "Replies Sent [count]|Memory Usage [Gi]|Processed Commands [per second]|Network Input [MB/sec]|Replica Lag [records]" {
		t.Errorf("dragonfly titles %s", got)
	}
}

func TestMetricSetValidation(t *testing.T) {
	sys := `{"name":"system","metrics":[{"key":"cpu","title":"CPU","aggregate":"sum","series":"x","reduction":"increase","scale":1}]}`
	good := `{"name":"foo","metrics":[{"key":"a","title":"A [count]","aggregate":"sum","series":"a","matchers":{"db":"ycsb"},"reduction":"max","scale":1}]}`
	if _, err := parseMetricSets(fstest.MapFS{"metrics/system.json": {Data: []byte(sys)}, "metrics/foo.json": {Data: []byte(good)}}); err != nil {
		t.Fatalf("good sets: %v", err)
	}
	for name, tc := range map[string]struct{ file, data, want string }{
		"aggregate":     {"foo.json", strings.Replace(good, `"sum"`, `"avg"`, 1), `aggregate: "avg" is not sum or max`},
		"series":        {"foo.json", strings.Replace(good, `"series":"a"`, `"series":"a{b}"`, 1), "not a Prometheus metric name"},
		"matcher":       {"foo.json", strings.Replace(good, `"ycsb"`, `"y\"csb"`, 1), "not a label name and a plain value"},
		"reduction":     {"foo.json", strings.Replace(good, `"max"`, `"irate"`, 1), `"irate" is not one of`},
		"duplicate key": {"foo.json", strings.Replace(good, `]}`, `,{"key":"a","title":"B","aggregate":"max","series":"b","reduction":"max","scale":1}]}`, 1), `unique ("a")`},
		"system key":    {"foo.json", strings.Replace(good, `"key":"a"`, `"key":"cpu"`, 1), "also a system metric"},
		"file name":     {"bar.json", good, "must be named foo.json"},
		"unknown field": {"foo.json", strings.Replace(good, `"scale":1`, `"scale":1,"unit":"x"`, 1), "unknown field"},
		"scale":         {"foo.json", strings.Replace(good, `"scale":1`, `"scale":0`, 1), "scale: must be positive"},
		"no system":     {"foo.json", good, "no metrics/system.json"},
	} {
		fsys := fstest.MapFS{"metrics/" + tc.file: {Data: []byte(tc.data)}}
		if name != "no system" {
			fsys["metrics/system.json"] = &fstest.MapFile{Data: []byte(sys)}
		}
		_, err := parseMetricSets(fsys)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
	}
}

func TestMetricPromQL(t *testing.T) {
	m := Metric{Aggregate: AggregateSum, Series: "pg_stat_database_xact_commit", Matchers: map[string]string{"datname": "ycsb", "a": "b"}}
	if got, want := m.PromQL(`experiment="1"`), `sum(pg_stat_database_xact_commit{experiment="1",a="b",datname="ycsb"})`; got != want {
		t.Errorf("PromQL = %s, want %s", got, want)
	}
	if got, want := (Metric{Aggregate: AggregateMax, Series: "x"}).PromQL(`c="d"`), `max(x{c="d"})`; got != want {
		t.Errorf("PromQL = %s, want %s", got, want)
	}
}
