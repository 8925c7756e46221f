package ycsb

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchq/benchq/contracts"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json from the parser's output")

// The fixtures are real YCSB 0.17.0 output, copied from
// /work/shared/fixtures/ycsb-0.17.0/.
const fixturePrefix = "testdata/"

type wantOp struct {
	name  string
	count int64
	codes map[string]int64
}

var summaryCases = []struct {
	fixture    string
	runTimeMS  float64
	throughput float64
	ops        []wantOp
	operations int64
}{
	{
		fixture: "ycsb-pg-load-batch", runTimeMS: 2169, throughput: 46104.19548178884,
		ops: []wantOp{
			{"CLEANUP", 8, nil},
			{"INSERT", 100000, map[string]int64{"OK": 96, "BATCHED_OK": 99904}},
		},
		operations: 100000,
	},
	{
		fixture: "ycsb-pg-load", runTimeMS: 17420, throughput: 5740.52812858783,
		ops: []wantOp{
			{"CLEANUP", 8, nil},
			{"INSERT", 100000, map[string]int64{"OK": 100000}},
		},
		operations: 100000,
	},
	{
		fixture: "ycsb-pg-run", runTimeMS: 20279, throughput: 9862.41925144238,
		ops: []wantOp{
			{"READ", 99725, map[string]int64{"OK": 99725}},
			{"CLEANUP", 8, nil},
			{"UPDATE", 100275, map[string]int64{"OK": 100275}},
		},
		operations: 200000,
	},
	{
		// PgBouncer in transaction mode with server-side prepared statements:
		// failed operations are measured under <OP>-FAILED and left out of
		// <OP>'s Operations, while <OP>'s Return=ERROR counts them.
		fixture: "ycsb-pgb-run-default-prepared-statement-errors", runTimeMS: 30900, throughput: 6472.491909385113,
		ops: []wantOp{
			{"READ", 67085, map[string]int64{"OK": 67085, "ERROR": 32714}},
			{"UPDATE-FAILED", 26833, nil},
			{"CLEANUP", 8, nil},
			{"UPDATE", 73368, map[string]int64{"OK": 73368, "ERROR": 26833}},
			{"READ-FAILED", 32714, nil},
		},
		operations: 200000,
	},
	{
		fixture: "ycsb-pgb-run", runTimeMS: 30757, throughput: 6502.584777449036,
		ops: []wantOp{
			{"READ", 100227, map[string]int64{"OK": 100227}},
			{"CLEANUP", 8, nil},
			{"UPDATE", 99773, map[string]int64{"OK": 99773}},
		},
		operations: 200000,
	},
	{
		fixture: "ycsb-pgb-shard0", runTimeMS: 16117, throughput: 3102.31432648756,
		ops: []wantOp{
			{"CLEANUP", 4, nil},
			{"INSERT", 50000, map[string]int64{"OK": 50000}},
		},
		operations: 50000,
	},
	{
		fixture: "ycsb-pgb-shard1", runTimeMS: 16107, throughput: 3104.2403923759857,
		ops: []wantOp{
			{"CLEANUP", 4, nil},
			{"INSERT", 50000, map[string]int64{"OK": 50000}},
		},
		operations: 50000,
	},
	{
		fixture: "ycsb-redis-load", runTimeMS: 5870, throughput: 17035.775127768313,
		ops: []wantOp{
			{"CLEANUP", 8, nil},
			{"INSERT", 100000, map[string]int64{"OK": 100000}},
		},
		operations: 100000,
	},
	{
		fixture: "ycsb-redis-prom", runTimeMS: 55013, throughput: 9994.837583843819,
		ops: []wantOp{
			{"READ", 275241, map[string]int64{"OK": 275241}},
			{"CLEANUP", 8, nil},
			{"UPDATE", 274605, map[string]int64{"OK": 274605}},
		},
		operations: 549846,
	},
	{
		// Workload D, shard 2 of 3, target 3000 ops/s, measurement.interval=both,
		// hdrhistogram.percentiles=50,95,99,99.9 and fileoutput (the logs are in
		// the .hdr directory of the same name): what the agent runs.
		fixture: "ycsb-redis-run-d-intended", runTimeMS: 2021, throughput: 2968.8273132112818,
		ops: []wantOp{
			{"READ", 5689, map[string]int64{"OK": 5689}},
			{"CLEANUP", 4, nil},
			{"INSERT", 311, map[string]int64{"OK": 311}},
			{"Intended-READ", 5689, nil},
			{"Intended-CLEANUP", 4, nil},
			{"Intended-INSERT", 311, nil},
		},
		operations: 6000,
	},
	{
		fixture: "ycsb-redis-run", runTimeMS: 5307, throughput: 37686.074995289244,
		ops: []wantOp{
			{"READ", 99793, map[string]int64{"OK": 99793}},
			{"CLEANUP", 8, nil},
			{"UPDATE", 100207, map[string]int64{"OK": 100207}},
		},
		operations: 200000,
	},
	{
		fixture: "ycsb-redis-shard0", runTimeMS: 5533, throughput: 9036.688957166094,
		ops: []wantOp{
			{"CLEANUP", 4, nil},
			{"INSERT", 50000, map[string]int64{"OK": 50000}},
		},
		operations: 50000,
	},
	{
		fixture: "ycsb-redis-shard1", runTimeMS: 5295, throughput: 9442.870632672333,
		ops: []wantOp{
			{"CLEANUP", 4, nil},
			{"INSERT", 50000, map[string]int64{"OK": 50000}},
		},
		operations: 50000,
	},
}

