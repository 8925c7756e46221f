// Package obs serves a process's own Prometheus metrics: every benchq
// service and agent exposes /metrics (and /healthz) on the address the stack
// gives it, from a registry of its own (never the global one), so tests can
// run several services in one process.
package obs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/benchq/benchq/internal/atomicfile"
)

// EnvAddr names the environment variable with a service's metrics address
// (host:port; port 0 picks a free one). Empty: no metrics server.
const EnvAddr = "BENCHQ_METRICS_ADDR"

// EnvAddrFile names a file the service writes the address it serves on
// into, once it listens: the port a parent picked may be taken before the
// service binds it (stacks started side by side), and then the service
// takes a free one and the file names it (the stack writes Prometheus's
// target from it).
const EnvAddrFile = "BENCHQ_METRICS_ADDR_FILE"

// NewRegistry is a registry with the Go runtime and process collectors, as
// a service's /metrics should have.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Serve serves reg on addr (/metrics, /healthz) until ctx ends and returns
// the address it listens on. An empty addr serves nothing and returns nil.
func Serve(ctx context.Context, addr string, reg prometheus.Gatherer, log *slog.Logger) (net.Addr, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slogAdapter{log}}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("metrics server stopped", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return ln.Addr(), nil
}

// FromEnv is what a service's main does: a fresh registry, served on
// $BENCHQ_METRICS_ADDR until ctx ends. A listener that cannot be opened is
// logged, not fatal: the service still does its work, and Prometheus shows
// its target as down.
func FromEnv(ctx context.Context, log *slog.Logger) *prometheus.Registry {
	reg := NewRegistry()
	want, file := os.Getenv(EnvAddr), os.Getenv(EnvAddrFile)
	addr, err := Serve(ctx, want, reg, log)
	if err != nil && file != "" {
		// Taken meanwhile: a free port, which the file names.
		if host, _, serr := net.SplitHostPort(want); serr == nil {
			log.Info("metrics address taken, serving on a free port", "addr", want, "err", err)
			addr, err = Serve(ctx, net.JoinHostPort(host, "0"), reg, log)
		}
	}
	switch {
	case err != nil:
		log.Warn("no /metrics", "err", err)
	case addr != nil:
		log.Info("metrics served", "addr", addr.String())
		if file != "" {
			if werr := atomicfile.Write(file, []byte(addr.String()+"\n"), 0o644); werr != nil {
				log.Warn("metrics address not written", "file", file, "err", werr)
			}
		}
	}
	return reg
}

// Or is reg, or a registry nobody serves when reg is nil, so that code
// registering its metrics never checks (tests that do not look at metrics).
func Or(reg *prometheus.Registry) *prometheus.Registry {
	if reg == nil {
		return prometheus.NewRegistry()
	}
	return reg
}

type slogAdapter struct{ log *slog.Logger }

func (a slogAdapter) Println(v ...any) { a.log.Warn("metrics", "err", fmt.Sprint(v...)) }
