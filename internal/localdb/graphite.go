package localdb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/benchq/benchq/internal/procs"
)

// CarbonVersion is the Graphite carbon (and whisper) the bootstrap installs
// from PyPI into a venv of its own (scripts/bootstrap.sh: CARBON_VERSION,
// the same; the pins of its dependencies are in
// scripts/carbon-requirements.txt).
const CarbonVersion = "1.1.10"

// CarbonHome locates the venv holding carbon: $BENCHQ_CARBON_HOME, else
// /opt/benchq/carbon/<version> (where the bootstrap installs it as root:
// the SUT's OS user must reach it, and /root is closed to it), else
// ~/.cache/benchq/carbon/<version>. It has bin/carbon-cache.py and
// bin/carbon-relay.py.
func CarbonHome() (string, error) {
	places := []string{filepath.Join("/opt/benchq/carbon", CarbonVersion), filepath.Join(benchqCache(), "carbon", CarbonVersion)}
	if env := os.Getenv("BENCHQ_CARBON_HOME"); env != "" {
		places = []string{env}
	}
	for _, p := range places {
		if isExecutable(filepath.Join(p, "bin", "carbon-cache.py")) {
			return p, nil
		}
	}
	return "", fmt.Errorf("carbon-cache.py not found in %s (make bootstrap installs carbon %s there; or set BENCHQ_CARBON_HOME to a venv holding it)", strings.Join(places, " nor "), CarbonVersion)
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
}

// CarbonDaemon is one running carbon-cache or carbon-relay.
type CarbonDaemon struct {
	Program  string // carbon-cache or carbon-relay
	Instance string // its --instance: n0, n1, … for caches, relay
	Dir      string // carbon.conf, run/, storage/, <program>.{pid,log}
	Line     int    // the plaintext protocol's port
	Pickle   int    // the pickle protocol's port (the relay writes to the caches' on it)
	Query    int    // the cache query port (caches only)
	Pid      int
}

// Addr is the plaintext listener's host:port.
func (d CarbonDaemon) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(d.Line)) }

// WhisperDir is where a cache keeps its series, one file per series
// (carbon's own under carbon/).
func (d CarbonDaemon) WhisperDir() string { return filepath.Join(d.Dir, "storage", "whisper") }

func (d CarbonDaemon) daemon() daemon {
	return daemon{name: d.Program + ".py", dir: d.Dir, file: d.Program}
}

// Graphite is a running carbon: one carbon-cache, or a carbon-relay in
// front of carbon-caches.
type Graphite struct {
	Dir    string
	Caches []CarbonDaemon
	Relay  *CarbonDaemon // nil: clients write to Caches[0]
}

// Front is the daemon clients write to: the relay, or the only cache.
func (g *Graphite) Front() CarbonDaemon {
	if g.Relay != nil {
		return *g.Relay
	}
	return g.Caches[0]
}