func parseFixture(t *testing.T, fixture string) Summary {
	t.Helper()
	f, err := os.Open(fixturePrefix + fixture + ".stdout.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := ParseSummary(f)
	if err != nil {
		t.Fatalf("ParseSummary: %v", err)
	}
	return s
}

func TestEveryFixtureIsCovered(t *testing.T) {
	files, err := filepath.Glob(fixturePrefix + "*.stdout.txt")
	if err != nil {
		t.Fatal(err)
	}
	var covered []string
	for _, c := range summaryCases {
		covered = append(covered, c.fixture)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".stdout.txt")
		if !slices.Contains(covered, name) {
			t.Errorf("fixture %s has no summary test case", name)
		}
	}
}

func TestParseSummaryFixtures(t *testing.T) {
	t.Parallel()
	for _, c := range summaryCases {
		t.Run(c.fixture, func(t *testing.T) {
			t.Parallel()
			s := parseFixture(t, c.fixture)
			if s.RunTimeMS != c.runTimeMS {
				t.Errorf("RunTimeMS = %v, want %v", s.RunTimeMS, c.runTimeMS)
			}
			if s.Throughput != c.throughput {
				t.Errorf("Throughput = %v, want %v", s.Throughput, c.throughput)
			}
			var got []wantOp
			for _, op := range s.Ops {
				got = append(got, wantOp{op.Name, op.Count, op.ReturnCodes})
			}
			if !reflect.DeepEqual(got, c.ops) {
				t.Errorf("ops (name, count, return codes) =\n %v\nwant\n %v", got, c.ops)
			}
			if n := s.Operations(); n != c.operations {
				t.Errorf("Operations() = %d, want %d", n, c.operations)
			}
			// YCSB computes Throughput from the same operation count.
			if want := float64(c.operations) / c.runTimeMS * 1000; math.Abs(s.Throughput-want) > 1e-9*want {
				t.Errorf("Throughput %v does not match Operations()/RunTime = %v", s.Throughput, want)
			}
			if len(s.GC) != 9 {
				t.Errorf("GC has %d entries, want 9: %v", len(s.GC), s.GC)
			}
		})
	}
}

