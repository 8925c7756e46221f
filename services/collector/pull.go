package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/prom"
	"github.com/benchq/benchq/internal/reduce"
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
// and those to re-pull (see puller).
func (p *puller) due(ctx context.Context) ([]endedPhase, error) {
	rows, err := p.db.Query(ctx, `
		SELECT ph.code, ph.phase, ph.attempt, ph.configuration, ph.kind, cfg->>'dbms', ph.started_at, ph.ended_at,
		       cfg->'sut'->'monitoring', cfg->'sut'->'pool' IS NOT NULL AND cfg->'sut'->'pool' <> 'null',
		       EXISTS (SELECT 1 FROM metric_summaries s WHERE s.code = ph.code AND s.phase = ph.phase AND s.attempt = ph.attempt)
		FROM phases ph
		JOIN experiments e ON e.code = ph.code
		CROSS JOIN LATERAL jsonb_array_elements(e.plan->'configurations') cfg
		WHERE cfg->>'name' = ph.configuration
		  AND ph.status IN ($1, $2) AND ph.started_at IS NOT NULL AND ph.ended_at IS NOT NULL
		  AND ph.ended_at < now() - $3::interval
		  AND jsonb_typeof(cfg->'sut'->'monitoring') = 'object'
		  AND (NOT EXISTS (SELECT 1 FROM metric_summaries s WHERE s.code = ph.code AND s.phase = ph.phase AND s.attempt = ph.attempt)
		       OR (ph.ended_at > now() - $4::interval AND EXISTS (SELECT 1 FROM metric_summaries s
		           WHERE s.code = ph.code AND s.phase = ph.phase AND s.attempt = ph.attempt AND s.missing LIKE $5)))
		ORDER BY ph.ended_at`,
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

// unreachablePrefix starts every missing reason that a re-pull may cure.
const unreachablePrefix = "Prometheus at "

// column is one metric of one component of a phase.
type column struct {
	component, section string
	position           int
	metric             catalog.Metric
}

// columns lists what the phase's monitoring level asks for (MONSPEC): -m
// the system set of the sut (and pool), -mc also of the phase's driver,
// -ma the application set(s).
func columns(ph endedPhase) ([]column, error) {
	var comps []string
	if ph.monitoring.SUT || ph.monitoring.Cluster {
		comps = append(comps, "sut")
		if ph.pool {
			comps = append(comps, "pool")
		}
	}
	if ph.monitoring.Cluster {
		comps = append(comps, driverComponent(ph.kind))
	}
	var out []column
	add := func(comp, section string, set catalog.MetricSet) {
		for i, m := range set.Metrics {
			out = append(out, column{comp, section, i, m})
		}
	}
	if len(comps) > 0 {
		sys, err := catalog.MetricSetByName(catalog.SystemSet)
		if err != nil {
			return nil, err
		}
		for _, c := range comps {
			add(c, "system", sys)
		}
	}
	if ph.monitoring.Application {
		e, err := catalog.Lookup(ph.dbms)
		if err != nil {
			return nil, err
		}
		sets, err := e.ApplicationSets()
		if err != nil {
			return nil, err
		}
		add("sut", "application", sets["sut"])
		if set, ok := sets["pool"]; ok && ph.pool {
			add("pool", "application", set)
		}
	}
	return out, nil
}

func driverComponent(kind string) string {
	if kind == contracts.KindLoad {
		return "loader"
	}
	return "benchmarker"
}

// selector is the label matchers of a component in the phase; SUT series
// have no phase label (a SUT lives across phases).
func selector(ph endedPhase, component string) string {
	s := fmt.Sprintf(`experiment=%q,configuration=%q,component=%q`, ph.code, ph.configuration, component)
	if component == "loader" || component == "benchmarker" {
		s += fmt.Sprintf(`,phase=%q`, ph.phase)
	}
	return s
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
	out := make([]summary, 0, len(cols))
	var stored int64
	for _, c := range cols {
		sel := selector(ph, c.component)
		q := strings.ReplaceAll(c.metric.Query, catalog.Selector, sel)
		a, ok := answers[q]
		if !ok {
			a = p.query(ctx, c.metric.Query, sel, from, to, down)
			answers[q] = a
			if a.err != nil && strings.HasPrefix(a.err.Error(), unreachablePrefix) {
				down = a.err.Error()
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s := summary{column: c}
		if a.err != nil {
			s.missing = a.err.Error()
			out = append(out, s)
			continue
		}
		n, err := storeMetrics(ctx, p.db, samplesOf(ph, c, a.series))
		if err != nil {
			return err
		}
		stored += n
		if p.stored != nil {
			p.stored(n)
		}
		s.value, s.samples, s.missing = reduceSeries(c.metric, a.series, ph.start, ph.end)
		out = append(out, s)
	}
	if err := p.writeSummaries(ctx, ph, out); err != nil {
		return err
	}
	p.log.Info("metrics pulled", "code", ph.code, "phase", ph.phase, "attempt", ph.attempt, "metrics", len(out), "samples_stored", stored)
	return nil
}

type queryAnswer struct {
	series []prom.Series
	err    error // its text is the missing reason
}

// query runs a catalog query for the component that sel selects, on the
// grid of each target's scrapes (prom.QueryScrapes): one query_range per
// target, restricted to it by its instance label, which each answer's
// series then carry. When the targets' scrapes cannot be found, it runs on
// the plain grid, whose answer says why. Once Prometheus was found down
// during this pull (down), the remaining queries are not tried: one timeout
// per phase, not one per metric.
func (p *puller) query(ctx context.Context, catalogQuery, sel string, from, to time.Time, down string) queryAnswer {
	if p.promURL == "" {
		return queryAnswer{err: errors.New("no Prometheus configured (BENCHQ_PROMETHEUS_URL is unset)")}
	}
	if down != "" {
		return queryAnswer{err: errors.New(down)}
	}
	qctx, cancel := context.WithTimeout(ctx, p.queryTimeout)
	defer cancel()
	var scrapes map[string]time.Time
	if m := scrapedMetric.FindStringSubmatch(catalogQuery); m != nil {
		var err error
		if scrapes, err = p.client.LastScrapes(qctx, m[1]+"{"+sel+"}", from, to, p.step); err != nil {
			p.log.Debug("scrape times not found: querying on the plain grid", "metric", m[1], "err", err)
		}
	}
	if len(scrapes) == 0 {
		series, err := p.client.QueryRange(qctx, strings.ReplaceAll(catalogQuery, catalog.Selector, sel), from, to, p.step)
		return answer(series, err, p.promURL)
	}
	instances := make([]string, 0, len(scrapes))
	for instance := range scrapes {
		instances = append(instances, instance)
	}
	sort.Strings(instances)
	var all []prom.Series
	for _, instance := range instances {
		at := scrapes[instance]
		q := strings.ReplaceAll(catalogQuery, catalog.Selector, fmt.Sprintf(`%s,instance=%q`, sel, instance))
		series, err := p.client.QueryScrapes(qctx, q, at, from, to, p.step)
		if err != nil {
			return answer(nil, err, p.promURL)
		}
		for _, s := range series {
			if _, ok := s.Labels["instance"]; !ok {
				s.Labels["instance"] = instance // an aggregation dropped it
			}
		}
		all = append(all, series...)
	}
	return answer(all, nil, p.promURL)
}

// scrapedMetric finds the metric a catalog query reads: name{SELECTOR...}.
var scrapedMetric = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{` + catalog.Selector)

// answer turns a query's outcome into figures or a missing reason.
func answer(series []prom.Series, err error, promURL string) queryAnswer {
	switch {
	case err == nil:
		return queryAnswer{series: series}
	case errors.Is(err, prom.ErrNoData):
		return queryAnswer{err: errors.New("no samples: target or exporter not running?")}
	case errors.Is(err, prom.ErrUnreachable) || errors.Is(err, context.DeadlineExceeded):
		// The reason stands for every metric of the phase (see query's
		// down): it names the cause, not the query that met it.
		var qe *prom.QueryError
		if errors.As(err, &qe) {
			err = qe.Err
		}
		return queryAnswer{err: fmt.Errorf("%s%s unreachable: %v", unreachablePrefix, promURL, err)}
	default:
		return queryAnswer{err: fmt.Errorf("the query was rejected by Prometheus: %v", err)}
	}
}

// samplesOf turns a query's answer into rows of the metrics table.
func samplesOf(ph endedPhase, c column, series []prom.Series) []metricSample {
	var out []metricSample
	for _, s := range series {
		for _, smp := range s.Samples {
			if math.IsNaN(smp.V) || math.IsInf(smp.V, 0) {
				continue // PostgreSQL takes them, but a NaN sample is a failed scrape, not data
			}
			out = append(out, metricSample{Time: smp.T, Code: ph.code, Phase: ph.phase, Configuration: ph.configuration,
				Component: c.component, Metric: c.metric.Key, Labels: s.Labels, Value: smp.V})
		}
	}
	return out
}

// reduceSeries reduces each series over exactly [start, end] and combines
// the figures, times the metric's scale. Several series come from several
// targets (query runs per target) or from a query that keeps them apart:
// a max(...) query takes the largest figure, any other adds them, as the
// catalog's sum(...) adds a cluster's nodes.
func reduceSeries(m catalog.Metric, series []prom.Series, start, end time.Time) (value *float64, samples int, missing string) {
	var total float64
	reduced := 0
	largest := strings.HasPrefix(m.Query, "max(")
	for _, s := range series {
		samples += len(s.Samples)
		if v, ok := reduceOne(m.Reduction, s.Samples, start, end); ok {
			switch {
			case reduced == 0 || !largest:
				total += v
			case v > total:
				total = v
			}
			reduced++
		}
	}
	if reduced == 0 {
		return nil, samples, fmt.Sprintf("too few samples in the phase for %s (%d in the window)", m.Reduction, samples)
	}
	v := total * m.Scale
	return &v, samples, ""
}

func reduceOne(reduction string, s []reduce.Sample, start, end time.Time) (float64, bool) {
	switch reduction {
	case catalog.ReduceIncrease:
		return reduce.Increase(s, start, end)
	case catalog.ReduceMax:
		return reduce.Max(s, start, end)
	case catalog.ReduceMean:
		return reduce.Mean(s, start, end)
	case catalog.ReduceRateMean:
		mean, _, ok := reduce.CounterRate(s, start, end)
		return mean, ok
	case catalog.ReduceRateMax:
		_, fastest, ok := reduce.CounterRate(s, start, end)
		return fastest, ok
	case catalog.ReduceLast:
		for i := len(s) - 1; i >= 0; i-- {
			if !s[i].T.After(end) && !s[i].T.Before(start) && !math.IsNaN(s[i].V) {
				return s[i].V, true
			}
		}
	}
	return 0, false
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
