package main

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/resultsdb"
	"github.com/benchq/benchq/internal/testenv"
)

// `collector -migrate` as compose's and Kubernetes' one-shot step runs it:
// the binary, the owner's URL (a pgpass file, scram-sha-256 over TCP) and
// the roles' passwords in its environment. A role not given a password has
// no login; after a run with both, the collector's and the readers' roles
// log in with their passwords and not without; a second run changes
// nothing.
func TestMigrateFlagAsTheOneShotStepRunsIt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	pass := filepath.Join(t.TempDir(), "pgpass")
	if err := os.WriteFile(pass, []byte("*:*:*:postgres:owner-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pg := testenv.StartPostgres(t, localdb.PGOptions{Database: "benchq", Unsafe: true, PassFile: pass})
	bin := filepath.Join(t.TempDir(), "collector")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	migrate := func(env ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, "-migrate", "-db", pg.URL())
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("collector -migrate: %v\n%s", err, out)
		}
	}
	login := func(role, password string) error {
		u, err := url.Parse(pg.URL())
		if err != nil {
			t.Fatal(err)
		}
		u.User, u.RawQuery = url.UserPassword(role, password), "sslmode=disable"
		conn, err := pgx.Connect(ctx, u.String())
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, `SELECT count(*) FROM shard_results`)
		return err
	}

	// A role not given a password has no login.
	migrate("BENCHQ_DB_COLLECTOR_PASSWORD=collector-secret")
	if err := login(resultsdb.ReaderRole, "reader-secret"); err == nil {
		t.Error("the readers' role logged in before it was given a password")
	}
	migrate("BENCHQ_DB_COLLECTOR_PASSWORD=collector-secret", "BENCHQ_DB_READER_PASSWORD=reader-secret")
	migrate("BENCHQ_DB_COLLECTOR_PASSWORD=collector-secret", "BENCHQ_DB_READER_PASSWORD=reader-secret") // again: nothing to do
	for role, pw := range map[string]string{resultsdb.CollectorRole: "collector-secret", resultsdb.ReaderRole: "reader-secret"} {
		if err := login(role, pw); err != nil {
			t.Errorf("%s with its password: %v", role, err)
		}
		if err := login(role, "wrong"); err == nil {
			t.Errorf("%s logged in with a wrong password", role)
		}
	}
	conn, err := pgx.Connect(ctx, pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var versions int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&versions); err != nil || versions == 0 {
		t.Errorf("schema_migrations: %d rows, %v", versions, err)
	}
}
