package prom

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Prometheus evaluates a query_range at grid points and takes, at each, the
// latest sample at or before it. On a grid out of step with the scrapes every
// point carries a sample up to one step old and is dated at the grid point:
// the series comes out late by half a step on average, and a counter's
// increase over a short phase loses the work of its last half step (about
// 5 % of a 10-second phase at a 1 s scrape). The functions here put the grid
// just after each target's scrapes instead and date every point back to the
// scrape it carries, so the samples are the scrapes themselves.

// Scraped is what LastScrapes tells of one scrape target (instance).
type Scraped struct {
	Scrape time.Time // one of its scrapes in the range
	// Pod is the pod label its series share: which driver agent or SUT
	// pod exported them; "" when they have none or differ.
	Pod string
}

// LastScrapes returns, for each instance (scrape target) with series that
// selector (a vector selector of one metric, `name{matchers}`: timestamp()
// drops the name, so two metrics' series could collide) matches in
// [start, end], the time of one of its scrapes there and the pod its
// series belong to.
func (c *Client) LastScrapes(ctx context.Context, selector string, start, end time.Time, step time.Duration) (map[string]Scraped, error) {
	series, err := c.QueryRange(ctx, fmt.Sprintf("max by (instance, pod) (timestamp(%s))", selector), start, end, step)
	if err != nil {
		return nil, err
	}
	out := map[string]Scraped{}
	for _, s := range series {
		n := len(s.Samples)
		if n == 0 {
			continue
		}
		instance := s.Labels["instance"]
		t := Scraped{Scrape: time.UnixMilli(int64(math.Round(s.Samples[n-1].V * 1000))).UTC(), Pod: s.Labels["pod"]}
		if seen, ok := out[instance]; ok && seen.Pod != t.Pod {
			t.Pod = "" // two pods behind one target: no one pod
		}
		out[instance] = t
	}
	return out, nil
}

// QueryScrapes is QueryRange over [start, end] for a target scraped every
// step, one of whose scrapes was at scrape: the grid runs a quarter step
// after each scrape from the last one at or before start (a quarter step
// absorbs the scheduler's jitter), and each point is dated back to its
// scrape.
func (c *Client) QueryScrapes(ctx context.Context, query string, scrape, start, end time.Time, step time.Duration) ([]Series, error) {
	lag := step / 4
	series, err := c.QueryRange(ctx, query, scrapeAtOrBefore(scrape, start, step).Add(lag), end.Add(lag), step)
	for _, s := range series {
		for i := range s.Samples {
			s.Samples[i].T = s.Samples[i].T.Add(-lag)
		}
	}
	return series, err
}

// scrapeAtOrBefore is the last instant at or before t on the grid of
// scrape + k·step.
func scrapeAtOrBefore(scrape, t time.Time, step time.Duration) time.Time {
	first := scrape.Add(-(scrape.Sub(t) / step) * step)
	if first.After(t) {
		first = first.Add(-step)
	}
	return first
}
