// Package startup holds what every benchq process reads the same way: the
// environment with defaults, the structured logger, and the start-up every
// service's main shares (Service).
package startup

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/benchq/benchq/internal/atomicfile"
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

// SUTPasswordEnv and SUTPasswordFileEnv carry the password every system
// under test requires of its clients: the value (compose's .env,
// Kubernetes' Secret) or a file of mode 0600 holding it (benchq up writes
// $BENCHQ_HOME/auth/sut.password). The deployer sets the SUTs' password
// from it; driver agents and exporters log in with it. It never travels in
// a message.
const (
	SUTPasswordEnv     = "BENCHQ_SUT_PASSWORD"
	SUTPasswordFileEnv = "BENCHQ_SUT_PASSWORD_FILE"
)

// SUTPassword reads the SUTs' password from the environment (getenv:
// os.Getenv), "" when neither variable is set: SUTs then take logins
// without one, trusting loopback.
func SUTPassword(getenv func(string) string) (string, error) {
	file, value := getenv(SUTPasswordFileEnv), strings.TrimSpace(getenv(SUTPasswordEnv))
	switch {
	case file != "" && value != "":
		return "", fmt.Errorf("the SUTs' password is given twice (%s and %s): keep one", SUTPasswordFileEnv, SUTPasswordEnv)
	case file != "":
		b, err := atomicfile.ReadSecret(file, "SUT password")
		if err != nil {
			return "", err
		}
		if len(b) == 0 {
			return "", fmt.Errorf("SUT password file %s is empty", file)
		}
		return string(b), nil
	}
	return value, nil
}
