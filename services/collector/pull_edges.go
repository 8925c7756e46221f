package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/prom"
	"github.com/benchq/benchq/internal/reduce"
)

// cpuSeries is the counter whose reads the deployer publishes at a phase's
// edges (contracts.SUTCPU): procmetrics' container_cpu_usage_seconds_total.
const cpuSeries = "container_cpu_usage_seconds_total"

// edgeSamples are the reads of ph's SUT CPU counters the deployer made at
// the phase's edges, by component (sut, pool), and the edges read (start,
// end); none when it made none (a Kubernetes SUT, a deployer down at the
// time: the edges are then estimated from the scrapes).
func (p *puller) edgeSamples(ctx context.Context, ph endedPhase) (map[string][]reduce.Sample, []string, error) {
	rows, err := p.db.Query(ctx, `SELECT payload FROM messages WHERE code = $1 AND subject = $2`,
		ph.code, contracts.TopicSUTCPU.For(ph.code))
	if err != nil {
		return nil, nil, fmt.Errorf("edge reads of %s: %w", ph.phase, err)
	}
	defer rows.Close()
	out := map[string][]reduce.Sample{}
	var read []string
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, nil, err
		}
		var m contracts.SUTCPU
		if err := json.Unmarshal(raw, &m); err != nil || m.Phase != ph.phase || m.Attempt != max(ph.attempt, 1) {
			continue
		}
		read = append(read, m.Edge)
		for _, s := range m.Samples {
			for component, v := range s.CPU {
				out[component] = append(out[component], reduce.Sample{T: s.At, V: v})
			}
		}
	}
	slices.Sort(read)
	return out, read, rows.Err()
}

// withEdges adds the edge reads of c's component to the series Prometheus
// answered for c, when c is the CPU counter's increase (CPU seconds) and
// the answer is one series — the deployer's, whose counter the reads
// sample. The reads and the scrapes then make one series in time order.
func withEdges(c column, series []prom.Series, edges map[string][]reduce.Sample) []prom.Series {
	reads := edges[c.component]
	if len(reads) == 0 || len(series) != 1 || c.metric.Series != cpuSeries || c.metric.Reduction != catalog.ReduceIncrease {
		return series
	}
	merged := append(slices.Clone(series[0].Samples), reads...)
	slices.SortStableFunc(merged, func(a, b reduce.Sample) int { return a.T.Compare(b.T) })
	merged = slices.CompactFunc(merged, func(a, b reduce.Sample) bool { return a.T.Equal(b.T) })
	return []prom.Series{{Labels: series[0].Labels, Samples: merged}}
}
