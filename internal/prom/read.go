package prom

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/benchq/benchq/catalog"
)

// ReadSet evaluates set's metrics on the /metrics page at url (an exporter,
// or a server that serves its own), within timeout: each metric's series
// narrowed by its matchers, combined by its aggregate, as the collector's
// query evaluates it on that target. A metric the page does not serve is
// left out, never 0.
func ReadSet(ctx context.Context, url string, set catalog.MetricSet, timeout time.Duration) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse /metrics: %w", err)
	}
	return evaluate(set, families), nil
}

// evaluate computes each metric of set on families: its series' samples
// whose labels equal its matchers, combined by its aggregate.
func evaluate(set catalog.MetricSet, families map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range set.Metrics {
		f, ok := families[m.Series]
		if !ok {
			continue
		}
		found := false
		var v float64
		for _, s := range f.GetMetric() {
			if !matches(s, m.Matchers) {
				continue
			}
			x, ok := sampleValue(s)
			if !ok || math.IsNaN(x) || math.IsInf(x, 0) {
				continue // no number JSON can carry: the metric stays missing here
			}
			switch {
			case !found:
				v = x
			case m.Aggregate == catalog.AggregateMax:
				v = max(v, x)
			default:
				v += x
			}
			found = true
		}
		if found {
			out[m.Key] = v
		}
	}
	return out
}

func matches(s *dto.Metric, matchers map[string]string) bool {
	for k, want := range matchers {
		got := ""
		for _, lp := range s.GetLabel() {
			if lp.GetName() == k {
				got = lp.GetValue()
			}
		}
		if got != want {
			return false
		}
	}
	return true
}

func sampleValue(s *dto.Metric) (float64, bool) {
	switch {
	case s.Counter != nil:
		return s.Counter.GetValue(), true
	case s.Gauge != nil:
		return s.Gauge.GetValue(), true
	case s.Untyped != nil:
		return s.Untyped.GetValue(), true
	}
	return 0, false
}
