package localdb

import (
	"cmp"
	"context"
	"crypto/rand"
	_ "embed" // countedCache
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/benchq/benchq/internal/cachedir"
	"github.com/benchq/benchq/internal/httpget"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/whisper"
)

// CarbonVersion is the Graphite carbon (and whisper) the bootstrap installs
// from PyPI into a venv of its own (scripts/bootstrap.sh: CARBON_VERSION,
// the same; the pins of its dependencies are in
// scripts/carbon-requirements.txt).
const CarbonVersion = "1.1.10"

// CarbonHome locates the venv holding carbon: $BENCHQ_CARBON_HOME, else
// /opt/benchq/carbon/<version> (where the bootstrap installs it as root:
// the SUT's OS user must reach it, and /root is closed to it), else
// ~/.cache/benchq/carbon/<version>. It has bin/carbon-cache.py,
// bin/carbon-relay.py and graphite-web's bin/gunicorn.
func CarbonHome() (string, error) {
	places := []string{filepath.Join("/opt/benchq/carbon", CarbonVersion), filepath.Join(cachedir.Root(), "carbon", CarbonVersion)}
	if env := os.Getenv("BENCHQ_CARBON_HOME"); env != "" {
		places = []string{env}
	}
	for _, p := range places {
		// Our carbon-cache.py runs on the venv's python (its shebang), and
		// the relay on carbon's own script.
		if isExecutable(filepath.Join(p, "bin", "carbon-cache.py")) && isExecutable(filepath.Join(p, "bin", "python3")) {
			return p, nil
		}
	}
	return "", fmt.Errorf("no venv with carbon-cache.py and python3 in its bin in %s (make bootstrap installs carbon %s there; or set BENCHQ_CARBON_HOME to a venv holding it)", strings.Join(places, " nor "), CarbonVersion)
}

// GraphiteOptions tune StartGraphite.
type GraphiteOptions struct {
	// Caches is the number of carbon-caches behind a carbon-relay that
	// spreads the series over them by consistent hashing (-nw); 0 is one
	// carbon-cache clients write to directly.
	Caches int
	// Retention is whisper's retention of every series (default 1s:1d):
	// one point per second, as the workload flushes.
	Retention string
	// Timeout bounds the wait for each daemon's listener (default 30s).
	Timeout time.Duration
	// OSUser is the OS account the daemons run as when we are root ("":
	// ours), e.g. SUTUser.
	OSUser string
	// Listen is the address clients reach: the front daemon's ports (its
	// plaintext listener and its pickle port; a cache's query port too) and
	// graphite-web bind to it (default 127.0.0.1; "0.0.0.0" in a
	// container, cmd/graphite-pod). The ports of the caches behind a relay
	// here, which only the relay and graphite-web use, stay on loopback.
	Listen string
	// LinePort and HTTPPort fix the front daemon's plaintext port and
	// graphite-web's (0: free ports, kept across restarts). A fixed port
	// is never swapped for another: when it is taken, the start fails.
	LinePort, HTTPPort int
	// PicklePort fixes the front daemon's pickle port (0: a free one): a
	// cache pod's is where a relay in another pod writes to
	// (cmd/graphite-pod -role cache).
	PicklePort int
	// Remote are carbon-caches in other pods, each with its own
	// graphite-web (Host, Pickle, HTTP; cmd/graphite-pod -role relay).
	// With them no cache runs here: a relay spreads the series over their
	// pickle ports, and graphite-web answers from their graphite-webs
	// (CLUSTER_SERVERS).
	Remote []CarbonDaemon
}

// listen is opts.Listen, 127.0.0.1 by default.
func (opts GraphiteOptions) listen() string {
	if opts.Listen == "" {
		return "127.0.0.1"
	}
	return opts.Listen
}

