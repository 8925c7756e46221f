package main

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/obs"
)

// selfMetrics are the collector's own series on /metrics; the
// samples it pulls from Prometheus go into the results database, not here.
type selfMetrics struct {
	messages *prometheus.CounterVec   // by stream
	rows     prometheus.Counter       // rows written, messages and metric samples alike
	batch    *prometheus.HistogramVec // by stream
	lag      *prometheus.GaugeVec     // by durable consumer
}

func newSelfMetrics(reg prometheus.Registerer) *selfMetrics {
	series := obs.Series{Reg: reg}
	return &selfMetrics{
		messages: series.CounterVec("benchq_collector_messages_stored_total",
			"Messages stored in the results database (acked), by stream.", "stream"),
		rows: series.Counter("benchq_collector_rows_stored_total",
			"Rows written to the results database: one per stored message, one per metric sample."),
		batch: series.HistogramVec("benchq_collector_batch_seconds",
			"Time to store one batch of messages, by stream.", prometheus.ExponentialBuckets(0.001, 2.5, 12), "stream"),
		lag: series.GaugeVec("benchq_collector_consumer_lag",
			"Messages of the stream not yet delivered to the collector's durable consumer (JetStream's num_pending).", "stream", "consumer"),
	}
}

// stored counts a batch: its messages stored without error and the time
// it took.
func (m *selfMetrics) stored(stream string, errs []error, took time.Duration) {
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		}
	}
	m.messages.WithLabelValues(stream).Add(float64(ok))
	m.rows.Add(float64(ok))
	m.batch.WithLabelValues(stream).Observe(took.Seconds())
}

// watchLag reads the pending count of each of specs' consumers every
// interval until ctx ends. A consumer not declared yet is skipped.
func (m *selfMetrics) watchLag(ctx context.Context, b *bus.Bus, specs []bus.ConsumerSpec, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		for _, s := range specs {
			c, err := b.JS.Consumer(ctx, s.Stream, s.Durable)
			if err != nil {
				continue
			}
			if info, err := c.Info(ctx); err == nil {
				m.lag.WithLabelValues(s.Stream, s.Durable).Set(float64(info.NumPending))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
