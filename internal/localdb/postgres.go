package localdb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
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

	"github.com/benchq/benchq/internal/atomicfile"
	"github.com/benchq/benchq/internal/pgscram"
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
	// PassFile turns on password authentication: a TCP connection logs in
	// as the superuser with the password in this pgpass file (one line
	// host:port:database:user:password, mode 0600), checked with
	// scram-sha-256. The URL names the file (passfile=), which libpq and
	// pgx read, so no password travels in a URL, a flag or a log. The unix
	// socket in the data directory, which only its owner reaches, stays
	// trusted: that is how each start sets the password of the file.
	PassFile string
	// OSUser is the OS account the server runs as when we are root
	// (default postgres; the local backend's SUTs: SUTUser).
	OSUser string
}

// Postgres is a running PostgreSQL server.
type Postgres struct {
	Dir      string // data directory; also holds the unix socket and postgres.log
	Port     int
	Pid      int    // the postmaster
	User     string // database superuser, "postgres"
	Database string
	PassFile string // PGOptions.PassFile
}

// StartPostgres runs a PostgreSQL server on 127.0.0.1:port with its data in
// dir (created, and initialised with initdb if it holds no cluster yet),
// waits until `SELECT 1` succeeds over TCP and creates opts.Database if
// missing. Port 0 picks a free port. If dir's postmaster is alive already it
// is reused as it is (on its own port, whatever port says).
//
// Authentication is "trust" unless opts.PassFile is set: a SUT listens on
// loopback only and holds throwaway benchmark data, and its drivers then
// need no secrets; the stack's results database uses a password.
func StartPostgres(ctx context.Context, dir string, port int, opts PGOptions) (*Postgres, error) {
	return startInDir("postgres", dir, PGBinDir, func(dir, bin string) (*Postgres, error) {
		return startPostgres(ctx, dir, bin, port, opts)
	})
}