func TestParseSummaryFields(t *testing.T) {
	s := parseFixture(t, "ycsb-pgb-run-default-prepared-statement-errors")
	wantFailed := contracts.OpResult{
		Name: "READ-FAILED", Count: 32714,
		AvgUS: 1018.1531454423183, MinUS: 88, MaxUS: 84351, P95US: 2000, P99US: 3215,
	}
	if got := s.Ops[len(s.Ops)-1]; !reflect.DeepEqual(got, wantFailed) {
		t.Errorf("last op = %+v, want %+v", got, wantFailed)
	}

	s = parseFixture(t, "ycsb-redis-run-d-intended")
	wantRead := contracts.OpResult{
		Name: "READ", Count: 5689, AvgUS: 309.4376867639304, MinUS: 25, MaxUS: 43007,
		P50US: 75, P95US: 762, P99US: 4487, P999US: 22831, ReturnCodes: map[string]int64{"OK": 5689},
	}
	if got := s.Ops[0]; !reflect.DeepEqual(got, wantRead) {
		t.Errorf("first op = %+v, want %+v", got, wantRead)
	}

	s = parseFixture(t, "ycsb-pg-load-batch")
	wantGC := map[string]float64{
		"TOTAL_GCS_G1_Young_Generation.Count":         10,
		"TOTAL_GC_TIME_G1_Young_Generation.Time(ms)":  96,
		"TOTAL_GC_TIME_%_G1_Young_Generation.Time(%)": 4.426002766251729,
		"TOTAL_GCS_G1_Old_Generation.Count":           0,
		"TOTAL_GC_TIME_G1_Old_Generation.Time(ms)":    0,
		"TOTAL_GC_TIME_%_G1_Old_Generation.Time(%)":   0,
		"TOTAL_GCs.Count":                             10,
		"TOTAL_GC_TIME.Time(ms)":                      96,
		"TOTAL_GC_TIME_%.Time(%)":                     4.426002766251729,
	}
	if !reflect.DeepEqual(s.GC, wantGC) {
		t.Errorf("GC = %v, want %v", s.GC, wantGC)
	}
}

func TestParseSummarySynthetic(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		in         string
		want       Summary
		operations int64
	}{
		{
			name: "CRLF, no final newline, noise lines",
			in: "Raw data measurement: will output to stdout.\r\n[OVERALL], RunTime(ms), 1000\r\n" +
				"[OVERALL], Throughput(ops/sec), 10.0\r\n[READ], Operations, 10\r\n[READ], Return=NOT_FOUND, 2",
			want: Summary{RunTimeMS: 1000, Throughput: 10, Ops: []contracts.OpResult{
				{Name: "READ", Count: 10, ReturnCodes: map[string]int64{"NOT_FOUND": 2}},
			}},
			operations: 10,
		},
		{
			// A READ measurement exists (it holds the return codes) even when
			// every read failed; Java prints its average as NaN.
			name: "NaN and Infinity become 0",
			in: "[OVERALL], RunTime(ms), 0\n[OVERALL], Throughput(ops/sec), Infinity\n" +
				"[READ], Operations, 0\n[READ], AverageLatency(us), NaN\n[READ], Return=ERROR, 5\n" +
				"[READ-FAILED], Operations, 5\n[READ-FAILED], AverageLatency(us), 1.5E3\n",
			want: Summary{Ops: []contracts.OpResult{
				{Name: "READ", ReturnCodes: map[string]int64{"ERROR": 5}},
				{Name: "READ-FAILED", Count: 5, AvgUS: 1500},
			}},
			operations: 5,
		},
		{
			name: "histogram buckets, other percentiles, duplicates and JVM samples",
			in: "[OVERALL], RunTime(ms), 1000\n[READ], Operations, 3\n[READ], LatencyVariance(us), 4.0\n" +
				"[READ], 75thPercentileLatency(us), 7\n[READ], 0, 3\n[READ], >1000, 0\n" +
				"[Intended-READ], Operations, 3\n[THREAD_COUNT], Operations, 2\n[MAX_MEM_USED], MBs, 100\n",
			want: Summary{RunTimeMS: 1000, Ops: []contracts.OpResult{
				{Name: "READ", Count: 3},
				{Name: "Intended-READ", Count: 3},
				{Name: "THREAD_COUNT", Count: 2},
			}},
			operations: 3,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseSummary(strings.NewReader(c.in))
			if err != nil {
				t.Fatalf("ParseSummary: %v", err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
			if n := got.Operations(); n != c.operations {
				t.Errorf("Operations() = %d, want %d", n, c.operations)
			}
		})
	}
}

