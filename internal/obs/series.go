package obs

import "github.com/prometheus/client_golang/prometheus"

// Series makes a component's own metrics and registers each on its
// registry as it is made (MustRegister: a name registered twice is a
// programming error). One line a metric: name, help, then buckets or labels.
type Series struct{ Reg prometheus.Registerer }

// Counter is a counter without labels.
func (s Series) Counter(name, help string) prometheus.Counter {
	return register(s.Reg, prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help}))
}

// CounterVec is a counter by labels.
func (s Series) CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return register(s.Reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels))
}

// Gauge is a gauge without labels.
func (s Series) Gauge(name, help string) prometheus.Gauge {
	return register(s.Reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help}))
}

// GaugeVec is a gauge by labels.
func (s Series) GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return register(s.Reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels))
}

// Histogram is a histogram without labels.
func (s Series) Histogram(name, help string, buckets []float64) prometheus.Histogram {
	return register(s.Reg, prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}))
}

// HistogramVec is a histogram by labels.
func (s Series) HistogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return register(s.Reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels))
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	reg.MustRegister(c)
	return c
}
