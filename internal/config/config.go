// Package config holds what every benchq process reads the same way: the
// environment with defaults, and the structured logger.
package config

import (
	"log/slog"
	"os"
	"strings"
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
