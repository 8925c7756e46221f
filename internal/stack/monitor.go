package stack

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/benchq/benchq/internal/obs"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/prom"
)

// The embedded stack's Prometheus (docs/monitoring.md): Debian's binary under
// <home>/prometheus, scraping every service's /metrics and whatever target
// groups the deployer writes into its targets directory while SUTs and
// drivers live.

// promRetention is short: the collector copies what an experiment keeps
// into the results database when each phase ends.
const promRetention = 24 * time.Hour

// PromProc is Prometheus' name among the stack's processes.
const PromProc = "prometheus"

func PromDir(st *State) string { return filepath.Join(st.Home(), "prometheus") }

func promTargets(st *State) prom.Targets {
	return prom.Targets{Dir: filepath.Join(PromDir(st), "targets")}
}

// scrapeInterval is the stack's $BENCHQ_SCRAPE_INTERVAL (prom.ParseScrapeInterval).
func scrapeInterval(st *State) (time.Duration, error) {
	return prom.ParseScrapeInterval(st.Env(prom.EnvScrapeInterval))
}

// startPrometheus starts the stack's Prometheus and records it; an error
// means monitoring is off (the stack runs without it).
func (s *Stack) startPrometheus(ctx context.Context, st *State) error {
	// Groups left by a stack that crashed name processes that are gone.
	if err := os.RemoveAll(promTargets(st).Dir); err != nil {
		return err
	}
	srv, err := runPrometheus(ctx, st, 0)
	if err != nil {
		return err
	}
	s.PrometheusURL = srv.URL()
	s.Procs = append(s.Procs, Proc{Name: PromProc, Pid: srv.Pid, Log: filepath.Join(srv.Dir, "prometheus.log")})
	return s.save(st)
}

// restartPrometheus starts the stack's Prometheus again where the services
// expect it (its port), on the target groups of what lives now and on its
// data (its write-ahead log brings back what it had scraped).
func (s *Stack) restartPrometheus(ctx context.Context, st *State, p *Proc) error {
	port, err := urlPort("the stack's Prometheus URL", s.PrometheusURL)
	if err != nil {
		return err
	}
	srv, err := runPrometheus(ctx, st, port)
	if err != nil {
		return err
	}
	p.Pid = srv.Pid
	return s.save(st)
}

func runPrometheus(ctx context.Context, st *State, port int) (*prom.Server, error) {
	every, err := scrapeInterval(st)
	if err != nil {
		return nil, err
	}
	return prom.StartServer(ctx, PromDir(st), prom.ServerOptions{
		Config:    prom.Config{ScrapeInterval: every, TargetsDir: promTargets(st).Dir},
		Port:      port,
		Retention: promRetention,
	})
}

// monitorEnv is what every service needs to know of monitoring: where
// Prometheus is (the collector pulls from it), how often it scrapes, and
// where target groups go (the deployer writes them).
func (s *Stack) monitorEnv(st *State, every time.Duration) []string {
	if s.PrometheusURL == "" {
		return nil
	}
	return []string{"BENCHQ_PROMETHEUS_URL=" + s.PrometheusURL, prom.EnvScrapeInterval + "=" + every.String(), prom.EnvTargetsDir + "=" + promTargets(st).Dir}
}

// withMetricsAddr gives p a metrics address: the one it had if its port is
// free (a restart keeps its target), else a free one.
func withMetricsAddr(p Proc) (Proc, error) {
	addr := ""
	for _, e := range p.Env {
		if v, ok := strings.CutPrefix(e, obs.EnvAddr+"="); ok {
			addr = v
		}
	}
	if addr == "" || !portFree(addr) {
		port, err := procs.FreePort()
		if err != nil {
			return p, err
		}
		addr = "127.0.0.1:" + strconv.Itoa(port)
	}
	p.Env = procs.WithEnv(p.Env, obs.EnvAddr, addr)
	return p, nil
}

func portFree(addr string) bool {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// metricsAddr is the address in p's environment, or "".
func MetricsAddr(p Proc) string {
	for _, e := range p.Env {
		if v, ok := strings.CutPrefix(e, obs.EnvAddr+"="); ok {
			return v
		}
	}
	return ""
}

// writeTarget has Prometheus scrape service p (when Prometheus runs).
func (s *Stack) writeTarget(st *State, p Proc) error {
	addr := MetricsAddr(p)
	if s.PrometheusURL == "" || addr == "" {
		return nil
	}
	return promTargets(st).Write("service-"+p.Name, prom.Group{
		Targets: []string{addr},
		Labels:  map[string]string{prom.LabelComponent: "service", "service": p.Name},
	})
}

// waitScraped waits until Prometheus scrapes every service of the stack:
// it reads new target files only every few seconds, and an experiment
// started before would miss its SUT's first samples (a counter's increase
// over the first phase would then be too small).
func (s *Stack) WaitScraped(ctx context.Context) error {
	want := 0
	for _, p := range s.Procs {
		if MetricsAddr(p) != "" {
			want++
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return procs.WaitFor(ctx, fmt.Sprintf("Prometheus to scrape the stack's %d services", want), 250*time.Millisecond, func(ctx context.Context) error {
		targets, err := (&prom.Client{URL: s.PrometheusURL}).Targets(ctx)
		if err != nil {
			return err
		}
		up := 0
		for _, t := range targets {
			if t.Health == "up" && t.Labels[prom.LabelComponent] == "service" {
				up++
			}
		}
		if up < want {
			return fmt.Errorf("%d of %d service targets up", up, want)
		}
		return nil
	})
}

// prometheusStatus is the status line of the Prometheus at url: ready or
// not, and how many of its targets are up.
func PrometheusStatus(ctx context.Context, url, off string) string {
	if url == "" {
		if off != "" {
			return "not configured (monitoring off: " + off + ")"
		}
		return "not configured (set BENCHQ_PROMETHEUS_URL)"
	}
	if err := prom.Probe(ctx, strings.TrimRight(url, "/")+"/-/ready"); err != nil {
		return fmt.Sprintf("NOT READY (%v)", err)
	}
	targets, err := (&prom.Client{URL: url}).Targets(ctx)
	if err != nil {
		return fmt.Sprintf("Running (%s; targets unreadable: %v)", url, err)
	}
	up := 0
	for _, t := range targets {
		if t.Health == "up" {
			up++
		}
	}
	return fmt.Sprintf("Running (%s, %d of %d targets up)", url, up, len(targets))
}
