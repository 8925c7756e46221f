// Command graphite-pod is the container of the Graphite SUT on Kubernetes
// (image benchq/graphite, the Dockerfile's target graphite; catalog
// graphite.json). It runs Graphite's daemons as the local backend does
// (internal/localdb.StartGraphite, the same settings), listening on
// -listen, in one of three roles:
//
//   - single: one carbon-cache and graphite-web over it;
//   - cache: the same, as one of a carbon cluster's caches (-nw), whose
//     pickle port (-pickle-port) the relay pod writes to;
//   - relay: the cluster's front pod: a carbon-relay spreading the series
//     over the cache pods (-caches, their hosts) by consistent hashing, and
//     graphite-web answering from theirs.
//
// On -metrics-port it serves the caches' own counts of stored points as
// Prometheus metrics (internal/carbonexporter; a relay gathers the cache
// pods'): the counter benchq tsdb reads, and that Prometheus scrapes with
// -ma.
//
// /healthz on the same port answers 200 once every daemon serves (the
// pod's readiness; /metrics reads whisper files and may fail under load).
//
// It stops the daemons on SIGTERM and exits 0; it exits 1 when a daemon
// dies or cannot start, with the tail of its log (which is on the data
// volume), so that the pod restarts and the deployer's watch sees it.
//
//	graphite-pod -dir /data -line-port 2003 -http-port 8080 -metrics-port 9108
//	graphite-pod -role cache -name cache-0 ...
//	graphite-pod -role relay -caches host0,host1 ...
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/benchq/benchq/internal/carbonexporter"
	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/procs"
)

type config struct {
	dir, listen, retention      string
	linePort, httpPort, metrics int
	role, name, caches          string
	picklePort                  int
}

// Roles (-role).
const (
	roleSingle = "single"
	roleCache  = "cache"
	roleRelay  = "relay"
)

func main() {
	var c config
	flag.StringVar(&c.dir, "dir", "/data", "the data directory (the pod's data volume)")
	flag.StringVar(&c.listen, "listen", "0.0.0.0", "the address carbon's plaintext listener, graphite-web and the metrics bind to")
	flag.IntVar(&c.linePort, "line-port", 2003, "carbon's plaintext protocol")
	flag.IntVar(&c.httpPort, "http-port", 8080, "graphite-web (/render)")
	flag.IntVar(&c.metrics, "metrics-port", 9108, "the carbon-cache's counts as Prometheus metrics (/metrics)")
	flag.StringVar(&c.retention, "retention", "", "whisper's retention of every series (default 1s:1d)")
	flag.StringVar(&c.role, "role", roleSingle, "single (one carbon-cache), cache (one of a cluster's) or relay (a cluster's front)")
	flag.StringVar(&c.name, "name", localdb.CacheName(0), "role cache: the cache's name in the metrics' cache label")
	flag.IntVar(&c.picklePort, "pickle-port", 2004, "carbon's pickle protocol; of the cache pods too (role relay), which it writes to")
	flag.StringVar(&c.caches, "caches", "", "role relay: the cache pods' hosts, comma separated (each serves the same ports)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c, log); err != nil {
		log.Error("graphite-pod", "err", err)
		os.Exit(1)
	}
}

// run starts Graphite and its exporter, and serves until ctx ends (nil) or
// a daemon dies (an error naming it); the daemons are stopped either way.
func run(ctx context.Context, c config, log *slog.Logger) (err error) {
	// stopAll stops every daemon of the directory (by their pid files).
	stopAll := func() error {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		return (&localdb.Graphite{Dir: c.dir}).Stop(stopCtx)
	}
	opts, err := c.options()
	if err != nil {
		return err
	}
	g, err := localdb.StartGraphite(ctx, c.dir, opts)
	if err != nil && ctx.Err() != nil {
		return stopAll() // stopped while starting: StartGraphite leaves what it started
	}
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopAll()) }()
	ln, err := net.Listen("tcp", net.JoinHostPort(c.listen, strconv.Itoa(c.metrics)))
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", c.metricsHandler(g, opts.Remote, log))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()
	log.Info("graphite serving", "role", c.role, "carbon", g.Front().Line, "graphite-web", g.Web.HTTP, "metrics", c.metrics)

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			for _, d := range g.Daemons() {
				if !procs.Alive(d.Pid) {
					status, _ := procs.ExitStatus(d.Pid)
					return fmt.Errorf("%s (pid %d) ended (%s); its log ends:\n%s", d.Program, d.Pid, cmp.Or(status, "status unknown"), procs.LogTail(d.LogFile(), 20))
				}
			}
		}
	}
}

// options are StartGraphite's for the role.
func (c config) options() (localdb.GraphiteOptions, error) {
	opts := localdb.GraphiteOptions{Listen: c.listen, LinePort: c.linePort, HTTPPort: c.httpPort, PicklePort: c.picklePort, Retention: c.retention}
	switch c.role {
	case roleSingle, "", roleCache:
	case roleRelay:
		for i, host := range strings.Split(c.caches, ",") {
			if host = strings.TrimSpace(host); host != "" {
				opts.Remote = append(opts.Remote, localdb.CarbonDaemon{Instance: "n" + strconv.Itoa(i), Host: host, Pickle: c.picklePort, HTTP: c.httpPort})
			}
		}
		if len(opts.Remote) == 0 {
			return opts, errors.New("-role relay needs -caches: the cache pods' hosts, comma separated")
		}
	default:
		return opts, fmt.Errorf("-role %q: want %s, %s or %s", c.role, roleSingle, roleCache, roleRelay)
	}
	return opts, nil
}

// metricsHandler serves the caches' own counts: of the cache here (roles
// single and cache), or gathered from the cache pods (relay).
func (c config) metricsHandler(g *localdb.Graphite, remote []localdb.CarbonDaemon, log *slog.Logger) http.Handler {
	switch c.role {
	case roleRelay:
		var urls []string
		for _, r := range remote {
			urls = append(urls, "http://"+net.JoinHostPort(r.Host, strconv.Itoa(c.metrics))+"/metrics")
		}
		return carbonexporter.Federated(urls, 5*time.Second, log)
	case roleCache:
		return carbonexporter.Handler(map[string]string{c.name: g.Caches[0].WhisperDir()}, log)
	}
	return carbonexporter.Handler(g.WhisperByCache(), log)
}
