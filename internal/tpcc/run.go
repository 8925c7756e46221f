package tpcc

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/pingcap/go-tpc/pkg/workload"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/benchbase"
)

// Bench is a benchmarking shard ready to start: the data is checked and,
// unless each request gets a new connection, its terminals are connected.
type Bench struct {
	db      *sql.DB
	conn    *pqConnector
	shard   contracts.TPCCShard
	version string
	wls     [nTypes]workload.Workloader // one per transaction type, weighted 100 % on it
	terms   []*terminal
}

type terminal struct {
	id   int
	rng  *rand.Rand
	link *link // its one server connection, on its pool address
	// states hold go-tpc's per-thread state (connection, statements) of
	// each transaction type as context values; nil with NewConnection.
	states [nTypes]context.Context
}

// Prepare checks sh, connects to ep, checks that its database holds
// sh.Warehouses warehouses and opens the terminals' connections, one each
// as Benchbase's: once it returns, the shard is READY and Run starts
// without connecting (except with NewConnection). Close releases what it
// opened. Statements are prepared on the server unless each request gets a
// new connection or ep's JDBC URL says prepareThreshold=0 (a transaction
// pooler in front). shard is the shard's number in its phase (from 1): with
// several pool addresses (Addresses), terminal i connects to address
// contracts.PoolAddress(shard, sh.Terminals, i, n), as the YCSB binding's
// threads do, so a phase's terminals spread evenly over the pool's pods.
func Prepare(ctx context.Context, ep contracts.Endpoint, sh contracts.TPCCShard, shard int) (*Bench, error) {
	switch {
	case sh.Warehouses < 1 || sh.Terminals < 1:
		return nil, fmt.Errorf("tpc-c run: warehouses %d and terminals %d: want at least 1 each", sh.Warehouses, sh.Terminals)
	case sh.DurationS < 1:
		return nil, fmt.Errorf("tpc-c run: duration_s %d: want at least 1", sh.DurationS)
	case sh.Target < 0:
		return nil, fmt.Errorf("tpc-c run: target %d: want 0 (unthrottled) or more", sh.Target)
	}
	db, conn, err := openDB(ep, sh.NewConnection || neverPrepares(ep.JDBCURL))
	if err != nil {
		return nil, err
	}
	b := &Bench{db: db, conn: conn, shard: sh}
	if err := b.prepare(ctx, ep, shard); err != nil {
		_ = b.Close()
		return nil, err
	}
	return b, nil
}

func (b *Bench) prepare(ctx context.Context, ep contracts.Endpoint, shard int) error {
	sh := b.shard
	for i := range b.wls {
		weights := make([]int, nTypes)
		weights[i] = 100
		wl, err := workloader(b.db, ep.Database, sh.Warehouses, sh.Terminals, weights)
		if err != nil {
			return err
		}
		b.wls[i] = wl
	}
	seed := uint64(time.Now().UnixNano())
	addrs := Addresses(ep)
	for id, l := range terminalLinks(ep, shard, sh.Terminals, false) {
		b.terms = append(b.terms, &terminal{id: id, rng: rand.New(rand.NewPCG(seed, uint64(id))), link: l})
	}
	if !sh.NewConnection {
		if err := b.connect(ctx); err != nil {
			return err
		}
	}
	// The checks go over terminal 0's connection (or, with NewConnection,
	// one it would open): a connection of their own would be one more than
	// the pool takes from this shard.
	first := b.terms[0]
	check := withLink(ctx, first.link)
	if err := checkLoaded(check, b.db, sh.Warehouses); err != nil {
		return fmt.Errorf("postgres %s: %w", addrs[first.link.addr], err)
	}
	if err := b.db.QueryRowContext(check, "SELECT version()").Scan(&b.version); err != nil {
		return fmt.Errorf("postgres %s: server version: %w", addrs[first.link.addr], err)
	}
	return nil
}

