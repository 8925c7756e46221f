package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/prom"
	"github.com/benchq/benchq/internal/reduce"
)

// readScrapeGap: a scrape this close to a read gives way to it (merge).
const readScrapeGap = 250 * time.Millisecond

// cpuSeries is the counter whose reads the deployer publishes at a phase's
// edges (contracts.SUTEdge): procmetrics' container_cpu_usage_seconds_total.
const cpuSeries = "container_cpu_usage_seconds_total"

// edgeReads are the deployer's reads of a phase's SUT at its edges
// (contracts.SUTEdge), by the series they sample.
type edgeReads struct {
	cpu   map[string][]reduce.Sample // component (sut, pool) → its CPU counter
	app   map[appSeries][]reduce.Sample
	edges []string // the edges read: start, end
	// driverCPU is each agent's reads of its shard's driver tree at the
	// phase's edges (final.driver_cpu), by agent (the pod label of the
	// series it exports; an agent runs one shard at a time).
	driverCPU map[string][]reduce.Sample
	// step is the scrape interval. Max CPU's scrapes give way to a read
	// within one step of it, not only within readScrapeGap: a scrape is
	// dated before it reads, and over the short interval to a read that
	// skew would make a rate, and the fastest rate picks it out.
	step time.Duration
}

// appSeries is one application metric of one exporter.
type appSeries struct{ component, metric, instance string }

// edgeReadsOf loads ph's edge reads; none when the deployer made none (a
// Kubernetes SUT, a deployer down at the time): the edges are then
// estimated from the scrapes.
func (p *puller) edgeReadsOf(ctx context.Context, ph endedPhase) (edgeReads, error) {
	out := edgeReads{cpu: map[string][]reduce.Sample{}, app: map[appSeries][]reduce.Sample{}, step: p.step}
	rows, err := p.db.Query(ctx, `SELECT payload FROM messages WHERE code = $1 AND subject = $2 AND payload->>'phase' = $3`,
		ph.code, contracts.TopicSUTEdge.For(ph.code), ph.phase)
	if err != nil {
		return out, fmt.Errorf("edge reads of %s: %w", ph.phase, err)
	}
	defer rows.Close()
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return out, err
		}
		var m contracts.SUTEdge
		if err := json.Unmarshal(raw, &m); err != nil || m.Phase != ph.phase || m.Attempt != max(ph.attempt, 1) {
			continue
		}
		out.edges = append(out.edges, m.Edge)
		for _, r := range m.Reads {
			for component, v := range r.CPU {
				out.cpu[component] = append(out.cpu[component], reduce.Sample{T: r.At, V: v})
			}
			for _, e := range r.Exporters {
				for metric, v := range e.Values {
					k := appSeries{e.Component, metric, e.Instance}
					out.app[k] = append(out.app[k], reduce.Sample{T: r.At, V: v})
				}
			}
		}
	}
	slices.Sort(out.edges)
	if err := rows.Err(); err != nil {
		return out, err
	}
	out.driverCPU, err = p.driverReadsOf(ctx, ph)
	return out, err
}

// driverReadsOf loads the driver CPU reads of ph's counted finals (the
// shard's holder's: shard_results names its message).
func (p *puller) driverReadsOf(ctx context.Context, ph endedPhase) (map[string][]reduce.Sample, error) {
	rows, err := p.db.Query(ctx, `SELECT m.payload FROM shard_results r JOIN messages m ON m.id = r.message_id
		WHERE r.code = $1 AND r.phase = $2 AND r.attempt = $3`, ph.code, ph.phase, max(ph.attempt, 1))
	if err != nil {
		return nil, fmt.Errorf("driver reads of %s: %w", ph.phase, err)
	}
	defer rows.Close()
	out := map[string][]reduce.Sample{}
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, err
		}
		var f contracts.Final
		if err := json.Unmarshal(raw, &f); err != nil || len(f.DriverCPU) == 0 {
			continue
		}
		for _, r := range f.DriverCPU {
			out[f.Agent] = append(out[f.Agent], reduce.Sample{T: r.At, V: r.Seconds})
		}
	}
	return out, rows.Err()
}

