package main

import (
	"encoding/json"
	"testing"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/plan"
)

func TestProgressLine(t *testing.T) {
	p, err := plan.Expand("1", contracts.Request{SchemaVersion: 1, DBMS: []string{"Redis"}, SF: 0.1, Operations: 0.2, BenchmarkingPods: []int{2}})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(map[string]any{"plan": p})
	decoded, err := decodePlanned(data)
	if err != nil {
		t.Fatal(err)
	}
	pr := newProgress()
	pr.plan(decoded)
	run := p.Configurations[0].Phases[1].Name
	if got := pr.line(run); got != "" {
		t.Errorf("before any interval: %q", got)
	}
	pr.interval(contracts.Interval{Phase: run, Shard: 1, Attempt: 1, ElapsedS: 0, Operations: 6})
	if got := pr.line(run); got != "" {
		t.Errorf("YCSB's status line at 0 s: %q", got)
	}
	pr.interval(contracts.Interval{Phase: run, Shard: 1, Attempt: 1, ElapsedS: 10, Operations: 40000, OpsPerSec: 4000})
	pr.interval(contracts.Interval{Phase: run, Shard: 2, Attempt: 1, ElapsedS: 10, Operations: 60000, OpsPerSec: 6000})
	pr.interval(contracts.Interval{Phase: run, Shard: 2, Attempt: 1, ElapsedS: 5, Operations: 30000, OpsPerSec: 6000}) // late, older
	want := "  " + run + ": 100,000 of 200,000 operations (50%), 10,000 ops/s, elapsed 10s, ETA 10s"
	if got := pr.line(run); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// A re-run starts over.
	pr.interval(contracts.Interval{Phase: run, Shard: 1, Attempt: 2, ElapsedS: 2, Operations: 1000, OpsPerSec: 500})
	want = "  " + run + ": 1,000 of 200,000 operations (0%), 500 ops/s, elapsed 2s, ETA 6m38s (attempt 2)"
	if got := pr.line(run); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	pr.end(run)
	if got := pr.line(run); got != "" {
		t.Errorf("after the end: %q", got)
	}
}

// A metrics generator's operations are points sent: its benchmarking phase
// runs for a duration (elapsed of it, ETA), its loading phase (one point a
// series) has none.
func TestProgressLineOfMetricsGenerators(t *testing.T) {
	p, err := plan.Expand("1", plan.WithDefaults(contracts.Request{SchemaVersion: 1, Benchmark: plan.BenchmarkTSDB, DBMS: []string{"VictoriaMetrics"},
		BenchmarkingPods: []int{2}, BenchmarkingThreads: []int{4}, TSDB: &contracts.TSDB{Metrics: 50}, DurationS: 60}))
	if err != nil {
		t.Fatal(err)
	}
	pr := newProgress()
	pr.plan(p)
	load, run := p.Configurations[0].Phases[0].Name, p.Configurations[0].Phases[1].Name
	pr.interval(contracts.Interval{Phase: run, Shard: 1, Attempt: 1, ElapsedS: 10, Operations: 2000, OpsPerSec: 200})
	pr.interval(contracts.Interval{Phase: run, Shard: 2, Attempt: 1, ElapsedS: 10, Operations: 2000, OpsPerSec: 200})
	want := "  " + run + ": 4,000 points sent, 400 points/s, elapsed 10s of 60s, ETA 50s"
	if got := pr.line(run); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// The last status line, as the generators stop, comes after the
	// duration: not "61s of 60s".
	pr.interval(contracts.Interval{Phase: run, Shard: 1, Attempt: 1, ElapsedS: 61, Operations: 12000, OpsPerSec: 0})
	pr.interval(contracts.Interval{Phase: run, Shard: 2, Attempt: 1, ElapsedS: 61, Operations: 12000, OpsPerSec: 0})
	want = "  " + run + ": 24,000 points sent, 0 points/s, elapsed 61s (60s planned), ending"
	if got := pr.line(run); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	pr.interval(contracts.Interval{Phase: load, Shard: 1, Attempt: 1, ElapsedS: 1, Operations: 200, OpsPerSec: 200})
	want = "  " + load + ": 200 points sent, 200 points/s, elapsed 1s"
	if got := pr.line(load); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
