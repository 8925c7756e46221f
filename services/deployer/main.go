// Command deployer provisions systems under test (SUTs) for benchmark
// configurations and removes them, on the backend chosen by configuration
// (local processes by default).
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/benchq/benchq/internal/config"
)

func main() {
	fs := flag.NewFlagSet("deployer", flag.ExitOnError)
	natsURL := fs.String("nats", config.Env("BENCHQ_NATS_URL", "nats://127.0.0.1:4222"), "NATS server URL (env BENCHQ_NATS_URL)")
	root := fs.String("root", config.Env("BENCHQ_SUT_ROOT", filepath.Join(config.Env("BENCHQ_HOME", ".benchq"), "suts")), "local backend: directory for SUT data (env BENCHQ_SUT_ROOT)")
	_ = fs.Parse(os.Args[1:])
	log := config.Logger("deployer")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	backend := &Local{Root: *root, Log: log}
	if err := Run(ctx, Config{NATSURL: *natsURL}, backend, log); err != nil {
		log.Error("deployer failed", "err", err)
		os.Exit(1)
	}
}
