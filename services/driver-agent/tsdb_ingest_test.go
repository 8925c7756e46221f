package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchq/benchq/catalog"
)

// A reading that is not a count (below zero: Graphite's own accounting,
// fresh from its start) is a failed reading, left out: the contract refuses
// it, and the whole final with it. The counts around it are kept.
func TestIngestReaderLeavesOutWhatIsNotACount(t *testing.T) {
	var n atomic.Int64
	values := []string{"5", "-16", "-1", "21"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		i := min(int(n.Add(1))-1, len(values)-1)
		fmt.Fprintf(w, "# TYPE carbon_points_stored_total counter\ncarbon_points_stored_total{cache=\"cache-0\"} %s\n", values[i])
	}))
	defer srv.Close()
	r := &ingestReader{url: srv.URL, counter: catalog.Counter{Series: "carbon_points_stored_total"}}
	var got []float64
	for range values {
		if v, ok := r.read(context.Background()); ok {
			got = append(got, v)
		}
	}
	if fmt.Sprint(got) != "[5 21]" || len(r.readings) != 2 {
		t.Errorf("readings %v (%d stored), want [5 21]", got, len(r.readings))
	}
}

// The drain ends drained only on a reading that answered the quiet time
// after the count last changed, with the same count: a page that stopped
// answering proves nothing (the count may grow meanwhile), and the drain
// goes on until its context ends, not drained.
func TestDrainNeedsAnAnsweredQuietReading(t *testing.T) {
	for _, c := range []struct {
		name        string
		answers     int // then HTTP 503
		wantDrained bool
	}{
		{"answers throughout", 1 << 30, true},
		{"stops answering after its first reading", 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var n atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if int(n.Add(1)) > c.answers {
					http.Error(w, "busy", http.StatusServiceUnavailable)
					return
				}
				fmt.Fprint(w, "# TYPE carbon_points_stored_total counter\ncarbon_points_stored_total{cache=\"cache-0\"} 300\n")
			}))
			defer srv.Close()
			r := &ingestReader{url: srv.URL, counter: catalog.Counter{Series: "carbon_points_stored_total"}, quiet: 500 * time.Millisecond}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			in := r.drain(ctx, time.Now())
			if in.Drained != c.wantDrained || len(in.Readings) == 0 || in.Readings[0].Total != 300 {
				t.Errorf("drained %v with %d readings (%v), want drained %v", in.Drained, len(in.Readings), in.Readings, c.wantDrained)
			}
		})
	}
}