// connect opens the terminals' connections, one each: a terminal's five
// states share its link's.
func (b *Bench) connect(ctx context.Context) error {
	// The connections outlive ctx (they serve Run): only their opening is
	// bounded by it.
	base := context.WithoutCancel(ctx)
	errs := make([]error, len(b.terms))
	var wg sync.WaitGroup
	for i, t := range b.terms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for typ, wl := range b.wls {
				if ctx.Err() != nil {
					errs[i] = ctx.Err()
					return
				}
				if err := safely(fmt.Sprintf("connect terminal %d", t.id), func() error {
					t.states[typ] = wl.InitThread(withLink(base, t.link), t.id)
					return nil
				}); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Retried is how many connects the pool refused (max_client_conn) and the
// engine then tried again (see poolRetries); the retries' time is part of
// their requests' latency.
func (b *Bench) Retried() int64 { return b.conn.retried.Load() }

// Close closes the terminals' connections and the pool.
func (b *Bench) Close() error {
	for _, t := range b.terms {
		for typ, state := range t.states {
			if state != nil {
				_ = safely("close terminal", func() error { b.wls[typ].CleanupThread(state, t.id); return nil })
				t.states[typ] = nil
			}
		}
	}
	return b.db.Close()
}

// Run waits until start, runs the terminals for the shard's duration and
// returns what they measured. progress, if not nil, gets an interval every
// StatusInterval seconds (default 10; aligned on start, before the end) and
// one at the end (ElapsedS = the duration), from one goroutine: Operations
// are the requests measured so far, OpsPerSec and PerOp cover the interval.
// Only Interval's measurement fields are set: the caller stamps the
// envelope, phase, shard and attempt. When ctx ends first, Run stops the
// terminals and returns what was measured so far with ctx's error.
func (b *Bench) Run(ctx context.Context, start time.Time, progress func(contracts.Interval)) (benchbase.Result, error) {
	sh := b.shard
	window := time.Duration(sh.DurationS) * time.Second
	res := benchbase.Result{
		Benchmark: "tpcc", DBMSType: "POSTGRES", DBMSVersion: b.version, Isolation: "TRANSACTION_READ_COMMITTED",
		ScaleFactor: float64(sh.Warehouses), Terminals: sh.Terminals, Rate: sh.Target,
		NewConnection: sh.NewConnection, Start: start.UTC(), Elapsed: window,
	}
	rec := newRecorder(sh.Target > 0, start)
	if err := sleepUntil(ctx, start); err != nil {
		res.FinalState = "ABORTED"
		return res, fmt.Errorf("tpc-c run: before start: %w", err)
	}
	sched := &schedule{start: start, end: start.Add(window), rate: int64(sh.Target)}

	runCtx, stopReports := context.WithCancel(ctx)
	reports := b.report(runCtx, rec, start, sched.end, progress)
	var wg sync.WaitGroup
	for _, t := range b.terms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.terminal(ctx, t, sched, rec)
		}()
	}
	wg.Wait()
	// Under a rate the terminals may be done before the window is: the
	// window (and its reports) lasts as long all the same.
	_ = sleepUntil(ctx, sched.end)
	stopReports()
	<-reports
	if ctx.Err() != nil {
		// Stopped early: the rates are over the time it ran, not the
		// planned window (a run stopped after 13 s of 30 measured at a
		// third of its rate before).
		window = min(window, max(0, time.Since(start)))
		res.Elapsed = window
	}

	res.FinalState = "EXIT"
	if err := rec.fill(&res, window); err != nil {
		return res, fmt.Errorf("tpc-c run: %w", err)
	}
	if ctx.Err() != nil {
		res.FinalState = "ABORTED"
		return res, fmt.Errorf("tpc-c run: %w", ctx.Err())
	}
	if progress != nil {
		progress(rec.interval(sched.end, start))
	}
	return res, nil
}

// Run prepares, runs and closes a benchmarking shard (see Prepare and
// Bench.Run).
func Run(ctx context.Context, ep contracts.Endpoint, sh contracts.TPCCShard, shard int, start time.Time, progress func(contracts.Interval)) (benchbase.Result, error) {
	b, err := Prepare(ctx, ep, sh, shard)
	if err != nil {
		return benchbase.Result{}, err
	}
	defer b.Close() //nolint:errcheck // the connections are dropped; the result is what counts
	return b.Run(ctx, start, progress)
}

// terminal runs requests until the window is over or ctx ends.
func (b *Bench) terminal(ctx context.Context, t *terminal, sched *schedule, rec *recorder) {
	for ctx.Err() == nil {
		due, ok := sched.take(time.Now())
		if !ok || sleepUntil(ctx, due) != nil {
			return
		}
		typ := pick(t.rng)
		rctx, watch := watchRollback(ctx)
		begin := time.Now()
		err := b.execute(rctx, t, typ)
		end := time.Now()
		if ctx.Err() != nil || !end.Before(sched.end) {
			// Cut short, or ended after the window: Benchbase measures
			// neither.
			return
		}
		rec.record(typ, due, begin, end, err, err == nil && watch.rolledBack)
	}
}

// execute runs one request of type typ on terminal t.
func (b *Bench) execute(ctx context.Context, t *terminal, typ int) error {
	wl := b.wls[typ]
	if !b.shard.NewConnection {
		return safely("run", func() error { return wl.Run(withState(ctx, t.states[typ]), t.id) })
	}
	var state context.Context
	if err := safely("connect", func() error { state = wl.InitThread(withLink(ctx, t.link), t.id); return nil }); err != nil {
		return err
	}
	err := safely("run", func() error { return wl.Run(state, t.id) })
	if cerr := safely("close", func() error { wl.CleanupThread(state, t.id); return nil }); err == nil {
		err = cerr
	}
	return err
}

// report sends an interval every status interval until the window ends or
// ctx does; the returned channel closes when it has stopped.
func (b *Bench) report(ctx context.Context, rec *recorder, start, end time.Time, progress func(contracts.Interval)) <-chan struct{} {
	done := make(chan struct{})
	if progress == nil {
		close(done)
		return done
	}
	every := interval(b.shard)
	go func() {
		defer close(done)
		for k := 1; ; k++ {
			at := start.Add(time.Duration(k) * every)
			if !at.Before(end) || sleepUntil(ctx, at) != nil {
				return
			}
			progress(rec.interval(at, start))
		}
	}()
	return done
}
