// Package stack is the embedded stack that `benchq up` starts on this
// machine: NATS, the results database, Prometheus, the four services and a
// pool of driver agents, as detached processes recorded in
// $BENCHQ_HOME/stack.json so that every later command finds them. It starts
// them, restarts one on its port and data, and stops them all together with
// the SUTs a crashed experiment left behind.
package stack

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/atomicfile"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/natsauth"
	"github.com/benchq/benchq/internal/obs"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/resultsdb"
	"github.com/benchq/benchq/internal/startup"
)

// Stack is what `benchq up` started, kept in <home>/stack.json so that
// `benchq down` and the other commands find it.
type Stack struct {
	NATSURL string `json:"nats_url"`
	// NATSKeys is the directory of the NKey seeds, one per role
	// (internal/natsauth); empty for a stack started before access control,
	// whose NATS lets anyone in.
	NATSKeys string `json:"nats_keys,omitempty"`
	// DBURL is the results database as its readers (the reporter, the
	// CLI, you) log in: the role benchq_reader, read-only. The collector
	// logs in as benchq_collector (CollectorDBURL), migrations as the
	// owner (DBOwnerURL). Each URL names a pgpass file, never a password.
	DBURL          string `json:"db_url"`
	CollectorDBURL string `json:"collector_db_url,omitempty"`
	DBOwnerURL     string `json:"db_owner_url,omitempty"`
	// IntakeURL is the scheduler's HTTP intake (docs/openapi.yaml), its
	// bearer token in IntakeToken (a file, mode 0600).
	IntakeURL   string `json:"intake_url,omitempty"`
	IntakeToken string `json:"intake_token,omitempty"`
	// intakeAddrFile is where the starting scheduler names the port the
	// kernel gave its intake (IntakeURL is empty until waitReady reads
	// it); empty when the user set the port (BENCHQ_HTTP_PORT).
	intakeAddrFile string
	// PrometheusURL is the stack's Prometheus (monitor.go); empty when
	// monitoring is off, MonitoringOff saying why.
	PrometheusURL string `json:"prometheus_url,omitempty"`
	MonitoringOff string `json:"monitoring_off,omitempty"`
	// Backend is the deployer's (BENCHQ_BACKEND at benchq up, local by
	// default), given to it explicitly so that a restart keeps it; the CLI
	// reads it to say what the backend does not apply. Empty in a stack
	// started before it was recorded.
	Backend string `json:"backend,omitempty"`
	Procs   []Proc `json:"procs"` // in start order; stopped in reverse
}

// Proc is one process of the stack, with what it takes to start it again.
type Proc struct {
	Name string   `json:"name"`
	Pid  int      `json:"pid"`
	Log  string   `json:"log"`
	Path string   `json:"path,omitempty"`
	Args []string `json:"args,omitempty"`
	Env  []string `json:"env,omitempty"`
}

// start starts p detached, records it (replacing an entry of the same name)
// and saves the stack file at once, so `down` finds it even if `up` fails.
func (s *Stack) start(st *State, p Proc) error {
	p.Log = filepath.Join(st.Home(), "logs", p.Name+".log")
	// benchq's services read their configuration from the environment;
	// nats-server gets only what a child needs (procs.ChildEnv).
	pid, err := procs.Start(procs.Spec{Name: p.Name, Path: p.Path, Args: p.Args, Dir: ".", Env: p.Env, InheritEnv: p.Name != NATSProc,
		LogFile: p.Log, PidFile: filepath.Join(st.Home(), p.Name+".pid")})
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("start %s: %w: build benchq's programs with make bootstrap (BENCHQ_HOME=%s make bootstrap builds them into this home), or set BENCHQ_BIN to the directory that holds them", p.Name, err, st.Home())
	}
	if err != nil {
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	p.Pid = pid
	for i := range s.Procs {
		if s.Procs[i].Name == p.Name {
			s.Procs[i] = p
			return s.save(st)
		}
	}
	s.Procs = append(s.Procs, p)
	return s.save(st)
}

