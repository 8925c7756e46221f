// Command scheduler validates experiment requests, expands them into plans and
// drives each configuration through deploy → load → benchmark → teardown by
// reacting to events on NATS JetStream. All state lives in JetStream KV, so a
// restarted scheduler carries on where it was.
package main

import (
	"context"
	"os"

	"github.com/benchq/benchq/internal/startup"
)

func main() {
	svc := startup.NewService("scheduler")
	var cfg Config
	svc.Flags.StringVar(&cfg.HTTPAddr, "http", startup.Env("BENCHQ_HTTP_ADDR", ""), "address of the HTTP intake, e.g. 127.0.0.1:8080 (env BENCHQ_HTTP_ADDR; empty: none)")
	svc.Flags.StringVar(&cfg.HTTPTokenFile, "http-token-file", startup.Env("BENCHQ_HTTP_TOKEN_FILE", ""), "the HTTP intake's bearer token, in a file of mode 0600 (env BENCHQ_HTTP_TOKEN_FILE)")
	cfg.HTTPToken = os.Getenv("BENCHQ_HTTP_TOKEN") // not a flag: a flag's value is in every process listing
	svc.Main(func(ctx context.Context, rt startup.Runtime) error {
		cfg.NATSURL, cfg.Metrics = rt.NATSURL, rt.Metrics
		return Run(ctx, cfg, rt.Log)
	})
}
