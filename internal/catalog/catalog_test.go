package catalog

import (
	"errors"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	files "github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
)

func TestEveryCatalogFileParses(t *testing.T) {
	paths, err := fs.Glob(files.Files, "*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("catalog files: %v %v", paths, err)
	}
	for _, p := range paths {
		b, err := fs.ReadFile(files.Files, p)
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
	if got, want := Names(), []string{"PostgreSQL", "Redis"}; !slices.Equal(got, want) {
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
	if want := `unknown DBMS "MySQL"; known: PostgreSQL, Redis`; err.Error() != want {
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
		`"version_command":["foo","--version"],"image":"foo:1","ycsb":{"db":"X","properties":{"a":"b"}}}`
	if _, err := parse(fstest.MapFS{"foo.json": {Data: []byte(good)}}); err != nil {
		t.Fatalf("good entry: %v", err)
	}
	for name, tc := range map[string]struct{ file, data, want string }{
		"missing fields": {"foo.json", `{"name":"Foo"}`, "kind: must be"},
		"unknown key":    {"foo.json", strings.Replace(good, `"image"`, `"imag"`, 1), `unknown field "imag"`},
		"wrong filename": {"bar.json", good, "must be named foo.json"},
		"pg needs jdbc":  {"foo.json", strings.Replace(good, `"kind":"redis"`, `"kind":"postgresql"`, 1), "jdbc_url: required"},
		"bad json":       {"foo.json", `{`, "foo.json"},
	} {
		_, err := parse(fstest.MapFS{tc.file: {Data: []byte(tc.data)}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to contain %q", name, err, tc.want)
		}
	}
}