// The stack's two stores, started by Start before the services and stopped
// after them; `benchq restart` starts each again on its port and its data.
const (
	NATSProc = "nats-server"
	DBProc   = "results-db"
)

// restartNATS starts nats-server again with its arguments: its port and
// its JetStream store, so streams, consumers and KV come back as they were.
func (s *Stack) restartNATS(ctx context.Context, st *State, p Proc) error {
	if err := s.start(st, p); err != nil {
		return err
	}
	pid := s.Procs[slices.IndexFunc(s.Procs, func(q Proc) bool { return q.Name == p.Name })].Pid
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return procs.WaitFor(ctx, "nats-server with JetStream", 100*time.Millisecond, func(ctx context.Context) error {
		if !procs.Alive(pid) {
			return procs.Permanent(localdb.Exited(p.Name, pid, p.Log))
		}
		b, err := s.Dial()
		if err != nil {
			return err
		}
		defer b.Close()
		_, err = b.JS.Stream(ctx, contracts.StreamEvents)
		return err
	})
}

// restartResultsDB starts the results database again on its data directory
// and port (PostgreSQL replays its WAL first). A postmaster killed with -9
// leaves backends that hold its shared memory until they notice, within a
// second or so, and a new postmaster refuses to start until then: retried.
func (s *Stack) restartResultsDB(ctx context.Context, st *State, p *Proc) error {
	port, err := urlPort("results database URL", s.ownerURL())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return procs.WaitFor(ctx, "the results database", 500*time.Millisecond, func(ctx context.Context) error {
		pg, err := localdb.StartPostgres(ctx, filepath.Join(st.Home(), DBProc), port, localdb.PGOptions{Database: "benchq", PassFile: s.dbPassFile()})
		if err != nil {
			return err
		}
		p.Pid = pg.Pid
		return s.save(st)
	})
}

// startService starts a service with its /metrics address (the one it had
// when that port is free) and has Prometheus scrape it where it serves:
// the port picked may be taken before the service binds it (stacks started
// side by side), and then the service takes a free one and names it in its
// address file (obs.EnvAddrFile).
func (s *Stack) startService(st *State, p Proc) error {
	p, err := withMetricsAddr(p)
	if err != nil {
		return err
	}
	file := filepath.Join(st.Home(), p.Name+".metrics.addr")
	if err := os.Remove(file); err != nil && !os.IsNotExist(err) {
		return err // a stale address must not be taken for this start's
	}
	p.Env = procs.WithEnv(p.Env, obs.EnvAddrFile, file)
	if err := s.start(st, p); err != nil {
		return err
	}
	i := slices.IndexFunc(s.Procs, func(q Proc) bool { return q.Name == p.Name })
	if err := servedAt(&s.Procs[i], file); err != nil {
		return err
	}
	if err := s.save(st); err != nil {
		return err
	}
	return s.writeTarget(st, s.Procs[i])
}

// servedAt waits until started service p names the address its /metrics
// listens on in file, and keeps it in p's environment (a restart tries it
// first). A service that exits before is an error quoting its log.
func servedAt(p *Proc, file string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return procs.WaitFor(ctx, p.Name+" to serve its metrics", 20*time.Millisecond, func(context.Context) error {
		addr, err := addrIn(file)
		if errors.Is(err, fs.ErrNotExist) && !procs.Alive(p.Pid) {
			return procs.Permanent(fmt.Errorf("%s exited at once: %s (log %s)", p.Name, procs.LogTail(p.Log, 3), p.Log))
		} else if err != nil {
			return err
		}
		p.Env = procs.WithEnv(p.Env, obs.EnvAddr, addr)
		return nil
	})
}

var ErrNotUp = errors.New("the stack is not running")

// ErrPortTaken: a service of the stack could not bind the port picked for
// it (procs.FreePort), because another process took it between the pick
// and the bind (stacks started side by side, as make test's do). Stop the
// stack and start it again: every port is picked anew.
var ErrPortTaken = errors.New("a port picked for the stack was taken before its service bound it")

