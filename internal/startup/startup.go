// Package startup holds what every benchq process reads the same way: the
// environment with defaults, the structured logger, and the start-up every
// service's main shares (Service).
package startup

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/benchq/benchq/internal/obs"
)

// Env returns the environment variable key, or def when it is unset or empty.
func Env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// Logger is a slog text logger on stderr tagged with the component; the level
// comes from BENCHQ_LOG_LEVEL (debug, info, warn, error).
func Logger(component string) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(strings.ToUpper(Env("BENCHQ_LOG_LEVEL", "info"))))
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})).With("component", component)
}

// NATSFlag registers the -nats flag every service has.
func NATSFlag(fs *flag.FlagSet) *string {
	return fs.String("nats", Env("BENCHQ_NATS_URL", "nats://127.0.0.1:4222"), "NATS server URL (env BENCHQ_NATS_URL)")
}

// Service is a service's main: its command line (the -nats flag every
// service has, plus its own on Flags), its logger and its /metrics.
type Service struct {
	Name  string
	Flags *flag.FlagSet
	nats  *string
}

// Runtime is what a service runs with, once its command line is parsed.
type Runtime struct {
	NATSURL string
	Log     *slog.Logger
	// Metrics is the service's registry, served on $BENCHQ_METRICS_ADDR.
	Metrics *prometheus.Registry
}

// NewService starts the command line of the service name.
func NewService(name string) *Service {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	return &Service{Name: name, Flags: fs, nats: NATSFlag(fs)}
}

// Main parses the command line and runs run until SIGINT or SIGTERM (see
// Serve); it does not return.
func (s *Service) Main(run func(ctx context.Context, rt Runtime) error) {
	_ = s.Flags.Parse(os.Args[1:])
	log := Logger(s.Name)
	Serve(log, s.Name, func(ctx context.Context) error {
		return run(ctx, Runtime{NATSURL: *s.nats, Log: log, Metrics: obs.FromEnv(ctx, log)})
	})
	os.Exit(0)
}

// Serve runs a service until SIGINT or SIGTERM cancels its context; a
// service that fails is logged and the process exits 1.
func Serve(log *slog.Logger, name string, run func(ctx context.Context) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		log.Error(name+" failed", "err", err)
		os.Exit(1)
	}
}
