// Command collector stores every experiment event and shard result in the
// results database (PostgreSQL), idempotently, with the schema migrations
// kept in migrations/.
package main

import (
	"context"

	"github.com/benchq/benchq/internal/startup"
)

func main() {
	svc := startup.NewService("collector")
	dbURL := svc.Flags.String("db", startup.Env("BENCHQ_DB_URL", "postgresql://postgres@127.0.0.1:5432/benchq?sslmode=disable"), "results database URL (env BENCHQ_DB_URL)")
	svc.Main(func(ctx context.Context, rt startup.Runtime) error {
		return Run(ctx, Config{NATSURL: rt.NATSURL, DBURL: *dbURL, Metrics: rt.Metrics}, rt.Log)
	})
}
