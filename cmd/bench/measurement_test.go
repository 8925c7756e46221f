package main

import (
	"math"
	"slices"
	"testing"
	"time"
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
