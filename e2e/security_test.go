package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/benchq/benchq/internal/attacks"
	"github.com/benchq/benchq/internal/natsauth"
	"github.com/benchq/benchq/internal/resultsdb"
	"github.com/benchq/benchq/internal/testenv"
)

// security tries, on the stack as `benchq up` made it and after its
// experiments ran, the attacks docs/security.md says are refused, each with
// one role's own key: taking over another role's durable consumer in each
// subject form, updating, purging and sealing a stream, reading another
// role's inbox, the jobs, the requests and the state (internal/attacks).
// Every one must be refused. First the same attacks run against a
// nats-server that admits the same roles without permissions, where every
// one must succeed: proof that each check can see its hole.
func (s *stack) security(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Run("control: no permissions", func(t *testing.T) {
		attacks.Control(t, ctx, func(conf string) string { _, url := testenv.NATSFromConfig(t, conf); return url })
	})
	if t.Failed() {
		t.Fatal("the attacks do not succeed where nothing stops them: they cannot show a hole")
	}
	attacks.Expect(t, ctx, s.info.NATSURL, func(r natsauth.Role) string { return natsauth.SeedFile(s.info.NATSKeys, r) }, nil, false)
}

// databaseRoles tries, on the results database of the stack, what neither
// the collector's role nor the readers' (the reporter, the CLI) may do —
// run a program through COPY, read a server file, create a table, and for
// the readers write a row — after showing that the owner can run the same
// statements (the access control test checks that each logs in with its
// own password file only).
func (s *stack) databaseRoles(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	owner, err := pgx.Connect(ctx, s.info.DBOwnerURL)
	if err != nil {
		t.Fatalf("the owner: %v", err)
	}
	defer owner.Close(ctx)
	for what, sql := range resultsdb.Forbidden {
		tx, err := owner.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, sql); err != nil {
			t.Fatalf("control: the owner cannot %s (%v), so the refusals below would prove nothing", what, err)
		}
		_ = tx.Rollback(ctx)
	}
	try := func(url, sql string) error {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatalf("log in with %s: %v", url, err)
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	for role, url := range map[string]string{resultsdb.CollectorRole: s.info.CollectorURL, resultsdb.ReaderRole: s.info.DBURL} {
		if !strings.Contains(url, "user="+role) && !strings.Contains(url, role+"@") {
			t.Errorf("%s does not log in as %s", url, role)
		}
		for what, sql := range resultsdb.Forbidden {
			if err := try(url, sql); err == nil {
				t.Errorf("%s may %s", role, what)
			}
		}
	}
	if err := try(s.info.DBURL, `UPDATE experiments SET status = 'failed'`); err == nil {
		t.Error("the readers' role may write the results")
	}
}
