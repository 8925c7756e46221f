package main

import (
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

func deref(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}
