package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/prom"
	"github.com/benchq/benchq/internal/startup"
	"github.com/benchq/benchq/internal/testenv"
	"github.com/benchq/benchq/services/deployer/backend"
)

// Monitoring on the local backend, with real servers and exporters: the
// trees of the SUT (and the pool) are exported with CPU and memory after
// some load, each exporter answers with its DBMS's series and has its
// file_sd target, a restarted deployer exports and serves the same again,
// and the teardown leaves no exporter and no target behind.
func TestLocalMonitoring(t *testing.T) {
	for _, exe := range []string{redisExporterBin, postgresExporterBin} {
		if _, err := os.Stat(exe); err != nil {
			t.Skipf("skipping: %v", err)
		}
	}
	on := &contracts.Monitoring{SUT: true, Cluster: true, Application: true}
	for _, c := range []struct {
		dbms, kind, conf string
		sut              *contracts.SUTSpec
		components       []string
		prefixes         map[string]string // exporter name → a series it must serve
		load             func(ctx context.Context, d backend.Deployed) error
	}{
		{"Redis", catalog.KindRedis, "Redis-1", &contracts.SUTSpec{Monitoring: on}, []string{"sut"},
			map[string]string{"redis": "redis_up 1"}, loadRedis},
		{"PostgreSQL", catalog.KindPostgreSQL, "PostgreSQL-1", &contracts.SUTSpec{Monitoring: on}, []string{"sut"},
			map[string]string{"postgres": "pg_up 1"}, loadPostgres},
		{"PgBouncer", catalog.KindPgBouncer, "PgBouncer-1", &contracts.SUTSpec{Monitoring: on, Pool: &contracts.Pool{Pods: 2, Inbound: 16, Outbound: 4}},
			[]string{"sut", "pool"}, map[string]string{"postgres": "pg_up 1", "pgbouncer-0": "pgbouncer_up 1", "pgbouncer-1": "pgbouncer_up 1"}, loadPools},
	} {
		t.Run(c.dbms, func(t *testing.T) {
			if c.kind == catalog.KindPgBouncer {
				requirePgBouncer(t)
			} else {
				requireServer(t, c.kind)
			}
			ctx := localTestCtx(t)
			l := newLocal(t)
			l.TargetsDir = t.TempDir()
			// As the stack runs them: every SUT requires its own password,
			// and each exporter logs in with it (its DBMS's up series is 1).
			l.SUT = startup.SUTKey(testKey)
			code := "1700000100"
			d, err := l.Deploy(ctx, backend.Spec{Code: code, Configuration: c.conf, DBMS: c.dbms, Benchmark: "ycsb", SUT: c.sut})
			if err != nil {
				t.Fatal(err)
			}
			teardownAtEnd(t, l, code, c.conf)
			// Neither no password, nor the key, nor another SUT's password
			// (the same configuration of another experiment) lets a client in.
			for what, pw := range map[string]string{"no password": "", "the stack's key": testKey,
				"another SUT's password": l.SUT.PasswordOf("1700000101", c.conf)} {
				d.Endpoint.Password = pw
				if err := c.load(ctx, d); err == nil {
					t.Errorf("%s let a client in with %s", c.dbms, what)
				}
			}
			d.Endpoint.Password = l.SUT.PasswordOf(code, c.conf)
			if err := c.load(ctx, d); err != nil {
				t.Fatal(err)
			}
			checkTrees(t, l, code, c.conf, c.dbms, c.components)

			dir, _ := l.dir(code, c.conf)
			st, err := readState(dir)
			if err != nil {
				t.Fatal(err)
			}
			checkExporters(t, ctx, l, code, c.conf, c.dbms, st, c.prefixes)
			checkEdgeReads(t, ctx, l, code, c.conf, c.components, st)
			var pids []int
			files, _ := filepath.Glob(filepath.Join(dir, exporterPrefix+"*.pid"))
			for _, f := range files {
				pid, err := procs.ReadPidFile(f)
				if err != nil || !procs.Alive(pid) {
					t.Fatalf("%s: pid %d alive %v (%v)", f, pid, procs.Alive(pid), err)
				}
				pids = append(pids, pid)
			}

			// The deployer crashes (its in-process exporters go with it) and
			// another starts on the same directories.
			l.mon.mu.Lock()
			for _, srv := range l.mon.served {
				_ = srv.Close()
			}
			l.mon.mu.Unlock()
			restarted := &Local{Root: l.Root, TargetsDir: l.TargetsDir, SUT: l.SUT}
			checkTrees(t, restarted, code, c.conf, c.dbms, c.components)
			if st, err = readState(dir); err != nil {
				t.Fatal(err)
			}
			checkExporters(t, ctx, restarted, code, c.conf, c.dbms, st, c.prefixes)

			if err := restarted.Teardown(ctx, code, c.conf); err != nil {
				t.Fatal(err)
			}
			for _, pid := range pids {
				if procs.Alive(pid) {
					t.Errorf("exporter pid %d still runs after the teardown", pid)
				}
			}
			for _, e := range st.Exporters {
				if err := scrape(ctx, e.Addr); err == nil {
					t.Errorf("exporter %s still answers on %s after the teardown", e.Name, e.Addr)
				}
			}
			if left, _ := filepath.Glob(filepath.Join(l.TargetsDir, "*.json")); len(left) != 0 {
				t.Errorf("targets left after the teardown: %v", left)
			}
			if n := len(gatherTrees(t, restarted)); n != 0 {
				t.Errorf("%d trees exported after the teardown", n)
			}
		})
	}
}

