package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/atomicfile"
	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/plan"
	"github.com/benchq/benchq/internal/prom"
	"github.com/benchq/benchq/internal/startup"
	"github.com/benchq/benchq/services/deployer/backend"
)

// BackendLocal is the local backend's name (flag -backend, events).
const BackendLocal = contracts.BackendLocal

// Local runs SUTs as processes on this machine, one directory per
// configuration: Root/<code>/<configuration>/ holds endpoint.json and the
// server's directory data/ (Redis, PostgreSQL; PgBouncer's backend), a
// cluster's node directories cluster/node-<i>/, a pool's pool-<i>/. The
// servers are detached, so a restarted deployer finds them through those
// files.
type Local struct {
	Root string
	Log  *slog.Logger
	// AgentBin is the driver-agent binary that StartPhaseAgents runs
	// (default: driver-agent beside this program).
	AgentBin string
	// TargetsDir receives the Prometheus file_sd groups of exporters and
	// phase agents ("": $BENCHQ_PROMETHEUS_TARGETS; neither: none written).
	TargetsDir string

	// VolumesDir holds the persistent volumes (-rst, volume.go);
	// default: volumes/ beside Root.
	VolumesDir string

	// SUT holds the stack's SUT key, from which each SUT's own password
	// derives (startup.SUTAuth; the zero value: none, the SUTs trust
	// loopback): the superuser's of PostgreSQL (kept in the
	// configuration's sut.pgpass for the deployer's own logins),
	// PgBouncer's auth_file, Redis' requirepass. The exporters log in with
	// it; driver agents derive it from their own key, never from a message.
	SUT startup.SUTAuth

	mu    sync.Mutex
	locks map[string]*sync.Mutex // per configuration directory
	volMu sync.Mutex             // claims and records of volumes

	monOnce sync.Once
	mon     *monitor // monitor.go
}

// localState is endpoint.json: what a redelivered deploy must answer again.
type localState struct {
	DBMS     string             `json:"dbms"`
	Kind     string             `json:"kind"`
	Endpoint contracts.Endpoint `json:"endpoint"`
	Pid      int                `json:"pid"` // the endpoint's process
	// Pids of every process of a cluster (nodes, masters first) or a pool
	// (the pool processes, then the backend).
	Pids []int `json:"pids,omitempty"`
	// BackendPort is a pool's PostgreSQL, restarted there if it died.
	BackendPort int `json:"backend_port,omitempty"`
	// Info are facts of a cluster or pool for sut.ready (nodes, limits).
	Info map[string]any `json:"info,omitempty"`
	// Monitoring is the configuration's -m/-mc/-ma, for a restarted
	// deployer; Exporters are what -ma started (monitor.go).
	Monitoring *contracts.Monitoring `json:"monitoring,omitempty"`
	Exporters  []exporter            `json:"exporters,omitempty"`
}

const stateFile = "endpoint.json"

// Deploy starts (or finds running) the SUT of s and returns its endpoint.
func (l *Local) Deploy(ctx context.Context, s backend.Spec) (backend.Deployed, error) {
	return backend.DeployEntry(ctx, s, l.deploy)
}