// notUp is ErrNotUp naming the home looked in (absolute: State.Home): a
// command run from another directory than benchq up's looks in that
// directory's .benchq.
func notUp(home string) error {
	return fmt.Errorf("%w in %s (start it with: benchq up, or set BENCHQ_HOME to the running stack's home)", ErrNotUp, home)
}

// dial connects to the stack's NATS through internal/bus, the one door to
// it; it fails at once when nats-server is not reachable.
func (s *Stack) Dial() (*bus.Bus, error) {
	// Only errors, on stderr: a refused publish or subscription says so.
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	return bus.DialAs(s.NATSURL, natsauth.Client, "benchq", s.seed(natsauth.Client), log)
}

// declare declares (or brings up to date) the streams and buckets as the
// admin role, the only one that may: before any service starts, each of
// which waits for them (bus.Open).
func (s *Stack) declare(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// nats-server is dialled until it answers, unless it exited: then the
	// error says why (its log's end; localdb.ErrAddrInUse when its port was
	// taken), at once rather than after the timeout.
	nats := slices.IndexFunc(s.Procs, func(p Proc) bool { return p.Name == NATSProc })
	var b *bus.Bus
	err := procs.WaitFor(ctx, NATSProc, 250*time.Millisecond, func(context.Context) error {
		if nats >= 0 && !procs.Alive(s.Procs[nats].Pid) {
			p := s.Procs[nats]
			return procs.Permanent(localdb.Exited(p.Name, p.Pid, p.Log))
		}
		var err error
		b, err = bus.DialAs(s.NATSURL, natsauth.Admin, "benchq-admin", s.seed(natsauth.Admin), nil)
		return err
	})
	if err != nil {
		return err
	}
	defer b.Close()
	if err := b.Setup(ctx); err != nil {
		return fmt.Errorf("declare the streams and buckets: %w", err)
	}
	return nil
}

// seed is role's seed file ("" on a stack without access control).
func (s *Stack) seed(role natsauth.Role) string {
	if s.NATSKeys == "" {
		return ""
	}
	return natsauth.SeedFile(s.NATSKeys, role)
}

// natsConfig generates a key per role and the server's configuration that
// admits exactly those (the authorization block; address, port and store
// stay on the command line).
func (s *Stack) natsConfig(home string) (string, error) {
	s.NATSKeys = filepath.Join(home, "auth", "nats")
	pubs, err := natsauth.Generate(s.NATSKeys)
	if err != nil {
		return "", fmt.Errorf("NATS credentials: %w", err)
	}
	conf, err := natsauth.ServerConfig(pubs)
	if err != nil {
		return "", err
	}
	path := filepath.Join(home, "auth", "nats-server.conf")
	return path, atomicfile.Write(path, []byte(conf), 0o600)
}

func Load(st *State) (*Stack, error) {
	data, err := os.ReadFile(filepath.Join(st.Home(), "stack.json"))
	if err != nil {
		return nil, notUp(st.Home())
	}
	var s Stack
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("read %s: %w: it is damaged; benchq down stops the stack's processes by their pid files, then benchq up starts it anew", filepath.Join(st.Home(), "stack.json"), err)
	}
	for _, p := range s.Procs {
		// Monitoring is an addition: experiments run without Prometheus
		// (their summary names what it could not collect); status shows it.
		if !procs.Alive(p.Pid) && p.Name != PromProc {
			return &s, fmt.Errorf("%s (pid %d) is not running; see %s, then start it again: benchq restart %s (benchq down would stop every experiment in flight)", p.Name, p.Pid, p.Log, p.Name)
		}
	}
	return &s, nil
}

// save replaces stack.json whole: a CLI killed mid-write (or a second
// command reading it meanwhile) never sees half of it.
func (s *Stack) save(st *State) error {
	return atomicfile.WriteJSON(filepath.Join(st.Home(), "stack.json"), s, 0o600) // names the key files and the database: the owner's only
}

