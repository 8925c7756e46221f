// Command scheduler validates experiment requests, expands them into plans and
// drives each configuration through deploy → load → benchmark → teardown by
// reacting to events on NATS JetStream. All state lives in JetStream KV, so a
// restarted scheduler carries on where it was.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/natsauth"
	"github.com/benchq/benchq/internal/startup"
)

func main() {
	svc := startup.NewService("scheduler")
	var cfg Config
	svc.Flags.StringVar(&cfg.HTTPAddr, "http", startup.Env("BENCHQ_HTTP_ADDR", ""), "address of the HTTP intake, e.g. 127.0.0.1:8080 (env BENCHQ_HTTP_ADDR; empty: none)")
	svc.Flags.StringVar(&cfg.HTTPAddrFile, "http-addr-file", startup.Env("BENCHQ_HTTP_ADDR_FILE", ""), "write the address the HTTP intake listens on into this file once it listens: with -http 127.0.0.1:0 the kernel picks a free port, and this file names it (env BENCHQ_HTTP_ADDR_FILE; benchq up uses it)")
	svc.Flags.StringVar(&cfg.HTTPTokenFile, "http-token-file", startup.Env("BENCHQ_HTTP_TOKEN_FILE", ""), "the HTTP intake's bearer token, in a file of mode 0600 (env BENCHQ_HTTP_TOKEN_FILE)")
	declare := svc.Flags.Bool("declare", false, "declare (or bring up to date) benchq's streams and buckets and exit: run with the admin role's key, before the services (compose's and Kubernetes' one-shot step; benchq up does it itself)")
	cfg.HTTPToken = os.Getenv("BENCHQ_HTTP_TOKEN") // not a flag: a flag's value is in every process listing
	svc.Main(func(ctx context.Context, rt startup.Runtime) error {
		if *declare {
			b, err := bus.Connect(ctx, rt.NATSURL, natsauth.Admin, "benchq-declare", rt.Log)
			if err != nil {
				return err
			}
			defer b.Close()
			if err := b.Setup(ctx); err != nil {
				return fmt.Errorf("%w (is BENCHQ_NATS_SEED the admin role's key?)", err)
			}
			rt.Log.Info("streams and buckets declared")
			return nil
		}
		cfg.NATSURL, cfg.Metrics = rt.NATSURL, rt.Metrics
		return Run(ctx, cfg, rt.Log)
	})
}
