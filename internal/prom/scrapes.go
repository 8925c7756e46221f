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
// step, one of whose scrapes was at scrape: the grid runs three quarters of
// a step after each scrape is due, from the last one at or before start, so
// that a scrape that started late (Prometheus' scheduler on a busy machine)
// is still on the grid. stamps is the target's scrape times as a query
// (max(timestamp(series{matchers}))), evaluated on the same grid: each
// point is dated at the scrape it carries, and a point that carries the
// same scrape as the one before is dropped. With a quarter step and dates
// taken from the grid, as before, a scrape more than a quarter step late
// left its grid point with the scrape before it, stored again as a sample
// Prometheus never took (a counter's next interval then looked twice as
// fast), and the late scrape itself was missed. A scrape later than three
// quarters of a step can still be missed (its interval's work then shows
// in the next one); none is stored twice. Without the stamps (their query
// failed or found nothing), points are dated back by the lag.
func (c *Client) QueryScrapes(ctx context.Context, query, stamps string, scrape, start, end time.Time, step time.Duration) ([]Series, error) {
	lag := step * 3 / 4
	from, to := scrapeAtOrBefore(scrape, start, step).Add(lag), end.Add(lag)
	series, err := c.QueryRange(ctx, query, from, to, step)
	if err != nil {
		return series, err
	}
	scraped := map[int64]time.Time{} // grid point (ms) → the scrape it carries
	if st, err := c.QueryRange(ctx, stamps, from, to, step); err == nil && len(st) == 1 {
		for _, p := range st[0].Samples {
			scraped[p.T.UnixMilli()] = time.UnixMilli(int64(math.Round(p.V * 1000))).UTC()
		}
	}
	for i := range series {
		if len(scraped) == 0 {
			for j := range series[i].Samples {
				series[i].Samples[j].T = series[i].Samples[j].T.Add(-lag)
			}
			continue
		}
		kept := series[i].Samples[:0]
		var last time.Time
		for _, p := range series[i].Samples {
			t, ok := scraped[p.T.UnixMilli()]
			if !ok || t.Equal(last) {
				continue
			}
			last, p.T = t, t
			kept = append(kept, p)
		}
		series[i].Samples = kept
	}
	return series, nil
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
