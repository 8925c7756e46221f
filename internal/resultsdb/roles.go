package resultsdb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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

// SetPassword gives role (CollectorRole or ReaderRole) its password and
// turns its login on; the owner calls it after Migrate. The password is
// stored as a SCRAM verifier.
func SetPassword(ctx context.Context, owner *pgxpool.Pool, role, password string) error {
	if role != CollectorRole && role != ReaderRole {
		return fmt.Errorf("%q is not a role of the results database (%s, %s)", role, CollectorRole, ReaderRole)
	}
	// ALTER ROLE takes no parameters: the literal is quoted.
	quoted := "'" + strings.ReplaceAll(password, "'", "''") + "'"
	if _, err := owner.Exec(ctx, "SET password_encryption = 'scram-sha-256'; ALTER ROLE "+pgx.Identifier{role}.Sanitize()+" LOGIN PASSWORD "+quoted); err != nil {
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

// WaitMigrated waits until every migration this build knows is applied:
// how the collector starts, which may not apply them (its role may not
// create tables).
func WaitMigrated(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	want := len(names)
	for {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n)
		if err == nil && n >= want {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("%d of %d migrations applied", n, want)
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
