package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/pgbexporter"
	"github.com/benchq/benchq/internal/procmetrics"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/prom"
	"github.com/benchq/benchq/services/deployer/backend"
)

// Monitoring on the local backend (docs/monitoring.md). A configuration
// whose SUT spec asks for any monitoring (-m, -mc, -ma) has its process trees
// exported by the deployer's own /metrics under cAdvisor's names (component
// sut for redis-server and postgres, every node of a cluster on its own;
// pool for pgbouncers). With -ma each server also gets its exporter, started
// with it and stopped at teardown: prometheus-redis-exporter per Redis node
// (one per node of a cluster, masters and replicas alike, rather than its
// cluster mode, so every node's series carry the node's pod label),
// prometheus-postgres-exporter for PostgreSQL (a pool's backend too), and
// internal/pgbexporter per pgbouncer, served by the deployer itself. Each
// exporter gets a file_sd target group in BENCHQ_PROMETHEUS_TARGETS.
//
// All of it is recorded in endpoint.json, so a restarted deployer exports the
// running SUTs' trees again and serves the pgbouncer exporters on their
// previous addresses (restore). The exporter processes are detached with a
// pid file in the configuration's directory, where `benchq down` finds them
// as it finds the SUTs.

// exporterPrefix starts the pid and log files of an exporter process.
const exporterPrefix = "exporter-"

// exporter is one application-metrics endpoint of a SUT.
type exporter struct {
	Name      string `json:"name"`      // unique in the configuration: redis-0, postgres, pgbouncer-1
	Component string `json:"component"` // sut | pool
	Addr      string `json:"addr"`      // host:port serving /metrics
	// Console is the pgbouncer admin console an in-process exporter reads
	// ("" for exporter processes).
	Console string `json:"console,omitempty"`
	// Whisper are the whisper directories, by cache, an in-process carbon
	// exporter reads (graphite.go).
	Whisper map[string]string `json:"whisper,omitempty"`
}

// monitor is the local backend's monitoring state, made on first use.
type monitor struct {
	procs   *procmetrics.Collector
	targets *prom.Targets // nil: no targets directory

	mu    sync.Mutex
	trees map[string][]sutTree // configuration dir → its trees in procs
	// served are the in-process exporters (pgbouncer consoles, carbon's
	// counts) by dir/exporter name.
	served map[string]*http.Server
}

// sutTree is one process tree of a SUT exported by procs: its id there and its
// component label (sut, pool).
type sutTree struct{ id, component string }

// Collectors are the backend's collectors for the deployer's /metrics: the
// SUTs' process trees.
func (l *Local) Collectors() []prometheus.Collector {
	return []prometheus.Collector{l.monitor().procs}
}

func (l *Local) monitor() *monitor {
	l.monOnce.Do(func() {
		// procmetrics fails only without /proc; the backend cannot run then.
		c, err := procmetrics.New(nil, "")
		if err != nil {
			panic(err)
		}
		m := &monitor{procs: c, trees: map[string][]sutTree{}, served: map[string]*http.Server{}}
		dir := l.TargetsDir
		if dir == "" {
			dir = os.Getenv(prom.EnvTargetsDir)
		}
		if dir != "" {
			m.targets = &prom.Targets{Dir: dir}
		} else {
			l.log().Info("BENCHQ_PROMETHEUS_TARGETS not set: no Prometheus targets are written for exporters and phase agents")
		}
		l.mon = m
		l.restore()
	})
	return l.mon
}

