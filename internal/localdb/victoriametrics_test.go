package localdb

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// The bootstrap builds the version this package looks for.
func TestBootstrapBuildsThePinnedVictoriaMetrics(t *testing.T) {
	b, err := os.ReadFile("../../scripts/bootstrap.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\nVM_VERSION="+VictoriaMetricsVersion+"\n") {
		t.Errorf("scripts/bootstrap.sh does not pin VM_VERSION=%s", VictoriaMetricsVersion)
	}
}

// A second start of the same directory keeps the live server and its
// ports; Stop stops it.
func TestVictoriaMetricsStartsOnceAndStops(t *testing.T) {
	if _, err := VictoriaMetricsBinary(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	v, err := StartVictoriaMetrics(ctx, dir, 0, VictoriaMetricsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Stop(context.Background()) })
	again, err := StartVictoriaMetrics(ctx, dir, 0, VictoriaMetricsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Pid != v.Pid || again.Port != v.Port || again.GraphitePort != v.GraphitePort {
		t.Errorf("second start: %+v, first %+v", again, v)
	}
	if err := v.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Get(ctx, "/health"); err == nil {
		t.Error("still answering after Stop")
	}
}
