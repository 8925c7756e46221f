// Command scheduler validates experiment requests, expands them into plans and
// drives each configuration through deploy → load → benchmark → teardown by
// reacting to events on NATS JetStream. All state lives in JetStream KV, so a
// restarted scheduler carries on where it was.
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"

	"github.com/benchq/benchq/internal/config"
)

func main() {
	fs := flag.NewFlagSet("scheduler", flag.ExitOnError)
	natsURL := fs.String("nats", config.Env("BENCHQ_NATS_URL", "nats://127.0.0.1:4222"), "NATS server URL (env BENCHQ_NATS_URL)")
	_ = fs.Parse(os.Args[1:])
	log := config.Logger("scheduler")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, Config{NATSURL: *natsURL}, log); err != nil {
		log.Error("scheduler failed", "err", err)
		os.Exit(1)
	}
}