// restore exports the trees of the SUTs a previous deployer started and
// serves their pgbouncer exporters again.
func (l *Local) restore() {
	root, err := filepath.Abs(l.Root)
	if err != nil {
		return
	}
	files, _ := filepath.Glob(filepath.Join(root, "*", "*", stateFile))
	for _, f := range files {
		dir := filepath.Dir(f)
		st, err := readState(dir)
		if err != nil || (st.Monitoring == nil && len(st.Exporters) == 0) {
			continue
		}
		code, configuration := filepath.Base(filepath.Dir(dir)), filepath.Base(dir)
		if st.Monitoring != nil {
			l.watchTrees(dir, code, configuration, st)
		}
		for i, e := range st.Exporters {
			var addr string
			switch {
			case e.Console != "":
				addr, err = l.servePgbExporter(dir, e, e.Addr, l.SUT.PasswordOf(code, configuration))
			case e.Whisper != nil:
				addr, err = l.serveCarbonExporter(dir, e, e.Addr)
			default:
				continue
			}
			if err != nil {
				l.log().Warn("exporter not restored", "dir", dir, "exporter", e.Name, "err", err)
			} else if addr != e.Addr {
				st.Exporters[i].Addr = addr
				_ = writeState(dir, st)
				l.writeTarget(code, configuration, st, st.Exporters[i])
			}
		}
		l.log().Info("monitoring restored", "code", code, "configuration", configuration, "exporters", len(st.Exporters))
	}
}

// monitorSUT records s's monitoring in st, exports its trees and, with -ma,
// starts (or finds) its exporters, which log in with the SUT's password.
// prev is the state of an earlier deploy. It does not wait for Prometheus
// to scrape a new exporter (it reads new target files only every few
// seconds): the deployer reads the exporters at each phase's edges itself
// (ReadExporters, contracts.SUTEdge), so a phase's first seconds are not
// missing.
func (l *Local) monitorSUT(dir string, s backend.Spec, entry catalog.Entry, st *localState, prev localState, password string) error {
	if s.SUT == nil || s.SUT.Monitoring == nil {
		return nil
	}
	l.monitor()
	st.Monitoring = s.SUT.Monitoring
	l.watchTrees(dir, s.Code, s.Configuration, *st)
	if !st.Monitoring.Application {
		return nil
	}
	for _, e := range st.Exporters { // started with the SUT (Graphite's counts)
		l.writeTarget(s.Code, s.Configuration, *st, e)
	}
	previous := map[string]string{}
	for _, e := range prev.Exporters {
		previous[e.Name] = e.Addr
	}
	for _, e := range wantedExporters(entry, *st, password) {
		var err error
		switch {
		case e.Addr != "": // the SUT's own /metrics
		case e.Console != "":
			e.Addr, err = l.servePgbExporter(dir, e.exporter, previous[e.Name], password)
		default:
			e.Addr, err = startExporter(dir, e, previous[e.Name], procs.FreePort)
		}
		if err != nil {
			return fmt.Errorf("exporter %s: %w", e.Name, err)
		}
		st.Exporters = append(st.Exporters, e.exporter)
		l.writeTarget(s.Code, s.Configuration, *st, e.exporter)
	}
	return nil
}

// wanted is an exporter to run: a process (Path, Args, Env; the listen
// address is added), an in-process pgbouncer exporter (Console), or the
// SUT's own /metrics (Addr already set).
type wanted struct {
	exporter
	Path string
	Args []string
	Env  []string
}

const (
	redisExporterBin    = "/usr/bin/prometheus-redis-exporter"
	postgresExporterBin = "/usr/bin/prometheus-postgres-exporter"
)

