package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/internal/prom"
	"github.com/benchq/benchq/internal/reduce"
)

// The deployer's edge reads join the series they sample: an exporter's
// reads go to the series of its instance, or make one of their own when
// Prometheus had not scraped it; the phase's mean rate then comes from
// the reads at the edges where the scrapes miss the phase's start.
func TestEdgeReadsJoinTheSeriesTheySample(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	commands := catalog.Metric{Key: "redis_commands", Aggregate: catalog.AggregateSum, Series: "redis_commands_processed_total", Reduction: catalog.ReduceRateMean, Scale: 1}
	app := column{component: "sut", section: "application", metric: commands}
	// Prometheus scraped exporter A from 1.5 s into the phase on (its
	// target was new), never B; the SUT does 1,000 commands a second
	// through each from t0 to t0+3s.
	scraped := []prom.Series{{Labels: map[string]string{"instance": "A"}, Samples: []reduce.Sample{{T: at(1500), V: 1500}, {T: at(2500), V: 2500}}}}
	e := edgeReads{app: map[appSeries][]reduce.Sample{
		{"sut", "redis_commands", "A"}:  {{T: at(-300), V: 0}, {T: at(-100), V: 0}, {T: at(3010), V: 3000}, {T: at(3210), V: 3000}},
		{"sut", "redis_commands", "B"}:  {{T: at(-300), V: 0}, {T: at(-100), V: 0}, {T: at(3010), V: 3000}, {T: at(3210), V: 3000}},
		{"pool", "redis_commands", "C"}: {{T: at(0), V: 7}},
	}}
	got := withEdges(app, scraped, e)
	if len(got) != 2 || got[0].Labels["instance"] != "A" || got[1].Labels["instance"] != "B" || len(got[0].Samples) != 6 || len(got[1].Samples) != 4 {
		t.Fatalf("series %+v: want A's scrapes and reads in time order, and B's reads", got)
	}
	for i := 1; i < len(got[0].Samples); i++ {
		if !got[0].Samples[i-1].T.Before(got[0].Samples[i].T) {
			t.Errorf("A's samples out of order: %+v", got[0].Samples)
		}
	}
	v, _, missing := reduceSeries(commands, got, t0, at(3000))
	if v == nil || *v < 1990 || *v > 2010 {
		t.Errorf("mean commands per second over both exporters %v (%s), want 2,000", deref(v), missing)
	}
	if scraped[0].Samples[0].T != at(1500) || len(scraped[0].Samples) != 2 {
		t.Error("withEdges changed the answer it was given")
	}

	// CPU: the reads join the one series of the sut's counter; with two
	// series (two deployers' counters) they are left out.
	cpu := column{component: "sut", section: "system", metric: catalog.Metric{Key: "cpu_seconds", Series: cpuSeries, Reduction: catalog.ReduceIncrease, Aggregate: catalog.AggregateSum, Scale: 1}}
	e.cpu = map[string][]reduce.Sample{"sut": {{T: at(0), V: 10}}}
	one := []prom.Series{{Labels: map[string]string{"instance": "d"}, Samples: []reduce.Sample{{T: at(-500), V: 9}}}}
	if got := withEdges(cpu, one, e); len(got) != 1 || len(got[0].Samples) != 2 {
		t.Errorf("cpu with one series: %+v", got)
	}
	// Max CPU (the same counter's fastest rate) takes them too: a phase
	// whose scrapes stopped still has its last interval, up to the read.
	maxCPU := cpu
	maxCPU.metric.Key, maxCPU.metric.Reduction = "max_cpu", catalog.ReduceRateMax
	if got := withEdges(maxCPU, one, e); len(got) != 1 || len(got[0].Samples) != 2 {
		t.Errorf("max cpu with one series: %+v", got)
	}
	// A scrape 400 ms before the read: kept for CPU seconds, dropped for
	// Max CPU (within a step of the read), whose fastest rate would
	// otherwise come from those 400 ms.
	e.step = time.Second
	near := []prom.Series{{Labels: map[string]string{"instance": "d"}, Samples: []reduce.Sample{{T: at(-2000), V: 8}, {T: at(-400), V: 9.9}}}}
	if got := withEdges(cpu, near, e); len(got[0].Samples) != 3 {
		t.Errorf("cpu seconds keep a scrape 400 ms from a read: %+v", got[0].Samples)
	}
	if got := withEdges(maxCPU, near, e); len(got[0].Samples) != 2 {
		t.Errorf("max cpu drops a scrape within a step of a read: %+v", got[0].Samples)
	}
	e.step = 0
	two := append(one, prom.Series{Labels: map[string]string{"instance": "d2"}})
	if got := withEdges(cpu, two, e); len(got) != 2 || len(got[0].Samples) != 1 {
		t.Errorf("cpu with two series: %+v", got)
	}
	// A scrape dated a millisecond before a read but reading the counter
	// after it (10.02 against the read's 10.00) gives way to the read: in
	// time order it would be a drop, a reset, the whole counter counted.
	racing := []prom.Series{{Labels: map[string]string{"instance": "d"}, Samples: []reduce.Sample{{T: at(-1000), V: 9}, {T: at(-1), V: 10.02}, {T: at(1000), V: 11}}}}
	if got := withEdges(cpu, racing, e); len(got[0].Samples) != 3 || got[0].Samples[1] != (reduce.Sample{T: at(0), V: 10}) {
		t.Errorf("a scrape racing a read: %+v", got[0].Samples)
	}
	if inc, ok := reduce.Increase(withEdges(cpu, racing, e)[0].Samples, at(-1000), at(1000)); !ok || inc < 1.99 || inc > 2.01 {
		t.Errorf("increase across the raced read %v, want 2", inc)
	}
	// The plain grid's aggregate (no instance label) gets no reads: they
	// would count twice.
	aggregate := []prom.Series{{Labels: map[string]string{}, Samples: scraped[0].Samples}}
	if got := withEdges(app, aggregate, e); len(got) != 1 || len(got[0].Samples) != 2 {
		t.Errorf("reads added to an aggregate: %+v", got)
	}
}

