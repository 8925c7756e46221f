package localdb

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/benchq/benchq/internal/procs"
)

func startTestPostgres(t *testing.T, ctx context.Context, dir string, opts PGOptions) *Postgres {
	t.Helper()
	if _, err := PGBinDir(); err != nil {
		skipIfNotInstalled(t, err)
		t.Fatal(err)
	}
	p, err := StartPostgres(ctx, dir, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(context.Background()); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return p
}

func queryString(t *testing.T, ctx context.Context, url, sql string) string {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	defer conn.Close(ctx)
	var s string
	if err := conn.QueryRow(ctx, sql).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

func TestPostgresStartStopRestart(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 3*time.Minute)
	dir := serverDir(t, "pg")

	p := startTestPostgres(t, ctx, dir, PGOptions{Database: "bench", Unsafe: true, Settings: map[string]string{"max_connections": "50"}})
	if p.Port == 0 || p.Pid == 0 || p.User != "postgres" {
		t.Fatalf("Postgres = %+v", p)
	}
	if want := "postgresql://postgres@127.0.0.1:" + itoa(p.Port) + "/bench?sslmode=disable"; p.URL() != want {
		t.Errorf("URL() = %q, want %q", p.URL(), want)
	}
	if got := queryString(t, ctx, p.URL(), "SELECT current_database() || ' ' || current_setting('fsync') || ' ' || current_setting('max_connections')"); got != "bench off 50" {
		t.Errorf("database, fsync, max_connections = %q", got)
	}
	if got := queryString(t, ctx, p.URL(), "SELECT 1::text"); got != "1" {
		t.Errorf("SELECT 1 = %q", got)
	}
	mustExec(t, ctx, p.URL(), "CREATE TABLE kept (x int)")

	// A second start on the live directory reuses the server.
	again, err := StartPostgres(ctx, dir, 0, PGOptions{Database: "bench"})
	if err != nil {
		t.Fatal(err)
	}
	if again.Pid != p.Pid || again.Port != p.Port {
		t.Errorf("second start = pid %d port %d, want reuse of pid %d port %d", again.Pid, again.Port, p.Pid, p.Port)
	}

	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if procs.Alive(p.Pid) {
		t.Fatal("postmaster alive after Stop")
	}
	if err := p.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if err := (&Postgres{Dir: dir}).Stop(ctx); err != nil {
		t.Errorf("Stop by dir of a stopped server: %v", err)
	}

	// Restart on the same directory: no initdb, the data is still there.
	r := startTestPostgres(t, ctx, dir, PGOptions{Database: "bench", Unsafe: true})
	if r.Pid == p.Pid {
		t.Error("restart reused a dead pid")
	}
	if got := queryString(t, ctx, r.URL(), "SELECT count(*)::text FROM kept"); got != "0" {
		t.Errorf("table kept: %q", got)
	}
	if err := (&Postgres{Dir: dir}).Stop(ctx); err != nil { // by postmaster.pid, as a restarted deployer would
		t.Fatal(err)
	}
	if procs.Alive(r.Pid) {
		t.Fatal("postmaster alive after Stop by dir")
	}
}

func mustExec(t *testing.T, ctx context.Context, url, sql string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func TestPostgresBadSettingFailsFastWithLog(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	dir := serverDir(t, "pg")
	if _, err := PGBinDir(); err != nil {
		skipIfNotInstalled(t, err)
	}
	start := time.Now()
	_, err := StartPostgres(ctx, dir, 0, PGOptions{Unsafe: true, Settings: map[string]string{"no_such_setting": "1"}})
	if err == nil {
		t.Fatal("started with a bogus setting")
	}
	for _, want := range []string{"postgres (pid", "exited", "no_such_setting", "log: " + filepath.Join(dir, "postgres.log")} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if d := time.Since(start); d > 45*time.Second {
		t.Errorf("took %s: an exited server should end the wait at once", d)
	}
}

func TestPreparePGDirUnreachable(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("only root switches to the postgres user")
	}
	if _, err := procs.LookupUser(pgOSUser); err != nil {
		t.Skip(err)
	}
	private := t.TempDir() // its parent is 0700 root
	if err := os.Chmod(filepath.Dir(private), 0o700); err != nil {
		t.Fatal(err)
	}
	err := prepareDataDir(filepath.Join(private, "pg"), pgOSUser)
	if err == nil || !strings.Contains(err.Error(), "cannot reach the data dir") {
		t.Fatalf("err = %v", err)
	}
}

func TestParsePostmasterPid(t *testing.T) {
	t.Parallel()
	pid, port, err := parsePostmasterPid([]byte("4242\n/tmp/pg\n1700000000\n54321\n/tmp/pg\n127.0.0.1\n  1234  5678\nready   \n"))
	if err != nil || pid != 4242 || port != 54321 {
		t.Errorf("= %d %d %v", pid, port, err)
	}
	if _, _, err := parsePostmasterPid([]byte("4242\n")); err == nil {
		t.Error("short file parsed")
	}
}

func TestPGArgs(t *testing.T) {
	t.Parallel()
	got := strings.Join(pgArgs("/d", 5, PGOptions{Unsafe: true, Settings: map[string]string{"fsync": "on"}}), " ")
	want := "-D /d -p 5 -c fsync=on -c full_page_writes=off -c listen_addresses=127.0.0.1 -c synchronous_commit=off -c unix_socket_directories=/d"
	if got != want {
		t.Errorf("pgArgs =\n%s\nwant\n%s", got, want)
	}
	long := "/" + strings.Repeat("x", 100)
	if got := strings.Join(pgArgs(long, 5, PGOptions{}), " "); !strings.HasSuffix(got, "unix_socket_directories=") {
		t.Errorf("long dir should disable the unix socket: %s", got)
	}
}

func TestPostgresRefusesForeignFiles(t *testing.T) {
	t.Parallel()
	if _, err := PGBinDir(); err != nil {
		skipIfNotInstalled(t, err)
	}
	ctx := testCtx(t, 2*time.Minute)
	dir := serverDir(t, "pg")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "precious.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := StartPostgres(ctx, dir, 0, PGOptions{Unsafe: true})
	if err == nil || !strings.Contains(err.Error(), "holds files but no cluster") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "precious.txt")); err != nil {
		t.Errorf("foreign file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), ".pg.initdb")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("initdb scratch dir left behind: %v", err)
	}
}

