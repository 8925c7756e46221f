// Command graphite-pod is the container of the Graphite SUT on Kubernetes
// (image benchq/graphite, the Dockerfile's target graphite; catalog
// graphite.json). It runs one carbon-cache and graphite-web over it as the
// local backend does (internal/localdb.StartGraphite, the same settings),
// listening on -listen, and serves the cache's own counts of stored points
// as Prometheus metrics (internal/carbonexporter) on -metrics-port: the
// counter benchq tsdb reads, and that Prometheus scrapes with -ma.
//
// /healthz on the same port answers 200 once every daemon serves (the
// pod's readiness; /metrics reads whisper files and may fail under load).
//
// It stops the daemons on SIGTERM and exits 0; it exits 1 when a daemon
// dies or cannot start, with the tail of its log (which is on the data
// volume), so that the pod restarts and the deployer's watch sees it.
//
//	graphite-pod -dir /data -line-port 2003 -http-port 8080 -metrics-port 9108
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
	"syscall"
	"time"

	"github.com/benchq/benchq/internal/carbonexporter"
	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/procs"
)

type config struct {
	dir, listen, retention      string
	linePort, httpPort, metrics int
}

func main() {
	var c config
	flag.StringVar(&c.dir, "dir", "/data", "the data directory (the pod's data volume)")
	flag.StringVar(&c.listen, "listen", "0.0.0.0", "the address carbon's plaintext listener, graphite-web and the metrics bind to")
	flag.IntVar(&c.linePort, "line-port", 2003, "carbon's plaintext protocol")
	flag.IntVar(&c.httpPort, "http-port", 8080, "graphite-web (/render)")
	flag.IntVar(&c.metrics, "metrics-port", 9108, "the carbon-cache's counts as Prometheus metrics (/metrics)")
	flag.StringVar(&c.retention, "retention", "", "whisper's retention of every series (default 1s:1d)")
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
	g, err := localdb.StartGraphite(ctx, c.dir, localdb.GraphiteOptions{
		Listen: c.listen, LinePort: c.linePort, HTTPPort: c.httpPort, Retention: c.retention,
	})
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
	mux.Handle("/metrics", carbonexporter.Handler(g.WhisperByCache(), log))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()
	log.Info("graphite serving", "carbon", g.Front().Line, "graphite-web", g.Web.HTTP, "metrics", c.metrics)

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
