package main

import (
	"testing"
	"time"

	"github.com/benchq/benchq/contracts"
)

// The phase_figures view (internal/resultsdb/views) counts YCSB's operations
// by the contract's rule (names.json's ycsb_operations, which Migrate writes
// into it): one shard with a block of every kind, and the
// view's operations and failures must be what the rule makes of them.
func TestPhaseFiguresCountOperationsByTheContract(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := resultsDB(t, ctx)
	const code, phase = "views1", "Redis-1-1"
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	if _, err := db.Exec(ctx, `INSERT INTO shard_results (code, phase, shard, attempt, configuration, kind, agent, status,
		started_at, ended_at, message_id, first_op_at, last_op_at)
		VALUES ($1, $2, 1, 1, 'Redis-1', 'run', 'a', 'ok', $3, $4, 'm1', $3, $4)`, code, phase, start, start.Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	rule := contracts.YCSBOperationRule()
	blocks := append([]string{"READ", "UPDATE", "READ" + rule.FailedSuffix, rule.IntendedPrefix + "READ", rule.IntendedPrefix + "CLEANUP"},
		rule.NotOperations...)
	var wantOps, wantFailed int64
	for i, name := range blocks {
		count := int64(1000 * (i + 1))
		if _, err := db.Exec(ctx, `INSERT INTO shard_operations (code, phase, shard, attempt, operation, count)
			VALUES ($1, $2, 1, 1, $3, $4)`, code, phase, name, count); err != nil {
			t.Fatal(err)
		}
		if contracts.CountsOperation(name) {
			wantOps += count
			if contracts.FailedOperation(name) {
				wantFailed += count
			}
		}
	}
	var ops, failed int64
	if err := db.QueryRow(ctx, `SELECT operations, failed FROM phase_figures WHERE code = $1 AND phase = $2`, code, phase).Scan(&ops, &failed); err != nil {
		t.Fatal(err)
	}
	if ops != wantOps || failed != wantFailed {
		t.Errorf("phase_figures: %d operations, %d failed; the contract's rule gives %d and %d (views/phase_figures.sql and names.json's ycsb_operations disagree)",
			ops, failed, wantOps, wantFailed)
	}
}