func (l *Local) deploy(ctx context.Context, s backend.Spec, entry catalog.Entry) (backend.Deployed, error) {
	if why := entry.NotLocally(); why != "" {
		return backend.Deployed{}, fmt.Errorf("%s; the local backend runs only %s", why, strings.Join(catalog.LocalKinds, ", "))
	}
	if ignored := localIgnores(s.SUT); len(ignored) > 0 {
		l.log().Info("the local backend ignores", "configuration", s.Configuration, "settings", strings.Join(ignored, "; "))
	}
	dir, err := l.dir(s.Code, s.Configuration)
	if err != nil {
		return backend.Deployed{}, err
	}
	defer l.lock(dir)()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return backend.Deployed{}, fmt.Errorf("create sut dir: %w", err)
	}
	log := l.log().With("code", s.Code, "configuration", s.Configuration, "dbms", entry.Name)

	// A redelivered deploy: the same port, so that the endpoint stays the
	// same (the Start* functions reuse a live server whatever the port).
	port := 0
	prev, err := readState(dir)
	if err == nil {
		if prev.Kind != entry.Kind {
			return backend.Deployed{}, fmt.Errorf("%s already holds a %s SUT, not %s: tear it down first", dir, prev.DBMS, entry.Name)
		}
		port = prev.Endpoint.Port
		log.Info("sut already deployed: checking it", "port", port)
	}
	var vol *contracts.VolumeState
	if backend.WantsVolume(s) {
		if vol, err = l.attachVolume(ctx, s, entry, dir); err != nil {
			return backend.Deployed{}, err
		}
		entry = entry.OnVolume()
		log.Info("data on volume", "volume", vol.Name, "loaded", vol.Loaded, "new", vol.New)
	}

	var (
		st     localState
		binary string
		// The SUT's own password: no two SUTs share one.
		password = l.SUT.PasswordOf(s.Code, s.Configuration)
	)
	switch entry.Kind {
	case catalog.KindRedis:
		st, binary, err = l.startRedis(ctx, dir, port, entry, password)
	case catalog.KindPostgreSQL:
		st, binary, err = l.startPostgres(ctx, dir, port, entry, s.Benchmark, password)
	case catalog.KindRedisCluster:
		st, binary, err = l.startRedisCluster(ctx, dir, entry, s.SUT, password)
	case catalog.KindPgBouncer:
		st, binary, err = l.startPgBouncer(ctx, dir, entry, s, password)
	case catalog.KindVictoriaMetrics:
		st, binary, err = l.startVictoriaMetrics(ctx, dir, port, entry)
	case catalog.KindPrometheus:
		st, binary, err = l.startPrometheus(ctx, dir, port, entry)
	case catalog.KindGraphite:
		st, binary, err = l.startGraphite(ctx, dir, entry, s.SUT, prev)
	default:
		err = fmt.Errorf("the local backend cannot run kind %q of %s", entry.Kind, entry.Name)
	}
	if err != nil {
		return backend.Deployed{}, err
	}
	if err := l.monitorSUT(dir, s, entry, &st, prev, password); err != nil {
		return backend.Deployed{}, err
	}
	if err := writeState(dir, st); err != nil {
		return backend.Deployed{}, err
	}

	info := localdb.HostInfo()
	if mb, err := localdb.DiskFreeMB(dir); err == nil {
		info["disk"] = mb
	}
	version, err := localdb.Version(ctx, binary)
	if err != nil {
		return backend.Deployed{}, err
	}
	info["version"] = version
	if vol != nil {
		// bexhoma's Connections name the volume and its use (as it was
		// when the SUT came up: what an earlier experiment loaded).
		info["volume"] = vol.Name
		if used, err := diskUsage(filepath.Join(l.volumesDir(), vol.Name, "data")); err == nil {
			info["volume_used"] = humanBytes(used)
		} else {
			log.Warn("volume use not read", "volume", vol.Name, "err", err)
		}
	}
	// The server's settings, as the Kubernetes backend passes them as
	// container args (the summary's Connections: args).
	applied := entry
	if vol != nil {
		applied = entry.OnVolume()
	}
	if args := applied.SettingArgsList(); len(args) > 0 {
		info["args"] = args
	}
	for k, v := range st.Info {
		info[k] = v
	}
	log.Info("sut ready", "port", st.Endpoint.Port, "pid", st.Pid, "version", version)
	return backend.Deployed{Endpoint: st.Endpoint, Info: info, Backend: BackendLocal, Volume: vol}, nil
}

func (l *Local) startRedis(ctx context.Context, dir string, port int, entry catalog.Entry, password string) (localState, string, error) {
	bin, err := localdb.RedisBinary()
	if err != nil {
		return localState{}, "", err
	}
	data := filepath.Join(dir, "data")
	opts := localdb.RedisOptions{Settings: entry.Settings, OSUser: localdb.SUTUser, Password: password}
	r, err := onPreviousPort(l.log(), "sut", dir, port, func(port int) (*localdb.Redis, error) {
		return localdb.StartRedis(ctx, data, port, opts)
	})
	if err != nil {
		return localState{}, "", err
	}
	return localState{DBMS: entry.Name, Kind: entry.Kind, Endpoint: entry.Endpoint(localdb.Loopback, r.Port), Pid: r.Pid}, bin, nil
}

