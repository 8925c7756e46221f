package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/prom"
)

// The puller copies a phase's metrics from Prometheus into the results
// database once the phase has ended: the raw samples into metrics, one
// reduced figure per metric and component into metric_summaries.
//
// Which phases: every done or failed phase whose configuration asked for
// monitoring (the plan's sut.monitoring) and that has no metric_summaries
// rows yet. A phase's rows are written in one transaction after all its
// samples are stored, so a collector killed mid-pull pulls the phase again
// after its restart, and storeMetrics skips the samples it already has.
//
// Re-pulls: a phase whose figures are missing because Prometheus was
// unreachable is pulled again every retryEvery for retryFor after its end
// (the data may still be in Prometheus' retention once it is back); its
// rows are then replaced. Missing for any other reason (no samples: the
// exporter or target was absent) is final.
type puller struct {
	db      *pgxpool.Pool
	promURL string // "" when no Prometheus is configured
	client  *prom.Client
	step    time.Duration // the scrape interval
	log     *slog.Logger
	kick    chan struct{}
	retried map[phaseKey]time.Time
	// stored counts the metric samples written (the collector's rows metric).
	stored func(n int64)

	sweepEvery, retryEvery, retryFor time.Duration
	queryTimeout                     time.Duration
}

// pullerFromEnv reads BENCHQ_PROMETHEUS_URL and BENCHQ_SCRAPE_INTERVAL (a
// Go duration or seconds; default prom.DefaultScrapeInterval).
func pullerFromEnv(db *pgxpool.Pool, log *slog.Logger) *puller {
	step, err := prom.ParseScrapeInterval(os.Getenv(prom.EnvScrapeInterval))
	if err != nil {
		step = prom.DefaultScrapeInterval
		log.Warn("scrape interval ignored", "err", err, "using", step)
	}
	return newPuller(db, os.Getenv("BENCHQ_PROMETHEUS_URL"), step, log)
}

func newPuller(db *pgxpool.Pool, promURL string, step time.Duration, log *slog.Logger) *puller {
	return &puller{
		db: db, promURL: promURL, client: &prom.Client{URL: promURL}, step: step, log: log,
		kick: make(chan struct{}, 1), retried: map[phaseKey]time.Time{},
		sweepEvery: 10 * time.Second, retryEvery: 30 * time.Second, retryFor: time.Hour,
		queryTimeout: 15 * time.Second,
	}
}

// settle is how long after a phase's end its last sample beyond the end
// is surely in Prometheus: the two steps the window is widened by, one
// scrape to take it and one to spare.
func (p *puller) settle() time.Duration { return 4*p.step + time.Second }

// noticeBatch wakes the puller when a batch stored a phase's end. It never
// blocks: a wake-up already pending covers this one.
func (p *puller) noticeBatch(msgs []jetstream.Msg) {
	for _, m := range msgs {
		if ps, err := contracts.ParseSubject(m.Subject()); err == nil && (ps.Topic == contracts.TopicPhaseDone || ps.Topic == contracts.TopicPhaseFailed) {
			select {
			case p.kick <- struct{}{}:
			default:
			}
			return
		}
	}
}

// run sweeps at start (catch-up after a restart), every sweepEvery, and
// settle after a phase's end was stored, until ctx ends. Errors are
// logged: the next sweep tries again.
func (p *puller) run(ctx context.Context) {
	tick := time.NewTicker(p.sweepEvery)
	defer tick.Stop()
	soon := time.NewTimer(0)
	defer soon.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
			soon.Reset(p.settle())
			continue
		case <-tick.C:
		case <-soon.C:
		}
		if err := p.sweep(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("metrics pull", "err", err)
		}
	}
}

type phaseKey struct {
	code, phase string
	attempt     int
}

// endedPhase is a phase to pull, with what its configuration asked for.
type endedPhase struct {
	phaseKey
	configuration, kind, dbms string
	start, end                time.Time
	monitoring                contracts.Monitoring
	pool                      bool
	pulled                    bool // has rows: this is a re-pull
}

