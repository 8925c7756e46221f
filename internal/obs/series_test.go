package obs

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestSeriesRegistersWhatItMakes(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := Series{Reg: reg}
	s.CounterVec("t_events_total", "events", "topic").WithLabelValues("a").Inc()
	s.Counter("t_rows_total", "rows").Add(2)
	s.Gauge("t_alive", "alive").Set(3)
	s.GaugeVec("t_lag", "lag", "stream", "consumer").WithLabelValues("s", "c").Set(4)
	s.Histogram("t_switch_seconds", "switch", []float64{1}).Observe(0.5)
	s.HistogramVec("t_batch_seconds", "batch", []float64{1}, "stream").WithLabelValues("s").Observe(2)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, mf := range mfs {
		got[mf.GetName()] = true
	}
	for _, want := range []string{"t_events_total", "t_rows_total", "t_alive", "t_lag", "t_switch_seconds", "t_batch_seconds"} {
		if !got[want] {
			t.Errorf("%s not registered (have %v)", want, got)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("a name registered twice did not panic")
		}
	}()
	s.Counter("t_rows_total", "rows")
}
