package localdb

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/benchq/benchq/internal/procs"
)

// PgBouncerOptions tune StartPgBouncer.
type PgBouncerOptions struct {
	// OSUser is the OS account pgbouncer runs as when we are root
	// (default postgres; the local backend's pools: SUTUser).
	OSUser string
	// BackendPort is the PostgreSQL server on 127.0.0.1 the pool forwards
	// to; every database name is passed through to it.
	BackendPort int
	// User is the backend user every client is logged in as. Default
	// "postgres".
	User string
	// Password, when set, is User's: the pool checks it of every client
	// (auth_type scram-sha-256) and logs in to the backend with it, from
	// an auth_file in the pool's own directory (mode 0700). Without one
	// the pool authenticates nobody (auth_type any), for a backend that
	// trusts loopback.
	Password string
	// Database is the one the readiness probe queries through the pool
	// (default "postgres").
	Database string
	// MaxClientConn is max_client_conn (inbound connections), PoolSize is
	// default_pool_size and max_db_connections (outbound); 0 keeps
	// PgBouncer's defaults.
	MaxClientConn, PoolSize int
	// Settings are extra [pgbouncer] settings; they win.
	Settings map[string]string
	// Timeout bounds the wait for the first SELECT 1 through the pool
	// (default 30s).
	Timeout time.Duration
}

// PgBouncer is a running pgbouncer in transaction pooling mode.
type PgBouncer struct {
	Dir  string // holds pgbouncer.ini, userlist.txt, pgbouncer.pid, pgbouncer.log
	Port int
	Pid  int
}

// userlistFile is the pool's auth_file (PgBouncerOptions.Password).
const userlistFile = "userlist.txt"

// PgBouncerBinary locates pgbouncer: $BENCHQ_PGBOUNCER, else PATH, else
// /usr/sbin (Debian's place, off a normal user's PATH).
func PgBouncerBinary() (string, error) {
	return findBinary("pgbouncer", "BENCHQ_PGBOUNCER", "pgbouncer", "not on PATH nor in /usr/sbin (apt-get install pgbouncer)", "/usr/sbin/pgbouncer")
}

// StartPgBouncer runs pgbouncer on 127.0.0.1:port (0: a free port) in front
// of the PostgreSQL server on opts.BackendPort, from a pgbouncer.ini written
// into dir, and waits until a SELECT 1 passes through it. It runs as the
// postgres OS user when we are root (pgbouncer refuses root). A live
// pgbouncer of dir with the same configuration is reused; one whose
// configuration changed (the backend moved to another port) is restarted on
// its port.
func StartPgBouncer(ctx context.Context, dir string, port int, opts PgBouncerOptions) (*PgBouncer, error) {
	return startInDir("pgbouncer", dir, PgBouncerBinary, func(dir, bin string) (*PgBouncer, error) {
		return startPgBouncer(ctx, dir, bin, port, opts)
	})
}

