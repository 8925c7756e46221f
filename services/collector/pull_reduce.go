package main

// What a pull keeps of an answer: the raw samples, and each series reduced
// to the phase's figure (internal/reduce).

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/internal/prom"
	"github.com/benchq/benchq/internal/reduce"
)

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
//
// The fastest rate of several series added up (rate_max, summed) is that
// of their sum, instant by instant (reduce.FastestSummedRate), not the sum
// of each one's fastest.
//
// A series that ran in the phase (see ranIn) but has too few samples in
// it to reduce makes the whole figure missing: the others' sum, or their
// largest, would be a figure of part of the component shown as all of it.
// A series that did not run in the phase (a process that ended before it,
// or began after it) is not part of its figure.
func reduceSeries(m catalog.Metric, series []prom.Series, start, end time.Time) (value *float64, samples int, missing string) {
	all := make([][]reduce.Sample, len(series))
	for i, s := range series {
		samples += len(s.Samples)
		all[i] = s.Samples
	}
	if m.Reduction == catalog.ReduceRateMax && m.Aggregate != catalog.AggregateMax && len(series) > 1 {
		for i, s := range series {
			if _, ok := reduce.Increase(s.Samples, start, end); !ok && ranIn(s.Samples, start, end) {
				return nil, samples, partOf(m, series, i, start, end)
			}
		}
		v, ok := reduce.FastestSummedRate(all, start, end)
		if !ok {
			return nil, samples, tooFew(m, all, start, end)
		}
		v *= m.Scale
		return &v, samples, ""
	}
	var total float64
	reduced := 0
	largest := m.Aggregate == catalog.AggregateMax
	for i, s := range series {
		v, ok := reduceOne(m.Reduction, s.Samples, start, end)
		switch {
		case !ok && ranIn(s.Samples, start, end) && len(series) > 1:
			return nil, samples, partOf(m, series, i, start, end)
		case !ok:
			continue
		case reduced == 0 || !largest:
			total += v
		case v > total:
			total = v
		}
		reduced++
	}
	if reduced == 0 {
		return nil, samples, tooFew(m, all, start, end)
	}
	v := total * m.Scale
	return &v, samples, ""
}

// ranIn: the series has a sample at or before end and one at or after
// start, so what it measures was there during [start, end].
func ranIn(s []reduce.Sample, start, end time.Time) bool {
	before, after := false, false
	for _, p := range s {
		if math.IsNaN(p.V) {
			continue
		}
		before = before || !p.T.After(end)
		after = after || !p.T.Before(start)
	}
	return before && after
}

// partOf is why a figure of several series is missing: series[i] ran in
// the phase but had too few samples in it.
func partOf(m catalog.Metric, series []prom.Series, i int, start, end time.Time) string {
	combined := "sum"
	if m.Aggregate == catalog.AggregateMax {
		combined = "largest"
	}
	return fmt.Sprintf("%s, in one of the figure's %d series (%s): the %s of the others would be a figure of part of the component",
		tooFew(m, [][]reduce.Sample{series[i].Samples}, start, end), len(series), labelsOf(series[i].Labels), combined)
}

// labelsOf names a series by its labels, in name order.
func labelsOf(l map[string]string) string {
	parts := make([]string, 0, len(l))
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+strconv.Quote(l[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// tooFew is why a metric has no figure: its series had too few samples in
// the phase's window (fetched: all of them, the window widened).
func tooFew(m catalog.Metric, series [][]reduce.Sample, start, end time.Time) string {
	in, fetched := 0, 0
	for _, s := range series {
		fetched += len(s)
		for _, p := range s {
			if !p.T.Before(start) && !p.T.After(end) && !math.IsNaN(p.V) {
				in++
			}
		}
	}
	return fmt.Sprintf("too few samples in the phase for %s (%d of the %d fetched in its %s window)", m.Reduction, in, fetched, end.Sub(start).Round(time.Millisecond))
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