// intake sets up the HTTP intake: on BENCHQ_HTTP_PORT when the user set
// it, else on a port the kernel picks as the scheduler binds (127.0.0.1:0),
// which the scheduler names in a file (-http-addr-file) and waitReady reads
// into IntakeURL: no moment between a pick and the bind in which another
// process could take the port. It writes a fresh bearer token and returns
// the scheduler's environment.
func (s *Stack) intake(st *State) ([]string, error) {
	p, err := fixedPort(st, intakePortVar)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	s.IntakeToken = filepath.Join(st.Home(), "auth", "http.token")
	if err := atomicfile.Write(s.IntakeToken, []byte(base64.RawURLEncoding.EncodeToString(b)+"\n"), 0o600); err != nil {
		return nil, err
	}
	env := []string{fmt.Sprintf("BENCHQ_HTTP_ADDR=127.0.0.1:%d", p), "BENCHQ_HTTP_TOKEN_FILE=" + s.IntakeToken}
	if p != 0 {
		s.IntakeURL = fmt.Sprintf("http://127.0.0.1:%d", p)
		return env, nil
	}
	s.IntakeURL, s.intakeAddrFile = "", filepath.Join(st.Home(), "intake.addr")
	if err := os.Remove(s.intakeAddrFile); err != nil && !os.IsNotExist(err) {
		return nil, err // a stale address must not be taken for this start's
	}
	return append(env, "BENCHQ_HTTP_ADDR_FILE="+s.intakeAddrFile), nil
}

// SchedulerProc is the scheduler's name among the stack's processes.
const SchedulerProc = "scheduler"

// learnIntakeURL reads the intake's address from the file the scheduler
// writes once it listens; nil when the URL is known already.
func (s *Stack) learnIntakeURL() error {
	if s.IntakeURL != "" || s.intakeAddrFile == "" {
		return nil
	}
	addr, err := addrIn(s.intakeAddrFile)
	if err != nil {
		return fmt.Errorf("the scheduler has not named its intake's address yet: %w", err)
	}
	s.IntakeURL = "http://" + addr
	return nil
}

// addrIn is the host:port a process wrote into file once it listened (the
// scheduler's intake, a service's /metrics). A file that holds no address
// is a permanent error (procs.WaitFor gives up on it); a missing one is not.
func addrIn(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	addr := strings.TrimSpace(string(b))
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return "", procs.Permanent(fmt.Errorf("address file %s: %w", file, err))
	}
	return addr, nil
}

// newDBPassword writes a fresh password for user of the results database
// (its owner, postgres, or one of its roles) into a pgpass file of the
// stack (mode 0600), one file per user, and returns its path and the
// password: a database URL names the file, never the password.
func newDBPassword(st *State, user string) (path, password string, err error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	name := "results-db.pgpass"
	if user != "postgres" {
		name = "results-db-" + user + ".pgpass"
	}
	path = filepath.Join(st.Home(), "auth", name)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", "", err
	}
	password = base64.RawURLEncoding.EncodeToString(b)
	return path, password, atomicfile.Write(path, []byte("*:*:*:"+user+":"+password+"\n"), 0o600)
}

