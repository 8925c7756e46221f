package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

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
