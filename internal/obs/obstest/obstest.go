// Package obstest reads a registry the way Prometheus does, for the
// services' tests: served by obs.Serve, fetched over HTTP.
package obstest

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/benchq/benchq/internal/obs"
)

// Serve serves reg on a free port until t ends and returns its address.
func Serve(t testing.TB, reg prometheus.Gatherer) string {
	t.Helper()
	addr, err := obs.Serve(t.Context(), "127.0.0.1:0", reg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return addr.String()
}

// Get is GET http://addr/metrics, the exposition text.
func Get(t testing.TB, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s %v", resp.Status, err)
	}
	return string(body)
}

// Lacks returns the lines of want that no line of text starts with (a
// series with its labels, e.g. `benchq_x_total{topic="final"} 2`, or a
// bare name).
func Lacks(text string, want ...string) []string {
	var missing []string
	for _, w := range want {
		found := false
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, w) {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, w)
		}
	}
	return missing
}