// A driver's CPU reads (final.driver_cpu) join the series of its agent's
// pod: the scrapes before the phase saw its JVM start up (a high rate
// that, carried into the phase, counted work that was not there), and an
// agent Prometheus did not scrape in a short phase counts by its reads.
func TestDriverReadsJoinTheirAgentsSeries(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	cpu := catalog.Metric{Key: "cpu_seconds", Series: cpuSeries, Reduction: catalog.ReduceIncrease, Aggregate: catalog.AggregateSum, Scale: 1}
	loader := column{component: "loader", section: "system", metric: cpu}
	// Agent a1's JVM burnt 2 CPU s starting up in the second before the
	// phase (scrapes at -900 and +100 ms), waited idle from -50 ms, and then
	// used 1 CPU s per second until its last operation at 1,500 ms; a2 was
	// never scraped and used 0.6 CPU s.
	scraped := []prom.Series{{Labels: map[string]string{"instance": "i1", "pod": "a1"}, Samples: []reduce.Sample{{T: at(-900), V: 1}, {T: at(100), V: 3.1}, {T: at(1100), V: 4.1}, {T: at(2100), V: 4.6}}}}
	e := edgeReads{driverCPU: map[string][]reduce.Sample{
		"a1": {{T: at(0), V: 3}, {T: at(1500), V: 4.5}},
		"a2": {{T: at(0), V: 0.4}, {T: at(1400), V: 1.0}},
	}}
	without, _, _ := reduceSeries(cpu, scraped, t0, at(1500))
	got := withEdges(loader, scraped, e)
	if len(got) != 2 || got[1].Labels["pod"] != "a2" {
		t.Fatalf("series %+v: want a1's scrapes with its reads, and a2's reads", got)
	}
	v, _, missing := reduceSeries(cpu, got, t0, at(1500))
	if v == nil || math.Abs(*v-2.1) > 1e-9 {
		t.Errorf("loader CPU %v s (%s), want 1.5 + 0.6 (the scrapes alone: %v)", deref(v), missing, deref(without))
	}
	if math.Abs(*without-1.5) < 0.01 {
		t.Errorf("the scrapes alone give a1's 1.5 s: the case does not test the reads")
	}
	// A series without its pod could be any agent's: no reads join.
	anon := []prom.Series{{Labels: map[string]string{"instance": "i1"}, Samples: scraped[0].Samples}}
	if got := withEdges(loader, anon, e); len(got) != 1 || len(got[0].Samples) != 4 {
		t.Errorf("reads added beside a series of no pod: %+v", got)
	}
}

