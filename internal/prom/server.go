package prom

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/procs"
)

// ServerOptions tune StartServer.
type ServerOptions struct {
	// Config is written to <dir>/prometheus.yml; an empty TargetsDir means
	// <dir>/targets.
	Config Config
	// Port on 127.0.0.1; 0 picks a free one.
	Port int
	// Retention is --storage.tsdb.retention.time (default 24h: the
	// collector copies what it keeps into the results database when a
	// phase ends).
	Retention time.Duration
	// Timeout bounds the wait for /-/ready (default 60s).
	Timeout time.Duration
	// RemoteWriteReceiver accepts samples on /api/v1/write
	// (--web.enable-remote-write-receiver): Prometheus as a time-series
	// SUT of the metrics-ingest workload (internal/metricsload).
	RemoteWriteReceiver bool
	// User is the OS account it runs as when we are root ("": ours): a
	// Prometheus SUT runs as the SUTs' account (localdb.SUTUser).
	User string
}

// Server is a running prometheus.
type Server struct {
	Dir  string // prometheus.yml, data/, targets/, prometheus.{log,pid,port}
	Port int
	Pid  int
	// Targets writes the file_sd files this server reads.
	Targets Targets
}

// Binary locates prometheus: $BENCHQ_PROMETHEUS, else PATH (Debian's
// package puts it in /usr/bin). The error wraps localdb.ErrNotInstalled.
func Binary() (string, error) {
	if p := os.Getenv("BENCHQ_PROMETHEUS"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("prometheus")
	if err != nil {
		return "", fmt.Errorf("prometheus: not on PATH (apt-get install prometheus): %w", localdb.ErrNotInstalled)
	}
	return p, nil
}

// StartServer writes dir/prometheus.yml and runs prometheus on it, detached,
// until Stop; it returns once /-/ready answers. A live prometheus of dir is
// kept (on its port) and told to reload the configuration, so that starting
// twice is harmless.
func StartServer(ctx context.Context, dir string, opts ServerOptions) (*Server, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("start prometheus: %w", err)
	}
	s, err := startServer(ctx, dir, opts)
	if err != nil {
		return nil, fmt.Errorf("start prometheus in %s: %w", dir, err)
	}
	return s, nil
}

func startServer(ctx context.Context, dir string, opts ServerOptions) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	user := ""
	if opts.User != "" {
		if user, err = localdb.PrepareDir("prometheus", dir, opts.User); err != nil {
			return nil, err
		}
		if bin, err = localdb.RunnableBy(bin, user, dir); err != nil {
			return nil, err
		}
	}
	if opts.Config.TargetsDir == "" {
		opts.Config.TargetsDir = filepath.Join(dir, "targets")
	}
	yml, err := opts.Config.YAML()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.Config.TargetsDir, 0o755); err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, Targets: Targets{Dir: opts.Config.TargetsDir}}
	if err := os.WriteFile(s.file("prometheus.yml"), yml, 0o644); err != nil {
		return nil, err
	}
	if pid, port, ok := s.live(); ok {
		s.Pid, s.Port = pid, port
		if err := s.reload(ctx); err != nil {
			return nil, err
		}
		return s, s.waitReady(ctx, opts.Timeout)
	}
	retention := opts.Retention
	if retention <= 0 {
		retention = 24 * time.Hour
	}
	start := func(port int) error {
		s.Port = port
		if err := os.WriteFile(s.file("prometheus.port"), []byte(strconv.Itoa(s.Port)+"\n"), 0o644); err != nil {
			return err
		}
		args := []string{
			"--config.file=" + s.file("prometheus.yml"),
			"--storage.tsdb.path=" + s.file("data"),
			"--storage.tsdb.retention.time=" + promDuration(retention),
			"--web.listen-address=" + s.Addr(),
			// No --web.enable-lifecycle: any local user could stop it
			// over HTTP. A second start reloads with SIGHUP instead.
		}
		if opts.RemoteWriteReceiver {
			args = append(args, "--web.enable-remote-write-receiver")
		}
		var err error
		if s.Pid, err = procs.Start(procs.Spec{
			Name:    "prometheus",
			Path:    bin,
			Args:    args,
			Dir:     dir,
			User:    user,
			LogFile: s.file("prometheus.log"),
			PidFile: s.file("prometheus.pid"),
		}); err != nil {
			return err
		}
		if err := s.waitReady(ctx, opts.Timeout); err != nil {
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			_ = s.Stop(stopCtx)
			return err
		}
		return nil
	}
	// A port the caller chose is not ours to replace; one we picked may be
	// taken before Prometheus binds it, and then another is tried.
	if opts.Port != 0 {
		err = start(opts.Port)
	} else {
		err = localdb.OnFreePort(procs.FreePort, start)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Server) file(name string) string { return filepath.Join(s.Dir, name) }