// CarbonDaemon is one running daemon of Graphite: a carbon-cache, a
// carbon-relay, or graphite-web (the query API, under gunicorn).
type CarbonDaemon struct {
	Program  string // carbon-cache, carbon-relay or graphite-web
	Instance string // carbon's --instance: n0, n1, … for caches, relay; web
	Host     string // the address its ports bind to ("": 127.0.0.1); a remote cache's host
	Dir      string // its configuration, run/, storage/, <program>.{pid,log}
	Line     int    // the plaintext protocol's port (carbon)
	Pickle   int    // the pickle protocol's port (carbon; the relay writes to the caches' on it)
	Query    int    // the cache query port (carbon; graphite-web asks the caches there for points not yet written)
	HTTP     int    // graphite-web's port (/render)
	Pid      int

	remote bool // graphite-web: it answers from other pods' graphite-webs (GraphiteOptions.Remote)
}

// Graphite's programs (CarbonDaemon.Program).
const (
	carbonCache = "carbon-cache"
	carbonRelay = "carbon-relay"
	graphiteWeb = "graphite-web"
)

// graphiteProgram is what differs between Graphite's daemons; the rest
// (ports kept across restarts, files, start, readiness, stop) is
// CarbonDaemon's.
type graphiteProgram interface {
	// ports are the daemon's ports, in the order of its ports file.
	ports(d *CarbonDaemon) []*int
	// command is the name its live process' comm starts with.
	command(d *CarbonDaemon) string
	// launch is how to start it: the files to write in its directory,
	// the subdirectories it needs, the binary and its arguments.
	launch(d *CarbonDaemon, home string, opts GraphiteOptions, caches []CarbonDaemon) (launchSpec, error)
	// waitReady waits until the daemon serves, within timeout (0: the
	// default).
	waitReady(ctx context.Context, d *CarbonDaemon, timeout time.Duration) error
}

type launchSpec struct {
	files   []dirFile
	subdirs []string
	bin     string
	args    []string
}

type dirFile struct {
	name, content string
	mode          os.FileMode // 0: 0o644
}

// writeFile writes content to path with mode, an existing file's too.
func writeFile(path, content string, mode os.FileMode) error {
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		return err
	}
	return os.Chmod(path, mode)
}

// fixedPorts are the ports opts fix, in the order of d's ports (0: none):
// graphite-web's HTTP port; the front daemon's plaintext and pickle ports.
func (d *CarbonDaemon) fixedPorts(opts GraphiteOptions) []int {
	switch {
	case d.Program == graphiteWeb:
		return []int{opts.HTTPPort}
	case d.front(opts):
		return []int{opts.LinePort, opts.PicklePort, 0}
	}
	return []int{0, 0, 0}
}

// front reports whether clients write to d: the relay, or the only cache.
func (d *CarbonDaemon) front(opts GraphiteOptions) bool {
	return d.Program == carbonRelay || (d.Program == carbonCache && opts.Caches == 0 && len(opts.Remote) == 0)
}

// dialHost is where d is reached: its Host, loopback for a wildcard.
func (d CarbonDaemon) dialHost() string {
	if ip := net.ParseIP(d.Host); d.Host == "" || (ip != nil && ip.IsUnspecified()) {
		return "127.0.0.1"
	}
	return d.Host
}

// bindHost is the address d's ports bind to.
func (d CarbonDaemon) bindHost() string { return cmp.Or(d.Host, "127.0.0.1") }

// programOf is the daemon's program.
func (d *CarbonDaemon) programOf() graphiteProgram {
	if d.Program == graphiteWeb {
		return webProgram{}
	}
	return carbonProgram{relay: d.Program == carbonRelay}
}

// Addr is the plaintext listener's host:port.
func (d CarbonDaemon) Addr() string { return net.JoinHostPort(d.dialHost(), strconv.Itoa(d.Line)) }

// WhisperDir is where a cache keeps its series, one file per series
// (carbon's own under carbon/).
func (d CarbonDaemon) WhisperDir() string { return filepath.Join(d.Dir, "storage", "whisper") }

// URL is graphite-web's base URL.
func (d CarbonDaemon) URL() string {
	return "http://" + net.JoinHostPort(d.dialHost(), strconv.Itoa(d.HTTP))
}

func (d CarbonDaemon) daemon() daemon {
	return daemon{name: d.programOf().command(&d), dir: d.Dir, file: d.Program}
}

