package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/services/deployer/backend"
)

// newLocal returns a Local on a fresh root that the postgres user can reach
// (t.TempDir's parent is private to root), with every SUT torn down at the end.
func newLocal(t *testing.T) *Local {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{filepath.Dir(root), root} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &Local{Root: filepath.Join(root, "suts")}
}

func teardownAtEnd(t *testing.T, l *Local, code, configuration string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := l.Teardown(ctx, code, configuration); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
}

func requireServer(t *testing.T, kind string) {
	t.Helper()
	var err error
	if kind == catalog.KindRedis {
		_, err = localdb.RedisBinary()
	} else {
		_, err = localdb.PGBinDir()
	}
	if errors.Is(err, localdb.ErrNotInstalled) {
		t.Skipf("skipping: %v", err)
	}
}

func localTestCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func statePid(t *testing.T, l *Local, code, configuration string) int {
	t.Helper()
	dir, _ := l.dir(code, configuration)
	st, err := readState(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st.Pid
}

func TestLocalRedis(t *testing.T) {
	t.Parallel()
	requireServer(t, catalog.KindRedis)
	ctx := localTestCtx(t)
	l := newLocal(t)
	const code, conf = "1700000001", "Redis-8-2-16384-1"
	teardownAtEnd(t, l, code, conf)

	spec := backend.Spec{Code: code, Configuration: conf, DBMS: "redis", Benchmark: "ycsb"}
	d, err := l.Deploy(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if d.Backend != contracts.BackendLocal || d.Endpoint.Host != "127.0.0.1" || d.Endpoint.Port == 0 {
		t.Fatalf("Deployed = %+v", d)
	}
	if v, _ := d.Info["version"].(string); !strings.HasPrefix(v, "Redis ") {
		t.Errorf("Info[version] = %v", d.Info["version"])
	}
	for _, k := range []string{"RAM", "CPU", "Cores", "host", "node", "disk", "cpu_list"} {
		if _, ok := d.Info[k]; !ok {
			t.Errorf("Info lacks %s", k)
		}
	}
	addr := d.Endpoint.Host + ":" + strconv.Itoa(d.Endpoint.Port)
	if pong, err := localdb.RedisCommand(ctx, addr, "PING"); err != nil || pong != "PONG" {
		t.Fatalf("PING %s = %q, %v", addr, pong, err)
	}
	pid := statePid(t, l, code, conf)

	again, err := l.Deploy(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Endpoint, d.Endpoint) || statePid(t, l, code, conf) != pid {
		t.Errorf("redeploy = %+v (pid %d), want the same endpoint %+v and pid %d", again.Endpoint, statePid(t, l, code, conf), d.Endpoint, pid)
	}

	if err := l.Teardown(ctx, code, conf); err != nil {
		t.Fatal(err)
	}
	if procs.Alive(pid) {
		t.Error("redis-server alive after teardown")
	}
	if _, err := os.Stat(filepath.Join(l.Root, code, conf)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("configuration dir after teardown: %v", err)
	}
	if err := l.Teardown(ctx, code, conf); err != nil {
		t.Errorf("second teardown: %v", err)
	}
}

func TestLocalRedeployRestartsDeadSUTOnSamePort(t *testing.T) {
	t.Parallel()
	requireServer(t, catalog.KindRedis)
	ctx := localTestCtx(t)
	l := newLocal(t)
	const code, conf = "1700000002", "Redis-1"
	teardownAtEnd(t, l, code, conf)
	// Kubernetes-only settings are accepted (and logged as ignored).
	spec := backend.Spec{Code: code, Configuration: conf, DBMS: "Redis", Benchmark: "ycsb",
		SUT: &contracts.SUTSpec{Resources: &contracts.Resources{RequestCPU: "4"}, Node: "n1", UseCase: "ycsb-0.1"}}
	d, err := l.Deploy(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	pid := statePid(t, l, code, conf)
	if dead, err := l.DeadSUTs(ctx, nil); err != nil || len(dead) != 0 {
		t.Fatalf("a live SUT reported dead: %+v, %v", dead, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil { // the SUT died
		t.Fatal(err)
	}
	// The dead-SUT watch names it and how it ended, once per key.
	want := backend.DeadSUT{Code: code, Configuration: conf, DBMS: "Redis", Reason: fmt.Sprintf("Redis process %d killed by signal 9 (killed)", pid)}
	var dead []backend.DeadSUT
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if dead, err = l.DeadSUTs(ctx, nil); err != nil || len(dead) > 0 {
			break
		}
	}
	if err != nil || len(dead) != 1 || dead[0] != want {
		t.Fatalf("DeadSUTs = %+v, %v; want [%+v]", dead, err, want)
	}
	if dead, _ := l.DeadSUTs(ctx, map[string]bool{code + "/" + conf: true}); len(dead) != 0 {
		t.Errorf("a reported SUT again: %+v", dead)
	}
	again, err := l.Deploy(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Endpoint, d.Endpoint) {
		t.Errorf("endpoint after restart = %+v, want %+v", again.Endpoint, d.Endpoint)
	}
	if newPid := statePid(t, l, code, conf); newPid == pid || !procs.Alive(newPid) {
		t.Errorf("pid after restart = %d (was %d), want a new live server", newPid, pid)
	}
}

func TestLocalPostgreSQL(t *testing.T) {
	t.Parallel()
	requireServer(t, catalog.KindPostgreSQL)
	ctx := localTestCtx(t)
	l := newLocal(t)
	const code, conf = "1700000003", "PostgreSQL-64-1-16384-1"
	teardownAtEnd(t, l, code, conf)

	spec := backend.Spec{Code: code, Configuration: conf, DBMS: "PostgreSQL", Benchmark: "ycsb"}
	d, err := l.Deploy(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	ep := d.Endpoint
	if ep.Database != "ycsb" || ep.User != "postgres" || ep.JDBCURL != "jdbc:postgresql://127.0.0.1:"+strconv.Itoa(ep.Port)+"/ycsb?reWriteBatchedInserts=true" {
		t.Errorf("endpoint = %+v", ep)
	}
	if v, _ := d.Info["version"].(string); !strings.HasPrefix(v, "PostgreSQL ") {
		t.Errorf("Info[version] = %v", d.Info["version"])
	}
	conn, err := pgx.Connect(ctx, "postgresql://postgres@127.0.0.1:"+strconv.Itoa(ep.Port)+"/ycsb?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	var table string
	if err := conn.QueryRow(ctx, "SELECT coalesce(to_regclass('public.usertable')::text, '')").Scan(&table); err != nil || table != "usertable" {
		t.Errorf("usertable in ycsb: %q, %v", table, err)
	}
	var cols int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'usertable'").Scan(&cols); err != nil || cols != 11 {
		t.Errorf("usertable columns = %d, %v; want ycsb_key + field0..field9", cols, err)
	}
	conn.Close(ctx)
	pid := statePid(t, l, code, conf)

	again, err := l.Deploy(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Endpoint, ep) || statePid(t, l, code, conf) != pid {
		t.Errorf("redeploy = %+v, want the same endpoint %+v and pid", again.Endpoint, ep)
	}

	if err := l.Teardown(ctx, code, conf); err != nil {
		t.Fatal(err)
	}
	if procs.Alive(pid) {
		t.Error("postmaster alive after teardown")
	}
	if _, err := os.Stat(filepath.Join(l.Root, code)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("experiment dir after its last teardown: %v", err)
	}
	if err := l.Teardown(ctx, code, conf); err != nil {
		t.Errorf("second teardown: %v", err)
	}
}

func TestLocalUnknownDBMS(t *testing.T) {
	t.Parallel()
	l := newLocal(t)
	_, err := l.Deploy(t.Context(), backend.Spec{Code: "1", Configuration: "MySQL-1", DBMS: "MySQL", Benchmark: "ycsb"})
	if !errors.Is(err, catalog.ErrUnknownDBMS) {
		t.Fatalf("err = %v, want ErrUnknownDBMS", err)
	}
	if want := `deploy MySQL-1: unknown DBMS "MySQL"; known: ` + strings.Join(catalog.Names(), ", "); err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	if _, err := os.Stat(l.Root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an unknown DBMS should leave nothing behind: %v", err)
	}
}

func TestLocalRefusesKubernetesOnlyDBMS(t *testing.T) {
	t.Parallel()
	l := newLocal(t)
	for _, dbms := range []string{"Dragonfly", "DragonflyCluster"} {
		_, err := l.Deploy(t.Context(), backend.Spec{Code: "1", Configuration: dbms + "-1", DBMS: dbms, Benchmark: "ycsb"})
		want := "deploy " + dbms + "-1: DBMS " + dbms + " needs the kubernetes backend (BENCHQ_BACKEND=kubernetes); the local backend runs only redis, postgresql, redis-cluster, pgbouncer, victoriametrics, prometheus, graphite"
		if err == nil || err.Error() != want {
			t.Errorf("Deploy(%s) = %v, want %q", dbms, err, want)
		}
	}
	if _, err := os.Stat(l.Root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused DBMS should leave nothing behind: %v", err)
	}
}

func TestLocalRejectsPathNames(t *testing.T) {
	t.Parallel()
	l := newLocal(t)
	for _, s := range []backend.Spec{
		{Code: "..", Configuration: "x", DBMS: "Redis"},
		{Code: "1", Configuration: "../../etc", DBMS: "Redis"},
		{Code: "1", Configuration: "", DBMS: "Redis"},
	} {
		if _, err := l.Deploy(t.Context(), s); err == nil || !strings.Contains(err.Error(), "invalid") {
			t.Errorf("Deploy(%+v) = %v", s, err)
		}
		if err := l.Teardown(t.Context(), s.Code, s.Configuration); err == nil {
			t.Errorf("Teardown(%q, %q) accepted", s.Code, s.Configuration)
		}
	}
}

func TestLocalTeardownOfNothing(t *testing.T) {
	t.Parallel()
	if err := newLocal(t).Teardown(t.Context(), "1", "never-deployed"); err != nil {
		t.Fatal(err)
	}
}

func TestLocalIgnores(t *testing.T) {
	if got := localIgnores(nil); got != nil {
		t.Errorf("nil spec: %v", got)
	}
	got := strings.Join(localIgnores(&contracts.SUTSpec{Storage: &contracts.Storage{Class: "local", Size: "1Gi"}, Node: "n", Workers: 3}), "; ")
	if got != "-rnn ignored: the local backend runs everything on this machine; -rss ignored: on the local backend a volume is a directory, without a size" {
		t.Errorf("got %q", got)
	}
	// Without -rst, -rss is an ephemeral-storage request, not a volume's size.
	if got := strings.Join(localIgnores(&contracts.SUTSpec{Storage: &contracts.Storage{Size: "1Gi"}}), "; "); got != "-rss ignored: without -rst it asks for ephemeral storage, which the local backend does not bound" {
		t.Errorf("-rss alone: got %q", got)
	}
}

// A SUT found dead when its teardown comes is named (sut.removed's died):
// its phase may have failed on the symptoms before the watch saw it.
func TestTeardownNamesADeadSUT(t *testing.T) {
	t.Parallel()
	requireServer(t, catalog.KindRedis)
	ctx := localTestCtx(t)
	l := newLocal(t)
	teardownAtEnd(t, l, "d1", "Redis-1")
	if _, err := l.Deploy(ctx, backend.Spec{Code: "d1", Configuration: "Redis-1", DBMS: "Redis", Benchmark: "ycsb"}); err != nil {
		t.Fatal(err)
	}
	// What the deployer asks at a teardown (backend.SUTWatcher).
	if got, err := l.DeadSUT(ctx, "d1", "Redis-1"); got != "" || err != nil {
		t.Errorf("alive: %q, %v", got, err)
	}
	if err := syscall.Kill(statePid(t, l, "d1", "Redis-1"), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	got := ""
	for end := time.Now().Add(5 * time.Second); got == "" && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		got, _ = l.DeadSUT(ctx, "d1", "Redis-1") // a SIGKILL takes effect in a moment
	}
	if !strings.Contains(got, "killed by signal 9") {
		t.Errorf("killed: %q", got)
	}
}