// Addr is host:port of the web API.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// URL is the base URL of the web API, for Client.
func (s *Server) URL() string { return "http://" + s.Addr() }

// livePid reports the pid in s.Dir's pid file if it is a live prometheus.
func (s *Server) livePid() (int, bool) {
	pid, err := procs.ReadPidFile(s.file("prometheus.pid"))
	if err != nil || !procs.Alive(pid) {
		return 0, false
	}
	if comm, _ := procs.Comm(pid); comm != "prometheus" {
		return 0, false // the pid was reused by another program
	}
	return pid, true
}

// live reports the pid and port of a prometheus of s.Dir that runs.
func (s *Server) live() (pid, port int, ok bool) {
	if pid, ok = s.livePid(); !ok {
		return 0, 0, false
	}
	b, err := os.ReadFile(s.file("prometheus.port"))
	if err != nil {
		return 0, 0, false
	}
	port, err = strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, port, err == nil
}

// reload has the live prometheus read its configuration again (SIGHUP:
// the HTTP lifecycle API is off) and waits until its metrics say a reload
// succeeded after the signal.
func (s *Server) reload(ctx context.Context) error {
	sent := time.Now().Unix()
	if err := syscall.Kill(s.Pid, syscall.SIGHUP); err != nil {
		return fmt.Errorf("reload: signal pid %d: %w", s.Pid, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return procs.WaitFor(ctx, "prometheus to reload its configuration (log: "+s.file("prometheus.log")+")", 100*time.Millisecond, func(ctx context.Context) error {
		at, err := s.metric(ctx, "prometheus_config_last_reload_success_timestamp_seconds")
		if err != nil {
			return err
		}
		if at < float64(sent) {
			return fmt.Errorf("last successful reload at %.0f, before the signal at %d", at, sent)
		}
		return nil
	})
}

// metric reads one unlabelled gauge of prometheus' own /metrics.
func (s *Server) metric(ctx context.Context, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("no %s in prometheus' /metrics", name)
}

// probeTimeout bounds one readiness probe of a starting Prometheus.
const probeTimeout = time.Second

func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	logFile := s.file("prometheus.log")
	err := procs.WaitFor(ctx, "prometheus on "+s.Addr()+" to be ready", 50*time.Millisecond, func(ctx context.Context) error {
		if !procs.Alive(s.Pid) {
			return procs.Permanent(localdb.Exited("prometheus", s.Pid, logFile))
		}
		// Each probe is bounded: a process that took the port before
		// Prometheus bound it may accept and never answer, and Prometheus'
		// exit (checked above) must be seen meanwhile.
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		defer cancel()
		return Probe(pctx, s.URL()+"/-/ready")
	})
	if err != nil {
		return fmt.Errorf("%w (log: %s)", err, logFile)
	}
	return nil
}

// Stop stops prometheus (SIGTERM, SIGKILL after 30s: it flushes its head
// block first) and removes its pid file. It is a no-op when none runs; a
// zero Pid is looked up in Dir's prometheus.pid.
func (s *Server) Stop(ctx context.Context) error {
	pid := s.Pid
	if pid == 0 {
		var ok bool
		if pid, ok = s.livePid(); !ok {
			return nil
		}
	}
	if err := procs.Stop(ctx, pid, 30*time.Second); err != nil {
		return fmt.Errorf("stop prometheus in %s: %w", s.Dir, err)
	}
	if err := os.Remove(s.file("prometheus.pid")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("stop prometheus: %w", err)
	}
	return nil
}

// Probe GETs url and fails unless it answers 200 OK: Prometheus' /-/ready,
// an exporter's /metrics.
func Probe(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