// Graphite is a running Graphite: one carbon-cache, or a carbon-relay in
// front of carbon-caches (here, or in other pods: opts.Remote), and
// graphite-web answering queries over all of them.
type Graphite struct {
	Dir    string
	Caches []CarbonDaemon // those running here
	Relay  *CarbonDaemon  // nil: clients write to Caches[0]
	Web    CarbonDaemon   // graphite-web
}

// Front is the daemon clients write to: the relay, or the only cache.
func (g *Graphite) Front() CarbonDaemon {
	if g.Relay != nil {
		return *g.Relay
	}
	return g.Caches[0]
}

// Pids are the daemons' processes, the front one first, graphite-web
// last.
func (g *Graphite) Pids() []int {
	var out []int
	for _, d := range g.Daemons() {
		out = append(out, d.Pid)
	}
	return out
}

// Daemons are the running daemons, the front one first, graphite-web
// last (as Pids).
func (g *Graphite) Daemons() []CarbonDaemon {
	var out []CarbonDaemon
	if g.Relay != nil {
		out = append(out, *g.Relay)
	}
	return append(append(out, g.Caches...), g.Web)
}

// LogFile is the daemon's log (its stdout and stderr).
func (d CarbonDaemon) LogFile() string { return d.daemon().logFile() }

// CacheName is how benchq names the i-th carbon-cache of a Graphite SUT
// (the exporter's cache label, its process in the SUT's CPU).
func CacheName(i int) string { return "cache-" + strconv.Itoa(i) }

// WhisperByCache are the caches' series directories by CacheName.
func (g *Graphite) WhisperByCache() map[string]string {
	out := make(map[string]string, len(g.Caches))
	for i, c := range g.Caches {
		out[CacheName(i)] = c.WhisperDir()
	}
	return out
}

// WhisperDirs are the caches' series directories.
func (g *Graphite) WhisperDirs() []string {
	var out []string
	for _, c := range g.Caches {
		out = append(out, c.WhisperDir())
	}
	return out
}

// StartGraphite runs Graphite in dir, on 127.0.0.1 (opts.Listen): carbon's cache-0,
// cache-1, … and, with opts.Caches > 0, a relay in front of them (with
// opts.Remote, a relay in front of those alone), then graphite-web over the caches, and waits until every daemon takes
// connections and graphite-web answers a query. Live daemons of dir are kept; a dead one is
// started again on its previous ports when they are free. If it fails,
// nothing of dir is left running (unless ctx ended).
func StartGraphite(ctx context.Context, dir string, opts GraphiteOptions) (*Graphite, error) {
	return startInDir("carbon", dir, CarbonHome, func(dir, home string) (*Graphite, error) {
		g := &Graphite{Dir: dir}
		err := g.start(ctx, home, opts)
		if err != nil && ctx.Err() == nil {
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			err = errors.Join(err, g.Stop(stopCtx))
		}
		if err != nil {
			return nil, err
		}
		return g, nil
	})
}

func (g *Graphite) start(ctx context.Context, home string, opts GraphiteOptions) error {
	if opts.Caches < 0 || (opts.Caches > 0 && len(opts.Remote) > 0) {
		return fmt.Errorf("%d carbon-caches here, %d in other pods: want 0 (one, no relay) or more here, or only caches in other pods", opts.Caches, len(opts.Remote))
	}
	osUser, err := runAs("carbon", opts.OSUser, "")
	if err != nil {
		return err
	}
	if err := prepareDataDir(g.Dir, osUser); err != nil {
		return err
	}
	caches := opts.Remote
	if len(caches) == 0 {
		for i := range max(opts.Caches, 1) {
			d := CarbonDaemon{Program: carbonCache, Instance: "n" + strconv.Itoa(i), Dir: filepath.Join(g.Dir, fmt.Sprintf("cache-%d", i))}
			if d.front(opts) {
				d.Host = opts.listen()
			}
			if err := d.run(ctx, home, osUser, opts, nil); err != nil {
				return err
			}
			g.Caches = append(g.Caches, d)
		}
		caches = g.Caches
	}
	if opts.Caches > 0 || len(opts.Remote) > 0 {
		d := CarbonDaemon{Program: carbonRelay, Instance: "relay", Host: opts.listen(), Dir: filepath.Join(g.Dir, "relay")}
		if err := d.run(ctx, home, osUser, opts, caches); err != nil {
			return err
		}
		g.Relay = &d
	}
	g.Web = CarbonDaemon{Program: graphiteWeb, Instance: "web", Host: opts.listen(), Dir: filepath.Join(g.Dir, "web"), remote: len(opts.Remote) > 0}
	return g.Web.run(ctx, home, osUser, opts, caches)
}

