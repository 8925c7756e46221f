// Command scheduler validates experiment requests, expands them into plans and
// drives each configuration through deploy → load → benchmark → teardown by
// reacting to events on NATS JetStream. All state lives in JetStream KV, so a
// restarted scheduler carries on where it was.
package main

import (
	"context"
	"flag"
	"os"

	"github.com/benchq/benchq/internal/config"
	"github.com/benchq/benchq/internal/obs"
)

func main() {
	fs := flag.NewFlagSet("scheduler", flag.ExitOnError)
	natsURL := config.NATSFlag(fs)
	_ = fs.Parse(os.Args[1:])
	log := config.Logger("scheduler")
	config.Serve(log, "scheduler", func(ctx context.Context) error {
		return Run(ctx, Config{NATSURL: *natsURL, Metrics: obs.FromEnv(ctx, log)}, log)
	})
}