func loadRedis(ctx context.Context, d backend.Deployed) error {
	ep := d.Endpoint
	addr := fmt.Sprintf("%s:%d", ep.Host, ep.Port)
	_, err := localdb.RedisCommandAs(ctx, addr, ep.Password, "EVAL", "for i=1,300000 do redis.call('SET','k'..i,i) end return 1", "0")
	return err
}

func loadPostgres(ctx context.Context, d backend.Deployed) error {
	return query(ctx, d.Endpoint, fmt.Sprintf("%s:%d", d.Endpoint.Host, d.Endpoint.Port), 1)
}

// loadPools keeps every pgbouncer busy with round trips, and the backend
// with a query.
func loadPools(ctx context.Context, d backend.Deployed) error {
	for _, addr := range strings.Split(fmt.Sprint(d.Info["pool_endpoints"]), ",") {
		if err := query(ctx, d.Endpoint, addr, 3000); err != nil {
			return err
		}
	}
	return nil
}

func query(ctx context.Context, ep contracts.Endpoint, addr string, roundTrips int) error {
	u := url.URL{Scheme: "postgresql", User: url.UserPassword(ep.User, ep.Password), Host: addr, Path: "/" + ep.Database,
		RawQuery: "sslmode=disable&default_query_exec_mode=simple_protocol"}
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err = conn.Exec(ctx, "SELECT count(*) FROM generate_series(1, 3000000)"); err != nil {
		return err
	}
	for range roundTrips - 1 {
		if _, err = conn.Exec(ctx, "SELECT 1"); err != nil {
			return err
		}
	}
	return nil
}

// testKey is the stack's SUT key of the tests that set one (each SUT's
// password derives from it): the characters that need quoting in
// redis.conf, pgbouncer's auth_file, a URL and a Java properties file,
// which no derived password has.
const testKey = `p@ss:w'o"rd\ #=x`

// tree is one exported component's figures.
type tree struct {
	cpu, mem float64
	labels   map[string]string
}

