package prom

import (
	"math"
	"testing"
	"time"
)

func TestChunks(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		end       time.Duration
		step      time.Duration
		maxPoints int
		want      [][2]time.Duration
	}{
		{"one point", 0, time.Second, 3, [][2]time.Duration{{0, 0}}},
		{"fits", 2 * time.Second, time.Second, 3, [][2]time.Duration{{0, 2 * time.Second}}},
		{"splits on the grid", 7 * time.Second, time.Second, 3, [][2]time.Duration{{0, 2 * time.Second}, {3 * time.Second, 5 * time.Second}, {6 * time.Second, 7 * time.Second}}},
		// The end off the grid: the last grid point is 6s.
		{"end off the grid", 6500 * time.Millisecond, 2 * time.Second, 2, [][2]time.Duration{{0, 2 * time.Second}, {4 * time.Second, 6 * time.Second}}},
		{"end off the grid, short last chunk", 8500 * time.Millisecond, 2 * time.Second, 2, [][2]time.Duration{{0, 2 * time.Second}, {4 * time.Second, 6 * time.Second}, {8 * time.Second, 8500 * time.Millisecond}}},
		{"11,000 points", 11000 * time.Second, time.Second, MaxPointsPerSeries, [][2]time.Duration{{0, 10999 * time.Second}, {11000 * time.Second, 11000 * time.Second}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := chunks(t0, t0.Add(tc.end), tc.step, tc.maxPoints)
			if len(got) != len(tc.want) {
				t.Fatalf("%d chunks %v, want %v", len(got), got, tc.want)
			}
			for i, w := range tc.want {
				if got[i][0] != t0.Add(w[0]) || got[i][1] != t0.Add(w[1]) {
					t.Errorf("chunk %d = %v, want %v", i, got[i], w)
				}
			}
		})
	}
}

func TestMergeSeriesDropsARepeatedBoundary(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0).UTC()
	at := func(s int, v float64) Sample { return Sample{T: t0.Add(time.Duration(s) * time.Second), V: v} }
	m := map[string]*Series{}
	a := map[string]string{"component": "sut"}
	b := map[string]string{"component": "loader"}
	mergeSeries(m, []Series{{a, []Sample{at(0, 1), at(1, 2)}}, {b, []Sample{at(0, 5)}}})
	mergeSeries(m, []Series{{map[string]string{"component": "sut"}, []Sample{at(1, 2), at(2, 3)}}})
	if got := m[labelKey(a)].Samples; len(got) != 3 || got[2] != at(2, 3) {
		t.Errorf("sut: %v", got)
	}
	if got := m[labelKey(b)].Samples; len(got) != 1 {
		t.Errorf("loader: %v", got)
	}
}

func TestParseSample(t *testing.T) {
	t.Parallel()
	s, err := parseSample([2]any{1700000000.123, "NaN"})
	if err != nil || s.T != time.UnixMilli(1700000000123).UTC() || !math.IsNaN(s.V) {
		t.Errorf("parseSample = %+v, %v", s, err)
	}
	if _, err := parseSample([2]any{"x", "1"}); err == nil {
		t.Error("accepted a malformed timestamp")
	}
}

func TestScrapeAtOrBefore(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	step := time.Second
	for _, tc := range []struct{ scrape, t, want time.Duration }{
		{2300 * time.Millisecond, 0, -700 * time.Millisecond},  // scrape after t
		{-1300 * time.Millisecond, 0, -300 * time.Millisecond}, // scrape before t
		{-2 * time.Second, 0, 0},                               // t on the grid
		{5 * time.Second, 0, 0},
	} {
		if got := scrapeAtOrBefore(base.Add(tc.scrape), base.Add(tc.t), step); !got.Equal(base.Add(tc.want)) {
			t.Errorf("scrape %v, t %v: got %v, want %v", tc.scrape, tc.t, got.Sub(base), tc.want)
		}
	}
}
