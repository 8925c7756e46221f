// Package reduce turns a metric's raw samples over a phase's window into
// the figures of a summary: a counter's increase, a gauge's maximum, a
// rate's mean and maximum. It works on the samples themselves rather than on
// PromQL's irate or increase, whose extrapolation and look-back make short
// phases read as 0: with a 1 s scrape, a 6-second phase gets its true CPU
// seconds here.
//
// Samples are in time order; NaN samples (a stale or failed scrape) are
// skipped.
package reduce

import (
	"math"
	"slices"
	"time"
)

// Sample is one point of a series.
type Sample struct {
	T time.Time
	V float64
}

// Increase is how much a counter grew over [start, end]. Its value at each
// edge is estimated from the samples around it (see edge; the caller should
// fetch two scrape intervals beyond each edge); where there is no sample
// beyond an edge, the sample nearest to it inside the window stands in,
// without extrapolation. A drop between two samples is a reset (the process
// restarted): the counter counted again from 0, so the later value is all
// increase — unless it is rounding (isReset). ok is false when the window
// holds less than two usable points.
func Increase(s []Sample, start, end time.Time) (inc float64, ok bool) {
	pts, ok := span(s, start, end)
	if !ok {
		return 0, false
	}
	cum := growth(pts)
	return cum[len(cum)-1].V, true
}

// span is the counter's points from start to end: the edges (see edge) and
// the samples between them.
func span(s []Sample, start, end time.Time) ([]Sample, bool) {
	s = valid(s)
	first, ok1 := edge(s, start, true)
	last, ok2 := edge(s, end, false)
	if !ok1 || !ok2 || !last.T.After(first.T) {
		return nil, false
	}
	pts := []Sample{first}
	for _, p := range s {
		if p.T.After(first.T) && p.T.Before(last.T) {
			pts = append(pts, p)
		}
	}
	return append(pts, last), true
}

func delta(from, to float64) float64 {
	switch {
	case isReset(from, to):
		return to // reset: counted again from 0
	case to < from:
		return 0 // rounding
	}
	return to - from
}

// isReset tells a counter's reset from the rounding of a sum: a counter
// summed over several series (a process tree's CPU over its processes, a
// query's sum over targets) can come out a few units in the last place
// lower at one sample than at the one before, as the terms are added in
// another order — counted as a reset, that made the whole counter, seconds
// of CPU, an increase. A drop of less than a part in 10^9 is rounding.
func isReset(from, to float64) bool {
	return to < from && from-to > 1e-9*math.Max(1, math.Abs(from))
}

// edge returns the counter's point at t, between the samples a and b either
// side of it. The counter is taken to go on outside the window at the rate
// it had there: from a at the rate of the interval before a (for the start),
// back from b at the rate of the interval after b (for the end), whatever of
// a..b that leaves falling inside. Work that starts or stops with the phase
// (the common case: a SUT idle before its loaders start) is then counted
// whole, where plain linear interpolation between a and b would give half of
// the edge intervals' work to outside the window — about 10 % of a 10-second
// phase at a 1 s scrape. A steady counter comes out as linear interpolation.
// Without the outer interval (or across a reset) a and b are interpolated
// linearly; when t lies beyond the samples (or a reset falls between a and
// b), the sample nearest t on the window's side stands in.
func edge(s []Sample, t time.Time, isStart bool) (Sample, bool) {
	i := 0 // first sample at or after t
	for i < len(s) && s[i].T.Before(t) {
		i++
	}
	if i < len(s) && s[i].T.Equal(t) {
		return s[i], true
	}
	hasBefore, hasAfter := i > 0, i < len(s)
	if hasBefore && hasAfter && !isReset(s[i-1].V, s[i].V) {
		a, b := s[i-1], s[i]
		switch {
		case isStart && i >= 2 && !isReset(s[i-2].V, a.V):
			v := a.V + rate(s[i-2], a)*t.Sub(a.T).Seconds()
			return Sample{T: t, V: math.Min(v, b.V)}, true
		case !isStart && i+1 < len(s) && !isReset(b.V, s[i+1].V):
			v := b.V - rate(b, s[i+1])*b.T.Sub(t).Seconds()
			return Sample{T: t, V: math.Max(v, a.V)}, true
		}
		f := float64(t.Sub(a.T)) / float64(b.T.Sub(a.T))
		return Sample{T: t, V: a.V + f*(b.V-a.V)}, true
	}
	if isStart && hasAfter {
		return s[i], true
	}
	if !isStart && hasBefore {
		return s[i-1], true
	}
	return Sample{}, false
}

// rate is the counter's growth per second from p to q (no reset between).
func rate(p, q Sample) float64 { return (q.V - p.V) / q.T.Sub(p.T).Seconds() }

// Max is a gauge's largest sample in [start, end]; ok is false when there
// is none.
func Max(s []Sample, start, end time.Time) (largest float64, ok bool) {
	for _, p := range within(valid(s), start, end) {
		if !ok || p.V > largest {
			largest, ok = p.V, true
		}
	}
	return largest, ok
}