// run starts the daemon (or finds it live) on its previous ports if it
// has any, else on free ones.
func (d *CarbonDaemon) run(ctx context.Context, home, osUser string, opts GraphiteOptions, caches []CarbonDaemon) error {
	if err := prepareDataDir(d.Dir, osUser); err != nil {
		return err
	}
	portsFile := filepath.Join(d.Dir, "ports")
	fields := d.programOf().ports(d)
	prev := make([]int, len(fields))
	if b, err := os.ReadFile(portsFile); err == nil {
		into := make([]any, len(prev))
		for i := range prev {
			into[i] = &prev[i]
		}
		_, _ = fmt.Sscan(string(b), into...)
	}
	fixed := d.fixedPorts(opts)
	keep := prev[0] != 0
	for i, f := range fixed {
		keep = keep && (f == 0 || f == prev[i])
	}
	if pid, ok := d.daemon().live(); ok && keep {
		for i, f := range fields {
			*f = prev[i]
		}
		d.Pid = pid
		return d.waitReady(ctx, opts.Timeout)
	}
	attempt := func(ports []int) error {
		var line []string
		for i := range ports {
			for ports[i] == 0 || slices.Contains(ports[:i], ports[i]) {
				p, err := procs.FreePort()
				if err != nil {
					return err
				}
				ports[i] = p
			}
			*fields[i] = ports[i]
			line = append(line, strconv.Itoa(ports[i]))
		}
		if err := os.WriteFile(portsFile, []byte(strings.Join(line, " ")+"\n"), 0o644); err != nil {
			return err
		}
		return d.launch(ctx, home, osUser, opts, caches)
	}
	// A fixed port is kept through the retries: clients were told it.
	withFixed := func(ports []int) []int {
		for i, f := range fixed {
			if f != 0 {
				ports[i] = f
			}
		}
		return ports
	}
	err := attempt(withFixed(prev))
	for i := 0; i < 2 && errors.Is(err, ErrAddrInUse); i++ {
		err = attempt(withFixed(make([]int, len(fields)))) // previous or picked ports taken: fresh ones
	}
	return err
}

func (d *CarbonDaemon) launch(ctx context.Context, home, osUser string, opts GraphiteOptions, caches []CarbonDaemon) error {
	spec, err := d.programOf().launch(d, home, opts, caches)
	if err != nil {
		return err
	}
	for _, f := range spec.files {
		if err := writeFile(filepath.Join(d.Dir, f.name), f.content, cmp.Or(f.mode, 0o644)); err != nil {
			return fmt.Errorf("write %s: %w", f.name, err)
		}
	}
	for _, sub := range spec.subdirs {
		if err := prepareDataDir(filepath.Join(d.Dir, sub), osUser); err != nil {
			return err
		}
	}
	pid, err := procs.Start(procs.Spec{
		Name:    d.Program,
		Path:    spec.bin,
		Args:    spec.args,
		Dir:     d.Dir,
		User:    osUser,
		LogFile: d.daemon().logFile(),
		PidFile: d.daemon().pidFile(),
	})
	if err != nil {
		return err
	}
	d.Pid = pid
	if err := d.waitReady(ctx, opts.Timeout); err != nil {
		stopFailedStart(ctx, func(ctx context.Context) error { return d.daemon().stop(ctx, pid) })
		return err
	}
	return nil
}

// carbonProgram is carbon's daemons: a carbon-cache, or the relay.
type carbonProgram struct{ relay bool }

func (carbonProgram) ports(d *CarbonDaemon) []*int { return []*int{&d.Line, &d.Pickle, &d.Query} }

func (carbonProgram) command(d *CarbonDaemon) string { return d.Program + ".py" }