func deref(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}

// Max CPU over several series (a phase's loaders, one pod each) is the
// fastest rate of their sum: two loaders busy one after the other make one
// core, where adding each one's fastest made two.
func TestMaxCPUOfSeveralSeriesIsThatOfTheirSum(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	maxCPU := catalog.Metric{Key: "max_cpu", Series: cpuSeries, Reduction: catalog.ReduceRateMax, Aggregate: catalog.AggregateSum, Scale: 1}
	pod := func(name string, vs ...float64) prom.Series {
		s := prom.Series{Labels: map[string]string{"pod": name}}
		for i, v := range vs {
			s.Samples = append(s.Samples, reduce.Sample{T: at((i - 1) * 1000), V: v})
		}
		return s
	}
	got, _, missing := reduceSeries(maxCPU, []prom.Series{pod("a", 0, 0, 1, 2, 2, 2), pod("b", 0, 0, 0, 0, 1, 2)}, t0, at(4000))
	if got == nil || *got < 0.999 || *got > 1.001 {
		t.Errorf("Max CPU %v (%s), want 1 core", got, missing)
	}
}

// A figure of several series is missing when one of them ran in the phase
// but has too few samples in it: the others' sum would be the figure of
// part of the component, shown as all of it. A series that did not run in
// the phase (it ended before the phase began) is left out of the figure.
func TestFigureOfPartOfTheSeriesIsMissing(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	node := func(name string, ms ...int) prom.Series {
		s := prom.Series{Labels: map[string]string{"instance": name}}
		for _, m := range ms {
			s.Samples = append(s.Samples, reduce.Sample{T: at(m), V: float64(m)})
		}
		return s
	}
	ram := catalog.Metric{Key: "max_ram", Series: "ram", Reduction: catalog.ReduceMax, Aggregate: catalog.AggregateSum, Scale: 1}
	cpu := catalog.Metric{Key: "cpu_seconds", Series: cpuSeries, Reduction: catalog.ReduceIncrease, Aggregate: catalog.AggregateSum, Scale: 1}
	maxCPU := catalog.Metric{Key: "max_cpu", Series: cpuSeries, Reduction: catalog.ReduceRateMax, Aggregate: catalog.AggregateSum, Scale: 1}
	largest := catalog.Metric{Key: "lag", Series: "lag", Reduction: catalog.ReduceMax, Aggregate: catalog.AggregateMax, Scale: 1}
	// The phase is [0, 2 s]. Node a is scraped in it; node b only before
	// and after it (a scrape failed), so its gauge has no sample in it.
	a, b := node("a", -1000, 0, 1000, 2000, 3000), node("b", -500, 2500)
	for _, m := range []catalog.Metric{ram, largest} {
		v, _, missing := reduceSeries(m, []prom.Series{a, b}, t0, at(2000))
		if v != nil || !strings.Contains(missing, `{instance="b"}`) {
			t.Errorf("%s of a and b (b without a sample in the phase) = %v, %q: want missing, naming b", m.Key, deref(v), missing)
		}
	}
	// Counters: b has one sample in the phase and none beyond it, which
	// is too few for an increase or a rate.
	b = node("b", 1000)
	for _, m := range []catalog.Metric{cpu, maxCPU} {
		if v, _, missing := reduceSeries(m, []prom.Series{a, b}, t0, at(2000)); v != nil || !strings.Contains(missing, `{instance="b"}`) || !strings.Contains(missing, "2 series") {
			t.Errorf("%s of a and b (b with one sample) = %v, %q: want missing, naming b", m.Key, deref(v), missing)
		}
	}
	// c ended before the phase and d began after it: neither is of it, so
	// the figures are a's alone.
	c, d := node("c", -3000, -2000), node("d", 2500, 3500)
	for _, m := range []catalog.Metric{ram, cpu, maxCPU} {
		v, _, missing := reduceSeries(m, []prom.Series{a, c, d}, t0, at(2000))
		want, _, _ := reduceSeries(m, []prom.Series{a}, t0, at(2000))
		if v == nil || want == nil || *v != *want {
			t.Errorf("%s of a with c and d (not in the phase) = %v (%s), want a's %v", m.Key, deref(v), missing, deref(want))
		}
	}
}
