// Command collector stores every experiment event and shard result in the
// results database (PostgreSQL), idempotently, with the schema migrations
// kept in migrations/.
package main

import (
	"context"
	"flag"
	"os"

	"github.com/benchq/benchq/internal/config"
	"github.com/benchq/benchq/internal/obs"
)

func main() {
	fs := flag.NewFlagSet("collector", flag.ExitOnError)
	natsURL := config.NATSFlag(fs)
	dbURL := fs.String("db", config.Env("BENCHQ_DB_URL", "postgresql://postgres@127.0.0.1:5432/benchq?sslmode=disable"), "results database URL (env BENCHQ_DB_URL)")
	_ = fs.Parse(os.Args[1:])
	log := config.Logger("collector")
	config.Serve(log, "collector", func(ctx context.Context) error {
		return Run(ctx, Config{NATSURL: *natsURL, DBURL: *dbURL, Metrics: obs.FromEnv(ctx, log)}, log)
	})
}
