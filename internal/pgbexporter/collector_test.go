package pgbexporter

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/testenv"
)

func startPgBouncer(t *testing.T, ctx context.Context) *localdb.PgBouncer {
	t.Helper()
	if _, err := localdb.PgBouncerBinary(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	pg := testenv.StartPostgres(t, localdb.PGOptions{Database: "bench", Unsafe: true})
	// Beside the data directory: its parent lets the postgres OS user
	// through, which pgbouncer runs as when we are root.
	dir := filepath.Join(filepath.Dir(pg.Dir), "pool")
	t.Cleanup(func() {
		if err := (&localdb.PgBouncer{Dir: dir}).Stop(context.Background()); err != nil {
			t.Errorf("stop pgbouncer: %v", err)
		}
	})
	b, err := localdb.StartPgBouncer(ctx, dir, 0, localdb.PgBouncerOptions{BackendPort: pg.Port, Database: "bench", PoolSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func poolURL(b *localdb.PgBouncer, database string) string {
	return "postgresql://postgres@" + b.Addr() + "/" + database + "?sslmode=disable&default_query_exec_mode=simple_protocol"
}

func TestCollectorAgainstPgBouncer(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	b := startPgBouncer(t, ctx)
	// The console URL as a caller would give it, without the simple
	// protocol: New must force it.
	c, err := New("postgresql://postgres@"+b.Addr()+"/pgbouncer?sslmode=disable", 0, testenv.Logger(t, "pgbexporter"))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	xacts := func() float64 {
		return gathered(t, reg, "pgbouncer_stats_total_xact_count", `database="bench"`)
	}
	if n, err := testutil.GatherAndCount(reg, "pgbouncer_up"); err != nil || n != 1 {
		t.Fatalf("pgbouncer_up: %d series, %v", n, err)
	}
	before := xacts()

	conn, err := pgx.Connect(ctx, poolURL(b, "bench"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for range 7 {
		if _, err := conn.Exec(ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
	}
	// SHOW STATS' totals lag the pool by up to a second or so.
	testenv.Eventually(t, 30*time.Second, func() error {
		if d := xacts() - before; d < 7 {
			return fmt.Errorf("%v transactions counted", d)
		}
		return nil
	})
	if d := xacts() - before; d != 7 {
		t.Errorf("%v transactions counted, want 7", d)
	}

	// A client inside a transaction holds a server connection (transaction pooling).
	if _, err := conn.Exec(ctx, "BEGIN; SELECT 1"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mustHandler(t, "postgresql://postgres@"+b.Addr()+"/pgbouncer?sslmode=disable"))
	defer srv.Close()
	body := get(t, srv.URL)
	for _, want := range []string{
		"pgbouncer_up 1",
		`pgbouncer_pools_client_active_connections{database="bench",user="postgres"} 1`,
		`pgbouncer_pools_server_active_connections{database="bench",user="postgres"} 1`,
		`pgbouncer_pools_client_waiting_connections{database="bench",user="postgres"} 0`,
		"# TYPE pgbouncer_stats_total_query_count counter",
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("no %q in\n%s", want, body)
		}
	}
	// The next scrape reads on the kept console connection.
	if body := get(t, srv.URL); !strings.Contains(body, "pgbouncer_up 1\n") {
		t.Errorf("second scrape:\n%s", body)
	}
	if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}

	// PgBouncer gone: up is 0 and nothing else is exported (never zeros).
	if err := b.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	body = get(t, srv.URL)
	if !strings.Contains(body, "pgbouncer_up 0\n") || strings.Contains(body, "pgbouncer_pools") || strings.Contains(body, "pgbouncer_stats") {
		t.Errorf("after stop:\n%s", body)
	}
}

func mustHandler(t *testing.T, url string) http.Handler {
	t.Helper()
	h, err := Handler(url, 0, testenv.Logger(t, "pgbexporter"))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}

// gathered returns the value of the one series of name whose labels contain
// sel, gathered from reg now.
func gathered(t *testing.T, reg *prometheus.Registry, name, sel string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			if strings.Contains(strings.Join(ls, ","), sel) {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no %s{%s}", name, sel)
	return 0
}
