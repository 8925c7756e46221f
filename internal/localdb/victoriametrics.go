package localdb

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/benchq/benchq/internal/cachedir"
	"github.com/benchq/benchq/internal/httpget"
	"github.com/benchq/benchq/internal/procs"
)

// VictoriaMetricsVersion is the single-node VictoriaMetrics the bootstrap
// builds from its Go module (scripts/bootstrap.sh: VM_VERSION, the same).
const VictoriaMetricsVersion = "v1.151.0"

// VictoriaMetricsBinary locates victoria-metrics: $BENCHQ_VICTORIA_METRICS,
// else PATH, else where the bootstrap builds it
// (~/.cache/benchq/victoria-metrics/<version>/bin).
func VictoriaMetricsBinary() (string, error) {
	return findBinary("victoria-metrics", "BENCHQ_VICTORIA_METRICS", "victoria-metrics",
		"not on PATH nor in ~/.cache/benchq/victoria-metrics/"+VictoriaMetricsVersion+" (make bootstrap builds it)",
		filepath.Join(cachedir.Root(), "victoria-metrics", VictoriaMetricsVersion, "bin", "victoria-metrics"))
}

// VictoriaMetricsOptions tune StartVictoriaMetrics.
type VictoriaMetricsOptions struct {
	// GraphitePort is the carbon plaintext listener's (0: a free one).
	GraphitePort int
	// Timeout bounds the wait for /health (default 30s).
	Timeout time.Duration
	// OSUser is the OS account it runs as when we are root ("": ours),
	// e.g. SUTUser; dir is handed to it.
	OSUser string
}

// VictoriaMetrics is a running single-node victoria-metrics.
type VictoriaMetrics struct {
	Dir          string // data/, victoria-metrics.{pid,log}
	Port         int    // HTTP: queries, /metrics, remote write (/api/v1/write)
	GraphitePort int
	Pid          int
}

// URL is the HTTP API's base URL.
func (v *VictoriaMetrics) URL() string { return fmt.Sprintf("http://127.0.0.1:%d", v.Port) }

// GraphiteAddr is host:port of the carbon plaintext listener.
func (v *VictoriaMetrics) GraphiteAddr() string { return fmt.Sprintf("127.0.0.1:%d", v.GraphitePort) }

func (v *VictoriaMetrics) daemon() daemon {
	return daemon{name: "victoria-metric", dir: v.Dir, file: "victoria-metrics"} // comm is cut at 15 characters
}

// StartVictoriaMetrics runs victoria-metrics on 127.0.0.1 with its data in
// dir/data and a Graphite (carbon plaintext) listener, and waits until
// /health answers. A live server of dir is kept, on its ports.
func StartVictoriaMetrics(ctx context.Context, dir string, port int, opts VictoriaMetricsOptions) (*VictoriaMetrics, error) {
	return startInDir("victoria-metrics", dir, VictoriaMetricsBinary, func(dir, bin string) (*VictoriaMetrics, error) {
		return startVictoriaMetrics(ctx, dir, bin, port, opts)
	})
}

func startVictoriaMetrics(ctx context.Context, dir, bin string, port int, opts VictoriaMetricsOptions) (*VictoriaMetrics, error) {
	osUser, err := runAs("victoria-metrics", opts.OSUser, "")
	if err != nil {
		return nil, err
	}
	if err := prepareDataDir(dir, osUser); err != nil {
		return nil, err
	}
	if bin, err = RunnableBy(bin, osUser, filepath.Dir(dir)); err != nil {
		return nil, err
	}
	v := &VictoriaMetrics{Dir: dir}
	portsFile := filepath.Join(dir, "victoria-metrics.ports")
	if pid, ok := v.daemon().live(); ok {
		b, err := os.ReadFile(portsFile)
		if err != nil {
			return nil, err
		}
		if _, err := fmt.Sscan(string(b), &v.Port, &v.GraphitePort); err != nil {
			return nil, fmt.Errorf("%s: %w", portsFile, err)
		}
		v.Pid = pid
		return v, v.waitReady(ctx, opts.Timeout)
	}
	picked := port == 0 || opts.GraphitePort == 0
	err = listen(port, picked, func(port int) error {
		v.Port, v.GraphitePort = port, opts.GraphitePort
		for v.GraphitePort == 0 || v.GraphitePort == v.Port {
			var err error
			if v.GraphitePort, err = procs.FreePort(); err != nil {
				return err
			}
		}
		if err := os.WriteFile(portsFile, []byte(fmt.Sprintf("%d %d\n", v.Port, v.GraphitePort)), 0o600); err != nil {
			return err
		}
		pid, err := procs.Start(procs.Spec{
			Name: "victoria-metrics",
			Path: bin,
			Args: []string{
				"-httpListenAddr=127.0.0.1:" + strconv.Itoa(v.Port),
				"-graphiteListenAddr=127.0.0.1:" + strconv.Itoa(v.GraphitePort),
				"-storageDataPath=" + filepath.Join(dir, "data"),
				"-retentionPeriod=1d",
				// Queries see points up to a second old (default 30 s): the
				// workload's read query asks for the last minute of a series.
				"-search.latencyOffset=1s",
			},
			Dir:     dir,
			User:    osUser,
			LogFile: v.daemon().logFile(),
			PidFile: v.daemon().pidFile(),
		})
		if err != nil {
			return err
		}
		v.Pid = pid
		if err := v.waitReady(ctx, opts.Timeout); err != nil {
			stopFailedStart(ctx, v.Stop)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

func (v *VictoriaMetrics) waitReady(ctx context.Context, timeout time.Duration) error {
	return waitReady(ctx, "victoria-metrics", v.Pid, v.daemon().logFile(), "victoria-metrics /health", orDefault(timeout, 30*time.Second), probeEvery,
		func(ctx context.Context) error {
			_, err := v.Get(ctx, "/health")
			return err
		})
}

// Get fetches path from the HTTP API and returns the body; a status other
// than 200 is an error carrying the body's start.
func (v *VictoriaMetrics) Get(ctx context.Context, path string) ([]byte, error) {
	return httpget.Get(ctx, "victoria-metrics "+path, v.URL()+path, 10*time.Second)
}

// Stop stops the server (SIGTERM, then SIGKILL after 10s).
func (v *VictoriaMetrics) Stop(ctx context.Context) error { return v.daemon().stop(ctx, v.Pid) }