// startVictoriaMetrics runs a single-node VictoriaMetrics: its HTTP API
// (queries, remote write, /metrics) is the endpoint's port, its carbon
// plaintext listener the port of the catalog's carbon role. It runs as
// the SUTs' OS account and has no password: carbon's plaintext protocol
// has none, and it listens on loopback only (docs/security.md).
func (l *Local) startVictoriaMetrics(ctx context.Context, dir string, port int, entry catalog.Entry) (localState, string, error) {
	bin, err := localdb.VictoriaMetricsBinary()
	if err != nil {
		return localState{}, "", err
	}
	v, err := onPreviousPort(l.log(), "sut", dir, port, func(port int) (*localdb.VictoriaMetrics, error) {
		return localdb.StartVictoriaMetrics(ctx, filepath.Join(dir, "data"), port, localdb.VictoriaMetricsOptions{OSUser: localdb.SUTUser})
	})
	if err != nil {
		return localState{}, "", err
	}
	ep := entry.Endpoint(localdb.Loopback, v.Port)
	ep.Ports = map[string]int{entry.TSDB.CarbonPort: v.GraphitePort}
	return localState{DBMS: entry.Name, Kind: entry.Kind, Endpoint: ep, Pid: v.Pid}, bin, nil
}

// startPrometheus runs Prometheus as a time-series database: its
// remote-write receiver on, nothing to scrape (its targets directory stays
// empty), as the SUTs' OS account, on loopback without a password (as
// VictoriaMetrics, docs/security.md).
func (l *Local) startPrometheus(ctx context.Context, dir string, port int, entry catalog.Entry) (localState, string, error) {
	bin, err := prom.Binary()
	if err != nil {
		return localState{}, "", err
	}
	p, err := onPreviousPort(l.log(), "sut", dir, port, func(port int) (*prom.Server, error) {
		return prom.StartServer(ctx, filepath.Join(dir, "data"), prom.ServerOptions{Port: port, RemoteWriteReceiver: true, User: localdb.SUTUser})
	})
	if err != nil {
		return localState{}, "", err
	}
	return localState{DBMS: entry.Name, Kind: entry.Kind, Endpoint: entry.Endpoint(localdb.Loopback, p.Port), Pid: p.Pid}, bin, nil
}

func (l *Local) startPostgres(ctx context.Context, dir string, port int, entry catalog.Entry, benchmark, password string) (localState, string, error) {
	bin, err := localdb.PGBinDir()
	if err != nil {
		return localState{}, "", err
	}
	data := filepath.Join(dir, "data")
	opts := localdb.PGOptions{Database: entry.Database, Settings: entry.Settings, OSUser: localdb.SUTUser}
	if password != "" {
		if opts.PassFile, err = writePGPass(dir, password); err != nil {
			return localState{}, "", err
		}
	}
	p, err := onPreviousPort(l.log(), "sut", dir, port, func(port int) (*localdb.Postgres, error) {
		return localdb.StartPostgres(ctx, data, port, opts)
	})
	if err != nil {
		return localState{}, "", err
	}
	if err := initSchema(ctx, p.URL(), entry.Schema(benchmark)); err != nil {
		return localState{}, "", err
	}
	return localState{DBMS: entry.Name, Kind: entry.Kind, Endpoint: entry.Endpoint(localdb.Loopback, p.Port), Pid: p.Pid}, filepath.Join(bin, "postgres"), nil
}

// pgpassFile is a configuration's pgpass file (its SUT's password): the
// deployer's own logins to its PostgreSQL name it (passfile=).
const pgpassFile = "sut.pgpass"