// wantedExporters are the exporters of a SUT whose clients log in with
// password ("": none); it reaches an exporter process in its environment
// (readable by its own account and root only), never in its arguments.
func wantedExporters(entry catalog.Entry, st localState, password string) []wanted {
	redis := func(name, addr string) wanted {
		w := wanted{exporter: exporter{Name: name, Component: "sut"}, Path: redisExporterBin, Args: []string{"-redis.addr", "redis://" + addr}}
		if password != "" {
			w.Env = []string{"REDIS_PASSWORD=" + password}
		}
		return w
	}
	postgres := func(port int, user, database string) wanted {
		dsn := url.URL{Scheme: "postgresql", User: url.User(orPostgres(user)), Host: fmt.Sprintf("127.0.0.1:%d", port), Path: "/" + orPostgres(database), RawQuery: "sslmode=disable"}
		if password != "" {
			dsn.User = url.UserPassword(orPostgres(user), password)
		}
		return wanted{exporter: exporter{Name: "postgres", Component: "sut"}, Path: postgresExporterBin, Env: []string{"DATA_SOURCE_NAME=" + dsn.String()}}
	}
	switch entry.Kind {
	case catalog.KindRedis:
		return []wanted{redis("redis", fmt.Sprintf("127.0.0.1:%d", st.Endpoint.Port))}
	case catalog.KindRedisCluster:
		var out []wanted
		for i, addr := range strings.Split(fmt.Sprint(st.Info["nodes"]), ",") {
			out = append(out, redis("redis-"+strconv.Itoa(i), addr))
		}
		return out
	case catalog.KindPostgreSQL:
		return []wanted{postgres(st.Endpoint.Port, st.Endpoint.User, st.Endpoint.Database)}
	case catalog.KindVictoriaMetrics, catalog.KindPrometheus:
		// It serves its own /metrics on its HTTP port: no exporter to run.
		return []wanted{{exporter: exporter{Name: entry.Kind, Component: "sut", Addr: fmt.Sprintf("127.0.0.1:%d", st.Endpoint.Port)}}}
	case catalog.KindPgBouncer:
		out := []wanted{postgres(st.BackendPort, st.Endpoint.User, st.Endpoint.Database)}
		for i, addr := range strings.Split(fmt.Sprint(st.Info["pool_endpoints"]), ",") {
			out = append(out, wanted{exporter: exporter{Name: "pgbouncer-" + strconv.Itoa(i), Component: "pool",
				Console: fmt.Sprintf("postgresql://%s@%s/pgbouncer?sslmode=disable", orPostgres(st.Endpoint.User), addr)}})
		}
		return out
	}
	return nil
}

func orPostgres(s string) string {
	if s == "" {
		return "postgres"
	}
	return s
}

// startExporter starts e's process, unless the one a previous deploy
// started still runs on prevAddr, and waits until it serves /metrics. Its
// port is picked free (pick: procs.FreePort) a moment before the exporter
// binds it; another process that takes it in between (side-by-side stacks
// do) makes the exporter exit, and it starts again on another port.
func startExporter(dir string, e wanted, prevAddr string, pick func() (int, error)) (string, error) {
	pidFile := filepath.Join(dir, exporterPrefix+e.Name+".pid")
	if pid, err := procs.ReadPidFile(pidFile); err == nil && isExporter(pid) {
		if prevAddr != "" && scrape(context.Background(), prevAddr) == nil {
			return prevAddr, nil
		}
		_ = procs.Stop(context.Background(), pid, 5*time.Second)
	}
	var addr string
	err := localdb.OnFreePort(pick, func(port int) error {
		addr = fmt.Sprintf("127.0.0.1:%d", port)
		return runExporter(dir, e, addr, pidFile)
	})
	if err != nil {
		return "", err
	}
	return addr, nil
}

