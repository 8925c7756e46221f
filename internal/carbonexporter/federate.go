package carbonexporter

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/benchq/benchq/internal/httpget"
)

// Federated serves, as one /metrics, the counts of carbon-caches that run
// in other pods behind a relay (cmd/graphite-pod -role relay, a carbon
// cluster on Kubernetes): at every scrape it reads each cache pod's
// /metrics (urls) and serves their series together, each under its own
// cache label. benchq tsdb reads the cluster's stored points there, and
// Prometheus scrapes it alone, so no cache is counted twice. A cache pod
// that does not answer within timeout fails the scrape (HTTP 502): a sum
// without its count would be a wrong count, where none is a missing one.
func Federated(urls []string, timeout time.Duration, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		families, err := gather(ctx, urls)
		if err != nil {
			log.Warn("a carbon-cache's counts unreadable", "err", err)
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		format := expfmt.NewFormat(expfmt.TypeTextPlain)
		w.Header().Set("Content-Type", string(format))
		enc := expfmt.NewEncoder(w, format)
		for _, name := range slices.Sorted(maps.Keys(families)) {
			if err := enc.Encode(families[name]); err != nil {
				return // the client went away
			}
		}
	})
}

// gather reads every url's metrics at once and merges their families by
// name.
func gather(ctx context.Context, urls []string) (map[string]*dto.MetricFamily, error) {
	read := make([]map[string]*dto.MetricFamily, len(urls))
	errs := make([]error, len(urls))
	var wg sync.WaitGroup
	for i, url := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			read[i], errs[i] = scrape(ctx, url)
		}()
	}
	wg.Wait()
	out := map[string]*dto.MetricFamily{}
	for i, families := range read {
		if errs[i] != nil {
			return nil, errs[i]
		}
		for name, f := range families {
			if have, ok := out[name]; ok {
				have.Metric = append(have.Metric, f.Metric...)
			} else {
				out[name] = f
			}
		}
	}
	return out, nil
}

// scrape reads one /metrics in Prometheus' text format.
func scrape(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	body, err := httpget.Get(ctx, "carbon-cache "+url, url, time.Minute) // the scrape's own timeout bounds it
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	return families, nil
}
