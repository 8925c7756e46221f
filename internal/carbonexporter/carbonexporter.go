// Package carbonexporter serves what Graphite's carbon-caches say of
// themselves as Prometheus metrics. Carbon has no /metrics: it records its
// own counters every second as whisper series (carbon.agents.*), which
// this exporter reads at each scrape (internal/whisper.CarbonReader), and
// benchq's carbon-cache.py counts the points each cache writes beside its
// whisper files (whisper.ReadWritten). The local deployer serves one per
// Graphite SUT, as does a Graphite pod; benchq tsdb reads the stored
// points from it (the catalog's tsdb.ingested).
package carbonexporter

import (
	"log/slog"
	"net/http"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/benchq/benchq/internal/whisper"
)

var (
	labels = []string{"cache"}
	stored = prometheus.NewDesc("carbon_points_stored_total",
		"Points the carbon-cache wrote to whisper, its own series left out, counted as it wrote them (internal/whisper.ReadWritten).", labels, nil)
	committed = prometheus.NewDesc("carbon_points_committed_total",
		"Points the carbon-cache wrote to whisper, its own series included (the sum of its committedPoints).", labels, nil)
	received = prometheus.NewDesc("carbon_metrics_received_total",
		"Points the carbon-cache's listeners took (the sum of its metricsReceived).", labels, nil)
	errs = prometheus.NewDesc("carbon_errors_total",
		"The carbon-cache's failed whisper writes (the sum of its errors).", labels, nil)
	cacheSize = prometheus.NewDesc("carbon_cache_size",
		"Points the carbon-cache holds, not yet written (its newest cache.size).", labels, nil)
)

// Collector reads the whisper directories of carbon-caches, by cache name:
// each series file whole at the first scrape, then only its newest slots
// (whisper.CarbonReader; a day of one-second slots is a megabyte a series).
type Collector struct {
	log *slog.Logger

	mu      sync.Mutex // scrapes may overlap; a reader is not safe for concurrent use
	readers map[string]*whisper.CarbonReader
}

// New makes a Collector of caches (name → whisper directory).
func New(caches map[string]string, log *slog.Logger) *Collector {
	readers := make(map[string]*whisper.CarbonReader, len(caches))
	for name, dir := range caches {
		readers[name] = whisper.NewCarbonReader(dir)
	}
	return &Collector{readers: readers, log: log}
}

// Describe sends the descriptors of every metric.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{stored, committed, received, errs, cacheSize} {
		ch <- d
	}
}

// Collect reads every cache. A cache whose counts cannot be read fails
// the scrape (HTTP 500): a sum without that cache's count would be a wrong
// count, where none is a missing one.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.readers))
	for n := range c.readers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		r := c.readers[name]
		written, err := whisper.ReadWritten(r.Dir())
		if err != nil {
			c.log.Warn("the carbon-cache's count of written points unreadable", "cache", name, "err", err)
			ch <- prometheus.NewInvalidMetric(stored, err)
			continue
		}
		counts, err := r.Read()
		if err != nil {
			c.log.Warn("carbon's own series unreadable", "cache", name, "err", err)
			ch <- prometheus.NewInvalidMetric(stored, err)
			continue
		}
		ch <- prometheus.MustNewConstMetric(stored, prometheus.CounterValue, float64(written.Points), name)
		ch <- prometheus.MustNewConstMetric(committed, prometheus.CounterValue, float64(counts.Committed), name)
		ch <- prometheus.MustNewConstMetric(received, prometheus.CounterValue, float64(counts.Received), name)
		ch <- prometheus.MustNewConstMetric(errs, prometheus.CounterValue, float64(counts.Errors), name)
		if counts.CacheSize >= 0 {
			ch <- prometheus.MustNewConstMetric(cacheSize, prometheus.GaugeValue, counts.CacheSize, name)
		}
	}
}

// Handler serves the collector's /metrics.
func Handler(caches map[string]string, log *slog.Logger) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(New(caches, log))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