// sutKeyFile is the stack's SUT key file (startup.SUTKeyFileEnv; mode
// 0600), from which each SUT's own password derives: made once and kept.
// The deployer and the driver agents are handed its path.
func sutKeyFile(st *State) (string, error) {
	auth := filepath.Join(st.Home(), "auth")
	// A stack made before each SUT had its own password kept one for all.
	_ = os.Remove(filepath.Join(auth, "sut.password"))
	path := filepath.Join(auth, "sut.key")
	if _, err := startup.SUTAuthFromEnv(func(k string) string {
		if k == startup.SUTKeyFileEnv {
			return path
		}
		return ""
	}); err == nil {
		return path, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	return path, atomicfile.Write(path, []byte(base64.RawURLEncoding.EncodeToString(b)+"\n"), 0o600)
}

// migrate applies the results database's migrations as its owner and
// gives the collector's and the readers' roles fresh passwords (files of
// their own, mode 0600): CollectorDBURL and DBURL name them.
func (s *Stack) migrate(ctx context.Context, st *State) error {
	passwords := map[string]string{}
	for _, role := range []string{resultsdb.CollectorRole, resultsdb.ReaderRole} {
		file, password, err := newDBPassword(st, role)
		if err != nil {
			return err
		}
		passwords[role] = password
		u, err := url.Parse(s.DBOwnerURL)
		if err != nil {
			return err
		}
		u.User = url.User(role)
		q := u.Query()
		q.Set("passfile", file)
		u.RawQuery = q.Encode()
		if role == resultsdb.ReaderRole {
			s.DBURL = u.String()
		} else {
			s.CollectorDBURL = u.String()
		}
	}
	owner, err := pgxpool.New(ctx, s.DBOwnerURL)
	if err != nil {
		return fmt.Errorf("results database: %w", err)
	}
	defer owner.Close()
	if err := resultsdb.Prepare(ctx, owner, passwords); err != nil {
		return fmt.Errorf("results database: %w", err)
	}
	return nil
}

// ownerURL is the results database's owner's URL: DBOwnerURL, or DBURL
// on a stack started before the database had roles (it was the owner's).
func (s *Stack) ownerURL() string {
	if s.DBOwnerURL != "" {
		return s.DBOwnerURL
	}
	return s.DBURL
}

// dbPassFile is the owner's password file ("" when the URL names none: a
// stack started before passwords).
func (s *Stack) dbPassFile() string {
	u, err := url.Parse(s.ownerURL())
	if err != nil {
		return ""
	}
	return u.Query().Get("passfile")
}

// urlPort is the port of a URL the stack recorded (what names it in errors).
func urlPort(what, raw string) (int, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", what, raw, err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return 0, fmt.Errorf("%s %q has no port", what, raw)
	}
	return port, nil
}

// binDir is where the stack's programs are: $BENCHQ_BIN; else the home's
// bin, where the bootstrap builds them; else, when that holds no
// nats-server (a BENCHQ_HOME of its own, with the programs built for
// another), the directory of the running benchq, which the bootstrap builds
// beside them. A program missing from the result is named when it does not
// start.
func binDir(st *State) string {
	if b := st.Env("BENCHQ_BIN"); b != "" {
		return b
	}
	bin := filepath.Join(st.Home(), "bin")
	if _, err := os.Stat(filepath.Join(bin, NATSProc)); err == nil {
		return bin
	}
	if exe, err := os.Executable(); err == nil {
		if dir := filepath.Dir(exe); dir != bin {
			if _, err := os.Stat(filepath.Join(dir, NATSProc)); err == nil {
				return dir
			}
		}
	}
	return bin
}

// port returns the configured port (env) or a free one.
func port(st *State, key string) (int, error) {
	p, err := fixedPort(st, key)
	if err != nil || p != 0 {
		return p, err
	}
	return procs.FreePort()
}

// fixedPort returns the configured port (env), 0 when none is (unset, or
// set to 0: a free one).
func fixedPort(st *State, key string) (int, error) {
	v := st.Env(key)
	if v == "" {
		return 0, nil
	}
	p, err := strconv.Atoi(v)
	if err != nil || p < 0 || p > 65535 {
		return 0, fmt.Errorf("%s=%q is not a port number: set 1–65535, or unset it (or 0) for a free port", key, v)
	}
	return p, nil
}

// The variables by which the user fixes a process's port. A process not
// named here listens on a port the stack picked, or one the kernel picked.
const (
	natsPortVar   = "BENCHQ_NATS_PORT"
	dbPortVar     = "BENCHQ_DB_PORT"
	intakePortVar = "BENCHQ_HTTP_PORT" // unset, the kernel picks one
)

var portVars = map[string]string{NATSProc: natsPortVar, DBProc: dbPortVar, SchedulerProc: intakePortVar}

// portTaken says what to do about err when it is proc's exit because its
// port was taken (localdb.ErrAddrInUse): start again on other ports
// (ErrPortTaken) when the stack picked the port, or free the port the user
// set in proc's variable (portVars). Any other error passes through.
func portTaken(st *State, err error, proc string) error {
	key := portVars[proc]
	fixed, _ := fixedPort(st, key)
	switch {
	case !errors.Is(err, localdb.ErrAddrInUse):
		return err
	case key != "" && fixed != 0:
		return fmt.Errorf("%w: %s=%s is taken by another process: free it, or unset %s for a free port", err, key, st.Env(key), key)
	}
	return fmt.Errorf("%w: %w", ErrPortTaken, err)
}