// sweep pulls every phase due.
func (p *puller) sweep(ctx context.Context) error {
	phases, err := p.due(ctx)
	if err != nil {
		return err
	}
	for _, ph := range phases {
		if ph.pulled {
			if last, ok := p.retried[ph.phaseKey]; ok && time.Since(last) < p.retryEvery {
				continue
			}
			p.retried[ph.phaseKey] = time.Now()
		}
		if err := p.pullPhase(ctx, ph); err != nil {
			return fmt.Errorf("phase %s attempt %d of %s: %w", ph.phase, ph.attempt, ph.code, err)
		}
	}
	return nil
}

// due lists the ended phases with monitoring that have no summaries yet,
// and those to re-pull (see puller). A time-series database's phase
// (benchmark tsdb) is watched until its drain ended (the first reading of
// its own counter, after the generators stopped, that shows the final
// total; the quiet seconds the drain waits after it are left out): it
// stores what it was sent after the last write, and a loading phase's
// writes can all fall within milliseconds, between two scrapes, where its
// ingest read 0. The settle delay counts from that end.
func (p *puller) due(ctx context.Context) ([]endedPhase, error) {
	rows, err := p.db.Query(ctx, `
		SELECT ph.code, ph.phase, ph.attempt, ph.configuration, ph.kind, cfg->>'dbms', ph.started_at, w.ended_at,
		       cfg->'sut'->'monitoring', cfg->'sut'->'pool' IS NOT NULL AND cfg->'sut'->'pool' <> 'null',
		       EXISTS (SELECT 1 FROM metric_summaries s WHERE s.code = ph.code AND s.phase = ph.phase AND s.attempt = ph.attempt)
		FROM phases ph
		JOIN experiments e ON e.code = ph.code
		CROSS JOIN LATERAL jsonb_array_elements(e.plan->'configurations') cfg
		CROSS JOIN LATERAL (SELECT GREATEST(ph.ended_at, (
		    SELECT min(r.at) FROM ingest_readings r
		    WHERE r.code = ph.code AND r.phase = ph.phase AND r.attempt = ph.attempt AND r.after_end
		      AND r.total = (SELECT max(t.total) FROM ingest_readings t
		                     WHERE t.code = ph.code AND t.phase = ph.phase AND t.attempt = ph.attempt))) AS ended_at) w
		WHERE cfg->>'name' = ph.configuration
		  AND ph.status IN ($1, $2) AND ph.started_at IS NOT NULL AND ph.ended_at IS NOT NULL
		  AND w.ended_at < now() - $3::interval
		  AND jsonb_typeof(cfg->'sut'->'monitoring') = 'object'
		  AND (NOT EXISTS (SELECT 1 FROM metric_summaries s WHERE s.code = ph.code AND s.phase = ph.phase AND s.attempt = ph.attempt)
		       OR (w.ended_at > now() - $4::interval AND EXISTS (SELECT 1 FROM metric_summaries s
		           WHERE s.code = ph.code AND s.phase = ph.phase AND s.attempt = ph.attempt AND s.missing LIKE $5)))
		ORDER BY w.ended_at`,
		contracts.PhaseDone, contracts.PhaseFailed, p.settle().String(), p.retryFor.String(), unreachablePrefix+"%")
	if err != nil {
		return nil, fmt.Errorf("phases to pull: %w", err)
	}
	defer rows.Close()
	var out []endedPhase
	for rows.Next() {
		var ph endedPhase
		var mon []byte
		if err := rows.Scan(&ph.code, &ph.phase, &ph.attempt, &ph.configuration, &ph.kind, &ph.dbms, &ph.start, &ph.end, &mon, &ph.pool, &ph.pulled); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(mon, &ph.monitoring); err != nil {
			return nil, fmt.Errorf("monitoring of %s: %w", ph.configuration, err)
		}
		m := ph.monitoring
		if m.SUT || m.Cluster || m.Application {
			out = append(out, ph)
		}
	}
	return out, rows.Err()
}