func TestParseSummaryErrors(t *testing.T) {
	t.Parallel()
	full, err := os.ReadFile(fixturePrefix + "ycsb-pg-run.stdout.txt")
	if err != nil {
		t.Fatal(err)
	}
	// YCSB killed before it printed its summary: only the binding's lines.
	truncated, _, _ := strings.Cut(string(full), "[OVERALL]")
	cases := []struct {
		name        string
		in          string
		notFinished bool
		msg         string // the error message must contain this
	}{
		{"empty", "", true, "output is empty"},
		{"blank lines", "\n  \n", true, "output is empty"},
		{"truncated", truncated, true, `last line: "Using shards: 1, batchSize:-1, fetchSize: -1"`},
		{"ops without overall", "[READ], Operations, 5\n\n", true, `last line: "[READ], Operations, 5"`},
		{"bad runtime", "[OVERALL], RunTime(ms), soon\n", false, `line 1 "[OVERALL], RunTime(ms), soon"`},
		{"bad count", "[OVERALL], RunTime(ms), 5\n[READ], Operations, 1.5\n", false, "line 2"},
		{"bad return code", "[OVERALL], RunTime(ms), 5\n[READ], Return=OK, x\n", false, "line 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseSummary(strings.NewReader(c.in))
			if err == nil {
				t.Fatal("ParseSummary succeeded, want an error")
			}
			if got := errors.Is(err, ErrNotFinished); got != c.notFinished {
				t.Errorf("errors.Is(err, ErrNotFinished) = %v, want %v (err: %v)", got, c.notFinished, err)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not contain %q", err, c.msg)
			}
		})
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("pipe broke") }

func TestParseSummaryReadError(t *testing.T) {
	if _, err := ParseSummary(failingReader{}); err == nil || !strings.Contains(err.Error(), "pipe broke") {
		t.Errorf("err = %v, want the read error", err)
	}
}

func TestSummaryGolden(t *testing.T) {
	t.Parallel()
	for _, c := range summaryCases {
		t.Run(c.fixture, func(t *testing.T) {
			t.Parallel()
			got, err := json.MarshalIndent(parseFixture(t, c.fixture), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := fixturePrefix + c.fixture + ".summary.golden.json"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/ycsb -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the parser's output (run go test ./internal/ycsb -update and review the diff):\n%s", golden, got)
			}
		})
	}
}

