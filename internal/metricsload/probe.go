package metricsload

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/benchq/benchq/catalog"
)

// Probe is the read side of the workload: every Every it asks a SUT with a
// Prometheus-style HTTP API (VictoriaMetrics, Prometheus) for the last
// Window of one series (a range query at one-second steps) and records how
// long the answer took, so that a report can show whether queries still
// run while ingest is overloaded.
type Probe struct {
	URL   string // the API's base, e.g. http://127.0.0.1:8428
	Path  string // its range query (default /api/v1/query_range)
	Query string // one series, e.g. haggar1.agent1.metric1 (SeriesName)
	// API is the query's language, the catalog's tsdb.query_api:
	// catalog.QueryPrometheus (also "") or catalog.QueryGraphite (Path is
	// graphite-web's /render: target, from, until, format=json).
	API    string
	Window time.Duration // default 1 minute
	Every  time.Duration // default 1 second
	// Timeout bounds one query (default Every): a slower answer is a
	// failed reading, not a stalled probe.
	Timeout time.Duration
}

// Reading is one query's outcome.
type Reading struct {
	At      time.Time     // when it was sent
	Latency time.Duration // until the whole answer was read
	Points  int           // points in the answer
	Err     error         // nil: answered
}

// Run queries until ctx ends, calling each with every reading (but one
// the end cut short).
func (p Probe) Run(ctx context.Context, each func(Reading)) {
	client, window, every := p.settings()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		r := p.once(ctx, client, window)
		if r.Err != nil && ctx.Err() != nil {
			return // cut short by the end, not by the SUT
		}
		each(r)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Read queries once.
func (p Probe) Read(ctx context.Context) Reading {
	client, window, _ := p.settings()
	return p.once(ctx, client, window)
}

// settings are the probe's, defaults filled in.
func (p Probe) settings() (client *http.Client, window, every time.Duration) {
	window, every = p.Window, p.Every
	if window <= 0 {
		window = time.Minute
	}
	if every <= 0 {
		every = time.Second
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = every
	}
	return &http.Client{Timeout: timeout}, window, every
}

func (p Probe) once(ctx context.Context, client *http.Client, window time.Duration) Reading {
	at := time.Now()
	from, until := strconv.FormatInt(at.Add(-window).Unix(), 10), strconv.FormatInt(at.Unix(), 10)
	q := url.Values{"query": {p.Query}, "start": {from}, "end": {until}, "step": {"1s"}}
	if p.API == catalog.QueryGraphite {
		q = url.Values{"target": {p.Query}, "from": {from}, "until": {until}, "format": {"json"}}
	}
	r := Reading{At: at}
	path := p.Path
	if path == "" {
		path = "/api/v1/query_range"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+path+"?"+q.Encode(), nil)
	if err != nil {
		r.Err = err
		return r
	}
	resp, err := client.Do(req)
	if err != nil {
		r.Err, r.Latency = fmt.Errorf("query %s: %w", p.Query, err), time.Since(at)
		return r
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	r.Latency = time.Since(at)
	if err != nil {
		r.Err = fmt.Errorf("query %s: %w", p.Query, err)
		return r
	}
	if resp.StatusCode != http.StatusOK {
		r.Err = fmt.Errorf("query %s: %s: %.200s", p.Query, resp.Status, body)
		return r
	}
	if r.Points, err = points(body, p.API); err != nil {
		r.Err = fmt.Errorf("query %s: %w", p.Query, err)
	}
	return r
}

// points counts the points of an answer: a Prometheus range query's
// values, or the datapoints of graphite-web's JSON that are not null
// (it answers a point per step of the range, null where none is stored).
func points(body []byte, api string) (int, error) {
	n := 0
	if api == catalog.QueryGraphite {
		var series []struct {
			Datapoints [][2]*float64 `json:"datapoints"`
		}
		if err := json.Unmarshal(body, &series); err != nil {
			return 0, err
		}
		for _, s := range series {
			for _, p := range s.Datapoints {
				if p[0] != nil {
					n++
				}
			}
		}
		return n, nil
	}
	var answer struct {
		Data struct {
			Result []struct {
				Values [][2]any `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return 0, err
	}
	for _, s := range answer.Data.Result {
		n += len(s.Values)
	}
	return n, nil
}
