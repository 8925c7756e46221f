// Package config holds what every benchq process reads the same way: the
// environment with defaults, and the structured logger.
package config

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
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