// makeHome creates the stack's home when it does not exist, mode 0711:
// others may pass through it but not list it. The results database runs as
// the postgres user when benchq runs as root, and must reach its data
// directory inside; what is private (auth, logs, the data) has a mode of its
// own. A home that exists keeps its mode (the database's start names a
// parent it cannot pass).
func makeHome(home string) error {
	if _, err := os.Stat(home); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(home), 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(home, 0o711); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return os.Chmod(home, 0o711) // the umask may have taken bits
}

func Start(ctx context.Context, st *State) (*Stack, error) {
	home := st.Home()
	bin, logs := binDir(st), filepath.Join(home, "logs")
	if err := makeHome(home); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(logs, 0o700); err != nil {
		return nil, err
	}
	natsPort, err := port(st, natsPortVar)
	if err != nil {
		return nil, err
	}
	// The results database picks its own port unless one is set: it
	// starts again on another when the one it picked is taken first.
	dbPort, err := fixedPort(st, dbPortVar)
	if err != nil {
		return nil, err
	}
	s := &Stack{NATSURL: fmt.Sprintf("nats://127.0.0.1:%d", natsPort), Backend: st.Var("BENCHQ_BACKEND", contracts.BackendLocal)}
	start := func(name, path string, args []string, env []string) error {
		return s.start(st, Proc{Name: name, Path: path, Args: args, Env: env})
	}
	conf, err := s.natsConfig(home)
	if err != nil {
		return s, err
	}
	if err := start(NATSProc, filepath.Join(bin, "nats-server"), []string{"-c", conf, "-a", "127.0.0.1", "-p", strconv.Itoa(natsPort), "-js", "-sd", filepath.Join(home, "nats")}, nil); err != nil {
		return s, err
	}
	if err := s.declare(ctx); err != nil {
		return s, portTaken(st, err, NATSProc)
	}
	pass, _, err := newDBPassword(st, "postgres")
	if err != nil {
		return s, err
	}
	pg, err := localdb.StartPostgres(ctx, filepath.Join(home, DBProc), dbPort, localdb.PGOptions{Database: "benchq", PassFile: pass})
	if err != nil {
		return s, portTaken(st, fmt.Errorf("results database: %w", err), DBProc)
	}
	s.DBOwnerURL = pg.URL()
	s.Procs = append(s.Procs, Proc{Name: DBProc, Pid: pg.Pid, Log: filepath.Join(home, DBProc, "postgres.log")})
	if err := s.save(st); err != nil {
		return s, err
	}
	if err := s.migrate(ctx, st); err != nil {
		return s, err
	}
	if err := s.save(st); err != nil {
		return s, err
	}
	every, err := scrapeInterval(st)
	if err != nil {
		return s, err
	}
	if err := s.startPrometheus(ctx, st); err != nil {
		// Monitoring is an addition: the stack runs without it, and the
		// summary names the metrics it could not collect.
		s.MonitoringOff = err.Error()
		if err := s.save(st); err != nil {
			return s, err
		}
	}
	env := append([]string{"BENCHQ_NATS_URL=" + s.NATSURL, "BENCHQ_HOME=" + home}, s.monitorEnv(st, every)...)
	// Each process connects as its role; the deployer hands the agents'
	// key to the phase agents it starts.
	service := func(name, path string, role natsauth.Role, args []string, extra ...string) error {
		env := append(slices.Clone(env), natsauth.SeedEnv+"="+s.seed(role))
		return s.startService(st, Proc{Name: name, Path: path, Args: args, Env: append(env, extra...)})
	}
	intake, err := s.intake(st)
	if err != nil {
		return s, err
	}
	sutKey, err := sutKeyFile(st)
	if err != nil {
		return s, err
	}
	// The agents send a SUT's password only to the local backend's SUTs
	// (startup.SUTHostsEnv); the deployer passes it on to phase agents.
	// With the Kubernetes backend the driver Jobs' pods are bound to their
	// SUT's Service by the deployer instead.
	sutEnv := []string{startup.SUTKeyFileEnv + "=" + sutKey}
	if s.Backend == contracts.BackendLocal {
		sutEnv = append(sutEnv, startup.SUTHostsEnv+"="+localdb.Loopback)
	}
	for _, svc := range []struct {
		name  string
		role  natsauth.Role
		extra []string
	}{
		{"collector", natsauth.Collector, []string{"BENCHQ_DB_URL=" + s.CollectorDBURL}},
		{SchedulerProc, natsauth.Scheduler, intake},
		{"deployer", natsauth.Deployer, append([]string{natsauth.AgentSeedEnv + "=" + s.seed(natsauth.Agent), "BENCHQ_BACKEND=" + s.Backend}, sutEnv...)},
	} {
		if err := service(svc.name, filepath.Join(bin, svc.name), svc.role, nil, svc.extra...); err != nil {
			return s, err
		}
	}
	agents, _ := strconv.Atoi(st.Var("BENCHQ_AGENTS", "2"))
	for i := 1; i <= agents; i++ {
		name := fmt.Sprintf("driver-agent-%d", i)
		if err := service(name, filepath.Join(bin, "driver-agent"), natsauth.Agent, []string{"-name", name}, sutEnv...); err != nil {
			return s, err
		}
	}
	if err := waitReady(ctx, st, s, agents); err != nil {
		return s, err
	}
	return s, s.save(st) // with the intake's URL
}

