package main

// What a phase's pull asks Prometheus: a column per metric and component,
// their selectors, and the query with its answer.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/prom"
)

// unreachablePrefix starts every missing reason that a re-pull may cure.
const unreachablePrefix = "Prometheus at "

// column is one metric of one component of a phase.
type column struct {
	component, section string
	position           int
	metric             catalog.Metric
}

// columns lists what the phase's monitoring level asks for (MONSPEC): -m
// the system set of the sut (and pool), -mc also of the phase's driver,
// -ma the application set(s).
func columns(ph endedPhase) ([]column, error) {
	var comps []string
	if ph.monitoring.SUT || ph.monitoring.Cluster {
		comps = append(comps, "sut")
		if ph.pool {
			comps = append(comps, "pool")
		}
	}
	if ph.monitoring.Cluster {
		comps = append(comps, driverComponent(ph.kind))
	}
	var out []column
	add := func(comp, section string, set catalog.MetricSet) {
		for i, m := range set.Metrics {
			out = append(out, column{comp, section, i, m})
		}
	}
	if len(comps) > 0 {
		sys, err := catalog.MetricSetByName(catalog.SystemSet)
		if err != nil {
			return nil, err
		}
		for _, c := range comps {
			add(c, "system", sys)
		}
	}
	if ph.monitoring.Application {
		sets, err := catalog.ApplicationSetsOf(ph.dbms)
		if err != nil {
			return nil, err
		}
		add("sut", "application", sets["sut"])
		if set, ok := sets["pool"]; ok && ph.pool {
			add("pool", "application", set)
		}
	}
	return out, nil
}

func driverComponent(kind string) string {
	if kind == contracts.KindLoad {
		return "loader"
	}
	return "benchmarker"
}

// selector is the label matchers of a component in the phase; SUT series
// have no phase label (a SUT lives across phases).
func selector(ph endedPhase, component string) string {
	s := fmt.Sprintf(`experiment=%q,configuration=%q,component=%q`, ph.code, ph.configuration, component)
	if component == "loader" || component == "benchmarker" {
		s += fmt.Sprintf(`,phase=%q`, ph.phase)
	}
	return s
}

type queryAnswer struct {
	series []prom.Series
	err    error // its text is the missing reason
}

// query runs a catalog metric for the component that sel selects, on the
// grid of each target's scrapes (prom.QueryScrapes): one query_range per
// target, restricted to it by its instance label, which each answer's
// series then carry. When the targets' scrapes cannot be found, it runs on
// the plain grid, whose answer says why. Once Prometheus was found down
// during this pull (down), the remaining queries are not tried: one timeout
// per phase, not one per metric.
func (p *puller) query(ctx context.Context, m catalog.Metric, sel string, from, to time.Time, down string) queryAnswer {
	if p.promURL == "" {
		return queryAnswer{err: errors.New("no Prometheus configured (BENCHQ_PROMETHEUS_URL is unset)")}
	}
	if down != "" {
		return queryAnswer{err: errors.New(down)}
	}
	qctx, cancel := context.WithTimeout(ctx, p.queryTimeout)
	defer cancel()
	var scrapes map[string]prom.Scraped
	scrapes, err := p.client.LastScrapes(qctx, m.Series+"{"+sel+"}", from, to, p.step)
	if err != nil {
		p.log.Debug("scrape times not found: querying on the plain grid", "metric", m.Series, "err", err)
	}
	if len(scrapes) == 0 {
		series, err := p.client.QueryRange(qctx, m.PromQL(sel), from, to, p.step)
		return answer(series, err, p.promURL)
	}
	instances := make([]string, 0, len(scrapes))
	for instance := range scrapes {
		instances = append(instances, instance)
	}
	sort.Strings(instances)
	var all []prom.Series
	for _, instance := range instances {
		target := scrapes[instance]
		one := fmt.Sprintf(`%s,instance=%q`, sel, instance)
		stamps := fmt.Sprintf("max(timestamp(%s{%s}))", m.Series, one)
		series, err := p.client.QueryScrapes(qctx, m.PromQL(one), stamps, target.Scrape, from, to, p.step)
		if err != nil {
			return answer(nil, err, p.promURL)
		}
		for _, s := range series {
			if _, ok := s.Labels["instance"]; !ok {
				s.Labels["instance"] = instance // an aggregation dropped it
			}
			if _, ok := s.Labels["pod"]; !ok && target.Pod != "" && len(series) == 1 {
				s.Labels["pod"] = target.Pod // the one pod of the target: a driver's agent
			}
		}
		all = append(all, series...)
	}
	return answer(all, nil, p.promURL)
}

// answer turns a query's outcome into figures or a missing reason.
func answer(series []prom.Series, err error, promURL string) queryAnswer {
	switch {
	case err == nil:
		return queryAnswer{series: series}
	case errors.Is(err, prom.ErrNoData):
		return queryAnswer{err: errors.New("no samples: target or exporter not running?")}
	case errors.Is(err, prom.ErrUnreachable) || errors.Is(err, context.DeadlineExceeded):
		// The reason stands for every metric of the phase (see query's
		// down): it names the cause, not the query that met it.
		var qe *prom.QueryError
		if errors.As(err, &qe) {
			err = qe.Err
		}
		return queryAnswer{err: fmt.Errorf("%s%s unreachable: %v", unreachablePrefix, promURL, err)}
	default:
		return queryAnswer{err: fmt.Errorf("the query was rejected by Prometheus: %v", err)}
	}
}
