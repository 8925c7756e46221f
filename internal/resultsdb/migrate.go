// Package resultsdb is the results database's schema and roles: the
// migrations (applied by its owner only: benchq up, or `collector -migrate`
// in compose and on Kubernetes), and the two roles the stack's processes log
// in as — the collector's, which may read and write benchq's tables and
// nothing else, and the readers' (the reporter, the CLI, Grafana), which
// may only read them.
package resultsdb

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/benchq/benchq/contracts"
)

//go:embed migrations/*.sql views/*.sql
var migrations embed.FS

// Migrate applies the migrations not yet recorded in schema_migrations, in
// file-name order, each in its own transaction, then makes the views again
// (views/*.sql, in one transaction). A session advisory lock serialises
// collectors starting at once (CREATE TABLE IF NOT EXISTS alone races on the
// catalog).
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	db, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer db.Release()
	if _, err := db.Exec(ctx, `SELECT pg_advisory_lock(7262626)`); err != nil {
		return fmt.Errorf("migrate lock: %w", err)
	}
	defer func() { _, _ = db.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(7262626)`) }()
	if _, err := db.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, n := range names {
		version := strings.TrimSuffix(strings.TrimPrefix(n, "migrations/"), ".sql")
		sql, _ := migrations.ReadFile(n)
		tx, err := db.Begin(ctx)
		if err != nil {
			return err
		}
		var done bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, version).Scan(&done); err != nil {
			_ = tx.Rollback(ctx)
			return err
		}
		if !done {
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				_ = tx.Rollback(ctx)
				return fmt.Errorf("migration %s: %w", version, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, version); err != nil {
				_ = tx.Rollback(ctx)
				return err
			}
		}
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("migration %s: %w", version, err)
		}
	}
	return makeViews(ctx, db)
}

// makeViews runs views/*.sql, in file-name order, in one transaction. A view
// holds no data, so its one definition lives there and is made again at
// every migration instead of being copied into a new migration whenever it
// changes. The files' {{...}} are the rules the views share with Go and the
// reporter (viewParameters).
func makeViews(ctx context.Context, db *pgxpool.Conn) error {
	names, err := fs.Glob(migrations, "views/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	fill := viewParameters()
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, n := range names {
		sql, _ := migrations.ReadFile(n)
		if _, err := tx.Exec(ctx, fill.Replace(string(sql))); err != nil {
			return fmt.Errorf("view %s: %w", n, err)
		}
	}
	return tx.Commit(ctx)
}

// viewParameters fills the views' {{...}} with contracts/names.json's rules,
// as SQL literals.
func viewParameters() *strings.Replacer {
	rule := contracts.YCSBOperationRule()
	notOps := make([]string, len(rule.NotOperations))
	for i, name := range rule.NotOperations {
		notOps[i] = sqlLiteral(name)
	}
	return strings.NewReplacer(
		"{{not_operations}}", strings.Join(notOps, ", "),
		"{{intended_prefix}}", sqlLiteral(rule.IntendedPrefix),
		"{{failed_suffix}}", sqlLiteral(rule.FailedSuffix),
	)
}

// sqlLiteral quotes s as a standard SQL string literal.
func sqlLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