// withEdges adds the edge reads of column c to the series Prometheus
// answered for it (series; none when it had no samples):
//   - the CPU counter's increase (CPU seconds) and fastest rate (Max CPU)
//     of the sut or the pool,
//     when the answer is one series, the deployer's, whose counter the
//     reads sample;
//   - that of the loaders or benchmarkers, each agent's reads
//     (final.driver_cpu) to the series of its pod;
//   - an application metric, each exporter's reads to the series of its
//     instance, or as a series of their own when Prometheus had not
//     scraped that exporter in the window (a short phase on a new SUT).
//
// Reads and scrapes then make one series in time order.
func withEdges(c column, series []prom.Series, e edgeReads) []prom.Series {
	gap := readScrapeGap
	if c.metric.Reduction == catalog.ReduceRateMax {
		gap = max(gap, e.step)
	}
	merge := func(s prom.Series, reads []reduce.Sample) prom.Series {
		// A scrape is dated when it starts and reads the counter a little
		// later: one dated just before a read may hold a later value, and
		// in time order that drop would pass for a reset. Near a read, the
		// read stands (it is dated when it read).
		merged := slices.DeleteFunc(slices.Clone(s.Samples), func(p reduce.Sample) bool {
			return slices.ContainsFunc(reads, func(r reduce.Sample) bool { return p.T.Sub(r.T).Abs() < gap })
		})
		merged = append(merged, reads...)
		slices.SortStableFunc(merged, func(a, b reduce.Sample) int { return a.T.Compare(b.T) })
		merged = slices.CompactFunc(merged, func(a, b reduce.Sample) bool { return a.T.Equal(b.T) })
		return prom.Series{Labels: s.Labels, Samples: merged}
	}
	// The CPU counter's reads serve its increase (CPU seconds) and its
	// fastest rate (Max CPU) alike: without them a phase whose scrapes
	// stopped (a machine too busy to serve them) kept only the rates of
	// the scrapes it had, a Max CPU below the phase's mean.
	isCPU := c.metric.Series == cpuSeries && (c.metric.Reduction == catalog.ReduceIncrease || c.metric.Reduction == catalog.ReduceRateMax)
	switch {
	case c.section == "system" && isCPU && (c.component == "loader" || c.component == "benchmarker"):
		// Each agent's series (its pod label) with its own reads; an agent
		// Prometheus did not scrape in the phase, by its reads alone. A
		// series without its pod could be any agent's: left as it is.
		if len(e.driverCPU) == 0 || slices.ContainsFunc(series, func(s prom.Series) bool { return s.Labels["pod"] == "" }) {
			return series
		}
		out := slices.Clone(series)
		for _, agent := range slices.Sorted(maps.Keys(e.driverCPU)) {
			at := slices.IndexFunc(out, func(s prom.Series) bool { return s.Labels["pod"] == agent })
			if at < 0 {
				out = append(out, merge(prom.Series{Labels: map[string]string{"pod": agent}}, e.driverCPU[agent]))
				continue
			}
			out[at] = merge(out[at], e.driverCPU[agent])
		}
		return out
	case c.section == "system":
		reads := e.cpu[c.component]
		if len(reads) == 0 || len(series) != 1 || !isCPU {
			return series
		}
		return []prom.Series{merge(series[0], reads)}
	case c.section == "application":
		if slices.ContainsFunc(series, func(s prom.Series) bool { return s.Labels["instance"] == "" }) {
			return series // an aggregate over the exporters (the plain grid): reads would count twice
		}
		out := slices.Clone(series)
		for _, k := range slices.SortedFunc(maps.Keys(e.app), func(a, b appSeries) int { return cmp.Compare(a.instance, b.instance) }) {
			if k.component != c.component || k.metric != c.metric.Key {
				continue
			}
			at := slices.IndexFunc(out, func(s prom.Series) bool { return s.Labels["instance"] == k.instance })
			if at < 0 {
				out = append(out, merge(prom.Series{Labels: map[string]string{"instance": k.instance}}, e.app[k]))
				continue
			}
			out[at] = merge(out[at], e.app[k])
		}
		return out
	}
	return series
}
