package e2e

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTPCCAsBexhomaUsersKnowIt runs bexhoma's Benchbase example at a small
// scale over the whole stack: one pod loads the warehouses into a local
// PostgreSQL, then TPC-C runs on 1 and then 2 pods (the agents' TPC-C
// engine), and the summary is bexhoma's Benchbase layout with figures that
// trace back to the stored shard results.
func TestTPCCAsBexhomaUsersKnowIt(t *testing.T) {
	t.Parallel() // its own stack (see the package comment)
	s := startStack(t)
	code := fmt.Sprintf("e2e-tpcc-%d", time.Now().Unix())
	out := s.cli(t, 6*time.Minute, "benchbase", "-e", code, "-dbms", "PostgreSQL", "-sf", "1", "-xsd", "0.25",
		"-nbp", "1,2", "-nbt", "4", "-tr", "run")

	checkSummary(t, out,
		"Benchbase Workload tpcc SF=1", "#### Per Pod", "#### Aggregated Parallel", "### Loading",
		"* DBMS PostgreSQL-1-1-1024 - Pods [[1, 2]]",
		"* TEST passed: Throughput (requests/second) contains no 0 or NaN",
		"* TEST passed: Workflow as planned",
	)
	if strings.Contains(out, "[OVERALL]") {
		t.Errorf("YCSB's tables in a Benchbase summary")
	}
	if n := tableRows(out, "### Execution", "#### Per Pod"); n != 3 {
		t.Errorf("%d Per Pod rows, want 3 (1 pod, then 2)", n)
	}
	if n := tableRows(out, "### Execution", "#### Aggregated Parallel"); n != 2 {
		t.Errorf("%d Aggregated Parallel rows, want 2", n)
	}
	// Its HTML report (throughput, TPC-C latency per phase, CPU/RAM) in
	// headless Chromium, as for the Redis experiment.
	s.python(t, "benchq_reporter.selfcheck.report", "--db", s.info.DBURL, "-e", code)

	// Traceable: the 2-pod phase's requests are the stored ALL operations
	// of its two shards, and its throughput is them over the printed window.
	phase := "PostgreSQL-1-1-1024-1-2"
	requests := s.count(t, `SELECT coalesce(sum(count), 0)::int FROM shard_operations WHERE code = $1 AND phase = $2 AND operation = 'ALL'`, code, phase)
	shards := s.count(t, `SELECT count(*)::int FROM shard_results WHERE code = $1 AND phase = $2 AND status = 'ok'`, code, phase)
	if shards != 2 || requests == 0 {
		t.Fatalf("stored: %d ok shards with %d requests in %s", shards, requests, phase)
	}
	tput := cell(t, out, "#### Aggregated Parallel", phase, "Throughput (requests/second)")
	window := cell(t, out, "#### Aggregated Parallel", phase, "time")
	if got := float64(requests) / window; math.Abs(got-tput) > 0.01+tput*1e-3 {
		t.Errorf("%s: printed throughput %.2f, stored %d requests over %.2f s = %.2f", phase, tput, requests, window, got)
	}
	// Loading: the nine TPC-C tables, one warehouse, counted by the loader.
	if n := s.count(t, `SELECT count::int FROM shard_operations WHERE code = $1 AND operation = 'warehouse'`, code); n != 1 {
		t.Errorf("loader counted %d warehouses, want 1", n)
	}
}

// cell returns the number in column col of the row whose first cell is row,
// in the first Markdown table after heading.
func cell(t *testing.T, out, heading, row, col string) float64 {
	t.Helper()
	i := strings.Index(out, heading)
	if i < 0 {
		t.Fatalf("no %q", heading)
	}
	var header []string
	for _, l := range strings.Split(out[i:], "\n") {
		if !strings.HasPrefix(l, "|") {
			if header != nil {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for k := range cells {
			cells[k] = strings.TrimSpace(cells[k])
		}
		if header == nil {
			header = cells
			continue
		}
		if cells[0] != row {
			continue
		}
		for k, h := range header {
			if h == col && k < len(cells) {
				v, err := strconv.ParseFloat(cells[k], 64)
				if err != nil {
					t.Fatalf("%s / %s: %q", row, col, cells[k])
				}
				return v
			}
		}
	}
	t.Fatalf("no cell %s / %s under %q", row, col, heading)
	return 0
}
