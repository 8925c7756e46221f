package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/natsauth"
	"github.com/benchq/benchq/internal/obs"
	"github.com/benchq/benchq/internal/resultsdb"
)

// Config is the collector's configuration.
type Config struct {
	NATSURL string
	DBURL   string
	Batch   int // messages per transaction
	// Metrics receives the collector's own series (selfmetrics.go); nil: none.
	Metrics *prometheus.Registry
}

// ackWait bounds how long messages fetched by a collector that died stay
// invisible: a batch is stored in well under a second, and after a crash the
// restarted collector gets them again after at most this long.
const ackWait = 10 * time.Second

// Run consumes events and results into the database until ctx ends.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	if cfg.Batch == 0 {
		cfg.Batch = 200
	}
	db, err := connectDB(ctx, cfg.DBURL)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := resultsdb.WaitMigrated(ctx, db, log); err != nil {
		return err
	}
	b, err := bus.Open(ctx, cfg.NATSURL, natsauth.Collector, "benchq-collector", log)
	if err != nil {
		return err
	}
	defer b.Close()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	m := newSelfMetrics(obs.Or(cfg.Metrics))
	pull := pullerFromEnv(db, log)
	pull.stored = func(n int64) { m.rows.Add(float64(n)) }
	specs := []bus.ConsumerSpec{
		{Stream: contracts.StreamEvents, Durable: contracts.DurableCollectorEvents, Batch: cfg.Batch, AckWait: ackWait},
		{Stream: contracts.StreamResults, Durable: contracts.DurableCollectorResults, Batch: cfg.Batch, AckWait: ackWait},
	}
	// Whether the events consumer has stored every event published so far:
	// then no GO is on its way for a shard's result that names no holder
	// (holders.go).
	caughtUp := func(ctx context.Context) bool {
		c, err := b.JS.Consumer(ctx, contracts.StreamEvents, contracts.DurableCollectorEvents)
		if err != nil {
			return false
		}
		info, err := c.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); m.watchLag(ctx, b, specs, time.Second) }()
	go func() { defer wg.Done(); pull.run(ctx) }()
	for _, spec := range specs {
		h := func(ctx context.Context, msgs []jetstream.Msg) []error {
			began := time.Now()
			errs := storeBatch(ctx, db, msgs, caughtUp)
			m.stored(spec.Stream, errs, time.Since(began))
			pull.noticeBatch(msgs)
			return errs
		}
		wg.Add(1)
		go func(spec bus.ConsumerSpec) {
			defer wg.Done()
			if err := b.Consume(ctx, spec, h); err != nil {
				// The collector stops: one that ran on without this
				// consumer would look ready and store none of its stream.
				log.Error("consumer stopped: the collector stops", "consumer", spec.Durable, "err", err)
				stop(err)
			}
		}(spec)
	}
	log.Info("collector ready", "nats", cfg.NATSURL)
	wg.Wait()
	if err := context.Cause(ctx); !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func connectDB(ctx context.Context, url string) (*pgxpool.Pool, error) {
	var lastErr error
	for {
		db, err := pgxpool.New(ctx, url)
		if err == nil {
			if err = db.Ping(ctx); err == nil {
				return db, nil
			}
			db.Close()
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to results database: %w", lastErr)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// storeBatch writes a batch in one transaction. Malformed messages are
// dropped (permanent error) without blocking the others. If the transaction
// fails, each message is retried in a transaction of its own, so one message
// the database refuses cannot hold back the rest of its batch; a refusal for
// the data itself (SQLSTATE class 22) is permanent — the message stays in the
// stream, so nothing is lost — while other errors are redelivered. Writes are
// idempotent, so retrying what was already stored is harmless.
func storeBatch(ctx context.Context, db *pgxpool.Pool, msgs []jetstream.Msg, eventsCaughtUp func(context.Context) bool) []error {
	// Asked at most once a batch, when a message first needs it.
	var caughtUp func(context.Context) bool
	if eventsCaughtUp != nil {
		var once sync.Once
		var yes bool
		caughtUp = func(ctx context.Context) bool {
			once.Do(func() { yes = eventsCaughtUp(ctx) })
			return yes
		}
	}
	errs := make([]error, len(msgs))
	recs := make([]*record, len(msgs))
	for i, m := range msgs {
		r, err := decode(m.Subject(), m.Data())
		if err == nil {
			r.signer, err = verifyAgent(m.Subject(), m.Data(), m.Headers()) // the bytes as signed
		}
		if err != nil {
			errs[i] = err
			continue
		}
		r.eventsCaughtUp = caughtUp
		if meta, err := m.Metadata(); err == nil {
			r.delivered = meta.NumDelivered
		}
		recs[i] = &r
	}
	if err := storeTx(ctx, db, recs, errs); err == nil || len(msgs) == 1 {
		if err != nil {
			errs[0] = classify(err)
		}
		return errs
	}
	for i, r := range recs {
		if r == nil || errs[i] != nil {
			continue
		}
		one := []*record{r}
		oneErr := []error{nil}
		if err := storeTx(ctx, db, one, oneErr); err != nil {
			errs[i] = classify(err)
		} else {
			errs[i] = oneErr[0]
		}
	}
	return errs
}

// storeTx writes recs in one transaction; permanent per-record errors are
// set in errs and skipped, anything else aborts the transaction.
func storeTx(ctx context.Context, db *pgxpool.Pool, recs []*record, errs []error) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		for i, r := range recs {
			if r == nil || errs[i] != nil {
				continue
			}
			if err := write(ctx, tx, *r); err != nil {
				if errors.Is(err, bus.ErrPermanent) {
					errs[i] = err
					continue
				}
				return err
			}
		}
		return nil
	})
}

// classify makes data exceptions (SQLSTATE 22xxx: a value the database
// cannot hold) permanent; connection or server trouble stays transient.
func classify(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && strings.HasPrefix(pe.Code, "22") {
		return bus.Permanent(err)
	}
	return err
}
