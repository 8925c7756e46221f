package resultsdb_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/benchq/benchq/internal/resultsdb"
	"github.com/benchq/benchq/internal/testenv"
)

// as is the URL of owner with user role (the test server trusts loopback:
// what is tested here is what each role may do once logged in; the
// passwords are tested on the real stack, e2e/security_test.go).
func as(t *testing.T, owner, role string) string {
	t.Helper()
	u, err := url.Parse(owner)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return u.String()
}

// TestEachRoleDoesItsPartOnly: after the migrations, the collector's role
// reads and writes benchq's tables, the readers' role reads them and the
// views, and neither may write what it should not, create a table, run a
// program (COPY ... TO PROGRAM) or read a server file — which the owner
// may (so each refusal below can be seen failing).
func TestEachRoleDoesItsPartOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ownerURL := testenv.Postgres(t)
	owner, err := pgxpool.New(ctx, ownerURL)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	if err := resultsdb.Migrate(ctx, owner); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{resultsdb.CollectorRole, resultsdb.ReaderRole} {
		if err := resultsdb.SetPassword(ctx, owner, r, "pw-"+r); err != nil {
			t.Fatal(err)
		}
	}
	if err := resultsdb.SetPassword(ctx, owner, "postgres", "x"); err == nil {
		t.Error("SetPassword changed the owner's password")
	}

	for what, sql := range resultsdb.Forbidden {
		if _, err := owner.Exec(ctx, sql); err != nil {
			t.Fatalf("the owner cannot %s (%v): the roles' refusals below would prove nothing", what, err)
		}
	}
	write := `INSERT INTO experiments (code, request, plan, planned_at) VALUES ('forged', '{}', '{}', now())`
	try := func(role, what, sql string) error {
		conn, err := pgx.Connect(ctx, as(t, ownerURL, role))
		if err != nil {
			t.Fatalf("log in as %s: %v", role, err)
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	for _, role := range []string{resultsdb.CollectorRole, resultsdb.ReaderRole} {
		for what, sql := range resultsdb.Forbidden {
			if err := try(role, what, sql); err == nil {
				t.Errorf("%s may %s", role, what)
			}
		}
		if err := try(role, "read", `SELECT count(*) FROM shard_results`); err != nil {
			t.Errorf("%s cannot read the results: %v", role, err)
		}
		if err := try(role, "read a view", `SELECT count(*) FROM phase_figures`); err != nil {
			t.Errorf("%s cannot read the views: %v", role, err)
		}
	}
	if err := try(resultsdb.CollectorRole, "write", write); err != nil {
		t.Errorf("the collector cannot write: %v", err)
	}
	// The metrics' daily partitions are made as the owner, for the
	// collector only.
	partitions := `SELECT metrics_ensure_partitions(now() + interval '40 days', now() + interval '41 days')`
	if err := try(resultsdb.CollectorRole, "partitions", partitions); err != nil {
		t.Errorf("the collector cannot make the metrics' partitions: %v", err)
	}
	if err := try(resultsdb.CollectorRole, "store a sample", `INSERT INTO metrics (time, code, phase, configuration, component, metric, value)
		VALUES (now() + interval '40 days', 'c', 'p', 'cfg', 'sut', 'cpu_seconds', 1)`); err != nil {
		t.Errorf("the collector cannot store a sample in a new partition: %v", err)
	}
	if err := try(resultsdb.ReaderRole, "partitions", partitions); err == nil {
		t.Error("the readers' role may make partitions")
	}
	if err := try(resultsdb.ReaderRole, "write", `UPDATE experiments SET status = 'failed'`); err == nil {
		t.Error("the readers' role may write")
	}
	for what, sql := range resultsdb.ReaderForbidden {
		if _, err := owner.Exec(ctx, sql); err != nil {
			t.Fatalf("the owner cannot %s (%v): the readers' refusal below would prove nothing", what, err)
		}
		if err := try(resultsdb.ReaderRole, what, sql); err == nil {
			t.Errorf("the readers' role may %s", what)
		}
	}
	// The collector's samples go through a temporary table.
	if err := try(resultsdb.CollectorRole, "temp", `CREATE TEMP TABLE metrics_in (x int)`); err != nil {
		t.Errorf("the collector cannot make its temporary table: %v", err)
	}
}
