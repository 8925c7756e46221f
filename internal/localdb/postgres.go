package localdb

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/benchq/benchq/internal/procs"
)

// pgOSUser is the OS account postgres runs as when we are root (the server
// refuses to run as root); it is also the database superuser initdb creates.
const pgOSUser = "postgres"

// PGOptions tune StartPostgres.
type PGOptions struct {
	// Database is created if missing ("" = only the built-in "postgres").
	Database string
	// Unsafe turns off fsync, synchronous_commit and full_page_writes: much
	// faster, and a crash of the machine loses the data. For throwaway
	// stores (tests); a benchmarked SUT should keep its durability settings.
	Unsafe bool
	// Settings are extra server settings (postgres -c name=value).
	Settings map[string]string
	// Timeout bounds the wait for the first successful `SELECT 1`
	// (default 60s: a server recovering after a crash replays WAL first).
	Timeout time.Duration
}

// Postgres is a running PostgreSQL server.
type Postgres struct {
	Dir      string // data directory; also holds the unix socket and postgres.log
	Port     int
	Pid      int    // the postmaster
	User     string // database superuser, "postgres"
	Database string
}

// StartPostgres runs a PostgreSQL server on 127.0.0.1:port with its data in
// dir (created, and initialised with initdb if it holds no cluster yet),
// waits until `SELECT 1` succeeds over TCP and creates opts.Database if
// missing. Port 0 picks a free port. If dir's postmaster is alive already it
// is reused as it is (on its own port, whatever port says).
//
// Authentication is "trust": the server listens on loopback only and holds
// throwaway benchmark or test data, and clients (YCSB, the services) then
// need no secrets.
func StartPostgres(ctx context.Context, dir string, port int, opts PGOptions) (*Postgres, error) {
	return startInDir("postgres", dir, PGBinDir, func(dir, bin string) (*Postgres, error) {
		return startPostgres(ctx, dir, bin, port, opts)
	})
}

func startPostgres(ctx context.Context, dir, bin string, port int, opts PGOptions) (*Postgres, error) {
	osUser, err := pgRunAs("postgres")
	if err != nil {
		return nil, err
	}
	if err := preparePGDir(dir, osUser); err != nil {
		return nil, err
	}
	p := &Postgres{Dir: dir, User: pgOSUser, Database: opts.Database}
	if pid, livePort, ok := livePostmaster(dir); ok {
		p.Pid, p.Port = pid, livePort
		if err := p.waitReady(ctx, opts.Timeout); err != nil {
			return nil, err
		}
		if err := p.ensureDatabase(ctx); err != nil {
			return nil, err
		}
		return p, nil
	}
	if err := initdb(ctx, bin, dir, osUser); err != nil {
		return nil, err
	}
	if err := p.start(ctx, bin, port, osUser, opts); err != nil {
		return nil, err
	}
	if err := p.ensureDatabase(ctx); err != nil {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		return nil, errors.Join(err, p.Stop(stopCtx)) // we started it: leave nothing running
	}
	return p, nil
}

// pgRunAs is the OS user to run program (initdb and postgres, pgbouncer)
// as: postgres when we are root, which they refuse to run as, else
// ourselves ("").
func pgRunAs(program string) (string, error) {
	if os.Geteuid() != 0 {
		return "", nil
	}
	if _, err := procs.LookupUser(pgOSUser); err != nil {
		return "", fmt.Errorf("%s refuses to run as root and there is no %q user to run it as: %w", program, pgOSUser, err)
	}
	return pgOSUser, nil
}

