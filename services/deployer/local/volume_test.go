package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/services/deployer/backend"
)

// A Redis on a volume (-rst): the first configuration finds it new, writes
// a key and is torn down with its loading marked; the next one (another
// experiment) finds it loaded with the key (AOF on), a third deploy waits
// while the volume is in use and fails naming its user, -rsr empties it,
// and a volume never marked loaded is emptied before its next use.
func TestLocalRedisVolume(t *testing.T) {
	t.Parallel()
	requireServer(t, catalog.KindRedis)
	ctx := localTestCtx(t)
	l := newLocal(t)
	spec := func(code string, remove bool) backend.Spec {
		return backend.Spec{Code: code, Configuration: "Redis-1", DBMS: "Redis", Benchmark: "ycsb",
			SUT: &contracts.SUTSpec{UseCase: "ycsb-0.01", Storage: &contracts.Storage{Class: "local", Remove: remove}}}
	}
	deploy := func(code string, remove bool) (backend.Deployed, string) {
		t.Helper()
		teardownAtEnd(t, l, code, "Redis-1")
		d, err := l.Deploy(ctx, spec(code, remove))
		if err != nil {
			t.Fatal(err)
		}
		if d.Volume == nil || d.Volume.Name != "bq-redis-ycsb-0.01" {
			t.Fatalf("volume %+v, want bq-redis-ycsb-0.01", d.Volume)
		}
		return d, d.Endpoint.Host + ":" + strconv.Itoa(d.Endpoint.Port)
	}
	get := func(addr string) string {
		t.Helper()
		v, err := localdb.RedisCommand(ctx, addr, "GET", "k")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	d, addr := deploy("v1", false)
	if !d.Volume.New || d.Volume.Loaded {
		t.Errorf("first use: %+v, want new and not loaded", d.Volume)
	}
	if _, err := localdb.RedisCommand(ctx, addr, "SET", "k", "kept"); err != nil {
		t.Fatal(err)
	}
	// A second configuration is refused at once, naming who holds the
	// volume (the holder's teardown is a job behind it: no use waiting).
	short, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	_, err := l.Deploy(short, spec("v-other", false))
	cancel()
	if err == nil || !strings.Contains(err.Error(), "volume bq-redis-ycsb-0.01 is in use by v1/Redis-1") {
		t.Errorf("second user: %v", err)
	}
	teardownAtEnd(t, l, "v-other", "Redis-1")
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	if err := l.MarkLoaded(ctx, d.Volume.Name, 3*time.Second, "v1", at); err != nil {
		t.Fatal(err)
	}
	if err := l.Teardown(ctx, "v1", "Redis-1"); err != nil {
		t.Fatal(err)
	}

	d, addr = deploy("v2", false)
	if d.Volume.New || !d.Volume.Loaded || d.Volume.LoadingTimeS != 3 || d.Volume.LoadedBy != "v1" || d.Volume.LoadedAt == nil || !d.Volume.LoadedAt.Equal(at) {
		t.Errorf("reuse: %+v, want loaded by v1 in 3 s", d.Volume)
	}
	if v := get(addr); v != "kept" {
		t.Errorf("reused volume: k = %q, want kept", v)
	}
	// The Connections' volume lines, as bexhoma's (volume_used: the AOF).
	if used, _ := d.Info["volume_used"].(string); d.Info["volume"] != "bq-redis-ycsb-0.01" || used == "" || used == "0" {
		t.Errorf("info volume %v, volume_used %v", d.Info["volume"], d.Info["volume_used"])
	}
	entries, err := l.VolumeEntries(ctx)
	if err != nil || len(entries) != 1 || !entries[0].Loaded || entries[0].DBMS != "Redis" || entries[0].UseCase != "ycsb-0.01" || entries[0].Class != "local" || entries[0].Size == "" {
		t.Errorf("entries %+v, %v", entries, err)
	}
	if err := l.Teardown(ctx, "v2", "Redis-1"); err != nil {
		t.Fatal(err)
	}

	// -rsr: a clean copy.
	d, addr = deploy("v3", true)
	if !d.Volume.New || d.Volume.Loaded || get(addr) != "" {
		t.Errorf("-rsr: %+v, k = %q; want new, not loaded, empty", d.Volume, get(addr))
	}
	if _, err := localdb.RedisCommand(ctx, addr, "SET", "k", "partial"); err != nil {
		t.Fatal(err)
	}
	if err := l.Teardown(ctx, "v3", "Redis-1"); err != nil { // never marked loaded
		t.Fatal(err)
	}
	d, addr = deploy("v4", false)
	if !d.Volume.New || d.Volume.Loaded || get(addr) != "" {
		t.Errorf("after an unmarked use: %+v, k = %q; want emptied", d.Volume, get(addr))
	}
	if _, err := os.Stat(filepath.Join(l.volumesDir(), "bq-redis-ycsb-0.01", "data")); err != nil {
		t.Errorf("volume data: %v", err)
	}

	// -rsr empties the volume once, at the experiment's start: its next
	// configuration (a repetition, -nc 2) uses what the first loaded, as
	// bexhoma's "All other instances just use the database".
	if err := l.Teardown(ctx, "v4", "Redis-1"); err != nil {
		t.Fatal(err)
	}
	d, addr = deploy("v5", true)
	if !d.Volume.New || get(addr) != "" {
		t.Errorf("-rsr, first configuration: %+v, k = %q; want emptied", d.Volume, get(addr))
	}
	if _, err := localdb.RedisCommand(ctx, addr, "SET", "k", "v5"); err != nil {
		t.Fatal(err)
	}
	if err := l.MarkLoaded(ctx, d.Volume.Name, time.Second, "v5", at); err != nil {
		t.Fatal(err)
	}
	if err := l.Teardown(ctx, "v5", "Redis-1"); err != nil {
		t.Fatal(err)
	}
	second := spec("v5", true)
	second.Configuration = "Redis-2"
	teardownAtEnd(t, l, "v5", "Redis-2")
	d, err = l.Deploy(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	if addr = d.Endpoint.Host + ":" + strconv.Itoa(d.Endpoint.Port); !d.Volume.Loaded || d.Volume.New || get(addr) != "v5" {
		t.Errorf("-rsr, the experiment's second configuration: %+v, k = %q; want the first's data, loaded", d.Volume, get(addr))
	}
}

// A Redis Cluster on a volume: its node directories (AOF, nodes.conf) are
// kept, the next deploy comes back as the same cluster with the keys, and
// a configuration of another shape is refused rather than given slots its
// data does not fit.
func TestLocalRedisClusterVolume(t *testing.T) {
	t.Parallel()
	requireServer(t, catalog.KindRedis)
	ctx := localTestCtx(t)
	l := newLocal(t)
	spec := func(code string, workers int) backend.Spec {
		return backend.Spec{Code: code, Configuration: "RC", DBMS: "RedisCluster", Benchmark: "ycsb",
			SUT: &contracts.SUTSpec{Workers: workers, UseCase: "ycsb-0.01", Storage: &contracts.Storage{Class: "local"}}}
	}
	teardownAtEnd(t, l, "c1", "RC")
	d, err := l.Deploy(ctx, spec("c1", 3))
	if err != nil {
		t.Fatal(err)
	}
	addr := d.Endpoint.Host + ":" + strconv.Itoa(d.Endpoint.Port)
	// The keys of the first master's slots (the others answer MOVED).
	mine := 0
	for i := range 200 {
		if _, err := localdb.RedisCommand(ctx, addr, "SET", "k"+strconv.Itoa(i), "v"); err == nil {
			mine++
		}
	}
	if mine == 0 || mine == 200 {
		t.Fatalf("%d of 200 keys on the first of 3 masters", mine)
	}
	if err := l.MarkLoaded(ctx, d.Volume.Name, time.Second, "c1", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := l.Teardown(ctx, "c1", "RC"); err != nil {
		t.Fatal(err)
	}
	teardownAtEnd(t, l, "c2", "RC")
	if _, err := l.Deploy(ctx, spec("c2", 4)); !errors.Is(err, backend.ErrBadSpec) || !strings.Contains(err.Error(), "holds a RedisCluster of 3 masters with 0 replicas each, this configuration asks for 4 masters") {
		t.Errorf("another shape: %v", err)
	}
	teardownAtEnd(t, l, "c3", "RC")
	d, err = l.Deploy(ctx, spec("c3", 3))
	if err != nil {
		t.Fatal(err)
	}
	if !d.Volume.Loaded || d.Volume.New {
		t.Errorf("reuse: %+v", d.Volume)
	}
	addr = d.Endpoint.Host + ":" + strconv.Itoa(d.Endpoint.Port)
	if n, err := localdb.RedisCommand(ctx, addr, "DBSIZE"); err != nil || n != strconv.Itoa(mine) {
		t.Errorf("first master after reuse: DBSIZE %q, %v; want %d", n, err, mine)
	}
	if info, err := localdb.RedisCommand(ctx, addr, "CLUSTER", "INFO"); err != nil || !strings.Contains(info, "cluster_state:ok") {
		t.Errorf("cluster after reuse: %v\n%s", err, info)
	}
	if err := l.Teardown(ctx, "c3", "RC"); err != nil {
		t.Fatal(err)
	}
	// A grid over -nw with -rsr: the experiment's -rsr empties the volume
	// once, and again for a configuration of another shape, which its data
	// cannot serve (not refused: -rsr asked for a clean copy).
	rsr := func(conf string, workers int) backend.Spec {
		s := spec("c4", workers)
		s.Configuration, s.SUT.Storage.Remove = conf, true
		teardownAtEnd(t, l, "c4", conf)
		return s
	}
	if d, err = l.Deploy(ctx, rsr("RC-3", 3)); err != nil || !d.Volume.New {
		t.Fatalf("-rsr, 3 masters: %+v, %v", d.Volume, err)
	}
	if err := l.MarkLoaded(ctx, d.Volume.Name, time.Second, "c4", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := l.Teardown(ctx, "c4", "RC-3"); err != nil {
		t.Fatal(err)
	}
	if d, err = l.Deploy(ctx, rsr("RC-4", 4)); err != nil || !d.Volume.New || d.Volume.Loaded {
		t.Errorf("-rsr, then 4 masters in the same experiment: %+v, %v; want emptied", d.Volume, err)
	}
}

// PgBouncer's data is its backend's: a PgBouncer configuration on a volume
// uses PostgreSQL's volume of the same use case, and finds there what a
// PostgreSQL experiment loaded (bexhoma: "Every PGBouncer experiment (and
// every PostgreSQL experiment) will take the database from this volume").
func TestLocalPgBouncerUsesPostgreSQLsVolume(t *testing.T) {
	t.Parallel()
	requirePgBouncer(t)
	ctx := localTestCtx(t)
	l := newLocal(t)
	deploy := func(code, dbms string) backend.Deployed {
		t.Helper()
		conf := dbms + "-1"
		teardownAtEnd(t, l, code, conf)
		d, err := l.Deploy(ctx, backend.Spec{Code: code, Configuration: conf, DBMS: dbms, Benchmark: "ycsb",
			SUT: &contracts.SUTSpec{UseCase: "ycsb-0.01", Storage: &contracts.Storage{Class: "local"}}})
		if err != nil {
			t.Fatal(err)
		}
		if d.Volume == nil || d.Volume.Name != "bq-postgresql-ycsb-0.01" {
			t.Fatalf("%s: volume %+v, want bq-postgresql-ycsb-0.01", dbms, d.Volume)
		}
		return d
	}
	// sql runs query on addr's ycsb database and returns its one value.
	sql := func(addr, query string) string {
		t.Helper()
		conn, err := pgx.Connect(ctx, "postgresql://postgres@"+addr+"/ycsb?sslmode=disable&default_query_exec_mode=simple_protocol")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var out string
		if err := conn.QueryRow(ctx, query).Scan(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	d := deploy("pv1", "PostgreSQL")
	addr := d.Endpoint.Host + ":" + strconv.Itoa(d.Endpoint.Port)
	conn, err := pgx.Connect(ctx, "postgresql://postgres@"+addr+"/ycsb?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE kept AS SELECT 'loaded by PostgreSQL'::text AS v"); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close(ctx)
	if err := l.MarkLoaded(ctx, d.Volume.Name, time.Second, "pv1", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := l.Teardown(ctx, "pv1", "PostgreSQL-1"); err != nil {
		t.Fatal(err)
	}
	d = deploy("pv2", "PgBouncer")
	if !d.Volume.Loaded || d.Volume.LoadedBy != "pv1" {
		t.Errorf("PgBouncer on PostgreSQL's volume: %+v, want loaded by pv1", d.Volume)
	}
	if got := sql(d.Endpoint.Host+":"+strconv.Itoa(d.Endpoint.Port), "SELECT v FROM kept"); got != "loaded by PostgreSQL" {
		t.Errorf("through the pool: %q", got)
	}
}
