package tpcc

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"time"

	"github.com/lib/pq"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/benchbase"
)

// DefaultStatusInterval is the interval between progress reports when the
// shard sets none.
const DefaultStatusInterval = 10 * time.Second

// abandonAfter bounds the wait for loader threads after one failed: go-tpc's
// threads wait for thread 0 to create the tables, and wait forever if it
// failed to.
const abandonAfter = 30 * time.Second

// Load creates TPC-C's tables in ep's database (dropping any left by an
// earlier load, as Benchbase's DDL does) and fills sh.Warehouses warehouses
// with sh.Terminals loader threads (go-tpc's loader: thread 0 loads the
// items, warehouses and districts are dealt round-robin), one connection
// each, spread over the pool's addresses as Prepare spreads terminals, and
// one short connection at a time for the progress reports. Every
// sh.StatusInterval seconds progress gets the rows inserted so far (from
// pg_stat_user_tables) and their rate, and once more at the end all rows,
// counted; ElapsedS differs between the intervals of one load (the agent
// names an interval by it). Only Interval's measurement fields are set: the
// caller stamps the envelope, phase, shard and attempt.
func Load(ctx context.Context, ep contracts.Endpoint, sh contracts.TPCCShard, shard int, progress func(contracts.Interval)) (benchbase.Load, error) {
	if sh.Warehouses < 1 || sh.Terminals < 1 {
		return benchbase.Load{}, fmt.Errorf("tpc-c load: warehouses %d and terminals %d: want at least 1 each", sh.Warehouses, sh.Terminals)
	}
	db, _, err := openDB(ep, false)
	if err != nil {
		return benchbase.Load{}, err
	}
	defer db.Close()
	wl, err := workloader(db, ep.Database, sh.Warehouses, sh.Terminals, nil)
	if err != nil {
		return benchbase.Load{}, err
	}
	// One connection a loader thread (its inserts share its state's),
	// spread over the pool's pods as the terminals are. Thread 0's is
	// opened first to drop the tables, and kept for thread 0 and the final
	// count: closing it and connecting again could meet a pool that has
	// not yet let go of the first.
	links := terminalLinks(ep, shard, sh.Terminals, true)
	var dropState context.Context
	if err := safely("drop tpc-c tables", func() error {
		dropState = wl.InitThread(withLink(ctx, links[0]), 0)
		return wl.Cleanup(dropState, 0)
	}); err != nil {
		if dropState != nil {
			_ = safely("close", func() error { wl.CleanupThread(dropState, 0); return nil })
		}
		return benchbase.Load{}, err
	}
	defer safely("close", func() error { wl.CleanupThread(dropState, 0); return nil }) //nolint:errcheck // the load's outcome is what counts

	start := time.Now()
	loadCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The progress query takes a short connection of its own, on the
	// address contracts.ShardPoolAddresses gives it (thread 0's): the plan
	// counts it as one more client of the shard there.
	progressCtx := withLink(loadCtx, links[sh.Terminals])
	stopProgress := reportLoad(progressCtx, db, start, interval(sh), progress)
	errc := make(chan error, sh.Terminals)
	for i := range sh.Terminals {
		go func() {
			errc <- safely(fmt.Sprintf("loader thread %d", i), func() error {
				state := wl.InitThread(withLink(loadCtx, links[i]), i)
				defer wl.CleanupThread(state, i)
				return wl.Prepare(state, i)
			})
		}()
	}
	var firstErr error
	var abandon <-chan time.Time
	for pending := sh.Terminals; pending > 0; {
		select {
		case err := <-errc:
			pending--
			if err != nil && firstErr == nil {
				firstErr = err
				cancel()
				abandon = time.After(abandonAfter)
			}
		case <-abandon:
			stopProgress()
			return benchbase.Load{}, fmt.Errorf("tpc-c load: %w (%d loader threads abandoned)", firstErr, pending)
		}
	}
	elapsed := time.Since(start)
	stopProgress()
	if firstErr != nil {
		if ctx.Err() != nil {
			return benchbase.Load{}, fmt.Errorf("tpc-c load: %w", ctx.Err())
		}
		return benchbase.Load{}, fmt.Errorf("tpc-c load: %w", firstErr)
	}
	rows, err := countRows(withLink(ctx, links[0]), db) // on the drop's connection: the loaders are done
	if err != nil {
		return benchbase.Load{}, fmt.Errorf("tpc-c load: %w", err)
	}
	if progress != nil {
		var total int64
		for _, n := range rows {
			total += n
		}
		// Rounded up: periodic reports are at whole intervals up to the
		// end, and ElapsedS must differ from theirs (it names an interval).
		progress(contracts.Interval{At: time.Now().UTC(), ElapsedS: int64(math.Ceil(elapsed.Seconds())),
			Operations: total, OpsPerSec: float64(total) / elapsed.Seconds()})
	}
	return benchbase.Load{
		ScaleFactor: float64(sh.Warehouses), Terminals: sh.Terminals,
		Start: start.UTC(), Elapsed: elapsed, Rows: rows,
	}, nil
}

func interval(sh contracts.TPCCShard) time.Duration {
	if sh.StatusInterval > 0 {
		return time.Duration(sh.StatusInterval) * time.Second
	}
	return DefaultStatusInterval
}

// reportLoad calls progress every interval (aligned on start) with the rows
// inserted into TPC-C's tables so far, until stop is called. PostgreSQL's
// statistics lag the inserts by up to a second; a report whose query fails
// is skipped.
func reportLoad(ctx context.Context, db *sql.DB, start time.Time, every time.Duration, progress func(contracts.Interval)) (stop func()) {
	if progress == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var last int64
		for k := 1; ; k++ {
			at := start.Add(time.Duration(k) * every)
			if sleepUntil(ctx, at) != nil {
				return
			}
			rows, err := insertedRows(ctx, db)
			if err != nil {
				continue
			}
			progress(contracts.Interval{At: at.UTC(), ElapsedS: int64(time.Duration(k) * every / time.Second),
				Operations: rows, OpsPerSec: float64(rows-last) / every.Seconds()})
			last = rows
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

func insertedRows(ctx context.Context, db *sql.DB) (int64, error) {
	var n int64
	err := db.QueryRowContext(ctx,
		"SELECT coalesce(sum(n_tup_ins), 0)::bigint FROM pg_stat_user_tables WHERE relname = ANY($1)",
		pq.Array(benchbase.TPCCTables[:])).Scan(&n)
	return n, err
}

// sleepUntil waits until t or until ctx ends (then it returns ctx's error).
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
