package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/benchbase"
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
	for name := range rule.Composite {
		blocks = append(blocks, name, rule.IntendedPrefix+name)
	}
	var wantOps, wantFailed int64
	for i, name := range blocks {
		count := int64(1000 * (i + 1))
		if rule.Composite[name] != nil {
			count = 100 // as many as READ and UPDATE hold of them at most
		}
		if _, err := db.Exec(ctx, `INSERT INTO shard_operations (code, phase, shard, attempt, operation, count)
			VALUES ($1, $2, 1, 1, $3, $4)`, code, phase, name, count); err != nil {
			t.Fatal(err)
		}
		wantOps += contracts.OperationWeight(name) * count
		if contracts.CountsOperation(name) && contracts.FailedOperation(name) {
			wantFailed += count
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

// A Benchbase (TPC-C) phase: its ALL operation holds every request, the
// types add up to it and must not be added again; failed are its error
// outcomes, goodput its OK ones, and the window a shard's first request
// plus its measured runtime (as the summary's Aggregated Parallel).
func TestPhaseFiguresCountBenchbaseRequestsOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := resultsDB(t, ctx)
	const code, phase = "views2", "PostgreSQL-1-1"
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for shard, runtime := range map[int]float64{1: 10_000, 2: 9_500} {
		if _, err := db.Exec(ctx, `INSERT INTO shard_results (code, phase, shard, attempt, configuration, kind, agent, status,
			started_at, ended_at, message_id, first_op_at, last_op_at, runtime_ms)
			VALUES ($1, $2, $3, 1, 'PostgreSQL-1', 'run', 'a', 'ok', $4, $5, $6, $4, $5, $7)`,
			code, phase, shard, start, start.Add(8*time.Second), fmt.Sprint("m", shard), runtime); err != nil {
			t.Fatal(err)
		}
		for name, count := range map[string]int64{"NewOrder": 450, "Payment": 430, "OrderStatus": 40, "Delivery": 40, "StockLevel": 40,
			benchbase.IntendedPrefix + "NewOrder": 450, benchbase.All: 1000} {
			codes := `{}`
			if name == benchbase.All {
				codes = `{"OK": 980, "USER_ABORTED": 10, "ERROR": 6, "UNKNOWN": 4}`
			}
			if _, err := db.Exec(ctx, `INSERT INTO shard_operations (code, phase, shard, attempt, operation, count, return_codes)
				VALUES ($1, $2, $3, 1, $4, $5, $6)`, code, phase, shard, name, count, codes); err != nil {
				t.Fatal(err)
			}
		}
	}
	var ops, failed int64
	var window, goodput float64
	if err := db.QueryRow(ctx, `SELECT operations, failed, window_s, goodput FROM phase_figures WHERE code = $1 AND phase = $2`, code, phase).
		Scan(&ops, &failed, &window, &goodput); err != nil {
		t.Fatal(err)
	}
	if ops != 2000 || failed != 20 || window != 10 || goodput != 1960.0/10 {
		t.Errorf("phase_figures: %d operations, %d failed, window %v s, goodput %v; want 2000 (the ALL rows), 20 (ERROR and UNKNOWN), 10 s (first request + runtime) and 196/s (OK only)",
			ops, failed, window, goodput)
	}
}

// reported_shards reports one attempt of a phase, whole: the highest whose
// shards all finished ok, else the highest. Attempt 1 finished shard 1 and
// failed shard 2, attempt 2 the other way round: the view gives attempt
// 2's two rows (a failure), never shard 1 of one run and shard 2 of the
// other; once attempt 3 finishes both, its rows.
func TestReportedShardsAreOneAttemptOfThePhase(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := resultsDB(t, ctx)
	const code, phase = "views3", "Redis-1-1"
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	add := func(attempt, shard int, status string) {
		t.Helper()
		if _, err := db.Exec(ctx, `INSERT INTO shard_results (code, phase, shard, attempt, configuration, kind, agent, status,
			started_at, ended_at, message_id) VALUES ($1, $2, $3, $4, 'Redis-1', 'run', 'a', $5, $6, $6, $7)`,
			code, phase, shard, attempt, status, start.Add(time.Duration(attempt)*time.Minute), fmt.Sprintf("m%d.%d", attempt, shard)); err != nil {
			t.Fatal(err)
		}
	}
	reported := func() string {
		t.Helper()
		var got string
		if err := db.QueryRow(ctx, `SELECT string_agg(format('%s@%s', shard, attempt), ' ' ORDER BY shard)
			FROM reported_shards WHERE code = $1 AND phase = $2`, code, phase).Scan(&got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	add(1, 1, "ok")
	add(1, 2, "failed")
	add(2, 1, "failed")
	add(2, 2, "ok")
	if got := reported(); got != "1@2 2@2" {
		t.Errorf("reported shards %q, want attempt 2's (1@2 2@2): no attempt finished both, and attempts are not mixed", got)
	}
	add(3, 1, "ok")
	add(3, 2, "ok")
	if got := reported(); got != "1@3 2@3" {
		t.Errorf("reported shards %q, want attempt 3's, the one that finished both", got)
	}

	// A shard lost with its agent leaves no row: attempt 1 of another
	// phase has shard 2 ok and no row of shard 1, attempt 2 shard 1 ok and
	// shard 2 failed. Attempt 1 is not whole (its phase ran 2 shards:
	// phases.shards), so attempt 2 is reported, a failure.
	const lost = "Redis-1-2"
	if _, err := db.Exec(ctx, `INSERT INTO phases (code, phase, attempt, configuration, kind, status, shards) VALUES
		($1, $2, 1, 'Redis-1', 'run', 'failed', 2), ($1, $2, 2, 'Redis-1', 'run', 'failed', 2)`, code, lost); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		attempt, shard int
		status         string
	}{{1, 2, "ok"}, {2, 1, "ok"}, {2, 2, "failed"}} {
		if _, err := db.Exec(ctx, `INSERT INTO shard_results (code, phase, shard, attempt, configuration, kind, agent, status,
			started_at, ended_at, message_id) VALUES ($1, $2, $3, $4, 'Redis-1', 'run', 'a', $5, $6, $6, $7)`,
			code, lost, r.shard, r.attempt, r.status, start, fmt.Sprintf("l%d.%d", r.attempt, r.shard)); err != nil {
			t.Fatal(err)
		}
	}
	var got string
	if err := db.QueryRow(ctx, `SELECT string_agg(format('%s@%s', shard, attempt), ' ' ORDER BY shard)
		FROM reported_shards WHERE code = $1 AND phase = $2`, code, lost).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "1@2 2@2" {
		t.Errorf("reported shards %q of a phase whose attempt 1 lost a shard's row, want attempt 2's (1@2 2@2)", got)
	}
}

// A phase whose shards never reported their operations (stopped before any
// final counted them) has its operations and rates missing, never 0.
func TestPhaseFiguresOfAPhaseWithoutCountsAreMissing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := resultsDB(t, ctx)
	const code, phase = "views4", "Redis-1-1"
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	if _, err := db.Exec(ctx, `INSERT INTO shard_results (code, phase, shard, attempt, configuration, kind, agent, status,
		started_at, ended_at, message_id)
		VALUES ($1, $2, 1, 1, 'Redis-1', 'run', 'a', 'failed', $3, $4, 'm1')`, code, phase, start, start.Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	var shards, failedShards int64
	var ops, failed *int64
	var throughput, goodput, errorShare *float64
	if err := db.QueryRow(ctx, `SELECT shards, failed_shards, operations, failed, throughput, goodput, error_share
		FROM phase_figures WHERE code = $1 AND phase = $2`, code, phase).
		Scan(&shards, &failedShards, &ops, &failed, &throughput, &goodput, &errorShare); err != nil {
		t.Fatal(err)
	}
	if shards != 1 || failedShards != 1 || ops != nil || failed != nil || throughput != nil || goodput != nil || errorShare != nil {
		t.Errorf("phase_figures of a phase without counts: %d shards (%d failed), operations %v, failed %v, throughput %v, goodput %v, error share %v; want 1 (1), the rest missing",
			shards, failedShards, ops, failed, throughput, goodput, errorShare)
	}
}