func startPgBouncer(ctx context.Context, dir, bin string, port int, opts PgBouncerOptions) (*PgBouncer, error) {
	if opts.BackendPort <= 0 {
		return nil, errors.New("no backend port")
	}
	// pgbouncer refuses to run as root, like postgres: the same OS user.
	osUser, err := runAs("pgbouncer", opts.OSUser, pgOSUser)
	if err != nil {
		return nil, err
	}
	// Private to its user, like a PostgreSQL data dir; the parents must be
	// reachable by it.
	if err := prepareDataDir(dir, osUser); err != nil {
		return nil, err
	}
	b := &PgBouncer{Dir: dir}
	users, err := b.writeUserlist(opts)
	if err != nil {
		return nil, err
	}
	if pid, ok := b.daemon().live(); ok {
		livePort, err := readINIPort(b.iniFile())
		if err != nil {
			return nil, err
		}
		want := pgbouncerINI(dir, livePort, opts)
		if have, _ := os.ReadFile(b.iniFile()); string(have) == want && !users {
			b.Pid, b.Port = pid, livePort
			return b, b.waitReady(ctx, opts)
		}
		// Reconfigured: restart on the same port, so the endpoint stays.
		if err := procs.Stop(ctx, pid, 10*time.Second); err != nil {
			return nil, err
		}
		port = livePort
	}
	err = listen(port, port == 0, func(port int) error {
		b.Port = port
		return b.daemon().launch(ctx, bin, osUser, b.iniFile(), pgbouncerINI(dir, b.Port, opts), func(pid int) error {
			b.Pid = pid
			return b.waitReady(ctx, opts)
		})
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// writeUserlist writes the auth_file of opts.Password (removes it without
// one) and reports whether it changed: a live pool then restarts to read
// it.
func (b *PgBouncer) writeUserlist(opts PgBouncerOptions) (changed bool, err error) {
	path := filepath.Join(b.Dir, userlistFile)
	have, readErr := os.ReadFile(path)
	if opts.Password == "" {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return false, fmt.Errorf("pgbouncer auth_file: %w", err)
		}
		return readErr == nil, nil
	}
	// One line: "user" "password", a double quote doubled.
	quote := func(v string) string { return `"` + strings.ReplaceAll(v, `"`, `""`) + `"` }
	want := quote(cmp.Or(opts.User, pgOSUser)) + " " + quote(opts.Password) + "\n"
	if readErr == nil && string(have) == want {
		return false, nil
	}
	// The directory is the pool's own (0700): the server's OS user reads
	// the file through it.
	if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
		return false, fmt.Errorf("pgbouncer auth_file: %w", err)
	}
	return true, nil
}

func (b *PgBouncer) daemon() daemon  { return daemon{name: "pgbouncer", dir: b.Dir, file: "pgbouncer"} }
func (b *PgBouncer) iniFile() string { return filepath.Join(b.Dir, "pgbouncer.ini") }
func (b *PgBouncer) logFile() string { return b.daemon().logFile() }

// Addr is host:port of the pool.
func (b *PgBouncer) Addr() string { return net.JoinHostPort(Loopback, strconv.Itoa(b.Port)) }

// pgbouncerINI renders the configuration: loopback only, no unix socket (a
// deep directory would exceed its path limit), transaction pooling, every
// database passed through to the backend as opts.User, logs on stderr
// (which procs appends to pgbouncer.log).
func pgbouncerINI(dir string, port int, opts PgBouncerOptions) string {
	user := cmp.Or(opts.User, pgOSUser)
	settings := map[string]string{
		"listen_addr":     Loopback,
		"listen_port":     strconv.Itoa(port),
		"unix_socket_dir": "",
		// No password: the backend trusts loopback, so the pool logs
		// every client in as user (the catalog's user) without checking.
		"auth_type": "any",
		"pool_mode": "transaction",
		// pgjdbc sends it at startup; PgBouncer refuses unknown
		// parameters unless told to ignore them.
		"ignore_startup_parameters": "extra_float_digits",
		"admin_users":               user,
		"stats_users":               user,
	}
	if opts.Password != "" {
		// The password of userlist.txt: checked of every client, and the
		// one the pool logs in to the backend with.
		settings["auth_type"] = "scram-sha-256"
		settings["auth_file"] = filepath.Join(dir, userlistFile)
	}
	if opts.MaxClientConn > 0 {
		settings["max_client_conn"] = strconv.Itoa(opts.MaxClientConn)
	}
	if opts.PoolSize > 0 {
		settings["default_pool_size"] = strconv.Itoa(opts.PoolSize)
		settings["max_db_connections"] = strconv.Itoa(opts.PoolSize)
	}
	for k, v := range opts.Settings {
		settings[k] = v
	}
	var s strings.Builder
	s.WriteString(";; written by benchq (internal/localdb); rewritten on every start\n")
	fmt.Fprintf(&s, "[databases]\n* = host=127.0.0.1 port=%d user=%s\n\n[pgbouncer]\n", opts.BackendPort, user)
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		fmt.Fprintf(&s, "%s = %s\n", k, settings[k])
	}
	return s.String()
}

// readINIPort finds listen_port in a pgbouncer.ini we wrote.
func readINIPort(ini string) (int, error) {
	f, err := os.Open(ini)
	if err != nil {
		return 0, fmt.Errorf("port of pgbouncer: %w", err)
	}
	defer f.Close() //nolint:errcheck // read only
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && strings.TrimSpace(k) == "listen_port" {
			p, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return 0, fmt.Errorf("port of pgbouncer: %s: %w", ini, err)
			}
			return p, nil
		}
	}
	return 0, fmt.Errorf("port of pgbouncer: no listen_port in %s", ini)
}

// PgBouncerPort is the port of dir's pgbouncer (its pgbouncer.ini), running
// or not: where a restart should listen again.
func PgBouncerPort(dir string) (int, error) {
	return readINIPort(filepath.Join(dir, "pgbouncer.ini"))
}

// waitReady polls SELECT 1 through the pool (simple protocol: no prepared
// statement may outlive a transaction behind transaction pooling).
func (b *PgBouncer) waitReady(ctx context.Context, opts PgBouncerOptions) error {
	user := url.User(cmp.Or(opts.User, pgOSUser))
	if opts.Password != "" {
		user = url.UserPassword(user.Username(), opts.Password)
	}
	u := url.URL{
		Scheme:   "postgresql",
		User:     user,
		Host:     b.Addr(),
		Path:     "/" + cmp.Or(opts.Database, "postgres"),
		RawQuery: "sslmode=disable&default_query_exec_mode=simple_protocol",
	}
	return waitReady(ctx, "pgbouncer", b.Pid, b.logFile(), "SELECT 1 through pgbouncer on "+b.Addr(), orDefault(opts.Timeout, 30*time.Second), probeEvery, func(ctx context.Context) error {
		return selectOne(ctx, u.String())
	})
}

// Stop stops pgbouncer (SIGTERM: immediate shutdown; SIGKILL after 10s) and
// removes its pid file. It is a no-op when none runs; a zero Pid is looked
// up in Dir's pgbouncer.pid.
func (b *PgBouncer) Stop(ctx context.Context) error { return b.daemon().stop(ctx, b.Pid) }