func startPostgres(ctx context.Context, dir, bin string, port int, opts PGOptions) (*Postgres, error) {
	osUser, err := runAs("postgres", opts.OSUser, pgOSUser)
	if err != nil {
		return nil, err
	}
	if err := prepareDataDir(dir, osUser); err != nil {
		return nil, err
	}
	p := &Postgres{Dir: dir, User: pgOSUser, Database: opts.Database, PassFile: opts.PassFile}
	password := ""
	if p.PassFile != "" {
		if password, err = pgpassPassword(p.PassFile); err != nil {
			return nil, err
		}
	}
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
	// A start sets the password on the unix socket (waitReadyWithPassword):
	// initdb needs it only where the socket cannot be made.
	initPassword := ""
	if socketTooLong(dir) {
		initPassword = password
	}
	if err := initdb(ctx, bin, dir, osUser, initPassword); err != nil {
		return nil, err
	}
	if p.PassFile != "" {
		if err := writeHBA(dir); err != nil {
			return nil, err
		}
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

// SUTUser is the OS account the local backend runs the systems under test
// and their exporters as when benchq runs as root: one that owns nothing
// of the stack — not the results database's data or socket (postgres'),
// not its keys, logs or state (root's) — so a SUT superuser's
// COPY ... TO PROGRAM, which runs as the server's OS user, reaches none of
// it. make bootstrap creates it (useradd --system benchq-sut).
const SUTUser = "benchq-sut"

// runAs is the OS user to run program as when we are root: user, or def
// when user is ""; "" (ourselves) when we are not root. postgres, initdb
// and pgbouncer refuse to run as root.
func runAs(program, user, def string) (string, error) {
	if os.Geteuid() != 0 {
		return "", nil
	}
	user = cmp.Or(user, def)
	if user == "" {
		return "", nil
	}
	if _, err := procs.LookupUser(user); err != nil {
		fix := ""
		if user == SUTUser {
			fix = " (make bootstrap creates it: useradd --system " + SUTUser + ")"
		}
		return "", fmt.Errorf("%s runs as the OS user %q, which does not exist%s: %w", program, user, fix, err)
	}
	return user, nil
}

// PrepareDir is the directory of a server that runs as osUser when we are
// root ("": ours): it checks the account exists, creates dir (0700) for it
// and returns the account to run program as ("" when not root).
func PrepareDir(program, dir, osUser string) (string, error) {
	user, err := runAs(program, osUser, "")
	if err != nil {
		return "", err
	}
	return user, prepareDataDir(dir, user)
}

// prepareDataDir creates dir (mode 0700, owned by osUser) and checks that
// osUser can reach it: initdb's own error for an unreachable parent is
// obscure. A dir that belongs to another user (data kept from a run as
// another OS user) is handed over whole.
func prepareDataDir(dir, osUser string) error {
	// Parents it makes are 0755: the account that runs the server must
	// pass through them (checked below).
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create data dir: %w", err)
	}
	if osUser == "" {
		return nil
	}
	u, err := procs.LookupUser(osUser)
	if err != nil {
		return err
	}
	if err := chownTree(dir, u.UID, u.GID); err != nil {
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

// chownTree makes dir uid's; when dir belonged to someone else, everything
// in it too (without following links).
func chownTree(dir string, uid, gid uint32) error {
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		dir = resolved // a link to the data's real place (a persistent volume)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if st.Sys().(*syscall.Stat_t).Uid == uid {
		return os.Chown(dir, int(uid), int(gid))
	}
	return filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, int(uid), int(gid))
	})
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
// half-made cluster that looks initialised. A cluster without a password is
// a copy of the template when there is one (pgtemplate.go).
func initdb(ctx context.Context, bin, dir, osUser, password string) error {
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err == nil {
		return nil
	}
	// dir may be a link to the data's real place (a persistent volume):
	// the cluster is made beside that place, and the link kept.
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		dir = resolved
	}
	tmp := filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".initdb")
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	if err := prepareDataDir(tmp, osUser); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	args := []string{"-U", pgOSUser, "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions"}
	template := pgTemplate(bin, args)
	if password == "" && fromTemplate(template, tmp, osUser) {
		return placeCluster(tmp, dir)
	}
	args = append([]string{"-D", tmp}, args...)
	if password != "" {
		// The superuser's password from the start, so that a server whose
		// unix socket cannot be made (too deep a directory) has it too.
		pwfile, err := writePWFile(filepath.Dir(tmp), password, osUser)
		if err != nil {
			_ = os.RemoveAll(tmp)
			return fmt.Errorf("initdb: %w", err)
		}
		defer os.Remove(pwfile) //nolint:errcheck // best effort: it lies in a directory of ours
		args = append(args, "--pwfile="+pwfile)
	}
	if _, err := procs.Run(ctx, procs.Spec{
		Name: "initdb",
		Path: filepath.Join(bin, "initdb"),
		Args: args,
		Dir:  tmp, // the caller's cwd may be unreadable for the postgres user
		User: osUser,
	}); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	if password == "" {
		saveTemplate(tmp, template)
	}
	return placeCluster(tmp, dir)
}