// runExporter starts e's process on addr and waits until it serves
// /metrics; an exporter that exited says why (localdb.Exited: wrapping
// localdb.ErrAddrInUse when its port was taken), and one that did not
// answer is stopped.
func runExporter(dir string, e wanted, addr, pidFile string) error {
	logFile := filepath.Join(dir, exporterPrefix+e.Name+".log")
	pid, err := procs.Start(procs.Spec{
		Name: e.Name + " exporter", Path: e.Path, Args: append(slices.Clone(e.Args), "--web.listen-address="+addr), Env: e.Env,
		User:    localdb.SUTUser, // as root: the SUTs' account, which owns nothing of the stack
		LogFile: logFile, PidFile: pidFile,
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = procs.WaitFor(ctx, e.Name+" exporter on "+addr, 10*time.Millisecond, func(ctx context.Context) error {
		if !procs.Alive(pid) {
			return procs.Permanent(localdb.Exited(e.Name+" exporter", pid, logFile))
		}
		return scrape(ctx, addr)
	})
	if err != nil {
		_ = procs.Stop(context.Background(), pid, 5*time.Second)
	}
	return err
}

// isExporter tells our exporter from an unrelated process that reused a
// recorded pid (comm is cut at 15 characters: "prometheus-redi").
func isExporter(pid int) bool {
	comm, err := procs.Comm(pid)
	return err == nil && procs.Alive(pid) && strings.HasPrefix(comm, "prometheus-")
}

func scrape(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return prom.Probe(ctx, "http://"+addr+"/metrics")
}

// servePgbExporter serves e's pgbouncer console from this process, logged
// in with the SUT's password, on prevAddr when it is free (a restart keeps
// its target), else on a free port.
func (l *Local) servePgbExporter(dir string, e exporter, prevAddr, password string) (string, error) {
	return l.serveInProcess(dir, e.Name, prevAddr, func() (http.Handler, error) {
		console := e.Console
		if password != "" {
			// The state keeps the console's URL without the password.
			u, err := url.Parse(console)
			if err != nil {
				return nil, fmt.Errorf("pgbouncer console: %w", err)
			}
			u.User = url.UserPassword(u.User.Username(), password)
			console = u.String()
		}
		return pgbexporter.Handler(console, 0, l.log().With("exporter", e.Name))
	})
}

// serveInProcess serves the /metrics handler made by handler as the
// exporter name of dir (unless it is served already), on prevAddr when it
// is free, else on a free loopback port, and returns its address.
// The monitor is made (monitor()) before.
func (l *Local) serveInProcess(dir, name, prevAddr string, handler func() (http.Handler, error)) (string, error) {
	m := l.mon
	key := filepath.Join(dir, name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if srv, ok := m.served[key]; ok {
		return srv.Addr, nil
	}
	h, err := handler()
	if err != nil {
		return "", err
	}
	var ln net.Listener
	if prevAddr != "" {
		ln, _ = net.Listen("tcp", prevAddr) // taken meanwhile: any free port below
	}
	if ln == nil {
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return "", err
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	srv := &http.Server{Addr: ln.Addr().String(), Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	m.served[key] = srv
	return srv.Addr, nil
}

// watchTrees exports the process trees of st's servers.
func (l *Local) watchTrees(dir, code, configuration string, st localState) {
	m := l.mon
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.trees[dir] {
		m.procs.Remove(t.id)
	}
	m.trees[dir] = nil
	add := func(name, component, container string, pid int) {
		if pid <= 0 {
			return
		}
		id := dir + "/" + name
		m.procs.Set(id, pid, procmetrics.Labels{
			Namespace: "benchq", Pod: code + "-" + configuration + "-" + name, Container: container,
			Experiment: code, Configuration: configuration, DBMS: st.DBMS, Component: component,
		})
		m.trees[dir] = append(m.trees[dir], sutTree{id, component})
	}
	switch st.Kind {
	case catalog.KindRedis:
		add("sut", "sut", "redis", st.Pid)
	case catalog.KindPostgreSQL:
		add("sut", "sut", "postgres", st.Pid)
	case catalog.KindVictoriaMetrics:
		add("sut", "sut", "victoria-metrics", st.Pid)
	case catalog.KindPrometheus:
		add("sut", "sut", "prometheus", st.Pid)
	case catalog.KindRedisCluster:
		for i, pid := range st.Pids {
			add("node-"+strconv.Itoa(i), "sut", "redis", pid)
		}
	case catalog.KindGraphite:
		// Pids: the relay (if any), then the caches.
		pids := st.Pids
		if _, relay := st.Info["relay"]; relay && len(pids) > 0 {
			add("relay", "sut", "carbon-relay", pids[0])
			pids = pids[1:]
		}
		for i, pid := range pids {
			add(localdb.CacheName(i), "sut", "carbon-cache", pid)
		}
	case catalog.KindPgBouncer:
		// Pids: the pool processes, then the backend.
		for i, pid := range st.Pids {
			if i == len(st.Pids)-1 {
				add("sut", "sut", "postgres", pid)
			} else {
				add(poolDirPrefix+strconv.Itoa(i), "pool", "pgbouncer", pid)
			}
		}
	}
}

var unsafeTargetChars = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// targetName is the file_sd group of one exporter or phase agent.
func targetName(parts ...string) string {
	return unsafeTargetChars.ReplaceAllString(strings.Join(parts, "."), "_")
}

func (l *Local) writeTarget(code, configuration string, st localState, e exporter) {
	if l.mon.targets == nil {
		return
	}
	err := l.mon.targets.Write(targetName(code, configuration, e.Name), prom.Group{Targets: []string{e.Addr}, Labels: map[string]string{
		prom.LabelExperiment: code, prom.LabelConfiguration: configuration, prom.LabelDBMS: st.DBMS, prom.LabelComponent: e.Component,
	}})
	if err != nil {
		l.log().Warn("prometheus target not written", "exporter", e.Name, "err", err)
	}
}

// ReadCPU reads the CPU counters of configuration's trees now, summed per
// component as the catalog's query sums their series (backend.SUTReader);
// false when none is exported.
func (l *Local) ReadCPU(code, configuration string) (map[string]float64, bool) {
	dir, err := l.dir(code, configuration)
	if err != nil {
		return nil, false
	}
	m := l.monitor()
	m.mu.Lock()
	trees := slices.Clone(m.trees[dir])
	m.mu.Unlock()
	if len(trees) == 0 {
		return nil, false
	}
	ids := make([]string, len(trees))
	for i, t := range trees {
		ids[i] = t.id
	}
	read, err := m.procs.CPU(ids...)
	if err != nil || len(read) == 0 {
		return nil, false
	}
	out := map[string]float64{}
	for _, t := range trees {
		if v, ok := read[t.id]; ok {
			out[t.component] += v
		}
	}
	return out, true
}

// unmonitor undoes monitorSUT for the configuration in dir: its trees, its
// exporters (by their pid files, which a deploy that crashed before writing
// endpoint.json leaves too) and their targets.
func (l *Local) unmonitor(ctx context.Context, dir, code, configuration string) error {
	m := l.monitor()
	m.mu.Lock()
	for _, t := range m.trees[dir] {
		m.procs.Remove(t.id)
	}
	delete(m.trees, dir)
	for key, srv := range m.served {
		if filepath.Dir(key) == dir {
			_ = srv.Close()
			delete(m.served, key)
		}
	}
	m.mu.Unlock()

	names := map[string]bool{}
	if st, err := readState(dir); err == nil {
		for _, e := range st.Exporters {
			names[e.Name] = true
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, exporterPrefix+"*.pid"))
	var errs []error
	for _, f := range files {
		names[strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), exporterPrefix), ".pid")] = true
		if pid, err := procs.ReadPidFile(f); err == nil && isExporter(pid) {
			errs = append(errs, procs.Stop(ctx, pid, 5*time.Second))
		}
	}
	if m.targets != nil {
		for name := range names {
			errs = append(errs, m.targets.Remove(targetName(code, configuration, name)))
		}
		agents, _ := filepath.Glob(filepath.Join(dir, driversDir, "*.pid"))
		for _, f := range agents {
			errs = append(errs, m.targets.Remove(targetName(strings.TrimSuffix(filepath.Base(f), ".pid"))))
		}
	}
	return errors.Join(errs...)
}

// phaseAgentTarget names the file_sd group of a phase agent and writes it
// (when there is a targets directory).
func (l *Local) phaseAgentTarget(d backend.DriverSpec, name, addr string) {
	m := l.monitor()
	if m.targets == nil {
		return
	}
	err := m.targets.Write(targetName(name), prom.Group{Targets: []string{addr}, Labels: map[string]string{
		prom.LabelExperiment: d.Code, prom.LabelConfiguration: d.Configuration, prom.LabelDBMS: d.DBMS,
		prom.LabelComponent: "service", prom.LabelPhase: d.Phase,
	}})
	if err != nil {
		l.log().Warn("prometheus target not written", "agent", name, "err", err)
	}
}
