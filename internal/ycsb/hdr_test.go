package ycsb

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

const hdrFixture = "ycsb-redis-run-d-intended"

func readLogFixture(t *testing.T, op string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixturePrefix+hdrFixture+".hdr", op+".hdr"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The histogram logs YCSB wrote (Java HdrHistogram 2.2.2) merge into
// histograms that give exactly the figures YCSB printed for the same run:
// same count, min, max, mean and percentiles. So the percentile definition
// here is YCSB's, and nothing is lost between the intervals.
func TestReadHistogramLogMatchesYCSBSummary(t *testing.T) {
	t.Parallel()
	s := parseFixture(t, hdrFixture)
	logs, _ := filepath.Glob(fixturePrefix + hdrFixture + ".hdr/*.hdr")
	if len(logs) != len(s.Ops) {
		t.Fatalf("%d histogram logs for %d operations", len(logs), len(s.Ops))
	}
	for _, op := range s.Ops {
		t.Run(op.Name, func(t *testing.T) {
			t.Parallel()
			h, err := ReadHistogramLog(strings.NewReader(string(readLogFixture(t, op.Name))))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{
				"count": float64(h.TotalCount()), "min": float64(h.Min()), "max": float64(h.Max()),
				"p50": float64(ValueAtPercentile(h, 50)), "p95": float64(ValueAtPercentile(h, 95)),
				"p99": float64(ValueAtPercentile(h, 99)), "p99.9": float64(ValueAtPercentile(h, 99.9)),
			}
			want := map[string]float64{
				"count": float64(op.Count), "min": op.MinUS, "max": op.MaxUS,
				"p50": op.P50US, "p95": op.P95US, "p99": op.P99US, "p99.9": op.P999US,
			}
			for k, w := range want {
				if got[k] != w {
					t.Errorf("%s = %v, YCSB printed %v", k, got[k], w)
				}
			}
			if m := h.Mean(); math.Abs(m-op.AvgUS) > 1e-9*op.AvgUS {
				t.Errorf("mean = %v, YCSB printed %v", m, op.AvgUS)
			}
		})
	}
}

// What the agent ships — Go's V2 encoding of the merged histogram — decodes
// to the same distribution (Python and Java decode the same bytes: see the
// reporter's tests and contracts/examples/valid/final--run-histograms.json).
func TestEncodeDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	h, err := ReadHistogramLog(strings.NewReader(string(readLogFixture(t, "READ"))))
	if err != nil {
		t.Fatal(err)
	}
	enc, err := EncodeHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(enc, "HIST") {
		t.Errorf("encoding starts %q, want the V2 compressed cookie (HIST...)", enc[:8])
	}
	back, err := DecodeHistogram(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.Distribution(), h.Distribution()) {
		t.Error("decoded distribution differs from the encoded one")
	}
}

func TestMergeAddsShards(t *testing.T) {
	t.Parallel()
	fast, slow := NewHistogram(), NewHistogram()
	for i := range int64(990) {
		_ = fast.RecordValue(100 + i%10)
	}
	for i := range int64(10) {
		_ = slow.RecordValue(50_000 + i)
	}
	total := NewHistogram()
	for _, h := range []*hdrhistogram.Histogram{fast, slow} {
		if err := Merge(total, h); err != nil {
			t.Fatal(err)
		}
	}
	if total.TotalCount() != 1000 {
		t.Fatalf("count %d", total.TotalCount())
	}
	// Rank 990 of 1000 is the last fast value; rank 991 the first slow one.
	if p := ValueAtPercentile(total, 99); p != 109 {
		t.Errorf("p99 = %d, want 109", p)
	}
	if p := ValueAtPercentile(total, 99.1); !total.ValuesAreEquivalent(p, 50_000) {
		t.Errorf("p99.1 = %d, want ≈ 50000", p)
	}
	if p := ValueAtPercentile(NewHistogram(), 99); p != 0 {
		t.Errorf("p99 of nothing = %d", p)
	}
}