// waitReady polls until every service has declared its consumer and every
// agent has sent a heartbeat: then a request published now is served.
func waitReady(ctx context.Context, st *State, s *Stack, agents int) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var b *bus.Bus // once nats-server answers
	defer func() { b.Close() }()
	return procs.WaitFor(ctx, "the stack's services", 200*time.Millisecond, func(ctx context.Context) error {
		for _, p := range s.Procs {
			if !procs.Alive(p.Pid) {
				return procs.Permanent(portTaken(st, localdb.Exited(p.Name, p.Pid, p.Log), p.Name))
			}
		}
		if b == nil {
			var err error
			if b, err = s.Dial(); err != nil {
				return err
			}
		}
		for _, c := range []struct{ stream, durable string }{
			{contracts.StreamRequests, contracts.DurableSchedulerRequests},
			{contracts.StreamEvents, contracts.DurableCollectorEvents},
			{contracts.StreamJobs, contracts.DurableDeployer},
			{contracts.StreamJobs, contracts.DurableAgents},
		} {
			if _, err := b.JS.Consumer(ctx, c.stream, c.durable); err != nil {
				return fmt.Errorf("consumer %s not yet declared: %w", c.durable, err)
			}
		}
		beats, err := bus.Heartbeats(ctx, b.JS)
		if err != nil {
			return err
		}
		if n := len(beats); n < agents {
			return fmt.Errorf("%d of %d agents reported", n, agents)
		}
		// The consumers are durable (a stack started again finds them
		// declared): the scheduler is up once its HTTP intake answers.
		if err := s.learnIntakeURL(); err != nil {
			return err
		}
		return intakeAnswers(ctx, s.IntakeURL)
	})
}

