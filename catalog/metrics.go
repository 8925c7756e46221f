package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// SystemSet names the metric set of every component's CPU and memory.
const SystemSet = "system"

// Aggregates: how the series of several targets of one component combine.
const (
	AggregateSum = "sum"
	AggregateMax = "max"
)

// Reductions: how a metric's raw samples over a phase become one figure
// (internal/reduce does the arithmetic).
const (
	ReduceIncrease = "increase"  // a counter's growth over the phase
	ReduceMax      = "max"       // a gauge's largest sample
	ReduceMean     = "mean"      // a gauge's mean sample
	ReduceRateMean = "rate_mean" // a counter's mean rate per second
	ReduceRateMax  = "rate_max"  // a counter's fastest rate between two samples at least 0.1 s apart (reduce.minRateSpan)
	ReduceLast     = "last"      // a gauge's last sample in the phase
)

var reductions = []string{ReduceIncrease, ReduceMax, ReduceMean, ReduceRateMean, ReduceRateMax, ReduceLast}

// Metric is one column of a Monitoring table: the Series of a component,
// narrowed by Matchers and combined over its targets by Aggregate, is
// evaluated raw at the scrape step over a phase's window, reduced by
// Reduction, times Scale (a unit: bytes to Gb). The collector renders it as
// PromQL (PromQL); the reporter's dashboards render the same fields as
// their live queries.
type Metric struct {
	Key       string            `json:"key"` // unique within a set and against the system set
	Title     string            `json:"title"`
	Aggregate string            `json:"aggregate"` // AggregateSum or AggregateMax
	Series    string            `json:"series"`    // the Prometheus metric name
	Matchers  map[string]string `json:"matchers,omitempty"`
	Reduction string            `json:"reduction"`
	Scale     float64           `json:"scale"`
}

// PromQL is the metric's query for one component: selector is that
// component's label matchers (experiment, configuration, component, and
// phase for drivers), the metric's own matchers follow in name order.
func (m Metric) PromQL(selector string) string {
	var b strings.Builder
	b.WriteString(m.Aggregate + "(" + m.Series + "{" + selector)
	for _, k := range m.matcherNames() {
		fmt.Fprintf(&b, ",%s=%q", k, m.Matchers[k])
	}
	b.WriteString("})")
	return b.String()
}

func (m Metric) matcherNames() []string {
	names := make([]string, 0, len(m.Matchers))
	for k := range m.Matchers {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// selector is the series narrowed by its own matchers, in PromQL:
// vm_rows_inserted_total{type="graphite"}.
func (m Metric) selector() string {
	var parts []string
	for _, k := range m.matcherNames() {
		parts = append(parts, fmt.Sprintf("%s=%q", k, m.Matchers[k]))
	}
	if len(parts) == 0 {
		return m.Series
	}
	return m.Series + "{" + strings.Join(parts, ",") + "}"
}

// promName is what a Prometheus metric or label name may be.
var promName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// MetricSet is one catalog/metrics/<name>.json.
type MetricSet struct {
	Name    string   `json:"name"`
	Metrics []Metric `json:"metrics"`
}

var loadMetrics = sync.OnceValues(func() (map[string]MetricSet, error) { return parseMetricSets(MetricFiles) })

// MetricSetByName returns the metric set called name ("system", or an
// entry's Kubernetes.Metrics).
func MetricSetByName(name string) (MetricSet, error) {
	sets, err := loadMetrics()
	if err != nil {
		return MetricSet{}, err
	}
	s, ok := sets[name]
	if !ok {
		return MetricSet{}, fmt.Errorf("no metric set %q in catalog/metrics", name)
	}
	return s, nil
}

// parseMetricSets reads and validates every metrics/*.json of fsys. The
// application sets' keys must differ from the system set's: a component's
// system and application figures share one key space in metric_summaries.
func parseMetricSets(fsys fs.FS) (map[string]MetricSet, error) {
	paths, err := fs.Glob(fsys, "metrics/*.json")
	if err != nil {
		return nil, fmt.Errorf("metric sets: %w", err)
	}
	sets := map[string]MetricSet{}
	for _, p := range paths {
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, fmt.Errorf("metric sets: %w", err)
		}
		var s MetricSet
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			return nil, fmt.Errorf("catalog %s: %w", p, err)
		}
		if err := s.validate(); err != nil {
			return nil, fmt.Errorf("catalog %s: %w", p, err)
		}
		if want := s.Name + ".json"; path.Base(p) != want {
			return nil, fmt.Errorf("catalog %s: holds set %q, so it must be named %s", p, s.Name, want)
		}
		sets[s.Name] = s
	}
	sys, ok := sets[SystemSet]
	if !ok {
		return nil, errors.New("catalog: no metrics/system.json")
	}
	for _, s := range sets {
		if s.Name == SystemSet {
			continue
		}
		for _, m := range s.Metrics {
			if slices.ContainsFunc(sys.Metrics, func(x Metric) bool { return x.Key == m.Key }) {
				return nil, fmt.Errorf("catalog metrics/%s.json: key %q is also a system metric", s.Name, m.Key)
			}
		}
	}
	return sets, nil
}