// summary is one metric_summaries row.
type summary struct {
	column
	value   *float64
	missing string
	samples int
}

// pullPhase queries every column over the phase's window widened by two
// steps each side (a counter's edges are estimated from the intervals
// around them: reduce.Increase), stores the samples, and then writes the
// phase's summaries in one transaction. Prometheus trouble becomes a
// missing reason; only a database error fails the pull (the next sweep
// retries).
func (p *puller) pullPhase(ctx context.Context, ph endedPhase) error {
	cols, err := columns(ph)
	if err != nil {
		return err
	}
	from, to := ph.start.Add(-2*p.step), ph.end.Add(2*p.step)
	answers := map[string]queryAnswer{} // system metrics share queries
	var down string                     // set once Prometheus is found unreachable
	edges, err := p.edgeReadsOf(ctx, ph)
	if err != nil {
		return err
	}
	out := make([]summary, 0, len(cols))
	var stored int64
	for _, c := range cols {
		sel := selector(ph, c.component)
		q := c.metric.PromQL(sel)
		a, ok := answers[q]
		if !ok {
			a = p.query(ctx, c.metric, sel, from, to, down)
			answers[q] = a
			if a.err != nil && strings.HasPrefix(a.err.Error(), unreachablePrefix) {
				down = a.err.Error()
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s := summary{column: c}
		series := withEdges(c, a.series, edges)
		if a.err != nil && (len(series) == 0 || strings.HasPrefix(a.err.Error(), unreachablePrefix)) {
			// Prometheus down: missing, and pulled again later with what
			// it scraped; with no samples, the edge reads alone may do.
			s.missing = a.err.Error()
			out = append(out, s)
			continue
		}
		n, err := storeMetrics(ctx, p.db, samplesOf(ph, c, series))
		if err != nil {
			return err
		}
		stored += n
		if p.stored != nil {
			p.stored(n)
		}
		s.value, s.samples, s.missing = reduceSeries(c.metric, series, ph.start, ph.end)
		out = append(out, s)
	}
	if err := p.writeSummaries(ctx, ph, out); err != nil {
		return err
	}
	p.log.Info("metrics pulled", "code", ph.code, "phase", ph.phase, "attempt", ph.attempt, "metrics", len(out), "samples_stored", stored,
		"edges_read", edges.edges)
	return nil
}

// writeSummaries replaces the phase's rows in one transaction.
func (p *puller) writeSummaries(ctx context.Context, ph endedPhase, rows []summary) error {
	return pgx.BeginFunc(ctx, p.db, func(tx pgx.Tx) error {
		for _, r := range rows {
			var missing *string
			if r.value == nil {
				missing = &r.missing
			}
			if _, err := tx.Exec(ctx, `INSERT INTO metric_summaries (code, configuration, phase, attempt, kind, component, section, position,
					metric, title, value, missing, samples, window_start, window_end)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
				ON CONFLICT (code, phase, attempt, component, metric) DO UPDATE SET
				  configuration = EXCLUDED.configuration, kind = EXCLUDED.kind, section = EXCLUDED.section,
				  position = EXCLUDED.position, title = EXCLUDED.title, value = EXCLUDED.value,
				  missing = EXCLUDED.missing, samples = EXCLUDED.samples,
				  window_start = EXCLUDED.window_start, window_end = EXCLUDED.window_end`,
				ph.code, ph.configuration, ph.phase, ph.attempt, ph.kind, r.component, r.section, r.position,
				r.metric.Key, r.metric.Title, r.value, missing, r.samples, ph.start, ph.end); err != nil {
				return fmt.Errorf("metric summary %s/%s: %w", r.component, r.metric.Key, err)
			}
		}
		return nil
	})
}
