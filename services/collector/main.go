// Command collector stores every experiment event and shard result in the
// results database (PostgreSQL), idempotently, with the schema migrations
// kept in migrations/.
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
	fs := flag.NewFlagSet("collector", flag.ExitOnError)
	natsURL := fs.String("nats", config.Env("BENCHQ_NATS_URL", "nats://127.0.0.1:4222"), "NATS server URL (env BENCHQ_NATS_URL)")
	dbURL := fs.String("db", config.Env("BENCHQ_DB_URL", "postgresql://postgres@127.0.0.1:5432/benchq?sslmode=disable"), "results database URL (env BENCHQ_DB_URL)")
	_ = fs.Parse(os.Args[1:])
	log := config.Logger("collector")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, Config{NATSURL: *natsURL, DBURL: *dbURL}, log); err != nil {
		log.Error("collector failed", "err", err)
		os.Exit(1)
	}
}
