package benchbase

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchq/benchq/contracts"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden* from the current output")

const fixture = "testdata/benchbase-tpcc-pg15"

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/benchbase -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the current output (go test ./internal/benchbase -update, then review the diff):\n%s", path, got)
	}
}

func goldenJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, name, append(b, '\n'))
}

func open(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join(fixture, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func TestReadDirMatchesGolden(t *testing.T) {
	res, err := ReadDir(fixture, 0)
	if err != nil {
		t.Fatal(err)
	}
	goldenJSON(t, "benchbase-tpcc-pg15.result.golden.json", res)

	var final struct{ Operations any }
	final.Operations = res.Operations()
	goldenJSON(t, "benchbase-tpcc-pg15.operations.golden.json", final.Operations)
}

// The figures of the real run agree with each other the way Benchbase
// computed them: every file says the same number of requests, and the
// throughput and goodput are the counts over the measured window.
func TestFixtureFiguresAddUp(t *testing.T) {
	res, err := ReadDir(fixture, 0)
	if err != nil {
		t.Fatal(err)
	}
	const measured = 44410
	if res.MeasuredRequests != measured {
		t.Fatalf("measured requests %d, want %d", res.MeasuredRequests, measured)
	}
	sum := func(ws []Window) (n int64) {
		for _, w := range ws {
			n += w.Requests
		}
		return n
	}
	if got := sum(res.Windows); got != measured {
		t.Errorf("results.csv adds up to %d requests, want %d", got, measured)
	}
	if got := sum(res.Samples); got != measured {
		t.Errorf("samples.csv adds up to %d requests, want %d", got, measured)
	}
	var perType, completed int64
	for _, tx := range res.Transactions {
		perType += tx.Requests
		completed += tx.Outcomes[CodeOK]
	}
	if len(res.Transactions) != len(TxTypes) || perType != measured {
		t.Errorf("%d types with %d requests, want %d with %d", len(res.Transactions), perType, len(TxTypes), measured)
	}
	// Goodput counts Benchbase's Completed Transactions (all of its run).
	if res.Successes != completed || completed != 37288 {
		t.Errorf("successes %d, completed transactions %d, want both 37288", res.Successes, completed)
	}
	if got := perSecond(res.MeasuredRequests, res.Elapsed); math.Abs(got-res.Throughput) > 1e-9 {
		t.Errorf("measured/elapsed = %v, summary's throughput %v", got, res.Throughput)
	}
	if got := perSecond(res.Successes, res.Elapsed); math.Abs(got-res.Goodput) > 1e-9 {
		t.Errorf("successes/elapsed = %v, summary's goodput %v", got, res.Goodput)
	}
	ops := res.Operations()
	all := ops[len(ops)-1]
	if all.Name != All || all.Count != measured || all.ReturnCodes[CodeOK] != completed || all.P95US != 30180 {
		t.Errorf("ALL operation = %+v", all)
	}
}

func TestParseConsole(t *testing.T) {
	c, err := ParseConsole(open(t, ConsoleFile))
	if err != nil {
		t.Fatal(err)
	}
	goldenJSON(t, "benchbase-tpcc-pg15.console.golden.json", c)
	if c.LoadTime != 31100*time.Millisecond || c.Settings["Terminals"] != "8" || c.Settings["Loader Threads"] != "2" {
		t.Errorf("load time %v, settings %v", c.LoadTime, c.Settings)
	}
	if _, ok := c.Settings["URL"]; ok {
		t.Error("the JDBC URL (it may hold credentials) was kept")
	}
	if c.Outcomes["NewOrder"][CodeAborted] != 232 || c.Outcomes["Payment"][CodeRetry] != 26549 {
		t.Errorf("outcomes %v", c.Outcomes)
	}
}

func TestReadLoad(t *testing.T) {
	start := time.Date(2026, 11, 21, 11, 1, 19, 0, time.UTC)
	l, err := ReadLoad(open(t, ConsoleFile), start)
	if err != nil {
		t.Fatal(err)
	}
	if l.Elapsed != 31100*time.Millisecond || l.Terminals != 2 || l.ScaleFactor != 2 || !l.Start.Equal(start) {
		t.Errorf("load %+v", l)
	}
	if _, err := ReadLoad(strings.NewReader("[INFO ] Creating new TPCC database...\n"), start); err == nil {
		t.Error("a log without the loading line was accepted")
	}
}

// The fixture's raw.csv is its first 1999 requests: exact histograms of
// those, and Parse refuses it as the whole run's.
func TestParseRawHead(t *testing.T) {
	raw, err := ParseRaw(open(t, "raw.head2000.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if raw.All.Count() != 1999 {
		t.Fatalf("%d requests, want 1999", raw.All.Count())
	}
	var n int64
	summary := map[string]any{"first_op_at": raw.FirstOpAt, "last_op_at": raw.LastOpAt}
	for name, rec := range raw.Types {
		n += rec.Count()
		summary[name] = map[string]any{"count": rec.Count(), "latency": rec.Latency()}
	}
	if n != raw.All.Count() {
		t.Errorf("types add up to %d, all %d", n, raw.All.Count())
	}
	if want := time.Unix(1795258912, 155084000); !raw.FirstOpAt.Equal(want) {
		t.Errorf("first op at %v, want %v", raw.FirstOpAt, want)
	}
	goldenJSON(t, "benchbase-tpcc-pg15.raw-head.golden.json", summary)

	_, err = Parse(Outputs{Summary: open(t, "summary.json"), Raw: open(t, "raw.head2000.csv")})
	if err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("Parse with a truncated raw.csv: %v", err)
	}
}

func TestParseSummaryRejects(t *testing.T) {
	for name, in := range map[string]string{
		"not json":      "{",
		"no elapsed":    `{"Start timestamp (milliseconds)": 1, "Measured Requests": 1, "Throughput (requests/second)": 1, "Goodput (requests/second)": 1}`,
		"bad terminals": `{"Start timestamp (milliseconds)": 1, "Elapsed Time (nanoseconds)": 1, "Measured Requests": 1, "Throughput (requests/second)": 1, "Goodput (requests/second)": 1, "terminals": "x"}`,
	} {
		if _, err := ParseSummary(strings.NewReader(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestParseWindows(t *testing.T) {
	in := "Time (seconds),Throughput (requests/second),Average Latency (millisecond),Median Latency (millisecond),tp (req/s) scaled\n" +
		"0,515.000,15.545,10.172,0.064\n60,178.400,8.860,6.300,0.113\n"
	ws, err := ParseWindows(strings.NewReader(in), 5)
	if err != nil {
		t.Fatal(err)
	}
	want := []Window{
		{TimeS: 0, Requests: 2575, Throughput: 515, Latency: Latency{AvgUS: 15545, P50US: 10172}},
		{TimeS: 60, Requests: 892, Throughput: 178.4, Latency: Latency{AvgUS: 8860, P50US: 6300}},
	}
	if len(ws) != 2 || ws[0] != want[0] || ws[1] != want[1] {
		t.Errorf("got %+v, want %+v", ws, want)
	}
	if _, err := ParseWindows(strings.NewReader(in), 0); err == nil {
		t.Error("no Requests column and no window size: accepted")
	}
	if _, err := ParseWindows(strings.NewReader("a,b\n1,2\n"), 5); err == nil {
		t.Error("a CSV without Benchbase's columns: accepted")
	}
}

func TestReadDirRefusesTwoRuns(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"tpcc_1.summary.json", "tpcc_2.summary.json"} {
		b, err := os.ReadFile(filepath.Join(fixture, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ReadDir(dir, 0); err == nil || !strings.Contains(err.Error(), "2 files") {
		t.Errorf("two summaries: %v", err)
	}
	if _, err := ReadDir(t.TempDir(), 0); err == nil {
		t.Error("an empty directory: accepted")
	}
}

// A Final filled from a result passes the contract (final.schema.json).
func TestFilledFinalsAreValid(t *testing.T) {
	res, err := ReadDir(fixture, 0)
	if err != nil {
		t.Fatal(err)
	}
	load, err := ReadLoad(open(t, ConsoleFile), res.Start)
	if err != nil {
		t.Fatal(err)
	}
	load.Rows = map[string]int64{"warehouse": 2, "district": 20}
	for kind, fill := range map[string]func(*contracts.Final){contracts.KindRun: res.FillFinal, contracts.KindLoad: load.FillFinal} {
		f := validFinal(kind)
		fill(&f)
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := contracts.Validate(contracts.SchemaFinal, b); err != nil {
			t.Errorf("%s: %v\n%s", kind, err, b)
		}
	}
}

// validFinal is a Final with everything but the measurement set.
func validFinal(kind string) contracts.Final {
	now := time.Date(2026, 11, 21, 11, 2, 54, 0, time.UTC)
	return contracts.Final{
		Envelope:      contracts.NewEnvelope("fx", "fx.p.1.a1.final", now),
		Configuration: "PostgreSQL-2-1-400-1", Phase: "PostgreSQL-2-1-400-1-" + kind, Kind: kind, Shard: 1, Attempt: 1,
		Agent: "driver-agent-1", Status: contracts.StatusOK, StartedAt: now, EndedAt: now,
	}
}