func (s MetricSet) validate() error {
	var errs []error
	if s.Name == "" || strings.ContainsAny(s.Name, " /") {
		errs = append(errs, errors.New("name: required, without spaces or slashes"))
	}
	if len(s.Metrics) == 0 {
		errs = append(errs, errors.New("metrics: at least one"))
	}
	seen := map[string]bool{}
	for i, m := range s.Metrics {
		at := fmt.Sprintf("metrics[%d]", i)
		if m.Key == "" || seen[m.Key] {
			errs = append(errs, fmt.Errorf("%s.key: required and unique (%q)", at, m.Key))
		}
		seen[m.Key] = true
		if m.Title == "" {
			errs = append(errs, fmt.Errorf("%s.title: required", at))
		}
		if m.Aggregate != AggregateSum && m.Aggregate != AggregateMax {
			errs = append(errs, fmt.Errorf("%s.aggregate: %q is not %s or %s", at, m.Aggregate, AggregateSum, AggregateMax))
		}
		if !promName.MatchString(m.Series) {
			errs = append(errs, fmt.Errorf("%s.series: %q is not a Prometheus metric name", at, m.Series))
		}
		for k, v := range m.Matchers {
			if !promName.MatchString(k) || strings.ContainsAny(k, ":") || strings.ContainsAny(v, "\"\\\n") {
				errs = append(errs, fmt.Errorf("%s.matchers: %q=%q is not a label name and a plain value", at, k, v))
			}
		}
		if !slices.Contains(reductions, m.Reduction) {
			errs = append(errs, fmt.Errorf("%s.reduction: %q is not one of %s", at, m.Reduction, strings.Join(reductions, ", ")))
		}
		if m.Scale <= 0 {
			errs = append(errs, fmt.Errorf("%s.scale: must be positive", at))
		}
	}
	return errors.Join(errs...)
}

// ApplicationSetsOf is ApplicationSets of the DBMS named dbms.
func ApplicationSetsOf(dbms string) (map[string]MetricSet, error) {
	e, err := Lookup(dbms)
	if err != nil {
		return nil, err
	}
	return e.ApplicationSets()
}

// ApplicationSets returns the application metric set per component of a
// configuration of e (-ma): the DBMS's own set for the sut, and for a pool
// the backend's set for the sut and the pool's set for the pool.
func (e Entry) ApplicationSets() (map[string]MetricSet, error) {
	out := map[string]MetricSet{}
	sut := e
	if k := e.Kubernetes; k != nil && k.Pool != nil {
		p := k.Pool
		set, err := MetricSetByName(k.Metrics)
		if err != nil {
			return nil, err
		}
		out["pool"] = set
		if sut, err = Lookup(p.Backend); err != nil {
			return nil, err
		}
	}
	set, err := MetricSetByName(sut.MetricSet())
	if err != nil {
		return nil, err
	}
	out["sut"] = set
	return out, nil
}
