package obs_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
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

// The port a parent picked was taken before the service bound it (stacks
// started side by side): the service serves on a free port and names it in
// its address file, where the stack reads it for Prometheus's target.
func TestFromEnvServesElsewhereWhenItsPortIsTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	file := filepath.Join(t.TempDir(), "metrics.addr")
	t.Setenv(obs.EnvAddr, taken.Addr().String())
	t.Setenv(obs.EnvAddrFile, file)
	obs.FromEnv(t.Context(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimSpace(string(b))
	if addr == taken.Addr().String() {
		t.Fatalf("the file names the taken address %s", addr)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if body, _ := io.ReadAll(resp.Body); !strings.Contains(string(body), "go_goroutines") {
		t.Errorf("%s/metrics: %.200s", addr, body)
	}
}