// gatherTrees scrapes l's collectors as the deployer's /metrics does.
func gatherTrees(t *testing.T, l *Local) map[string]*tree {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range l.Collectors() {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*tree{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			tr := out[l["pod"]]
			if tr == nil {
				tr = &tree{labels: l}
				out[l["pod"]] = tr
			}
			switch mf.GetName() {
			case "container_cpu_usage_seconds_total":
				tr.cpu = m.GetCounter().GetValue()
			case "container_memory_working_set_bytes":
				tr.mem = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

func checkTrees(t *testing.T, l *Local, code, conf, dbms string, components []string) {
	t.Helper()
	trees := gatherTrees(t, l)
	seen := map[string]bool{}
	for pod, tr := range trees {
		seen[tr.labels["component"]] = true
		t.Logf("%s: %s cpu %.2fs, memory %.1f MiB", pod, tr.labels["component"], tr.cpu, tr.mem/(1<<20))
		if tr.labels["experiment"] != code || tr.labels["configuration"] != conf || tr.labels["dbms"] != dbms || tr.labels["phase"] != "" {
			t.Errorf("%s: labels %v", pod, tr.labels)
		}
		if tr.cpu <= 0 || tr.mem <= 0 {
			t.Errorf("%s: cpu %.3fs, memory %.0f bytes; want both above 0", pod, tr.cpu, tr.mem)
		}
	}
	for _, c := range components {
		if !seen[c] {
			t.Errorf("no tree of component %s among %d", c, len(trees))
		}
	}
}

func checkExporters(t *testing.T, ctx context.Context, l *Local, code, conf, dbms string, st localState, want map[string]string) {
	t.Helper()
	if len(st.Exporters) != len(want) {
		t.Errorf("exporters %+v, want %d", st.Exporters, len(want))
	}
	for _, e := range st.Exporters {
		body := get(t, ctx, "http://"+e.Addr+"/metrics")
		if !strings.Contains(body, "\n"+want[e.Name]+"\n") {
			t.Errorf("exporter %s on %s does not serve %q", e.Name, e.Addr, want[e.Name])
		}
		b, err := os.ReadFile(filepath.Join(l.TargetsDir, targetName(code, conf, e.Name)+".json"))
		if err != nil {
			t.Errorf("target of %s: %v", e.Name, err)
			continue
		}
		var groups []prom.Group
		if err := json.Unmarshal(b, &groups); err != nil || len(groups) != 1 {
			t.Fatalf("target of %s: %v %s", e.Name, err, b)
		}
		g := groups[0]
		wantLabels := map[string]string{"experiment": code, "configuration": conf, "dbms": dbms, "component": e.Component}
		if fmt.Sprint(g.Targets) != "["+e.Addr+"]" || fmt.Sprint(g.Labels) != fmt.Sprint(wantLabels) {
			t.Errorf("target of %s: %+v, want [%s] %v", e.Name, g, e.Addr, wantLabels)
		}
	}
}

func get(t *testing.T, ctx context.Context, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// checkEdgeReads reads the SUT as the deployer does at a phase's edges:
// each component's CPU counter, and every exporter with a value for each
// application metric of its component's catalog set (the SUT was loaded,
// so the counters are above 0 where the set has them).
func checkEdgeReads(t *testing.T, ctx context.Context, l *Local, code, conf string, components []string, st localState) {
	t.Helper()
	cpu, ok := l.ReadCPU(code, conf)
	for _, c := range components {
		if !ok || !(cpu[c] > 0) {
			t.Errorf("ReadCPU: %v (%v), want %s above 0", cpu, ok, c)
		}
	}
	reads, ok := l.ReadExporters(ctx, code, conf)
	if !ok || len(reads) != len(st.Exporters) {
		t.Fatalf("ReadExporters: %+v (%v), want one read per exporter %+v", reads, ok, st.Exporters)
	}
	sets, err := catalog.ApplicationSetsOf(st.DBMS)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reads {
		i := slices.IndexFunc(st.Exporters, func(e exporter) bool { return e.Addr == r.Instance })
		if i < 0 || st.Exporters[i].Component != r.Component {
			t.Errorf("read of %s (%s): no such exporter", r.Instance, r.Component)
			continue
		}
		for _, m := range sets[r.Component].Metrics {
			if _, ok := r.Values[m.Key]; !ok {
				t.Errorf("exporter %s: no %s (%s) in its read %v", st.Exporters[i].Name, m.Key, m.Series, r.Values)
			}
		}
	}
	if _, ok := l.ReadExporters(ctx, code, "no-such-configuration"); ok {
		t.Error("ReadExporters read a configuration that has none")
	}
}

// An exporter whose picked port another process took before it bound it
// (side-by-side stacks pick from the same range) starts again on another
// port, and one that fails for another reason is not started again.
func TestExporterStartsAgainWhenItsPortIsTaken(t *testing.T) {
	if _, err := os.Stat(redisExporterBin); err != nil {
		t.Skipf("skipping: %v", err)
	}
	taken := testenv.HeldPort(t)
	var picked []int
	pick := func() (int, error) {
		p := taken
		if len(picked) > 0 {
			var err error
			if p, err = procs.FreePort(); err != nil {
				return 0, err
			}
		}
		picked = append(picked, p)
		return p, nil
	}
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o755) // the exporter runs as the SUTs' account
	// Redis need not run: the exporter serves /metrics (redis_up 0) anyway.
	e := wanted{exporter: exporter{Name: "redis", Component: "sut"}, Path: redisExporterBin, Args: []string{"-redis.addr", "redis://127.0.0.1:1"}}
	addr, err := startExporter(dir, e, "", pick)
	if err != nil {
		t.Fatalf("exporter not started again on another port: %v (ports tried %v)", err, picked)
	}
	t.Cleanup(func() {
		if pid, err := procs.ReadPidFile(filepath.Join(dir, exporterPrefix+"redis.pid")); err == nil {
			_ = procs.Stop(context.Background(), pid, 5*time.Second)
		}
	})
	if len(picked) != 2 || addr != fmt.Sprintf("127.0.0.1:%d", picked[1]) {
		t.Errorf("exporter on %s after ports %v: want the second port", addr, picked)
	}
	if err := scrape(context.Background(), addr); err != nil {
		t.Errorf("exporter on %s: %v", addr, err)
	}

	// An exporter that fails for another reason is reported, not retried,
	// though its log (appended to by every start) still holds the first
	// start's "address already in use" (procs.LogTail reads the last start).
	picked = nil
	bad := wanted{exporter: exporter{Name: "redis", Component: "sut"}, Path: "/bin/sh", Args: []string{"-c", "echo the exporter failed for its own reason; exit 3"}}
	if _, err := startExporter(dir, bad, "", func() (int, error) { picked = append(picked, 0); return procs.FreePort() }); err == nil || errors.Is(err, localdb.ErrAddrInUse) || len(picked) != 1 {
		t.Errorf("a failing exporter: %v after %d start(s); want its own error after one", err, len(picked))
	}
}