func TestHistogramErrors(t *testing.T) {
	t.Parallel()
	good := NewHistogram()
	_ = good.RecordValue(100)
	goodHist, err := EncodeHistogram(good)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := ReadHistogramLog(strings.NewReader("0.1,1.0,0.1," + goodHist + "\n")); err != nil || h.TotalCount() != 1 {
		t.Fatalf("a whole line: %v, %v", h, err)
	}
	for name, in := range map[string]string{
		"not base64":         "0.1,1.0,0.1,HIST!!!!!!!!!!!!!!!\n",
		"truncated encoding": "0.1,1.0,0.1,HISTFAAAAIR42i2M\n",
		"too few fields":     "0.1,1.0\n",
		// The tail of a line another writer's truncation cut, before the
		// next whole line (YCSB 0.17 could do that: io.benchq.ycsb.OnceMeasurements).
		"cut by a second writer": "\x00\x00\x00\x000.137,0.821,0.043," + goodHist + "\n",
		"a figure not a number":  "0.1,x,0.1," + goodHist + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := ReadHistogramLog(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "line 1") {
				t.Errorf("err = %v, want one naming line 1", err)
			}
		})
	}
	big := NewHistogram()
	_ = big.RecordValue(math.MaxInt32)
	if err := Merge(NewHistogram(), big); err != nil {
		t.Errorf("the largest value YCSB records was dropped: %v", err)
	}
}

// mergeFixture is shared with the reporter (services/reporter/tests): two
// shards' raw latencies, deliberately different — a fast shard and a slower
// one with a heavy tail — and the histograms this package encodes for them,
// which Python decodes and merges. go test ./internal/ycsb -update rewrites it.
const mergeFixture = "../../services/reporter/tests/data/hdr-two-shards.json"

type mergeShard struct {
	Samples   []int64 `json:"samples"`
	Histogram string  `json:"histogram"`
}

func mergeSamples() [][]int64 {
	fast := make([]int64, 0, 4500)
	for i := range int64(4500) {
		fast = append(fast, 100+(i*7919)%901) // 100 … 1000 µs
	}
	slow := make([]int64, 0, 500)
	for i := range int64(400) {
		slow = append(slow, 200+(i*104729)%1801) // 200 … 2000 µs
	}
	for i := range int64(100) {
		slow = append(slow, 10_000+i*900) // a tail of 10 … 99 ms
	}
	return [][]int64{fast, slow}
}

// exactPercentile is the nearest-rank percentile of raw samples.
func exactPercentile(samples []int64, p float64) int64 {
	s := slices.Clone(samples)
	slices.Sort(s)
	rank := int(math.Ceil(p/100*float64(len(s)) - 1e-9)) // 99 % of 5000 is 4950, not 4951
	return s[max(rank, 1)-1]
}

// The merged histogram's p99 is the p99 of all samples together (to the
// histogram's precision), and neither the mean nor the maximum of the
// shards' p99s, which is what averaging or max-ing per-shard figures gives.
func TestMergedPercentileIsThePercentileOfTheUnion(t *testing.T) {
	t.Parallel()
	var shards []mergeShard
	total := NewHistogram()
	var union []int64
	var shardP99 []int64
	for _, samples := range mergeSamples() {
		h := NewHistogram()
		for _, v := range samples {
			if err := h.RecordValue(v); err != nil {
				t.Fatal(err)
			}
		}
		enc, err := EncodeHistogram(h)
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, mergeShard{Samples: samples, Histogram: enc})
		if err := Merge(total, h); err != nil {
			t.Fatal(err)
		}
		union = append(union, samples...)
		shardP99 = append(shardP99, ValueAtPercentile(h, 99))
	}
	merged, exact := ValueAtPercentile(total, 99), exactPercentile(union, 99)
	if !total.ValuesAreEquivalent(merged, exact) {
		t.Errorf("merged p99 %d, p99 of the union %d", merged, exact)
	}
	mean, highest := (shardP99[0]+shardP99[1])/2, max(shardP99[0], shardP99[1])
	if total.ValuesAreEquivalent(merged, mean) || total.ValuesAreEquivalent(merged, highest) {
		t.Errorf("merged p99 %d does not differ from the mean %d or the max %d of the shards' p99s", merged, mean, highest)
	}
	t.Logf("p99: merged %d, union %d, shards %v (mean %d, max %d)", merged, exact, shardP99, mean, highest)

	got, err := json.Marshal(map[string]any{
		"comment": "Written by go test ./internal/ycsb -update (TestMergedPercentileIsThePercentileOfTheUnion): " +
			"raw latencies (µs) of two shards and their HdrHistograms as the driver agent encodes them (hdrhistogram-go, V2 compressed, base64).",
		"shards": shards,
	})
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(mergeFixture, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(mergeFixture)
	if err != nil {
		t.Fatalf("%v (go test ./internal/ycsb -update writes it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from what this package encodes now (go test ./internal/ycsb -update; review the diff)", mergeFixture)
	}
}