// countedCache is our carbon-cache.py: carbon's own, with its whisper
// writer wrapped to count the points it writes (whisper.ReadWritten).
//
//go:embed carbon_cache_counted.py
var countedCache string

func (c carbonProgram) launch(d *CarbonDaemon, home string, opts GraphiteOptions, caches []CarbonDaemon) (launchSpec, error) {
	conf := filepath.Join(d.Dir, "carbon.conf")
	spec := launchSpec{
		files:   []dirFile{{name: "carbon.conf", content: c.config(d, caches)}, {name: "storage-schemas.conf", content: storageSchemas(opts.Retention)}},
		subdirs: []string{"run", "storage", "storage/whisper", "storage/log", "storage/lists"},
		// --debug: in the foreground, logging to stdout (our log file).
		bin:  filepath.Join(home, "bin", d.Program+".py"),
		args: []string{"--config=" + conf, "--instance=" + d.Instance, "--debug", "start"},
	}
	if c.relay {
		return spec, nil
	}
	// A cache runs our carbon-cache.py, named as carbon's so that its
	// process' comm is the one command names, with the venv's python.
	counted := dirFile{name: d.Program + ".py", content: "#!" + filepath.Join(home, "bin", "python3") + "\n" + countedCache, mode: 0o755}
	spec.files = append(spec.files, counted)
	spec.args = append([]string{whisper.WrittenFile(d.WhisperDir()), spec.bin}, spec.args...)
	spec.bin = filepath.Join(d.Dir, counted.name)
	return spec, nil
}

