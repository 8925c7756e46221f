package reduce

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// at is t0 plus s seconds.
func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// series makes samples at times ts (seconds) with values vs.
func series(ts []float64, vs ...float64) []Sample {
	out := make([]Sample, len(ts))
	for i := range ts {
		out[i] = Sample{T: at(ts[i]), V: vs[i]}
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// scrapes is a 1 s scrape 0.3 s out of step with the phase, from -0.7 s to
// 6.3 s: a 6-second phase [0, 6] with a sample beyond each edge.
var scrapes = []float64{-0.7, 0.3, 1.3, 2.3, 3.3, 4.3, 5.3, 6.3}

// wide is scrapes with a second sample beyond each edge, as the collector
// fetches them.
var wide = []float64{-1.7, -0.7, 0.3, 1.3, 2.3, 3.3, 4.3, 5.3, 6.3, 7.3}

func TestIncrease(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		s          []Sample
		start, end float64
		want       float64
		ok         bool
	}{
		// Half a CPU all along: 3 CPU seconds in 6 s, to the sample.
		{"steady, edges interpolated", series(scrapes, 10, 10.5, 11, 11.5, 12, 12.5, 13, 13.5), 0, 6, 3, true},
		// Busy only inside the phase: nothing before 0.3 s or after 5.3 s.
		{"short burst", series(scrapes, 10, 10, 11, 12, 13, 14, 15, 15), 0, 6, 5, true},
		// One CPU from 0 to 6 s exactly, idle around: the outer intervals'
		// rates (0) say the edge intervals' work is all inside. Linear
		// interpolation would give 5.58 (-7 %).
		{"work starts and stops with the phase", series(wide, 10, 10, 10.3, 11.3, 12.3, 13.3, 14.3, 15.3, 16, 16), 0, 6, 6, true},
		// Two CPUs before the phase, one in it, none after: 0.3 s of the
		// first edge interval at 2/s leaves 0.7 s inside; the end as above.
		{"busier before the phase", series(wide, 6, 8, 10.3, 11.3, 12.3, 13.3, 14.3, 15.3, 16, 16), 0, 6, 16 - 8 - 2*0.7, true},
		// A burst before the phase (5/s) would claim 3.5 of the first edge
		// interval's 0.5: capped, the phase starts at 5.5; the end steady.
		{"outer rate capped by the edge interval", series(wide, 0, 5, 5.5, 6, 6.5, 7, 7.5, 8, 8.5, 9), 0, 6, 8.5 - 0.5*0.3 - 5.5, true},
		{"reset: the process restarted", series([]float64{0, 1, 2, 3}, 5, 7, 1, 2), 0, 3, 2 + 1 + 1, true},
		{"no sample beyond the edges: no extrapolation", series([]float64{1, 2, 3}, 1, 2, 4), 0, 6, 3, true},
		{"NaN skipped", series([]float64{0, 1, 2}, 1, math.NaN(), 3), 0, 2, 2, true},
		{"one sample", series([]float64{1}, 4), 0, 6, 0, false},
		{"outside the window", series([]float64{7, 8}, 1, 2), 0, 6, 0, false},
		{"empty", nil, 0, 6, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Increase(tc.s, at(tc.start), at(tc.end))
			if ok != tc.ok || !near(got, tc.want) {
				t.Errorf("Increase = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestMaxMean(t *testing.T) {
	t.Parallel()
	s := series([]float64{-1, 0, 1, 2, 3, 4}, 100, 1, 5, math.NaN(), 3, 50)
	if got, ok := Max(s, at(0), at(3)); !ok || got != 5 {
		t.Errorf("Max = %v, %v; want 5 (samples outside the window ignored)", got, ok)
	}
	if got, ok := Mean(s, at(0), at(3)); !ok || !near(got, 3) {
		t.Errorf("Mean = %v, %v; want 3", got, ok)
	}
	if _, ok := Max(s, at(10), at(20)); ok {
		t.Error("Max of an empty window")
	}
	if _, ok := Mean(nil, at(0), at(1)); ok {
		t.Error("Mean of nothing")
	}
}

func TestCounterRate(t *testing.T) {
	t.Parallel()
	// 100 ops/s, then 300 ops/s for one second.
	s := series([]float64{-0.5, 0.5, 1.5, 2.5, 3.5}, 0, 100, 400, 500, 600)
	mean, fastest, ok := CounterRate(s, at(0), at(3))
	// Increase over [0, 3]: 50 + 300 + 100 + 50 = 500.
	if !ok || !near(mean, 500.0/3) || !near(fastest, 300) {
		t.Errorf("CounterRate = %v, %v, %v; want %v, 300", mean, fastest, ok, 500.0/3)
	}
	if _, _, ok := CounterRate(s[:1], at(0), at(3)); ok {
		t.Error("rate from one sample")
	}
}

// A counter summed over several series (a process tree's CPU) can come out
// a few units in the last place lower than the sample before: rounding,
// not a reset. Counted as a reset it added the whole counter — 5.6 CPU
// seconds too many on a PgBouncer loading phase of 4.
func TestIncreaseTakesRoundingForNoReset(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	s := []Sample{{t0, 0.22}, {t0.Add(time.Second), 1.8}, {t0.Add(2 * time.Second), 1.7999999999999998},
		{t0.Add(3 * time.Second), 3.7700000000000005}, {t0.Add(4 * time.Second), 3.7699999999999996}, {t0.Add(5 * time.Second), 4.2}}
	inc, ok := Increase(s, t0, t0.Add(5*time.Second))
	if !ok || math.Abs(inc-3.98) > 1e-9 {
		t.Errorf("increase %v (%v), want 3.98", inc, ok)
	}
	// A real reset still counts the later value whole.
	s[3].V, s[4].V, s[5].V = 0.5, 0.5, 0.9
	if inc, _ := Increase(s, t0, t0.Add(5*time.Second)); math.Abs(inc-(1.58+0.9)) > 1e-9 {
		t.Errorf("increase across a reset %v, want 2.48", inc)
	}
}

// The fastest rate of counters added up is that of their sum: two
// processes at one core each, one after the other, make one core, not two;
// at once, two. A gap in the samples is one interval at its mean rate, so
// the fastest is never below the mean.
func TestFastestSummedRate(t *testing.T) {
	t.Parallel()
	ts := []float64{-1, 0, 1, 2, 3, 4, 5}
	first := series(ts, 0, 0, 1, 2, 2, 2, 2)  // 1 core in [0, 2]
	second := series(ts, 0, 0, 0, 0, 1, 2, 2) // 1 core in [2, 4]
	if got, ok := FastestSummedRate([][]Sample{first, second}, at(0), at(5)); !ok || !near(got, 1) {
		t.Errorf("one after the other: %v, %v; want 1", got, ok)
	}
	together := series(ts, 0, 0, 1, 2, 2, 2, 2)
	if got, _ := FastestSummedRate([][]Sample{first, together}, at(0), at(5)); !near(got, 2) {
		t.Errorf("at once: %v, want 2", got)
	}
	// Out of step by half a second: the sum of the two 1-core steps is 2
	// where they overlap ([0.5, 2]), 1 at either end.
	shifted := series([]float64{-0.5, 0.5, 1.5, 2.5, 3.5}, 0, 0.5, 1.5, 2, 2)
	if got, _ := FastestSummedRate([][]Sample{first, shifted}, at(0), at(5)); !near(got, 2) {
		t.Errorf("out of step: %v, want 2", got)
	}
	// One series: CounterRate's fastest.
	_, want, _ := CounterRate(first, at(0), at(5))
	if got, _ := FastestSummedRate([][]Sample{first}, at(0), at(5)); !near(got, want) {
		t.Errorf("one series: %v, want CounterRate's %v", got, want)
	}
	// Scrapes stopped at 1 s; a read at 10 s: the gap is one interval at
	// its mean rate (4.5 CPU seconds over 9 s).
	gap := series([]float64{-1, 0, 1, 10}, 0, 0, 0.05, 4.55)
	if got, _ := FastestSummedRate([][]Sample{gap, series(ts, 0, 0, 0, 0, 0, 0, 0)}, at(0), at(10)); !near(got, 0.5) {
		t.Errorf("across a gap: %v, want 0.5", got)
	}
	if _, ok := FastestSummedRate([][]Sample{first[:1]}, at(0), at(5)); ok {
		t.Error("a rate from one sample")
	}
}

// A counter that counts in steps (CPU seconds in 10 ms ticks) read twice
// 4 ms apart, an edge read beside a scrape: one tick between them is not
// 2.5 cores. The fastest rate is over intervals of at least minRateSpan,
// and no growth is lost by skipping points, a reset among them included;
// a real burst of a few tenths of a second still shows.
func TestFastestRateIsOverATenthOfASecondAtLeast(t *testing.T) {
	t.Parallel()
	// 0.3 cores, in ticks of 0.01: reads each second, and two 4 ms apart at
	// 2 s (the second a tick higher).
	s := series([]float64{-1, 0, 1, 2, 2.004, 3, 4, 5}, 0, 0.3, 0.6, 0.9, 0.91, 1.2, 1.5, 1.8)
	mean, fastest, ok := CounterRate(s, at(0), at(5))
	if !ok || !near(mean, 0.3) || fastest > 0.31+1e-9 {
		t.Errorf("CounterRate = %v, %v, %v; want a mean of 0.3 and a fastest of at most 0.31", mean, fastest, ok)
	}
	if got, _ := FastestSummedRate([][]Sample{s, s}, at(0), at(5)); got > 0.62+1e-9 {
		t.Errorf("FastestSummedRate of two = %v, want at most 0.62", got)
	}
	// A reset between skipped points loses nothing: 0.9 at 2 s, the
	// process restarted, 0.01 at 2.004 s, 0.3 at 3 s: 0.31 in that second.
	r := series([]float64{-1, 0, 1, 2, 2.004, 3, 4, 5}, 0, 0.3, 0.6, 0.9, 0.01, 0.31, 0.61, 0.91)
	if inc, _ := Increase(r, at(0), at(5)); !near(inc, 1.51) {
		t.Fatalf("increase across the reset %v, want 1.51", inc)
	}
	if mean, fastest, _ := CounterRate(r, at(0), at(5)); !near(mean, 1.51/5) || fastest < 0.3-1e-9 || fastest > 0.31+1e-9 {
		t.Errorf("across a reset: mean %v, fastest %v; want %v and 0.3-0.31", mean, fastest, 1.51/5)
	}
	// A window shorter than the span: one interval, its mean.
	if mean, fastest, _ := CounterRate(s, at(2), at(2.05)); !near(mean, fastest) {
		t.Errorf("a 50 ms window: mean %v, fastest %v; want them equal", mean, fastest)
	}
	// 2 cores for 0.3 s, then 0.5 for 0.9 s: the burst is the fastest.
	burst := series([]float64{-1, 0, 0.3, 1.2, 2.2}, 0, 0, 0.6, 1.05, 1.55)
	if _, fastest, _ := CounterRate(burst, at(0), at(1.2)); !near(fastest, 2) {
		t.Errorf("a 0.3 s burst at 2 cores: fastest %v, want 2", fastest)
	}
}