// Pids are the daemons' processes, the front one first.
func (g *Graphite) Pids() []int {
	var out []int
	if g.Relay != nil {
		out = append(out, g.Relay.Pid)
	}
	for _, c := range g.Caches {
		out = append(out, c.Pid)
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

// StartGraphite runs carbon on 127.0.0.1 in dir: cache-0, cache-1, … and,
// with opts.Caches > 0, a relay in front of them, and waits until every
// daemon takes connections. Live daemons of dir are kept; a dead one is
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
	if opts.Caches < 0 {
		return fmt.Errorf("%d carbon-caches: want 0 (one, no relay) or more", opts.Caches)
	}
	osUser, err := runAs("carbon", opts.OSUser, "")
	if err != nil {
		return err
	}
	if err := prepareDataDir(g.Dir, osUser); err != nil {
		return err
	}
	caches := max(opts.Caches, 1)
	for i := range caches {
		d := CarbonDaemon{Program: "carbon-cache", Instance: "n" + strconv.Itoa(i), Dir: filepath.Join(g.Dir, fmt.Sprintf("cache-%d", i))}
		if err := d.run(ctx, home, osUser, opts, nil); err != nil {
			return err
		}
		g.Caches = append(g.Caches, d)
	}
	if opts.Caches > 0 {
		d := CarbonDaemon{Program: "carbon-relay", Instance: "relay", Dir: filepath.Join(g.Dir, "relay")}
		if err := d.run(ctx, home, osUser, opts, g.Caches); err != nil {
			return err
		}
		g.Relay = &d
	}
	return nil
}

// run starts the daemon (or finds it live) on its previous ports if it
// has any, else on free ones.
func (d *CarbonDaemon) run(ctx context.Context, home, osUser string, opts GraphiteOptions, caches []CarbonDaemon) error {
	if err := prepareDataDir(d.Dir, osUser); err != nil {
		return err
	}
	portsFile := filepath.Join(d.Dir, "ports")
	var prev [3]int
	if b, err := os.ReadFile(portsFile); err == nil {
		_, _ = fmt.Sscan(string(b), &prev[0], &prev[1], &prev[2])
	}
	if pid, ok := d.daemon().live(); ok && prev[0] != 0 {
		d.Line, d.Pickle, d.Query, d.Pid = prev[0], prev[1], prev[2], pid
		return d.waitReady(ctx, opts.Timeout)
	}
	attempt := func(ports [3]int) error {
		for i := range ports {
			for ports[i] == 0 || slices.Contains(ports[:i], ports[i]) {
				p, err := procs.FreePort()
				if err != nil {
					return err
				}
				ports[i] = p
			}
		}
		d.Line, d.Pickle, d.Query = ports[0], ports[1], ports[2]
		if err := os.WriteFile(portsFile, []byte(fmt.Sprintf("%d %d %d\n", d.Line, d.Pickle, d.Query)), 0o644); err != nil {
			return err
		}
		return d.launch(ctx, home, osUser, opts, caches)
	}
	err := attempt(prev)
	for i := 0; i < 2 && errors.Is(err, ErrAddrInUse); i++ {
		err = attempt([3]int{}) // previous or picked ports taken: fresh ones
	}
	return err
}

func (d *CarbonDaemon) launch(ctx context.Context, home, osUser string, opts GraphiteOptions, caches []CarbonDaemon) error {
	conf := filepath.Join(d.Dir, "carbon.conf")
	for _, f := range []struct{ name, content string }{
		{"carbon.conf", d.config(caches)},
		{"storage-schemas.conf", storageSchemas(opts.Retention)},
	} {
		if err := os.WriteFile(filepath.Join(d.Dir, f.name), []byte(f.content), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", f.name, err)
		}
	}
	for _, sub := range []string{"run", "storage", "storage/whisper", "storage/log", "storage/lists"} {
		if err := prepareDataDir(filepath.Join(d.Dir, sub), osUser); err != nil {
			return err
		}
	}
	pid, err := procs.Start(procs.Spec{
		Name: d.Program,
		Path: filepath.Join(home, "bin", d.Program+".py"),
		// --debug: in the foreground, logging to stdout (our log file).
		Args:    []string{"--config=" + conf, "--instance=" + d.Instance, "--debug", "start"},
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

// config is the daemon's carbon.conf. Carbon's defaults throttle a
// benchmark (50 new series a minute, a bounded cache): every limit is
// lifted, so what is measured is carbon's own speed. A cache's own counters
// go every second (CARBON_METRIC_INTERVAL) under carbon.agents.*: benchq
// reads committedPoints and metricsReceived from them (docs/tsdb.md).
func (d *CarbonDaemon) config(caches []CarbonDaemon) string {
	section := "cache"
	if d.Program == "carbon-relay" {
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
	kv("LINE_RECEIVER_INTERFACE", "127.0.0.1")
	kv("LINE_RECEIVER_PORT", d.Line)
	kv("PICKLE_RECEIVER_INTERFACE", "127.0.0.1")
	kv("PICKLE_RECEIVER_PORT", d.Pickle)
	kv("ENABLE_UDP_LISTENER", "False")
	kv("LOG_LISTENER_CONNECTIONS", "False")
	kv("USE_FLOW_CONTROL", "True")
	kv("CARBON_METRIC_PREFIX", "carbon")
	if d.Program == "carbon-cache" {
		kv("CARBON_METRIC_INTERVAL", 1)
		kv("CACHE_QUERY_INTERFACE", "127.0.0.1")
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
	// as points, stored at a time nothing tells exactly, and blur the
	// caches' count of the workload's points (whisper.ReadCarbon).
	kv("CARBON_METRIC_INTERVAL", 0)
	kv("RELAY_METHOD", "consistent-hashing")
	kv("REPLICATION_FACTOR", 1)
	var dest []string
	for _, c := range caches {
		dest = append(dest, fmt.Sprintf("127.0.0.1:%d:%s", c.Pickle, c.Instance))
	}
	kv("DESTINATIONS", strings.Join(dest, ", "))
	kv("MAX_QUEUE_SIZE", 100000)
	kv("MAX_DATAPOINTS_PER_MESSAGE", 500)
	return b.String()
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
	ports := []int{d.Line, d.Pickle}
	if d.Program == "carbon-cache" {
		ports = append(ports, d.Query)
	}
	return waitReady(ctx, d.Program, d.Pid, d.daemon().logFile(), d.Program+" "+d.Instance+" listening", orDefault(timeout, 30*time.Second), 50*time.Millisecond,
		func(ctx context.Context) error {
			for _, p := range ports {
				c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
				if err != nil {
					return err
				}
				_ = c.Close()
			}
			return nil
		})
}

// Stop stops every daemon of dir (by their pid files), the relay first so
// that it hands on what it holds. Nothing running is not an error.
func (g *Graphite) Stop(ctx context.Context) error {
	dirs, err := filepath.Glob(filepath.Join(g.Dir, "cache-*"))
	if err != nil {
		return fmt.Errorf("stop carbon: %w", err)
	}
	errs := []error{CarbonDaemon{Program: "carbon-relay", Dir: filepath.Join(g.Dir, "relay")}.daemon().stop(ctx, 0)}
	for _, d := range dirs {
		errs = append(errs, CarbonDaemon{Program: "carbon-cache", Dir: d}.daemon().stop(ctx, 0))
	}
	return errors.Join(errs...)
}