// config is the daemon's carbon.conf. Carbon's defaults throttle a
// benchmark (50 new series a minute, a bounded cache): every limit is
// lifted, so what is measured is carbon's own speed. A cache's own counters
// go every second (CARBON_METRIC_INTERVAL) under carbon.agents.*: benchq
// serves committedPoints, metricsReceived, errors and cache.size from them
// (docs/tsdb.md); the stored count is our carbon-cache.py's.
func (c carbonProgram) config(d *CarbonDaemon, caches []CarbonDaemon) string {
	section := "cache"
	if c.relay {
		section = "relay"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# written by benchq (internal/localdb/graphite.go) for %s %s\n", d.Program, d.Instance)
	fmt.Fprintf(&b, "[%s]\n", section)
	kv := func(k string, v any) { fmt.Fprintf(&b, "%s = %v\n", k, v) }
	storage := filepath.Join(d.Dir, "storage")
	kv("STORAGE_DIR", storage)
	kv("LOCAL_DATA_DIR", filepath.Join(storage, "whisper"))
	kv("WHITELISTS_DIR", filepath.Join(storage, "lists"))
	kv("CONF_DIR", d.Dir)
	kv("LOG_DIR", filepath.Join(storage, "log"))
	kv("PID_DIR", filepath.Join(d.Dir, "run")) // not ours: <program>.pid is procs'
	kv("ENABLE_LOGROTATION", "False")
	kv("USER", "")
	kv("LINE_RECEIVER_INTERFACE", d.bindHost())
	kv("LINE_RECEIVER_PORT", d.Line)
	kv("PICKLE_RECEIVER_INTERFACE", d.bindHost())
	kv("PICKLE_RECEIVER_PORT", d.Pickle)
	kv("ENABLE_UDP_LISTENER", "False")
	kv("LOG_LISTENER_CONNECTIONS", "False")
	kv("USE_FLOW_CONTROL", "True")
	kv("CARBON_METRIC_PREFIX", "carbon")
	if !c.relay {
		kv("CARBON_METRIC_INTERVAL", 1)
		kv("CACHE_QUERY_INTERFACE", d.bindHost())
		kv("CACHE_QUERY_PORT", d.Query)
		kv("MAX_CACHE_SIZE", "inf")
		kv("MAX_UPDATES_PER_SECOND", "inf")
		kv("MAX_CREATES_PER_MINUTE", "inf")
		kv("LOG_UPDATES", "False")
		kv("LOG_CREATES", "False")
		kv("LOG_CACHE_HITS", "False")
		kv("WHISPER_AUTOFLUSH", "False")
		kv("WHISPER_SPARSE_CREATE", "True")
		return b.String()
	}
	// The relay's own counters are off: they would travel to the caches
	// as points, load that is not the workload's (the caches count them
	// as carbon's own, apart from the workload's: whisper.ReadWritten).
	kv("CARBON_METRIC_INTERVAL", 0)
	kv("RELAY_METHOD", "consistent-hashing")
	kv("REPLICATION_FACTOR", 1)
	var dest []string
	for _, c := range caches {
		dest = append(dest, fmt.Sprintf("%s:%d:%s", c.dialHost(), c.Pickle, c.Instance))
	}
	kv("DESTINATIONS", strings.Join(dest, ", "))
	kv("MAX_QUEUE_SIZE", 100000)
	kv("MAX_DATAPOINTS_PER_MESSAGE", 500)
	return b.String()
}

// webSettingsModule is graphite-web's Django settings, written in its
// directory.
const webSettingsModule = "benchq_graphite_settings"

// webSettings is graphite-web's settings: graphite's defaults, with the
// caches' whisper directories to read and their query ports to ask for
// the points they hold but have not written yet (carbonlink), hashed as
// the relay spreads the series (consistent hashing on host and instance);
// for caches in other pods (remote), their graphite-webs to ask instead
// (CLUSTER_SERVERS), each of which reads its own cache so, every one of
// them at every query.
// Paths are written as Go quotes them, which Python reads alike. On
// loopback only the local names are allowed hosts; listening beyond it
// (a pod, reached by its Service's name), any.
func webSettings(dir string, caches []CarbonDaemon, remote bool, listen string) (string, error) {
	key := make([]byte, 24)
	if _, err := rand.Read(key); err != nil {
		return "", err
	}
	whisperDirs, links, servers := []string{}, []string{}, []string{}
	for _, c := range caches {
		if remote {
			servers = append(servers, strconv.Quote(net.JoinHostPort(c.dialHost(), strconv.Itoa(c.HTTP))))
			continue
		}
		whisperDirs = append(whisperDirs, strconv.Quote(c.WhisperDir()))
		links = append(links, strconv.Quote(fmt.Sprintf("%s:%d:%s", c.dialHost(), c.Query, c.Instance)))
	}
	storage := filepath.Join(dir, "storage")
	var b strings.Builder
	fmt.Fprintf(&b, "# written by benchq (internal/localdb/graphite.go) for graphite-web\n")
	fmt.Fprintf(&b, "from graphite.settings import *  # noqa: F401,F403\n")
	kv := func(k, v string) { fmt.Fprintf(&b, "%s = %s\n", k, v) }
	kv("SECRET_KEY", strconv.Quote(hex.EncodeToString(key)))
	hosts := `["127.0.0.1", "localhost"]`
	if listen != "127.0.0.1" {
		hosts = `["*"]`
	}
	kv("ALLOWED_HOSTS", hosts)
	kv("STORAGE_DIR", strconv.Quote(storage))
	kv("LOG_DIR", strconv.Quote(filepath.Join(storage, "log")))
	kv("INDEX_FILE", strconv.Quote(filepath.Join(storage, "index")))
	kv("STANDARD_DIRS", "["+strings.Join(whisperDirs, ", ")+"]")
	kv("CARBONLINK_HOSTS", "["+strings.Join(links, ", ")+"]")
	kv("CARBONLINK_HASHING_TYPE", `"carbon_ch"`)
	kv("CLUSTER_SERVERS", "["+strings.Join(servers, ", ")+"]")
	if remote {
		// Graphite-web skips a graphite-web that failed for 60 s and
		// answers from the others: a query under overload would then be
		// quick and short of points. Each query asks every cache, and one
		// that a cache could not answer fails (HTTP 500), counted as a
		// failed query, never as a quick one.
		kv("REMOTE_RETRY_DELAY", "0")
		kv("STORE_FAIL_ON_ERROR", "True")
	}
	kv("DATABASES", fmt.Sprintf(`{"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": %s}}`, strconv.Quote(filepath.Join(storage, "graphite.db"))))
	return b.String(), nil
}

// storageSchemas gives every series, carbon's own too, retention (one
// point per second for a day by default).
func storageSchemas(retention string) string {
	if retention == "" {
		retention = "1s:1d"
	}
	return fmt.Sprintf("# written by benchq\n[everything]\npattern = .*\nretentions = %s\n", retention)
}

func (d *CarbonDaemon) waitReady(ctx context.Context, timeout time.Duration) error {
	return d.programOf().waitReady(ctx, d, timeout)
}

// waitReady: carbon listens on its ports (a relay has no query port).
func (c carbonProgram) waitReady(ctx context.Context, d *CarbonDaemon, timeout time.Duration) error {
	ports := []int{d.Line, d.Pickle}
	if !c.relay {
		ports = append(ports, d.Query)
	}
	return waitReady(ctx, d.Program, d.Pid, d.daemon().logFile(), d.Program+" "+d.Instance+" listening", orDefault(timeout, 30*time.Second), 50*time.Millisecond,
		func(ctx context.Context) error {
			for _, p := range ports {
				c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", net.JoinHostPort(d.dialHost(), strconv.Itoa(p)))
				if err != nil {
					return err
				}
				_ = c.Close()
			}
			return nil
		})
}

// webProgram is graphite-web, under gunicorn.
type webProgram struct{}

func (webProgram) ports(d *CarbonDaemon) []*int { return []*int{&d.HTTP} }

func (webProgram) command(*CarbonDaemon) string { return "gunicorn" }

func (webProgram) launch(d *CarbonDaemon, home string, opts GraphiteOptions, caches []CarbonDaemon) (launchSpec, error) {
	settings, err := webSettings(d.Dir, caches, len(opts.Remote) > 0, opts.listen())
	if err != nil {
		return launchSpec{}, err
	}
	return launchSpec{
		files:   []dirFile{{name: webSettingsModule + ".py", content: settings}},
		subdirs: []string{"storage", "storage/log"},
		// One sync worker: the probe sends one query a second.
		bin: filepath.Join(home, "bin", "gunicorn"),
		args: []string{"--bind", net.JoinHostPort(opts.listen(), strconv.Itoa(d.HTTP)), "--workers", "1",
			"--pythonpath", d.Dir, "--env", "DJANGO_SETTINGS_MODULE=" + webSettingsModule,
			"--graceful-timeout", "2", "graphite.wsgi:application"},
	}, nil
}

// waitReady: graphite-web answers a query. Django loads its views at the
// first request (about a second): that one is made here, not by the first
// measured query. One that answers from other pods' graphite-webs is asked
// its version instead: a query fails (HTTP 500) while none of those
// answers, and the cache pods may start later than the relay's.
func (webProgram) waitReady(ctx context.Context, d *CarbonDaemon, timeout time.Duration) error {
	path := "/render?target=benchq.ready&format=json&from=-10s"
	if d.remote {
		path = "/version"
	}
	return waitReady(ctx, d.Program, d.Pid, d.daemon().logFile(), "graphite-web answering", orDefault(timeout, 30*time.Second), 100*time.Millisecond,
		func(ctx context.Context) error {
			_, err := httpget.Get(ctx, "graphite-web "+path, d.URL()+path, 5*time.Second)
			return err
		})
}

// Stop stops every daemon of dir (by their pid files): graphite-web, then
// the relay, so that it hands on what it holds, then the caches. Nothing running is not an error.
func (g *Graphite) Stop(ctx context.Context) error {
	dirs, err := filepath.Glob(filepath.Join(g.Dir, "cache-*"))
	if err != nil {
		return fmt.Errorf("stop carbon: %w", err)
	}
	errs := []error{
		CarbonDaemon{Program: graphiteWeb, Dir: filepath.Join(g.Dir, "web")}.daemon().stop(ctx, 0),
		CarbonDaemon{Program: carbonRelay, Dir: filepath.Join(g.Dir, "relay")}.daemon().stop(ctx, 0),
	}
	for _, d := range dirs {
		errs = append(errs, CarbonDaemon{Program: carbonCache, Dir: d}.daemon().stop(ctx, 0))
	}
	return errors.Join(errs...)
}