func local(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.ParseInLocation("2006-01-02 15:04:05.000", s, time.Local)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

func TestParseStatusLine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		line string
		want Status
	}{
		{
			name: "first line, no current ops/sec",
			line: "2026-11-21 10:53:19:315 0 sec: 0 operations; est completion in 0 second ",
			want: Status{At: local(t, "2026-11-21 10:53:19.315")},
		},
		{
			name: "two blocks",
			line: "2026-11-21 10:53:48:356 10 sec: 96010 operations; 9601 current ops/sec; est completion in 11 seconds [READ: Count=47962, Max=148095, Min=26, Avg=217.97, 90=385, 99=1957, 99.9=5847, 99.99=26815] [UPDATE: Count=48053, Max=191999, Min=150, Avg=1405.99, 90=2983, 99=8535, 99.9=34079, 99.99=88383] ",
			want: Status{
				At: local(t, "2026-11-21 10:53:48.356"), ElapsedS: 10, Operations: 96010, OpsPerSec: 9601,
				PerOp: map[string]map[string]float64{
					"READ":   {"Count": 47962, "Max": 148095, "Min": 26, "Avg": 217.97, "90": 385, "99": 1957, "99.9": 5847, "99.99": 26815},
					"UPDATE": {"Count": 48053, "Max": 191999, "Min": 150, "Avg": 1405.99, "90": 2983, "99": 8535, "99.9": 34079, "99.99": 88383},
				},
			},
		},
		{
			name: "last line, no est completion, CLEANUP",
			line: "2026-11-21 10:53:16:309 5 sec: 50000 operations; 9036.69 current ops/sec; [CLEANUP: Count=4, Max=941, Min=93, Avg=320, 90=941, 99=941, 99.9=941, 99.99=941] [INSERT: Count=49996, Max=19503, Min=43, Avg=420.83, 90=507, 99=2525, 99.9=7943, 99.99=13295] ",
			want: Status{
				At: local(t, "2026-11-21 10:53:16.309"), ElapsedS: 5, Operations: 50000, OpsPerSec: 9036.69,
				PerOp: map[string]map[string]float64{
					"CLEANUP": {"Count": 4, "Max": 941, "Min": 93, "Avg": 320, "90": 941, "99": 941, "99.9": 941, "99.99": 941},
					"INSERT":  {"Count": 49996, "Max": 19503, "Min": 43, "Avg": 420.83, "90": 507, "99": 2525, "99.9": 7943, "99.99": 13295},
				},
			},
		},
		{
			// The first interval of the Redis load lasted 0 ms.
			name: "infinite current ops/sec",
			line: "2026-11-21 10:52:49:343 0 sec: 212 operations; ∞ current ops/sec; est completion in 0 second [INSERT: Count=212, Max=20479, Min=360, Avg=2594.25, 90=5547, 99=11199, 99.9=20479, 99.99=20479] ",
			want: Status{
				At: local(t, "2026-11-21 10:52:49.343"), Operations: 212,
				PerOp: map[string]map[string]float64{
					"INSERT": {"Count": 212, "Max": 20479, "Min": 360, "Avg": 2594.25, "90": 5547, "99": 11199, "99.9": 20479, "99.99": 20479},
				},
			},
		},
		{
			name: "long est completion, no ops",
			line: "2026-11-21 11:13:13:634 50 sec: 499751 operations; 9999.9 current ops/sec; est completion in 2 hours 45 minutes ",
			want: Status{At: local(t, "2026-11-21 11:13:13.634"), ElapsedS: 50, Operations: 499751, OpsPerSec: 9999.9},
		},
		{
			name: "label, comma decimals, NaN, histogram block, CRLF",
			line: "shard-1 2026-11-21 10:53:16:309 5 sec: 50000 operations; 9036,69 current ops/sec; [READ: Count=0, Avg=\uFFFD, 99=0] [UPDATE AverageLatency(us)=420,83] \r\n",
			want: Status{
				At: local(t, "2026-11-21 10:53:16.309"), ElapsedS: 5, Operations: 50000, OpsPerSec: 9036.69,
				PerOp: map[string]map[string]float64{
					"READ":   {"Count": 0, "99": 0},
					"UPDATE": {"AverageLatency(us)": 420.83},
				},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, ok, err := ParseStatusLine(c.line)
			if err != nil || !ok {
				t.Fatalf("ParseStatusLine = ok %v, err %v; want ok", ok, err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestParseStatusLineNotStatus(t *testing.T) {
	t.Parallel()
	for _, line := range []string{
		"",
		"Command line: -t -db site.ycsb.db.RedisClient -P wl.properties -s",
		"YCSB Client 0.17.0",
		"Loading workload...",
		"Starting test.",
		"Maximum execution time specified as: 55 secs",
		"DBWrapper: report latency for each error is false and specific error codes to track for latency are: []",
		`Error in processing read of table usertable: org.postgresql.util.PSQLException: ERROR: prepared statement "S_1" already exists`,
		"Maximum time elapsed. Requesting stop for the workload.",
		"real\t0m17.638s",
		"[OVERALL], RunTime(ms), 17420",
		"[BucketREAD AverageLatency(us)=217.97] [HdrUPDATE: Count=1]", // second physical line of hdrhistogram+histogram
		"2026-11-21 10:53:19 0 sec: 0 operations;",                    // no milliseconds
	} {
		st, ok, err := ParseStatusLine(line)
		if ok || err != nil {
			t.Errorf("ParseStatusLine(%q) = %+v, %v, %v; want not a status line", line, st, ok, err)
		}
	}
}

func TestParseStatusLineErrors(t *testing.T) {
	t.Parallel()
	for _, line := range []string{
		"2026-13-21 10:53:19:315 0 sec: 0 operations; ",
		"2026-11-21 10:53:19:315 99999999999999999999 sec: 0 operations; ",
		"2026-11-21 10:53:19:315 0 sec: 99999999999999999999 operations; ",
		"2026-11-21 10:53:19:315 1 sec: 5 operations; fast current ops/sec; ",
		"2026-11-21 10:53:19:315 1 sec: 5 operations; 5 current ops/sec; [READ: Count=1",
		"2026-11-21 10:53:19:315 1 sec: 5 operations; 5 current ops/sec; [READ: Count]",
		"2026-11-21 10:53:19:315 1 sec: 5 operations; 5 current ops/sec; [READ: Count=x]",
		"2026-11-21 10:53:19:315 1 sec: 5 operations; 5 current ops/sec; [READ] ",
		"2026-11-21 10:53:19:315 1 sec: 5 operations; 5 current ops/sec; [: Count=1] ",
		"2026-11-21 10:53:19:315 1 sec: 5 operations; 5 current ops/sec; [READ: Count=1] junk",
		"2026-11-21 10:53:19:315 1 sec: 5 operations; 5 current ops/sec; [READ: Avg=1e999]",
	} {
		st, ok, err := ParseStatusLine(line)
		if ok || err == nil {
			t.Errorf("ParseStatusLine(%q) = %+v, %v, %v; want an error", line, st, ok, err)
		}
	}
}

// TestStatusFixtures parses every stderr fixture line by line and checks the
// status lines against the summary of the same run: the per-interval Counts
// add up to the summary's Operations, and the last line's operation count is
// Summary.Operations().
func TestStatusFixtures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		fixture    string
		stderr     string
		statusLine int
		complete   bool // false: the fixture holds only the head of stderr
	}{
		{"ycsb-pg-load-batch", "stderr.txt", 0, true}, // run without -s
		{"ycsb-pg-load", "stderr.txt", 3, true},
		{"ycsb-pg-run", "stderr.txt", 4, true},
		{"ycsb-pgb-run-default-prepared-statement-errors", "stderr.head.txt", 1, false},
		{"ycsb-pgb-run", "stderr.txt", 5, true},
		{"ycsb-pgb-shard0", "stderr.txt", 3, true},
		{"ycsb-pgb-shard1", "stderr.txt", 3, true},
		{"ycsb-redis-load", "stderr.txt", 2, true},
		{"ycsb-redis-prom", "stderr.txt", 7, true},
		{"ycsb-redis-run", "stderr.txt", 4, true},
		{"ycsb-redis-run-d-intended", "stderr.txt", 4, true},
		{"ycsb-redis-shard0", "stderr.txt", 2, true},
		{"ycsb-redis-shard1", "stderr.txt", 2, true},
	}
	for _, c := range cases {
		t.Run(c.fixture, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(fixturePrefix + c.fixture + "." + c.stderr)
			if err != nil {
				t.Fatal(err)
			}
			var statuses []Status
			sc := bufio.NewScanner(bytes.NewReader(data))
			for sc.Scan() {
				st, ok, err := ParseStatusLine(sc.Text())
				if err != nil {
					t.Fatalf("ParseStatusLine: %v", err)
				}
				if ok {
					statuses = append(statuses, st)
				}
			}
			if len(statuses) != c.statusLine {
				t.Fatalf("%d status lines, want %d", len(statuses), c.statusLine)
			}
			if !c.complete || len(statuses) == 0 {
				return
			}
			summary := parseFixture(t, c.fixture)
			counts := map[string]float64{}
			for _, st := range statuses {
				for op, v := range st.PerOp {
					counts[op] += v["Count"]
				}
			}
			for _, op := range summary.Ops {
				if counts[op.Name] != float64(op.Count) {
					t.Errorf("%s: status Counts add up to %v, summary says %d", op.Name, counts[op.Name], op.Count)
				}
			}
			if last := statuses[len(statuses)-1]; last.Operations != summary.Operations() {
				t.Errorf("last status line: %d operations, Summary.Operations() = %d", last.Operations, summary.Operations())
			}
		})
	}
}

func FuzzParseStatusLine(f *testing.F) {
	files, err := filepath.Glob(fixturePrefix + "*.stderr*.txt")
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			f.Add(line)
		}
	}
	f.Add("x2026-11-21 10:53:16:309 5 sec: 1 operations; 1,5 current ops/sec; [R: A=\uFFFD] [U B=1]")
	f.Fuzz(func(t *testing.T, line string) {
		st, ok, err := ParseStatusLine(line)
		if err != nil && ok {
			t.Fatalf("ok with error %v", err)
		}
		if !ok {
			return
		}
		// A status goes out as a contracts.Interval, which must encode.
		if _, err := json.Marshal(contracts.Interval{OpsPerSec: st.OpsPerSec, PerOp: st.PerOp}); err != nil {
			t.Fatalf("status does not encode to JSON: %v", err)
		}
	})
}
