package obs_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/benchq/benchq/internal/obs"
)

func TestServeExposesTheRegistry(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := obs.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "benchq_test_events_total", Help: "test"})
	reg.MustRegister(c)
	c.Add(3)
	addr, err := obs.Serve(ctx, "127.0.0.1:0", reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"benchq_test_events_total 3", "go_goroutines", "process_cpu_seconds_total"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if a, err := obs.Serve(ctx, "", reg, nil); a != nil || err != nil {
		t.Errorf("empty address served %v, %v", a, err)
	}
}