// placeCluster renames the cluster made in tmp to dir.
func placeCluster(tmp, dir string) error {
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

// writePWFile writes password into a new file of dir that only osUser
// ("": we) may read, for initdb --pwfile.
func writePWFile(dir, password, osUser string) (string, error) {
	f, err := os.CreateTemp(dir, ".pwfile-*")
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(password + "\n")
	err = errors.Join(err, f.Close())
	if err == nil && osUser != "" {
		var u procs.User
		if u, err = procs.LookupUser(osUser); err == nil {
			err = os.Chown(f.Name(), int(u.UID), int(u.GID))
		}
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
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

// maxSocketDir is the longest directory a unix socket of postgres fits in
// (a socket path is limited to 107 bytes).
const maxSocketDir = 107 - len("/.s.PGSQL.65535")

func socketTooLong(dir string) bool { return len(dir) > maxSocketDir }

func pgArgs(dir string, port int, opts PGOptions) []string {
	settings := map[string]string{
		"listen_addresses": Loopback,
		// A unix socket path is limited to 107 bytes; deep directories
		// (per-experiment, per-configuration) can exceed it: TCP only then.
		"unix_socket_directories": dir,
	}
	if socketTooLong(dir) {
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
	if p.PassFile != "" {
		return p.waitReadyWithPassword(ctx, timeout)
	}
	return waitReady(ctx, "postgres", p.Pid, p.logFile(), fmt.Sprintf("postgres SELECT 1 on 127.0.0.1:%d", p.Port), orDefault(timeout, 60*time.Second), probeEvery, func(ctx context.Context) error {
		return selectOne(ctx, p.url("postgres"))
	})
}

// waitReadyWithPassword waits for the server on its unix socket, sets the
// superuser's password to the one of PassFile, and checks a TCP login.
// Without a socket (too deep a directory) it waits for that login alone:
// initdb set the password, and a cluster made with another one is refused
// at once, naming the file.
func (p *Postgres) waitReadyWithPassword(ctx context.Context, timeout time.Duration) error {
	password, err := pgpassPassword(p.PassFile)
	if err != nil {
		return err
	}
	if socketTooLong(p.Dir) {
		return waitReady(ctx, "postgres", p.Pid, p.logFile(), fmt.Sprintf("postgres SELECT 1 on 127.0.0.1:%d", p.Port), orDefault(timeout, 60*time.Second), probeEvery, func(ctx context.Context) error {
			err := selectOne(ctx, p.url("postgres"))
			if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "28P01" { // invalid_password
				return procs.Permanent(fmt.Errorf("the password of %s does not open the cluster in %s (made with another one, and too deep a directory for the unix socket that would set it): %w", p.PassFile, p.Dir, err))
			}
			return err
		})
	}
	socket := fmt.Sprintf("postgresql:///postgres?host=%s&port=%d&user=%s&sslmode=disable", url.QueryEscape(p.Dir), p.Port, p.User)
	err = waitReady(ctx, "postgres", p.Pid, p.logFile(), "postgres SELECT 1 on its unix socket in "+p.Dir, orDefault(timeout, 60*time.Second), probeEvery, func(ctx context.Context) error {
		return selectOne(ctx, socket)
	})
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, socket)
	if err != nil {
		return fmt.Errorf("set the password: %w", err)
	}
	defer conn.Close(context.Background())
	// By its verifier: the statement's text never holds the password.
	alter, err := pgscram.AlterRole(p.User, password, false)
	if err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, alter); err != nil {
		return fmt.Errorf("set the password of %s: %w", p.User, err)
	}
	if err := selectOne(ctx, p.url("postgres")); err != nil {
		return fmt.Errorf("log in over TCP with the password of %s: %w", p.PassFile, err)
	}
	return nil
}

// writeHBA makes every TCP login need the password (scram-sha-256) and
// trusts the unix socket, which lives in the data directory (mode 0700).
func writeHBA(dir string) error {
	const hba = "# benchq (internal/localdb): passwords over TCP, the socket in the data directory trusted.\n" +
		"local all all trust\n" +
		"host all all 127.0.0.1/32 scram-sha-256\n" +
		"host all all ::1/128 scram-sha-256\n"
	// initdb made the file, owned by the server's user: rewriting it in
	// place keeps its owner.
	if err := os.WriteFile(filepath.Join(dir, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		return fmt.Errorf("pg_hba.conf: %w", err)
	}
	return nil
}

// pgpassPassword is the password of a pgpass file's first entry.
func pgpassPassword(path string) (string, error) {
	b, err := atomicfile.ReadSecret(path, "password file") // libpq ignores one others may read
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	// Fields are separated by colons; a backslash escapes the next
	// character (a colon or a backslash), as libpq reads the file.
	var fields []string
	var field strings.Builder
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '\\' && i+1 < len(line):
			i++
			field.WriteByte(line[i])
		case c == ':' && len(fields) < 4:
			fields = append(fields, field.String())
			field.Reset()
		default:
			field.WriteByte(c)
		}
	}
	fields = append(fields, field.String())
	if len(fields) != 5 || fields[4] == "" {
		return "", fmt.Errorf("password file %s: want host:port:database:user:password", path)
	}
	return fields[4], nil
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

// URL is a libpq/pgx connection URL for p.Database (no TLS; with
// PassFile, the file clients read the password from).
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
	if p.PassFile != "" {
		u.RawQuery += "&passfile=" + url.QueryEscape(p.PassFile)
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
