package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/startup"
	"github.com/benchq/benchq/services/deployer/backend"
)

func requirePgBouncer(t *testing.T) {
	t.Helper()
	requireServer(t, catalog.KindPostgreSQL)
	if _, err := localdb.PgBouncerBinary(); errors.Is(err, localdb.ErrNotInstalled) {
		t.Skipf("skipping: %v", err)
	}
}

// statePids are every process of a cluster or pool, from endpoint.json.
func statePids(t *testing.T, l *Local, code, configuration string) []int {
	t.Helper()
	dir, _ := l.dir(code, configuration)
	st, err := readState(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st.Pids
}

// checkTornDown: every process gone, the configuration's directory removed,
// and a second teardown is fine.
// checkRedeployKeeps deploys spec again (a redelivered deploy job) and
// checks that the running SUT is kept: same endpoint, same processes.
func checkRedeployKeeps(t *testing.T, ctx context.Context, l *Local, spec backend.Spec, ep contracts.Endpoint, pids []int) {
	t.Helper()
	again, err := l.Deploy(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	now := statePids(t, l, spec.Code, spec.Configuration)
	if !reflect.DeepEqual(again.Endpoint, ep) || !slices.Equal(now, pids) {
		t.Errorf("redeploy = %+v %v, want the same endpoint %+v and pids %v", again.Endpoint, now, ep, pids)
	}
}

func checkTornDown(t *testing.T, ctx context.Context, l *Local, code, conf string, pids []int) {
	t.Helper()
	if err := l.Teardown(ctx, code, conf); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if procs.Alive(pid) {
			t.Errorf("pid %d alive after teardown", pid)
		}
	}
	if _, err := os.Stat(filepath.Join(l.Root, code, conf)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("configuration dir after teardown: %v", err)
	}
	if err := l.Teardown(ctx, code, conf); err != nil {
		t.Errorf("second teardown: %v", err)
	}
}

// redisClusterRows counts a cluster's records: the data keys of every master
// (DBSIZE without our binding's index buckets), and the entries of the
// index buckets, which must agree.
func redisClusterRows(t *testing.T, ctx context.Context, addr string) (keys, indexed int) {
	t.Helper()
	masters, err := localdb.MasterAddrs(ctx, addr, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range masters {
		n, err := localdb.RedisCommand(ctx, m, "DBSIZE")
		if err != nil {
			t.Fatal(err)
		}
		size, _ := strconv.Atoi(n)
		idx, err := localdb.RedisCommand(ctx, m, "KEYS", "_indices*")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range strings.Fields(idx) {
			size--
			z, err := localdb.RedisCommand(ctx, m, "ZCARD", k)
			if err != nil {
				t.Fatal(err)
			}
			c, _ := strconv.Atoi(z)
			indexed += c
		}
		keys += size
	}
	return keys, indexed
}

func TestLocalRedisCluster(t *testing.T) {
	t.Parallel()
	requireServer(t, catalog.KindRedis)
	ctx := localTestCtx(t)
	l := newLocal(t)
	const code, conf = "1700000011", "RedisCluster-8-2-16384-1"
	teardownAtEnd(t, l, code, conf)

	spec := backend.Spec{Code: code, Configuration: conf, DBMS: "RedisCluster", Benchmark: "ycsb", SUT: &contracts.SUTSpec{Workers: 3}}
	d, err := l.Deploy(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	ep := d.Endpoint
	if d.Backend != "local" || ep.Host != "127.0.0.1" || ep.Port == 0 {
		t.Fatalf("Deployed = %+v", d)
	}
	if v, _ := d.Info["version"].(string); !strings.HasPrefix(v, "Redis ") || d.Info["workers"] != 3 || d.Info["worker_replicas"] != 0 {
		t.Errorf("Info = %v", d.Info)
	}
	addr := fmt.Sprintf("%s:%d", ep.Host, ep.Port)
	if info, err := localdb.RedisCommand(ctx, addr, "CLUSTER", "INFO"); err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_size:3") {
		t.Fatalf("CLUSTER INFO = %q, %v", info, err)
	}
	masters, err := localdb.MasterAddrs(ctx, addr, "")
	if err != nil || len(masters) != 3 || !slices.Contains(masters, addr) {
		t.Errorf("masters = %v, %v; want 3 with the endpoint among them", masters, err)
	}
	if nodes, _ := d.Info["nodes"].(string); len(strings.Split(nodes, ",")) != 3 {
		t.Errorf("Info[nodes] = %q", nodes)
	}
	props := catalogEntry(t, "RedisCluster").YCSBProperties(ep, contracts.KindRun)
	if props["redis.cluster"] != "true" || props["redis.port"] != strconv.Itoa(ep.Port) {
		t.Errorf("YCSB properties = %v", props)
	}
	pids := statePids(t, l, code, conf)
	if len(pids) != 3 {
		t.Fatalf("pids = %v", pids)
	}

	checkRedeployKeeps(t, ctx, l, spec, ep, pids)
	checkTornDown(t, ctx, l, code, conf, pids)
}

func TestLocalRedisClusterWithReplicas(t *testing.T) {
	t.Parallel()
	requireServer(t, catalog.KindRedis)
	ctx := localTestCtx(t)
	l := newLocal(t)
	// With the SUT's password: clients and replicas (masterauth) need it.
	l.SUT = startup.SUTKey(testKey)
	const code, conf = "1700000012", "RedisCluster-1"
	password := l.SUT.PasswordOf(code, conf)
	teardownAtEnd(t, l, code, conf)
	d, err := l.Deploy(ctx, backend.Spec{Code: code, Configuration: conf, DBMS: "RedisCluster", Benchmark: "ycsb", SUT: &contracts.SUTSpec{Workers: 3, WorkerReplicas: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Info["workers"] != 3 || d.Info["worker_replicas"] != 1 {
		t.Errorf("Info = %v", d.Info)
	}
	// Its sut.ready, workers listed one by one (the summary's Connections),
	// is a valid message: a scheduler drops one that is not.
	ready, _ := json.Marshal(&contracts.SUTReady{Envelope: contracts.NewEnvelope(code, "x", time.Now()), Configuration: conf, DBMS: "RedisCluster",
		Endpoint: d.Endpoint, Backend: d.Backend, Info: d.Info})
	if err := contracts.Validate(contracts.SchemaSUTReady, ready); err != nil {
		t.Errorf("sut.ready of a cluster: %v", err)
	}
	if w, _ := json.Marshal(d.Info["worker_nodes"]); strings.Count(string(w), `"role":"replica"`) != 3 {
		t.Errorf("worker_nodes = %s, want 3 masters and 3 replicas", w)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", d.Endpoint.Port)
	info, err := localdb.RedisCommandAs(ctx, addr, password, "CLUSTER", "INFO")
	if err != nil || !strings.Contains(info, "cluster_known_nodes:6") || !strings.Contains(info, "cluster_size:3") {
		t.Errorf("CLUSTER INFO = %q, %v", info, err)
	}
	// Every node refuses a client without the password; every replica's
	// link to its master (which took masterauth) is up.
	for _, w := range d.Info["worker_nodes"].([]localdb.ClusterWorker) {
		if _, err := localdb.RedisCommand(ctx, w.Addr, "PING"); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
			t.Errorf("PING %s without the password: %v, want NOAUTH", w.Addr, err)
		}
		repl, err := localdb.RedisCommandAs(ctx, w.Addr, password, "INFO", "replication")
		if err != nil || (w.Role == "replica" && !strings.Contains(repl, "master_link_status:up")) {
			t.Errorf("INFO replication of %s %s: %q, %v", w.Role, w.Addr, repl, err)
		}
	}
	checkTornDown(t, ctx, l, code, conf, statePids(t, l, code, conf))
}

func TestLocalRedisClusterRefusesTooFewMasters(t *testing.T) {
	t.Parallel()
	requireServer(t, catalog.KindRedis)
	l := newLocal(t)
	const code, conf = "1700000013", "RedisCluster-1"
	teardownAtEnd(t, l, code, conf)
	_, err := l.Deploy(localTestCtx(t), backend.Spec{Code: code, Configuration: conf, DBMS: "RedisCluster", Benchmark: "ycsb", SUT: &contracts.SUTSpec{Workers: 2}})
	if !errors.Is(err, backend.ErrBadSpec) || !strings.Contains(err.Error(), "RedisCluster needs at least 3 workers (-nw), got 2") {
		t.Fatalf("err = %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(l.Root, code, conf, clusterDir, "node-*")); len(m) > 0 {
		t.Errorf("nodes started for a refused shape: %v", m)
	}
}

func TestLocalPgBouncer(t *testing.T) {
	t.Parallel()
	requirePgBouncer(t)
	ctx := localTestCtx(t)
	l := newLocal(t)
	const code, conf = "1700000014", "PgBouncer-8-2-16384-2-64-16-1"
	teardownAtEnd(t, l, code, conf)

	spec := backend.Spec{Code: code, Configuration: conf, DBMS: "PgBouncer", Benchmark: "ycsb",
		SUT: &contracts.SUTSpec{Pool: &contracts.Pool{Pods: 2, Inbound: 64, Outbound: 15}}}
	d, err := l.Deploy(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	ep := d.Endpoint
	pools := strings.Split(fmt.Sprint(d.Info["pool_endpoints"]), ",")
	if len(pools) != 2 || pools[0] != fmt.Sprintf("127.0.0.1:%d", ep.Port) {
		t.Fatalf("pool endpoints %v, endpoint %+v", pools, ep)
	}
	wantURL := "jdbc:postgresql://" + pools[0] + "," + pools[1] + "/ycsb?reWriteBatchedInserts=true&prepareThreshold=0&loadBalanceHosts=true"
	if ep.JDBCURL != wantURL || ep.Database != "ycsb" || ep.User != "postgres" {
		t.Errorf("endpoint = %+v, want JDBC URL %s", ep, wantURL)
	}
	for k, want := range map[string]any{"pool_pods": 2, "pool_max_client_conn": 33, "pool_default_pool_size": 8, "pool_mode": "transaction", "backend_dbms": "PostgreSQL"} {
		if d.Info[k] != want {
			t.Errorf("Info[%s] = %v, want %v", k, d.Info[k], want)
		}
	}
	if v, _ := d.Info["version"].(string); !strings.HasPrefix(v, "PgBouncer ") {
		t.Errorf("Info[version] = %v", d.Info["version"])
	}
	if v, _ := d.Info["backend_version"].(string); !strings.HasPrefix(v, "PostgreSQL ") {
		t.Errorf("Info[backend_version] = %v", d.Info["backend_version"])
	}
	// Each pool process: its share of the limits (inbound: 32 and one for
	// the exporter's console connection), transaction pooling, and
	// the YCSB table behind it.
	for _, p := range pools {
		config := showConfig(t, ctx, p)
		for k, want := range map[string]string{"pool_mode": "transaction", "max_client_conn": "33", "default_pool_size": "8", "max_db_connections": "8"} {
			if config[k] != want {
				t.Errorf("%s: %s = %q, want %q", p, k, config[k], want)
			}
		}
		conn, err := pgx.Connect(ctx, "postgresql://postgres@"+p+"/ycsb?sslmode=disable&default_query_exec_mode=simple_protocol")
		if err != nil {
			t.Fatal(err)
		}
		var table string
		err = conn.QueryRow(ctx, "SELECT coalesce(to_regclass('public.usertable')::text, '')").Scan(&table)
		conn.Close(ctx)
		if err != nil || table != "usertable" {
			t.Errorf("usertable through %s: %q, %v", p, table, err)
		}
	}
	pids := statePids(t, l, code, conf)
	if len(pids) != 3 {
		t.Fatalf("pids = %v, want 2 pools and the backend", pids)
	}

	checkRedeployKeeps(t, ctx, l, spec, ep, pids)

	// A pool process that died comes back on its port.
	if err := procs.Stop(ctx, pids[1], 0); err != nil {
		t.Fatal(err)
	}
	again, err := l.Deploy(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	now := statePids(t, l, code, conf)
	if !reflect.DeepEqual(again.Endpoint, ep) || now[0] != pids[0] || now[1] == pids[1] || !procs.Alive(now[1]) || now[2] != pids[2] {
		t.Errorf("after the second pool died: endpoint %+v, pids %v (were %v)", again.Endpoint, now, pids)
	}
	checkTornDown(t, ctx, l, code, conf, now)
}

func TestLocalPgBouncerDefaultPool(t *testing.T) {
	t.Parallel()
	requirePgBouncer(t)
	ctx := localTestCtx(t)
	l := newLocal(t)
	const code, conf = "1700000015", "PgBouncer-1"
	teardownAtEnd(t, l, code, conf)
	d, err := l.Deploy(ctx, backend.Spec{Code: code, Configuration: conf, DBMS: "pgbouncer", Benchmark: "ycsb"})
	if err != nil {
		t.Fatal(err)
	}
	// The catalog's defaults: 1 pod, 128 in (and the console's), 64 out;
	// one host in the URL.
	if d.Info["pool_pods"] != 1 || d.Info["pool_max_client_conn"] != 129 || d.Info["pool_default_pool_size"] != 64 {
		t.Errorf("Info = %v", d.Info)
	}
	if want := fmt.Sprintf("jdbc:postgresql://127.0.0.1:%d/ycsb?reWriteBatchedInserts=true&prepareThreshold=0", d.Endpoint.Port); d.Endpoint.JDBCURL != want {
		t.Errorf("JDBC URL %q, want %q", d.Endpoint.JDBCURL, want)
	}
	checkTornDown(t, ctx, l, code, conf, statePids(t, l, code, conf))
}

func TestPoolSize(t *testing.T) {
	t.Parallel()
	defaults := &catalog.Pool{Backend: "PostgreSQL", Pods: 1, Inbound: 128, Outbound: 64}
	if got, err := poolSize(defaults, nil); err != nil || got != (contracts.Pool{Pods: 1, Inbound: 128, Outbound: 64}) {
		t.Errorf("defaults: %+v, %v", got, err)
	}
	if got, err := poolSize(defaults, &contracts.SUTSpec{Pool: &contracts.Pool{Pods: 2, Inbound: 64, Outbound: 16}}); err != nil || got.Pods != 2 {
		t.Errorf("spec: %+v, %v", got, err)
	}
	if _, err := poolSize(defaults, &contracts.SUTSpec{Pool: &contracts.Pool{Pods: 0, Inbound: 1, Outbound: 1}}); !errors.Is(err, backend.ErrBadSpec) {
		t.Errorf("0 pods: %v", err)
	}
}

func TestLoadBalancedURL(t *testing.T) {
	t.Parallel()
	got := loadBalancedURL("jdbc:postgresql://127.0.0.1:1/ycsb?prepareThreshold=0", "127.0.0.1:1", []string{"127.0.0.1:1", "127.0.0.1:2"})
	if want := "jdbc:postgresql://127.0.0.1:1,127.0.0.1:2/ycsb?prepareThreshold=0&loadBalanceHosts=true"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got := loadBalancedURL("jdbc:postgresql://h:1/db", "h:1", []string{"h:1", "h:2"}); got != "jdbc:postgresql://h:1,h:2/db?loadBalanceHosts=true" {
		t.Errorf("without parameters: %s", got)
	}
}

func catalogEntry(t *testing.T, name string) catalog.Entry {
	t.Helper()
	e, err := catalog.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// showConfig is pgbouncer's SHOW CONFIG (the admin console) at addr.
func showConfig(t *testing.T, ctx context.Context, addr string) map[string]string {
	t.Helper()
	conn, err := pgx.Connect(ctx, "postgresql://postgres@"+addr+"/pgbouncer?sslmode=disable&default_query_exec_mode=simple_protocol")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SHOW CONFIG")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprint(v[0])] = fmt.Sprint(v[1])
	}
	return out
}
