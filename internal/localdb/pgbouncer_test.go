package localdb

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/benchq/benchq/internal/procs"
)

func startTestPgBouncer(t *testing.T, ctx context.Context, dir string, port int, opts PgBouncerOptions) (*PgBouncer, error) {
	t.Helper()
	if _, err := PgBouncerBinary(); err != nil {
		skipIfNotInstalled(t, err)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := (&PgBouncer{Dir: dir}).Stop(context.Background()); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return StartPgBouncer(ctx, dir, port, opts)
}

// poolURL is a pgx URL through the pool; simple protocol, as transaction
// pooling needs from clients that would otherwise keep prepared statements.
func poolURL(b *PgBouncer, database string) string {
	return "postgresql://postgres@" + b.Addr() + "/" + database + "?sslmode=disable&default_query_exec_mode=simple_protocol"
}

func TestPgBouncerStartStop(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 3*time.Minute)
	base := serverDir(t, "pgb")
	if err := os.Mkdir(base, 0o755); err != nil {
		t.Fatal(err)
	}
	pg := startTestPostgres(t, ctx, filepath.Join(base, "data"), PGOptions{Database: "bench", Unsafe: true})
	dir := filepath.Join(base, "pool")
	opts := PgBouncerOptions{BackendPort: pg.Port, Database: "bench", MaxClientConn: 7, PoolSize: 3}
	b, err := startTestPgBouncer(t, ctx, dir, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	if comm, _ := procs.Comm(b.Pid); comm != "pgbouncer" {
		t.Errorf("pid %d is %q", b.Pid, comm)
	}
	if got := queryString(t, ctx, poolURL(b, "bench"), "SELECT current_database() || ' as ' || current_user"); got != "bench as postgres" {
		t.Errorf("through the pool: %q", got)
	}

	// The admin console shows the limits and transaction pooling.
	conn, err := pgx.Connect(ctx, poolURL(b, "pgbouncer"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, "SHOW CONFIG")
	if err != nil {
		t.Fatal(err)
	}
	config := map[string]string{}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		config[fmt.Sprint(vals[0])] = fmt.Sprint(vals[1])
	}
	rows.Close()
	conn.Close(ctx)
	for k, want := range map[string]string{"max_client_conn": "7", "default_pool_size": "3", "max_db_connections": "3", "pool_mode": "transaction", "listen_port": strconv.Itoa(b.Port)} {
		if config[k] != want {
			t.Errorf("SHOW CONFIG %s = %q, want %q", k, config[k], want)
		}
	}

	// Transaction pooling: 6 clients in transactions at once share 3 server
	// connections, so at most 3 backends ever serve the pool.
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := pgx.Connect(ctx, poolURL(b, "bench"))
			if err != nil {
				errs <- err
				return
			}
			defer c.Close(ctx)
			_, err = c.Exec(ctx, "SELECT pg_sleep(0.2)")
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n, _ := strconv.Atoi(queryString(t, ctx, pg.URL(), "SELECT count(*)::text FROM pg_stat_activity WHERE datname = 'bench' AND pid <> pg_backend_pid()")); n < 1 || n > 3 {
		t.Errorf("%d backend connections, want 1 to 3", n)
	}

	again, err := StartPgBouncer(ctx, dir, 0, opts)
	if err != nil || again.Pid != b.Pid || again.Port != b.Port {
		t.Errorf("second start = %+v, %v; want reuse of %+v", again, err, b)
	}
	// A new backend port rewrites the configuration and restarts the pool on its port.
	moved := opts
	moved.BackendPort = pg.Port + 1
	moved.Timeout = 500 * time.Millisecond
	if _, err := StartPgBouncer(ctx, dir, 0, moved); err == nil {
		t.Error("started in front of a backend that is not there")
	}
	if port, err := PgBouncerPort(dir); err != nil || port != b.Port {
		t.Errorf("PgBouncerPort = %d, %v; want %d", port, err, b.Port)
	}
	restarted, err := StartPgBouncer(ctx, dir, b.Port, opts)
	if err != nil || restarted.Port != b.Port || restarted.Pid == b.Pid {
		t.Errorf("restart = %+v, %v", restarted, err)
	}

	if err := (&PgBouncer{Dir: dir}).Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if procs.Alive(restarted.Pid) {
		t.Error("pgbouncer alive after Stop")
	}
}

func TestPgBouncerPortTaken(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = startTestPgBouncer(t, ctx, serverDir(t, "pgb"), port, PgBouncerOptions{BackendPort: 1})
	if err == nil {
		t.Fatal("started on a taken port")
	}
	t.Log(err)
	if !strings.Contains(err.Error(), "pgbouncer (pid") {
		t.Errorf("error %q does not say that pgbouncer exited", err)
	}
}

func TestPgBouncerINI(t *testing.T) {
	t.Parallel()
	got := pgbouncerINI("/data/pool-0", 6432, PgBouncerOptions{BackendPort: 5433, MaxClientConn: 32, PoolSize: 8, Settings: map[string]string{"server_lifetime": "60"}})
	want := `;; written by benchq (internal/localdb); rewritten on every start
[databases]
* = host=127.0.0.1 port=5433 user=postgres

[pgbouncer]
admin_users = postgres
auth_type = any
default_pool_size = 8
ignore_startup_parameters = extra_float_digits
listen_addr = 127.0.0.1
listen_port = 6432
max_client_conn = 32
max_db_connections = 8
pool_mode = transaction
server_lifetime = 60
stats_users = postgres
unix_socket_dir = 
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestPgBouncerVersion(t *testing.T) {
	t.Parallel()
	if v, err := parseVersion("PgBouncer 1.18.0\nlibevent 2.1.12-stable\n"); err != nil || v != "PgBouncer 1.18.0" {
		t.Errorf("parseVersion = %q, %v", v, err)
	}
	bin, err := PgBouncerBinary()
	if err != nil {
		skipIfNotInstalled(t, err)
		t.Fatal(err)
	}
	if v, err := Version(testCtx(t, 30*time.Second), bin); err != nil || !strings.HasPrefix(v, "PgBouncer 1.") {
		t.Errorf("Version(%s) = %q, %v", bin, v, err)
	}
}