// Mean is the mean of the samples in [start, end] of a series sampled on a
// regular grid (a query_range answer), such as a rate PromQL computed; ok is
// false when there is none.
func Mean(s []Sample, start, end time.Time) (mean float64, ok bool) {
	in := within(valid(s), start, end)
	if len(in) == 0 {
		return 0, false
	}
	for _, p := range in {
		mean += p.V
	}
	return mean / float64(len(in)), true
}

// CounterRate is a counter's rate per second over [start, end]: mean is the
// increase (see Increase) per second of the span its points cover (the
// window, when there are samples beyond both edges), fastest the fastest rate
// between two consecutive points (the edges included; resets handled as in
// Increase) at least minRateSpan apart. ok is false when the window holds
// less than two usable points.
func CounterRate(s []Sample, start, end time.Time) (mean, fastest float64, ok bool) {
	pts, ok := span(s, start, end)
	if !ok {
		return 0, 0, false
	}
	cum := growth(pts)
	steps := rateSteps(cum)
	for i := 1; i < len(steps); i++ {
		if r := (steps[i].V - steps[i-1].V) / steps[i].T.Sub(steps[i-1].T).Seconds(); r > fastest {
			fastest = r
		}
	}
	return cum[len(cum)-1].V / pts[len(pts)-1].T.Sub(pts[0].T).Seconds(), fastest, true
}

// minRateSpan is the shortest interval a fastest rate is taken over.
// Counters count in steps (CPU seconds in 10 ms clock ticks), so a rate
// over a few milliseconds, such as an edge read beside a scrape, is mostly
// that step: one tick in 4 ms read as 2.5 cores on a 2-core machine. Over
// 0.1 s a tick is 0.1 core, and a real burst of a few tenths of a second
// (a short phase, a 250 ms scrape) still shows.
const minRateSpan = 100 * time.Millisecond

// growth is a counter's points as its growth since the first (resets and
// rounding as in delta), so that points can be skipped without losing any
// of it.
func growth(pts []Sample) []Sample {
	out := make([]Sample, len(pts))
	out[0] = Sample{pts[0].T, 0}
	for i := 1; i < len(pts); i++ {
		out[i] = Sample{pts[i].T, out[i-1].V + delta(pts[i-1].V, pts[i].V)}
	}
	return out
}

// rateSteps thins growth points (see growth) so that consecutive ones are at
// least minRateSpan apart. The first and the last stay (the last replacing
// the one before it when that one is nearer), so a span shorter than
// minRateSpan is one interval: its mean.
func rateSteps(cum []Sample) []Sample {
	out := []Sample{cum[0]}
	for _, p := range cum[1:] {
		if p.T.Sub(out[len(out)-1].T) >= minRateSpan {
			out = append(out, p)
		}
	}
	if last := cum[len(cum)-1]; !out[len(out)-1].T.Equal(last.T) {
		if len(out) > 1 {
			out[len(out)-1] = last
		} else {
			out = append(out, last)
		}
	}
	return out
}

// FastestSummedRate is the fastest rate of several counters added up (the
// processes or pods of one component): each counter's rate is taken as
// constant between its consecutive points (the edges included, at least
// minRateSpan apart, as in CounterRate), the rates are added instant by instant, and the largest sum
// over [start, end] is returned. Adding each counter's own fastest rate
// instead adds peaks that came at different times: a component of 16
// processes read as using more cores than the machine has. A counter
// counts only where it has points on both sides. ok is false when no
// counter has two usable points.
func FastestSummedRate(series [][]Sample, start, end time.Time) (fastest float64, ok bool) {
	// Each interval adds its rate from its start and takes it away at its
	// end; a sweep over these changes in time order finds the largest sum
	// (O(n log n) in the points).
	type change struct {
		at   time.Time
		rate float64
	}
	var changes []change
	for _, s := range series {
		pts, usable := span(s, start, end)
		if !usable {
			continue
		}
		ok = true
		steps := rateSteps(growth(pts))
		for i := 1; i < len(steps); i++ {
			if dt := steps[i].T.Sub(steps[i-1].T).Seconds(); dt > 0 {
				r := (steps[i].V - steps[i-1].V) / dt
				changes = append(changes, change{steps[i-1].T, r}, change{steps[i].T, -r})
			}
		}
	}
	slices.SortFunc(changes, func(a, b change) int { return a.at.Compare(b.at) })
	sum := 0.0
	for i := 0; i < len(changes); {
		at := changes[i].at
		for i < len(changes) && changes[i].at.Equal(at) {
			sum += changes[i].rate
			i++
		}
		if i < len(changes) { // a stretch of time follows, at this sum
			fastest = max(fastest, sum)
		}
	}
	return fastest, ok
}

func valid(s []Sample) []Sample {
	for _, p := range s {
		if math.IsNaN(p.V) {
			out := make([]Sample, 0, len(s))
			for _, q := range s {
				if !math.IsNaN(q.V) {
					out = append(out, q)
				}
			}
			return out
		}
	}
	return s
}

func within(s []Sample, start, end time.Time) []Sample {
	i := 0
	for i < len(s) && s[i].T.Before(start) {
		i++
	}
	j := i
	for j < len(s) && !s[j].T.After(end) {
		j++
	}
	return s[i:j]
}