// intakeAnswers is nil once the scheduler's HTTP intake answers its health
// check; nil too for a stack without an intake URL.
func intakeAnswers(ctx context.Context, url string) error {
	if url == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/healthz", nil)
	if err != nil {
		return procs.Permanent(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("the scheduler's HTTP intake does not answer yet: %w", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the scheduler's HTTP intake answers %s on /healthz", resp.Status)
	}
	return nil
}

// stopStack stops the services first (so none acts on a half-stopped stack),
// then every SUT left behind, then the results DB and NATS.
func Stop(ctx context.Context, st *State, s *Stack) {
	for i := len(s.Procs) - 1; i >= 0; i-- {
		p := s.Procs[i]
		if p.Name == DBProc || p.Name == NATSProc {
			continue
		}
		stopProc(ctx, st, p)
	}
	stopLeftoverSUTs(ctx, st)
	for i := len(s.Procs) - 1; i >= 0; i-- {
		if p := s.Procs[i]; p.Name == DBProc || p.Name == NATSProc {
			stopProc(ctx, st, p)
		}
	}
	_ = os.Remove(filepath.Join(st.Home(), "stack.json"))
}

// Strays are the processes of a stack in st's home when its stack.json
// is gone or unreadable: each found by its pid file (<home>/<name>.pid,
// the results database's postmaster.pid), and only while it still runs
// the process that wrote the file. A stack started over them would run a
// second nats-server on the same store, which corrupts it.
func Strays(st *State) []Proc {
	files, _ := filepath.Glob(filepath.Join(st.Home(), "*.pid"))
	// The results database's and Prometheus's pid files are in their own
	// directories.
	files = append(files, filepath.Join(st.Home(), DBProc, "postmaster.pid"), filepath.Join(PromDir(st), "prometheus.pid"))
	var out []Proc
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".pid")
		if name == "postmaster" {
			name = DBProc
		}
		if pid, err := procs.ReadPidFileOf(f); err == nil && procs.Alive(pid) {
			out = append(out, Proc{Name: name, Pid: pid})
		}
	}
	return out
}

func stopProc(ctx context.Context, st *State, p Proc) {
	if err := procs.Stop(ctx, p.Pid, 10*time.Second); err != nil {
		st.Errorf("stop %s (pid %d): %v", p.Name, p.Pid, err)
	}
}

// stopLeftoverSUTs stops SUT processes of experiments that did not tear
// down (a crash, a stop in the middle), by the pid files the local backend
// keeps, and removes their data.
func stopLeftoverSUTs(ctx context.Context, st *State) {
	root := filepath.Join(st.Home(), "suts")
	// Every pid file below the configurations' directories, at whatever
	// depth its DBMS keeps it (a Redis's in data/, a PostgreSQL's in its
	// cluster, a cluster node's in its own directory): a fixed pattern
	// missed Redis's, whose servers outlived benchq down.
	var pids []string
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(d.Name(), ".pid") {
			pids = append(pids, path)
		}
		return nil
	})
	for _, f := range pids {
		// Only the process the file names: a pid of 1, or one recycled
		// since, is left alone.
		if pid, err := procs.ReadPidFileOf(f); err == nil && procs.Alive(pid) {
			_ = procs.Stop(ctx, pid, 10*time.Second)
		}
	}
	_ = os.RemoveAll(root)
}

// ErrNoComponent is returned by Restart for a name the stack has no process of.
var ErrNoComponent = errors.New("no such component in the stack")

// Restart stops (if alive) and starts again one component of the stack, on
// its port and its data: the way back after a crash, and what the fault and
// chaos tests use. The services reconnect to a restarted nats-server or
// results database by themselves.
func (s *Stack) Restart(ctx context.Context, st *State, name string) error {
	i := slices.IndexFunc(s.Procs, func(p Proc) bool { return p.Name == name })
	if i < 0 {
		return fmt.Errorf("%w: %q", ErrNoComponent, name)
	}
	p := s.Procs[i]
	if procs.Alive(p.Pid) {
		stopProc(ctx, st, p)
	}
	switch p.Name {
	case PromProc:
		return s.restartPrometheus(ctx, st, &s.Procs[i])
	case NATSProc:
		return s.restartNATS(ctx, st, p)
	case DBProc:
		return s.restartResultsDB(ctx, st, &s.Procs[i])
	case SchedulerProc:
		// Its intake stays where clients know it: the port it had.
		if port, err := urlPort("the intake's URL", s.IntakeURL); err == nil {
			p.Env = procs.WithEnv(p.Env, "BENCHQ_HTTP_ADDR", fmt.Sprintf("127.0.0.1:%d", port))
		}
		return s.startService(st, p)
	default:
		return s.startService(st, p)
	}
}
