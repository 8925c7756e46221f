// Command scheduler validates experiment requests, expands them into plans and
// drives each configuration through deploy → load → benchmark → teardown by
// reacting to events on NATS JetStream. All state lives in JetStream KV, so a
// restarted scheduler carries on where it was.
package main

import (
	"context"

	"github.com/benchq/benchq/internal/config"
)

func main() {
	config.NewService("scheduler").Main(func(ctx context.Context, rt config.Runtime) error {
		return Run(ctx, Config{NATSURL: rt.NATSURL, Metrics: rt.Metrics}, rt.Log)
	})
}
