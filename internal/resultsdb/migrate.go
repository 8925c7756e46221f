// Package resultsdb is the results database's schema and roles: the
// migrations (applied by its owner only: benchq up, or `collector -migrate`
// in compose and on Kubernetes), and the two roles the stack's processes log
// in as — the collector's, which may read and write benchq's tables and
// nothing else, and the readers' (the reporter, the CLI, Grafana), which
// may only read them.
package resultsdb

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/benchbase"
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

// makeViews runs views/*.sql whose definition is not the one in place
// (schema_views), in file-name order, in one transaction. A view holds no
// data, so its one definition lives there and is made again when it
// changes, instead of being copied into a new migration. The files' {{...}}
// are the rules the views share with Go and the reporter (viewParameters).
func makeViews(ctx context.Context, db *pgxpool.Conn) error {
	views, err := viewDefinitions()
	if err != nil {
		return err
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, v := range views {
		var have string
		err := tx.QueryRow(ctx, `SELECT sha256 FROM schema_views WHERE name = $1`, v.name).Scan(&have)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("view %s: %w", v.name, err)
		}
		if have == v.sha256 {
			continue
		}
		if _, err := tx.Exec(ctx, v.sql); err != nil {
			return fmt.Errorf("view %s: %w", v.name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_views (name, sha256) VALUES ($1, $2)
			ON CONFLICT (name) DO UPDATE SET sha256 = EXCLUDED.sha256, made_at = now()`, v.name, v.sha256); err != nil {
			return fmt.Errorf("view %s: %w", v.name, err)
		}
	}
	return tx.Commit(ctx)
}

// view is one file of views/, filled in.
type view struct{ name, sql, sha256 string }

// viewDefinitions are this build's views, in file-name order.
func viewDefinitions() ([]view, error) {
	names, err := fs.Glob(migrations, "views/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	fill := viewParameters()
	var out []view
	for _, n := range names {
		raw, _ := migrations.ReadFile(n)
		sql := fill.Replace(string(raw))
		sum := sha256.Sum256([]byte(sql))
		out = append(out, view{name: strings.TrimSuffix(path.Base(n), ".sql"), sql: sql, sha256: hex.EncodeToString(sum[:])})
	}
	return out, nil
}

// viewParameters fills the views' {{...}} with contracts/names.json's rules:
// strings as SQL literals, lists as text arrays.
func viewParameters() *strings.Replacer {
	rule := contracts.YCSBOperationRule()
	weights := map[string]int64{}
	for name := range rule.Composite {
		weights[name] = contracts.OperationWeight(name)
	}
	composite, _ := json.Marshal(weights) // a map of string to int64 always encodes
	return strings.NewReplacer(
		"{{not_operations}}", sqlArray(rule.NotOperations),
		"{{intended_prefix}}", sqlLiteral(rule.IntendedPrefix),
		"{{failed_suffix}}", sqlLiteral(rule.FailedSuffix),
		"{{composite_weights}}", sqlLiteral(string(composite))+"::jsonb",
		"{{benchbase_all}}", sqlLiteral(benchbase.All),
		"{{benchbase_ok}}", sqlLiteral(benchbase.CodeOK),
		"{{benchbase_errors}}", sqlArray(benchbase.ErrorCodes),
	)
}

// sqlArray is names as a SQL text array.
func sqlArray(names []string) string {
	quoted := make([]string, len(names))
	for i, name := range names {
		quoted[i] = sqlLiteral(name)
	}
	return "ARRAY[" + strings.Join(quoted, ", ") + "]::text[]"
}

// sqlLiteral quotes s as a standard SQL string literal.
func sqlLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
