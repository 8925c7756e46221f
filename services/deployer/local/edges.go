package local

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
)

// exporterReadTimeout bounds one read of an exporter at a phase's edge.
const exporterReadTimeout = 2 * time.Second

// ReadExporters reads configuration's exporters now (backend.SUTReader):
// each one's /metrics, on which every application metric of its
// component's catalog set is evaluated as the collector's query evaluates
// it on that exporter's series (its series narrowed by its matchers,
// combined by its aggregate). A metric the exporter does not serve is
// left out, never 0; an exporter that does not answer is left out.
func (l *Local) ReadExporters(ctx context.Context, code, configuration string) ([]contracts.ExporterRead, bool) {
	dir, err := l.dir(code, configuration)
	if err != nil {
		return nil, false
	}
	st, err := readState(dir)
	if err != nil || len(st.Exporters) == 0 {
		return nil, false
	}
	sets, err := catalog.ApplicationSetsOf(st.DBMS)
	if err != nil {
		return nil, false
	}
	reads := make([]*contracts.ExporterRead, len(st.Exporters))
	var wg sync.WaitGroup
	for i, e := range st.Exporters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			values, err := readExporter(ctx, e.Addr, sets[e.Component])
			if err != nil {
				l.log().Debug("exporter not read at a phase edge", "exporter", e.Name, "err", err)
				return
			}
			reads[i] = &contracts.ExporterRead{Instance: e.Addr, Component: e.Component, Values: values}
		}()
	}
	wg.Wait()
	var out []contracts.ExporterRead
	for _, r := range reads {
		if r != nil && len(r.Values) > 0 {
			out = append(out, *r)
		}
	}
	return out, len(out) > 0
}

// readExporter evaluates set's metrics on the exporter at addr.
func readExporter(ctx context.Context, addr string, set catalog.MetricSet) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, exporterReadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
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
