package prom

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A scrape that started late (Prometheus' scheduler held up on a busy
// machine) must be among QueryScrapes' points, dated when it was taken, and
// no scrape may come back twice. Prometheus' scheduler cannot be held up on
// demand, so the API is a stand-in here, answering query_range as
// Prometheus would for scrapes at 0, 1, 2, 3.6, 4, 5.9 and 6 s (the one due
// at 3 s started 0.6 s late, the one due at 5 s 0.9 s late), on the grid
// three quarters of a step after each due scrape.
func TestQueryScrapesDropsAScrapeSeenTwice(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC)
	scrapes := []struct {
		at float64 // s after t0
		v  float64
	}{{0, 10}, {1, 11}, {2, 12}, {3.6, 13}, {4, 14}, {5.9, 15}, {6, 16}}
	// latest is the scrape at or before grid instant g (Prometheus' lookback).
	latest := func(g float64) (float64, float64) {
		at, v := -1.0, 0.0
		for _, s := range scrapes {
			if s.at <= g {
				at, v = s.at, s.v
			}
		}
		return at, v
	}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.FormValue("query")
		var start, end, step float64
		fmt.Sscan(r.FormValue("start"), &start)
		fmt.Sscan(r.FormValue("end"), &end)
		fmt.Sscan(strings.TrimSuffix(r.FormValue("step"), "s"), &step)
		values := [][2]any{}
		for g := start; q != "no_such_query" && g <= end+1e-9; g += step {
			at, v := latest(g - float64(t0.Unix()))
			if at < 0 {
				continue
			}
			if strings.HasPrefix(q, "max(timestamp(") {
				v = float64(t0.Unix()) + at
			}
			values = append(values, [2]any{g, fmt.Sprint(v)})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{
			"resultType": "matrix", "result": []any{map[string]any{"metric": map[string]string{"instance": "a:1"}, "values": values}}}})
	}))
	defer api.Close()
	c := &Client{URL: api.URL}

	got, err := c.QueryScrapes(t.Context(), `m{instance="a:1"}`, `max(timestamp(m{instance="a:1"}))`, t0, t0, t0.Add(6*time.Second), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var points []string
	for _, p := range got[0].Samples {
		points = append(points, fmt.Sprintf("%v=%v", p.T.Sub(t0), p.V))
	}
	// On the grid: 0.75 → 10, 1.75 → 11, 2.75 → 12, 3.75 → 13 (late, dated
	// 3.6 s), 4.75 → 14, 5.75 → 14 again (dropped), 6.75 → 16: the scrape
	// 0.9 s late (15) falls between two grid points and is missed.
	if want := "0s=10 1s=11 2s=12 3.6s=13 4s=14 6s=16"; strings.Join(points, " ") != want {
		t.Errorf("QueryScrapes = %s, want %s", strings.Join(points, " "), want)
	}

	// Without the scrape times, the grid's dates as before.
	got, err = c.QueryScrapes(t.Context(), `m{instance="a:1"}`, `no_such_query`, t0, t0, t0.Add(2*time.Second), time.Second)
	if err != nil || len(got[0].Samples) != 3 || !got[0].Samples[2].T.Equal(t0.Add(2*time.Second)) {
		t.Errorf("QueryScrapes without stamps = %+v, %v", got, err)
	}
}