// preparePGDir creates dir (mode 0700, owned by osUser) and checks that
// osUser can reach it: initdb's own error for an unreachable parent is
// obscure.
func preparePGDir(dir, osUser string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	if osUser == "" {
		return nil
	}
	u, err := procs.LookupUser(osUser)
	if err != nil {
		return err
	}
	if err := os.Chown(dir, int(u.UID), int(u.GID)); err != nil {
		return fmt.Errorf("chown data dir to %s: %w", osUser, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("chmod data dir: %w", err)
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("data dir parent: %w", err)
		}
		sys := st.Sys().(*syscall.Stat_t)
		mode := st.Mode().Perm()
		canEnter := mode&0o001 != 0 || (sys.Uid == u.UID && mode&0o100 != 0) || (sys.Gid == u.GID && mode&0o010 != 0)
		if !canEnter {
			return fmt.Errorf("user %s cannot reach the data dir: %s is mode %o owned by uid %d (make it o+x, or put the data elsewhere)", osUser, d, mode, sys.Uid)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// livePostmaster reads dir/postmaster.pid and reports a live postmaster's pid
// and port. A stale file (dead pid, or a pid reused by another program) is
// removed so that the new postmaster does not trip over it.
func livePostmaster(dir string) (pid, port int, ok bool) {
	path := filepath.Join(dir, "postmaster.pid")
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	pid, port, err = parsePostmasterPid(b)
	if err == nil && procs.Alive(pid) {
		if comm, _ := procs.Comm(pid); comm == "postgres" {
			return pid, port, true
		}
	}
	_ = os.Remove(path)
	return 0, 0, false
}

// parsePostmasterPid extracts pid (line 1) and port (line 4) of postmaster.pid.
func parsePostmasterPid(b []byte) (pid, port int, err error) {
	lines := strings.Split(string(b), "\n")
	if len(lines) < 4 {
		return 0, 0, fmt.Errorf("postmaster.pid: %d lines, want at least 4", len(lines))
	}
	if pid, err = strconv.Atoi(strings.TrimSpace(lines[0])); err != nil {
		return 0, 0, fmt.Errorf("postmaster.pid: pid: %w", err)
	}
	if port, err = strconv.Atoi(strings.TrimSpace(lines[3])); err != nil {
		return 0, 0, fmt.Errorf("postmaster.pid: port: %w", err)
	}
	return pid, port, nil
}

// initdb creates the cluster in a sibling directory and renames it into
// place, so that an interrupted initdb (a cancelled deploy) never leaves a
// half-made cluster that looks initialised.
func initdb(ctx context.Context, bin, dir, osUser string) error {
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err == nil {
		return nil
	}
	// dir may be a link to the data's real place (a persistent volume):
	// the cluster is made beside that place, and the link kept.
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	tmp := filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".initdb")
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	if err := preparePGDir(tmp, osUser); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	if _, err := procs.Run(ctx, procs.Spec{
		Name: "initdb",
		Path: filepath.Join(bin, "initdb"),
		Args: []string{"-D", tmp, "-U", pgOSUser, "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions"},
		Dir:  tmp, // the caller's cwd may be unreadable for the postgres user
		User: osUser,
	}); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	// os.Remove deletes dir only while it is empty: anything else in it is
	// not ours to delete.
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("initdb: %s holds files but no cluster (no PG_VERSION); remove it or use another directory: %w", dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("initdb: %w", err)
	}
	return nil
}

func (p *Postgres) logFile() string { return filepath.Join(p.Dir, "postgres.log") }

// start launches the postmaster and waits until it answers. A postmaster
// that does not become ready is stopped: nothing is left behind.
func (p *Postgres) start(ctx context.Context, bin string, port int, osUser string, opts PGOptions) error {
	return listen(port, port == 0, func(port int) error {
		p.Port = port
		pid, err := procs.Start(procs.Spec{
			Name:    "postgres",
			Path:    filepath.Join(bin, "postgres"),
			Args:    pgArgs(p.Dir, p.Port, opts),
			Dir:     p.Dir,
			User:    osUser,
			LogFile: p.logFile(),
		})
		if err != nil {
			return err
		}
		p.Pid = pid
		if err := p.waitReady(ctx, opts.Timeout); err != nil {
			stopFailedStart(ctx, func(ctx context.Context) error { return procs.Stop(ctx, pid, 5*time.Second) })
			return err
		}
		return nil
	})
}

func pgArgs(dir string, port int, opts PGOptions) []string {
	settings := map[string]string{
		"listen_addresses": "127.0.0.1",
		// A unix socket path is limited to 107 bytes; deep directories
		// (per-experiment, per-configuration) can exceed it: TCP only then.
		"unix_socket_directories": dir,
	}
	if len(dir)+len("/.s.PGSQL.65535") > 107 {
		settings["unix_socket_directories"] = ""
	}
	if opts.Unsafe {
		settings["fsync"] = "off"
		settings["synchronous_commit"] = "off"
		settings["full_page_writes"] = "off"
	}
	for k, v := range opts.Settings {
		settings[k] = v
	}
	args := []string{"-D", dir, "-p", strconv.Itoa(port)}
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		args = append(args, "-c", k+"="+settings[k])
	}
	return args
}

// waitReady polls `SELECT 1` over TCP until it succeeds, the postmaster
// exits, or the timeout passes (default 60s: a server recovering after a
// crash replays WAL first).
func (p *Postgres) waitReady(ctx context.Context, timeout time.Duration) error {
	return waitReady(ctx, "postgres", p.Pid, p.logFile(), fmt.Sprintf("postgres SELECT 1 on 127.0.0.1:%d", p.Port), orDefault(timeout, 60*time.Second), 100*time.Millisecond, func(ctx context.Context) error {
		return selectOne(ctx, p.url("postgres"))
	})
}

func (p *Postgres) ensureDatabase(ctx context.Context) error {
	if p.Database == "" || p.Database == "postgres" {
		return nil
	}
	conn, err := pgx.Connect(ctx, p.url("postgres"))
	if err != nil {
		return fmt.Errorf("create database %s: %w", p.Database, err)
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", p.Database).Scan(&exists); err != nil {
		return fmt.Errorf("create database %s: %w", p.Database, err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{p.Database}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // duplicate_database: a concurrent starter won
		err = nil
	}
	if err != nil {
		return fmt.Errorf("create database %s: %w", p.Database, err)
	}
	return nil
}

// URL is a libpq/pgx connection URL for p.Database (trust auth, no TLS).
func (p *Postgres) URL() string { return p.url(p.Database) }

func (p *Postgres) url(database string) string {
	if database == "" {
		database = "postgres"
	}
	u := url.URL{
		Scheme:   "postgresql",
		User:     url.User(p.User),
		Host:     fmt.Sprintf("127.0.0.1:%d", p.Port),
		Path:     "/" + database,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// Stop shuts the server down ("fast": open sessions are ended) and waits for
// it to exit, killing it after 30s. It is a no-op when no server runs;
// a zero Pid is looked up in Dir's postmaster.pid.
func (p *Postgres) Stop(ctx context.Context) error {
	pid := p.Pid
	if pid == 0 {
		var ok bool
		if pid, _, ok = livePostmaster(p.Dir); !ok {
			return nil
		}
	}
	if err := procs.Signal(ctx, pid, syscall.SIGINT, 30*time.Second); err != nil {
		return fmt.Errorf("stop postgres in %s: %w", p.Dir, err)
	}
	return nil
}