// writePGPass writes the SUT's password into dir's pgpass file (mode 0600,
// ours) and returns its path.
func writePGPass(dir, password string) (string, error) {
	path := filepath.Join(dir, pgpassFile)
	// pgpass escapes a colon or a backslash with a backslash.
	escaped := strings.NewReplacer(`\`, `\\`, `:`, `\:`).Replace(password)
	if err := atomicfile.Write(path, []byte("*:*:*:*:"+escaped+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("sut password file: %w", err)
	}
	return path, nil
}

// onPreviousPort runs start on port, where a redelivered deploy or a
// restart finds its server's endpoint again (0: none yet). When another
// process has taken that port meanwhile, a new endpoint is better than a
// failed deploy: start runs again on a free port. what names the server in
// the warning ("sut", "pool").
func onPreviousPort[T any](log *slog.Logger, what, dir string, port int, start func(port int) (T, error)) (T, error) {
	s, err := start(port)
	if errors.Is(err, localdb.ErrAddrInUse) && port != 0 {
		log.Warn("the "+what+"'s previous port is taken: using another", "port", port, "dir", dir)
		s, err = start(0)
	}
	return s, err
}

// initSchema runs the catalog's schema statements (idempotent: IF NOT EXISTS).
func initSchema(ctx context.Context, url string, stmts []string) error {
	if len(stmts) == 0 {
		return nil
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("schema: %s: %w", firstWords(s, 6), err)
		}
	}
	return nil
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		return strings.Join(f[:n], " ") + " ..."
	}
	return strings.Join(f, " ")
}

// Teardown stops the configuration's server and removes its directory.
// Nothing there is not an error.
func (l *Local) Teardown(ctx context.Context, code, configuration string) error {
	dir, err := l.dir(code, configuration)
	if err != nil {
		return err
	}
	defer l.lock(dir)()
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	// Stop by the servers' own pid files rather than endpoint.json, which a
	// deployer that crashed mid-deploy never wrote. Each Stop is a no-op
	// when its server is not there. Agents started for a phase go first,
	// a pool before its backend.
	if err := stopPhaseAgents(ctx, dir); err != nil {
		return err
	}
	if err := l.unmonitor(ctx, dir, code, configuration); err != nil {
		return err
	}
	if err := stopPools(ctx, dir); err != nil {
		return err
	}
	data := filepath.Join(dir, "data")
	if err := (&localdb.Postgres{Dir: data}).Stop(ctx); err != nil {
		return err
	}
	if err := (&localdb.Redis{Dir: data}).Stop(ctx); err != nil {
		return err
	}
	if err := (&localdb.RedisCluster{Dir: filepath.Join(dir, clusterDir)}).Stop(ctx); err != nil {
		return err
	}
	if err := (&localdb.VictoriaMetrics{Dir: data}).Stop(ctx); err != nil {
		return err
	}
	if err := (&prom.Server{Dir: data}).Stop(ctx); err != nil {
		return err
	}
	if err := stopGraphite(ctx, dir); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	_ = os.Remove(filepath.Dir(dir)) // the experiment's dir, once its last configuration is gone
	l.log().Info("sut removed", "code", code, "configuration", configuration)
	return nil
}

// dir is Root/<code>/<configuration>, refusing names that would escape it.
func (l *Local) dir(code, configuration string) (string, error) {
	for _, n := range []struct{ field, value string }{{"code", code}, {"configuration", configuration}} {
		if n.value == "" || n.value == "." || n.value == ".." || strings.ContainsAny(n.value, "/\\\x00") {
			return "", fmt.Errorf("invalid %s %q: must be a non-empty name without slashes", n.field, n.value)
		}
	}
	root, err := filepath.Abs(l.Root)
	if err != nil {
		return "", fmt.Errorf("sut root: %w", err)
	}
	return filepath.Join(root, code, configuration), nil
}

// lock serialises Deploy and Teardown of one configuration (a redelivered
// job may arrive while the first is still starting the server); it returns
// the unlock function.
func (l *Local) lock(dir string) func() {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*sync.Mutex{}
	}
	m, ok := l.locks[dir]
	if !ok {
		m = &sync.Mutex{}
		l.locks[dir] = m
	}
	l.mu.Unlock()
	m.Lock()
	return m.Unlock
}

func (l *Local) log() *slog.Logger {
	if l.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l.Log.With("component", "deployer-local")
}

func readState(dir string) (localState, error) {
	return atomicfile.Read[localState](filepath.Join(dir, stateFile))
}

func writeState(dir string, st localState) error {
	return atomicfile.WriteJSON(filepath.Join(dir, stateFile), st, 0o644)
}

// localIgnores are the notes of what in the SUT's spec the local backend
// does not apply (plan.Notes, the rule the CLI warns by).
func localIgnores(sut *contracts.SUTSpec) []string {
	if sut == nil {
		return nil
	}
	return plan.Notes(contracts.Request{Resources: sut.Resources, Storage: sut.Storage, Nodes: &contracts.Nodes{SUT: sut.Node}}, BackendLocal)
}