func TestPostgresPasswordAuthentication(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 3*time.Minute)
	dir := serverDir(t, "pgpw")
	pass := filepath.Join(t.TempDir(), "pgpass")
	if err := os.WriteFile(pass, []byte("*:*:*:postgres:first-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startTestPostgres(t, ctx, dir, PGOptions{Database: "bench", Unsafe: true, PassFile: pass})
	if strings.Contains(p.URL(), "secret") || !strings.Contains(p.URL(), "passfile=") {
		t.Fatalf("URL() = %q: want the password file named, never the password", p.URL())
	}
	if got := queryString(t, ctx, p.URL(), "SELECT current_setting('password_encryption')"); got != "scram-sha-256" {
		t.Errorf("password_encryption = %q", got)
	}
	if got := queryString(t, ctx, p.URL(), "SELECT (rolpassword LIKE 'SCRAM-SHA-256$%')::text FROM pg_authid WHERE rolname = 'postgres'"); got != "true" {
		t.Errorf("the stored password is not a SCRAM verifier (%s)", got)
	}
	refused := func(url string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, url)
		if err == nil {
			conn.Close(ctx)
			t.Errorf("a TCP login without the password was accepted: %s", url)
		}
	}
	noFile := "postgresql://postgres@127.0.0.1:" + itoa(p.Port) + "/bench?sslmode=disable&passfile=" + filepath.Join(t.TempDir(), "none")
	refused(noFile)
	refused("postgresql://postgres:wrong@127.0.0.1:" + itoa(p.Port) + "/bench?sslmode=disable")

	// A new password in the file is the password after a restart (benchq up
	// makes a fresh one each time, on the same data). The server logs every
	// statement from then on: the one that sets the password holds its
	// verifier (internal/pgscram), never the password.
	conn, err := pgx.Connect(ctx, p.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "ALTER SYSTEM SET log_statement = 'all'"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pass, []byte("*:*:*:postgres:second-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p2, err := StartPostgres(ctx, dir, p.Port, PGOptions{Database: "bench", Unsafe: true, PassFile: pass})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p2.Stop(context.Background()) })
	if got := queryString(t, ctx, p2.URL(), "SELECT current_user"); got != "postgres" {
		t.Errorf("current_user = %q", got)
	}
	refused("postgresql://postgres:first-secret@127.0.0.1:" + itoa(p2.Port) + "/bench?sslmode=disable")
	log, _ := os.ReadFile(filepath.Join(dir, "postgres.log"))
	if strings.Contains(string(log), "secret") {
		t.Errorf("the server log holds the password:\n%s", log)
	}
	if !strings.Contains(string(log), "PASSWORD 'SCRAM-SHA-256$4096:") {
		t.Errorf("the server log does not show the statement that set the password (log_statement = 'all'), so the check above proves nothing:\n%s", log)
	}

	// A password file others may read is refused, as libpq would ignore it.
	if err := os.Chmod(pass, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := pgpassPassword(pass); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a password file readable by others: %v", err)
	}
}

// A cluster without a password is a copy of the first one initdb made
// (pgtemplate.go): the copy has its system identifier, which initdb draws
// anew for every cluster, and works as a cluster of its own.
func TestPostgresClusterFromTemplate(t *testing.T) {
	ctx := testCtx(t, 3*time.Minute)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	const sysid = "SELECT system_identifier::text FROM pg_control_system()"

	a := startTestPostgres(t, ctx, serverDir(t, "a"), PGOptions{Unsafe: true})
	templates, _ := filepath.Glob(filepath.Join(cache, "benchq", "pg-template", "*", "PG_VERSION"))
	if len(templates) != 1 {
		t.Fatalf("templates after the first initdb: %v, want one", templates)
	}
	for _, started := range []string{"postmaster.pid", "postmaster.opts", "postgres.log"} {
		if _, err := os.Stat(filepath.Join(filepath.Dir(templates[0]), started)); err == nil {
			t.Errorf("the template holds %s: it was copied after the server started", started)
		}
	}

	b := startTestPostgres(t, ctx, serverDir(t, "b"), PGOptions{Unsafe: true})
	idA, idB := queryString(t, ctx, a.URL(), sysid), queryString(t, ctx, b.URL(), sysid)
	if idA != idB {
		t.Errorf("system identifiers %s and %s: the second cluster is not the template's copy", idA, idB)
	}
	mustExec(t, ctx, b.URL(), "CREATE TABLE only_b (x int)")
	if got := queryString(t, ctx, a.URL(), "SELECT count(*)::text FROM pg_class WHERE relname = 'only_b'"); got != "0" {
		t.Errorf("a table made in the copy is in the first cluster too (%s)", got)
	}
	stA, errA := os.Stat(a.Dir)
	stB, errB := os.Stat(b.Dir)
	if err := errors.Join(errA, errB); err != nil {
		t.Fatal(err)
	}
	if ua, ub := stA.Sys().(*syscall.Stat_t).Uid, stB.Sys().(*syscall.Stat_t).Uid; ua != ub || stB.Mode().Perm() != 0o700 {
		t.Errorf("the copy's data directory: owner %d mode %o, want owner %d mode 700", ub, stB.Mode().Perm(), ua)
	}

	// Another cache, no template: initdb, and another identifier.
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	c := startTestPostgres(t, ctx, serverDir(t, "c"), PGOptions{Unsafe: true})
	if idC := queryString(t, ctx, c.URL(), sysid); idC == idA {
		t.Errorf("a cluster initdb made has the template's identifier %s", idC)
	}
}
