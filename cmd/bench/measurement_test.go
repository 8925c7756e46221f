package main

import (
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
)

func TestScheduleIsABBAStartingWithTheAgent(t *testing.T) {
	t.Parallel()
	got := schedule(3)
	want := []way{agent, bare, bare, agent, agent, bare}
	if !slices.Equal(got, want) {
		t.Errorf("schedule(3) = %v, want %v", got, want)
	}
	if n := len(schedule(5)); n != 10 {
		t.Errorf("schedule(5) has %d runs, want 10", n)
	}
}

func TestMedian(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   []float64
		want float64
	}{{[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}, {[]float64{7}, 7}} {
		in := slices.Clone(c.in)
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %g, want %g", c.in, got, c.want)
		}
		if !slices.Equal(in, c.in) {
			t.Errorf("median reordered its input")
		}
	}
	if !math.IsNaN(median(nil)) {
		t.Error("median(nil) is not NaN")
	}
}

func run(round int, w way, cpu, jvm float64) measurement {
	return measurement{Round: round, Way: w, Ops: 500_000, CPU: secsOf(cpu), JVM: secsOf(jvm), JVMSystem: secsOf(jvm * 0.6), Wall: 12 * time.Second, Throughput: 40_000}
}

func secsOf(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func TestSummarizeAndOverhead(t *testing.T) {
	t.Parallel()
	ms := []measurement{
		run(1, agent, 10.6, 10.5), run(1, bare, 10.0, 10.0),
		run(2, bare, 11.0, 11.0), run(2, agent, 11.0, 10.9),
		run(3, agent, 10.3, 10.2), run(3, bare, 9.5, 9.5),
	}
	a, b := summarize(ms, bare), summarize(ms, agent)
	if a.Runs != 3 || b.Runs != 3 {
		t.Fatalf("runs %d, %d", a.Runs, b.Runs)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %g, want %g", what, got, want)
		}
	}
	near("a.PerMillion", a.PerMillion, 20)   // 10.0 s / 0.5 M
	near("b.PerMillion", b.PerMillion, 21.2) // 10.6 s / 0.5 M
	near("b.AgentSelf", b.AgentSelf, 0.1)
	near("a.AgentSelf", a.AgentSelf, 0)
	near("a.Spread", a.Spread, (22-19)/20.0*100)
	near("overhead", overhead(b.PerMillion, a.PerMillion), 6)
	p := pairedOverheads(ms)
	if len(p) != 3 {
		t.Fatalf("paired = %v", p)
	}
	near("round 1", p[0], 6)
	near("round 2", p[1], 0)
	near("round 3", p[2], (10.3/9.5-1)*100)
}

func TestPairedOverheadsSkipsIncompleteRounds(t *testing.T) {
	t.Parallel()
	if p := pairedOverheads([]measurement{run(1, agent, 10, 10)}); len(p) != 0 {
		t.Errorf("paired = %v", p)
	}
}

func TestMedianBounds(t *testing.T) {
	t.Parallel()
	lo, hi, conf := medianBounds([]float64{3, -5, 9, 1, 2})
	if lo != -5 || hi != 9 || conf != 0.9375 {
		t.Errorf("got %g, %g, %g", lo, hi, conf)
	}
	if _, _, conf := medianBounds([]float64{1}); conf != 0 {
		t.Errorf("one round: confidence %g", conf)
	}
}

// The 95 % interval of a mean, by hand: 1, 2, 3, 4, 5 have mean 3, sample
// standard deviation √2.5, so ±2.776·√2.5/√5 = ±1.963.
func TestMeanInterval(t *testing.T) {
	t.Parallel()
	mean, half := meanInterval([]float64{1, 2, 3, 4, 5})
	if mean != 3 || math.Abs(half-2.776*math.Sqrt(2.5)/math.Sqrt(5)) > 1e-9 {
		t.Errorf("meanInterval(1..5) = %g ± %g, want 3 ± 1.963", mean, half)
	}
	if _, half := meanInterval([]float64{7}); !math.IsInf(half, 1) {
		t.Errorf("one value: ± %g, want +Inf (no interval)", half)
	}
	big := make([]float64, 40)
	for i := range big {
		big[i] = float64(i % 2) // mean 0.5, s = √(10/39)
	}
	if _, half := meanInterval(big); math.Abs(half-2.0227*math.Sqrt(10.0/39)/math.Sqrt(40)) > 1e-4 {
		t.Errorf("40 values: ± %g, want t(0.975, 39) = 2.0227", half)
	}
	// Beyond the table, the expansion against exact quantiles.
	for df, want := range map[int]float64{31: 2.0395, 39: 2.0227, 60: 2.0003, 120: 1.9799, 1000: 1.9623} {
		if got := t975(df); math.Abs(got-want) > 0.001 {
			t.Errorf("t975(%d) = %.4f, want %.4f", df, got, want)
		}
	}
}

// The table is the reporter's, value for value (one rule, two languages).
func TestT975IsTheReporters(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../services/reporter/src/benchq_reporter/summary/repetitions.py")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)T975 = \[(.*?)\]`).FindSubmatch(b)
	if m == nil {
		t.Fatal("no T975 in repetitions.py")
	}
	var py []float64
	for _, f := range strings.FieldsFunc(string(m[1]), func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatal(err)
		}
		py = append(py, v)
	}
	if !slices.Equal(py, t975Table[:]) {
		t.Errorf("t975 %v, the reporter's %v", t975Table, py)
	}
}

// Rounds are added while the interval is wider than asked, up to
// -max-runs, and only while another round fits in the time left.
func TestMoreRounds(t *testing.T) {
	t.Parallel()
	wide, narrow := []float64{-8, 9, 1, 12, -3}, []float64{1.0, 1.5, 0.5, 1.2, 0.8}
	for _, c := range []struct {
		p       []float64
		resolve float64
		rounds  int
		left    time.Duration
		more    bool
		why     string
	}{
		{wide, 2, 5, time.Hour, true, ""},
		{narrow, 2, 5, time.Hour, false, "resolved to ±2 % after 5 rounds"},
		{wide, 2, 40, time.Hour, false, "-max-runs 40 reached"},
		{wide, 2, 5, 50 * time.Second, false, "would not fit"},
		{wide, 0, 5, time.Hour, false, "-resolve 0"},
	} {
		more, why := moreRounds(c.p, c.resolve, c.rounds, 40, c.left, 30*time.Second)
		if more != c.more || !strings.Contains(why, c.why) {
			t.Errorf("moreRounds(%v, ±%g, %d rounds, %s left) = %v %q, want %v %q", c.p, c.resolve, c.rounds, c.left, more, why, c.more, c.why)
		}
	}
}
