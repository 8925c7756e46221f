package main

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/resultsdb"
	"github.com/benchq/benchq/internal/testenv"
)

// Who may report for a shard whose holder is not stored: the message waits
// while the events are not all stored; once they are, the holder is read
// again (a GO stored meanwhile counts); a phase that ended before it started
// needs no wait; and the wait is bounded.
func TestCheckHolderWaitsUntilTheEventsAreStored(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := resultsdb.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	check := func(code string, delivered uint64, caughtUp func(context.Context) bool) error {
		r := record{subject: contracts.FinalSubject(code, "p", 1), head: contracts.Envelope{Code: code}, signer: "U-rogue",
			eventsCaughtUp: caughtUp, delivered: delivered}
		var err error
		_ = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error { err = checkHolder(ctx, tx, r, "p", 1, 1); return nil })
		return err
	}
	no := func(context.Context) bool { return false }
	yes := func(context.Context) bool { return true }
	if err := check("h1", 1, no); !errors.Is(err, errHolderUnknown) {
		t.Errorf("events not all stored: %v, want a wait", err)
	}
	if err := check("h1", maxHolderWaits, no); !errors.Is(err, bus.ErrPermanent) {
		t.Errorf("events not stored after %d tries: %v, want a refusal", maxHolderWaits, err)
	}
	if err := check("h1", 1, yes); err != nil {
		t.Errorf("events all stored, no GO named a holder: %v, want it counted", err)
	}
	// The GO is stored (and acked) between the first read and the caught-up
	// check: the second read finds its holder, who is not the signer.
	storeGo := func(ctx context.Context) bool {
		if _, err := db.Exec(ctx, `INSERT INTO shard_holders (code, phase, attempt, shard, agent, instance) VALUES ('h2', 'p', 1, 1, 'a1', 'U-holder')`); err != nil {
			t.Error(err)
		}
		return true
	}
	if err := check("h2", 1, storeGo); !errors.Is(err, bus.ErrPermanent) {
		t.Errorf("a GO stored before the events were found caught up: %v, want the rogue refused", err)
	}
	// A phase that failed before its GO: nobody held the shard.
	if _, err := db.Exec(ctx, `INSERT INTO phases (code, phase, attempt, configuration, kind, status, shards) VALUES ('h3', 'p', 1, 'c', 'load', 'failed', 1)`); err != nil {
		t.Fatal(err)
	}
	asked := false
	if err := check("h3", 1, func(context.Context) bool { asked = true; return false }); err != nil || asked {
		t.Errorf("a phase failed before its GO: %v (asked whether the events are stored: %v), want it counted at once", err, asked)
	}
}
