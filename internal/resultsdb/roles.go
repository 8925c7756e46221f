package resultsdb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/benchq/benchq/internal/pgscram"
)

// The roles of migration 0007_roles.sql.
const (
	CollectorRole = "benchq_collector" // reads and writes benchq's tables
	ReaderRole    = "benchq_reader"    // reads them and the views, read-only
)

// Forbidden are statements neither role may run and the owner may: the
// attacks docs/security.md says the roles refuse (checked by this
// package's test and on the real stack by e2e/security_test.go).
var Forbidden = map[string]string{
	"run a program (COPY ... TO PROGRAM)": `COPY (SELECT 1) TO PROGRAM 'cat >/dev/null'`,
	"read a server file":                  `SELECT pg_read_file('PG_VERSION')`,
	"create a table":                      `CREATE TABLE stolen (x int)`,
}

// ReaderForbidden are what the readers' role may not do and the owner
// may, beyond Forbidden: its transactions are read-only by default only
// (a session may turn that off), so nothing it could write may be left to
// it — temporary tables included (migration 0013).
var ReaderForbidden = map[string]string{
	"create a temporary table in a read-write transaction": `BEGIN READ WRITE; CREATE TEMP TABLE stolen_tmp (x int); ROLLBACK`,
}

// SetPassword gives role (CollectorRole or ReaderRole) its password and
// turns its login on; the owner calls it after Migrate. The password is
// stored as a SCRAM verifier.
func SetPassword(ctx context.Context, owner *pgxpool.Pool, role, password string) error {
	if role != CollectorRole && role != ReaderRole {
		return fmt.Errorf("%q is not a role of the results database (%s, %s)", role, CollectorRole, ReaderRole)
	}
	// By its verifier: the statement's text never holds the password.
	alter, err := pgscram.AlterRole(role, password, true)
	if err != nil {
		return err
	}
	if _, err := owner.Exec(ctx, alter); err != nil {
		return fmt.Errorf("set the password of %s: %w", role, err)
	}
	return nil
}

// Prepare is what the owner does to a results database: apply the
// migrations, then give each role of passwords (CollectorRole, ReaderRole)
// its password; a role without one ("") keeps its login off. benchq up and
// `collector -migrate` call it.
func Prepare(ctx context.Context, owner *pgxpool.Pool, passwords map[string]string) error {
	if err := Migrate(ctx, owner); err != nil {
		return err
	}
	for role, password := range passwords {
		if password == "" {
			continue
		}
		if err := SetPassword(ctx, owner, role, password); err != nil {
			return err
		}
	}
	return nil
}

// WaitMigrated waits until every migration this build knows is applied,
// by name, and its views are in place as it defines them: how the
// collector starts, which may not apply them (its role may not create
// tables).
func WaitMigrated(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	versions, views, err := buildSchema()
	if err != nil {
		return err
	}
	for {
		err := migrated(ctx, pool, versions, views)
		if err == nil {
			return nil
		}
		if log != nil {
			log.Info("waiting for the results database's migrations (benchq up, or collector -migrate)", "err", err)
			log = nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("the results database is not migrated (benchq up migrates it; in compose and on Kubernetes `collector -migrate` with the owner's password)"), err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// buildSchema is what this build defines: its migrations' versions and its
// views (with their definitions' SHA-256).
func buildSchema() ([]string, []view, error) {
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, nil, err
	}
	versions := make([]string, len(files))
	for i, f := range files {
		versions[i] = strings.TrimSuffix(path.Base(f), ".sql")
	}
	views, err := viewDefinitions()
	return versions, views, err
}

// migrated is nil when every migration of versions is recorded and every
// view is as defined, else an error saying what is missing.
func migrated(ctx context.Context, pool *pgxpool.Pool, versions []string, views []view) error {
	rows, err := pool.Query(ctx, `SELECT v FROM unnest($1::text[]) v WHERE v NOT IN (SELECT version FROM schema_migrations)`, versions)
	if err != nil {
		return err
	}
	missing, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("migrations not applied: %s", strings.Join(missing, ", "))
	}
	for _, v := range views {
		var have string
		if err := pool.QueryRow(ctx, `SELECT sha256 FROM schema_views WHERE name = $1`, v.name).Scan(&have); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if have != v.sha256 {
			missing = append(missing, v.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("views not made as this build defines them: %s", strings.Join(missing, ", "))
	}
	return nil
}
