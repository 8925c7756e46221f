// Command collector stores every experiment event and shard result in the
// results database (PostgreSQL), idempotently, as the role benchq_collector
// (internal/resultsdb); the schema's migrations are applied by the owner
// (benchq up, or this command with -migrate).
package main

import (
	"context"
	"os"

	"github.com/benchq/benchq/internal/resultsdb"
	"github.com/benchq/benchq/internal/startup"
)

func main() {
	svc := startup.NewService("collector")
	dbURL := svc.Flags.String("db", startup.Env("BENCHQ_DB_URL", "postgresql://benchq_collector@127.0.0.1:5432/benchq?sslmode=disable"), "results database URL (env BENCHQ_DB_URL)")
	migrate := svc.Flags.Bool("migrate", false, "apply the results database's migrations as its owner (the URL's user), give the collector's and the readers' roles the passwords in BENCHQ_DB_COLLECTOR_PASSWORD and BENCHQ_DB_READER_PASSWORD, and exit: compose's and Kubernetes' one-shot step (benchq up does it itself)")
	svc.Main(func(ctx context.Context, rt startup.Runtime) error {
		if *migrate {
			return migrateAsOwner(ctx, *dbURL, map[string]string{
				resultsdb.CollectorRole: os.Getenv("BENCHQ_DB_COLLECTOR_PASSWORD"),
				resultsdb.ReaderRole:    os.Getenv("BENCHQ_DB_READER_PASSWORD"),
			})
		}
		return Run(ctx, Config{NATSURL: rt.NATSURL, DBURL: *dbURL, Metrics: rt.Metrics}, rt.Log)
	})
}

// migrateAsOwner applies the migrations and sets each role's password
// (a role without one keeps its login off).
func migrateAsOwner(ctx context.Context, url string, passwords map[string]string) error {
	db, err := connectDB(ctx, url)
	if err != nil {
		return err
	}
	defer db.Close()
	return resultsdb.Prepare(ctx, db, passwords)
}
