package prom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/benchq/benchq/internal/reduce"
)

// MaxPointsPerSeries is Prometheus' limit on the points of one series in a
// query_range answer ("exceeded maximum resolution of 11,000 points").
const MaxPointsPerSeries = 11000

// Why a metric could not be had; a *QueryError wraps one of them.
var (
	ErrUnreachable = errors.New("prometheus unreachable")
	ErrNoData      = errors.New("no data")
	ErrRejected    = errors.New("prometheus rejected the query")
)

// QueryError says which query failed over which window, and why (errors.Is
// with ErrUnreachable, ErrNoData or ErrRejected).
type QueryError struct {
	Query      string
	Start, End time.Time
	Err        error
}

func (e *QueryError) Error() string {
	return fmt.Sprintf("query %q over %s..%s: %v", e.Query, e.Start.UTC().Format(time.RFC3339), e.End.UTC().Format(time.RFC3339), e.Err)
}

func (e *QueryError) Unwrap() error { return e.Err }

// Sample is one point of a series, the type internal/reduce works on.
type Sample = reduce.Sample

// Series is one labelled series of a query's answer, its samples in time
// order.
type Series struct {
	Labels  map[string]string
	Samples []Sample
}

// Client queries a Prometheus' HTTP API.
type Client struct {
	URL  string       // base URL, e.g. Server.URL()
	HTTP *http.Client // nil: http.DefaultClient
	// MaxPoints caps the points per series of one request (0:
	// MaxPointsPerSeries); longer windows are split into chunks.
	MaxPoints int
}

// QueryRange evaluates query at start, start+step, ... up to end, in as many
// requests as MaxPoints needs. Chunks continue the same grid and do not
// overlap, so every point comes once; the series of all chunks are merged by
// label set. An answer without any sample is an ErrNoData error.
func (c *Client) QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]Series, error) {
	if step <= 0 || end.Before(start) {
		return nil, &QueryError{query, start, end, fmt.Errorf("%w: step %s, window %s..%s", ErrRejected, step, start, end)}
	}
	merged := map[string]*Series{}
	for _, ch := range chunks(start, end, step, c.maxPoints()) {
		part, err := c.queryRange(ctx, query, ch[0], ch[1], step)
		if err != nil {
			return nil, &QueryError{query, start, end, err}
		}
		mergeSeries(merged, part)
	}
	if len(merged) == 0 {
		return nil, &QueryError{query, start, end, ErrNoData}
	}
	out := make([]Series, 0, len(merged))
	for _, s := range merged {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return labelKey(out[i].Labels) < labelKey(out[j].Labels) })
	return out, nil
}

func (c *Client) maxPoints() int {
	if c.MaxPoints <= 0 {
		return MaxPointsPerSeries
	}
	return c.MaxPoints
}

// chunks splits [start, end] into windows of at most maxPoints grid points
// each (points at start + k·step); each window starts one step after the
// previous one's last point.
func chunks(start, end time.Time, step time.Duration, maxPoints int) [][2]time.Time {
	span := step * time.Duration(maxPoints-1)
	var out [][2]time.Time
	for s := start; !s.After(end); {
		e := s.Add(span)
		if e.After(end) {
			e = end
		}
		out = append(out, [2]time.Time{s, e})
		// The next grid point after e.
		s = s.Add((e.Sub(s)/step + 1) * step)
	}
	return out
}

// mergeSeries appends part's samples to the series of the same labels in
// into, dropping any sample not later than the series' last one (a chunk
// boundary seen twice).
func mergeSeries(into map[string]*Series, part []Series) {
	for _, p := range part {
		k := labelKey(p.Labels)
		s, ok := into[k]
		if !ok {
			s = &Series{Labels: p.Labels}
			into[k] = s
		}
		for _, smp := range p.Samples {
			if n := len(s.Samples); n > 0 && !smp.T.After(s.Samples[n-1].T) {
				continue
			}
			s.Samples = append(s.Samples, smp)
		}
	}
}

func labelKey(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + strconv.Quote(l[k]) + ",")
	}
	return b.String()
}

// apiResponse is the envelope of every /api/v1 answer.
type apiResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
}

func (c *Client) queryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]Series, error) {
	form := url.Values{
		"query": {query},
		"start": {unixSeconds(start)},
		"end":   {unixSeconds(end)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
		} `json:"result"`
	}
	if err := c.call(ctx, "/api/v1/query_range", form, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "matrix" {
		return nil, fmt.Errorf("%w: result type %q, want matrix", ErrRejected, data.ResultType)
	}
	out := make([]Series, 0, len(data.Result))
	for _, r := range data.Result {
		s := Series{Labels: r.Metric, Samples: make([]Sample, 0, len(r.Values))}
		for _, v := range r.Values {
			smp, err := parseSample(v)
			if err != nil {
				return nil, err
			}
			s.Samples = append(s.Samples, smp)
		}
		out = append(out, s)
	}
	return out, nil
}

// parseSample reads [unix seconds (ms precision), "value"].
func parseSample(v [2]any) (Sample, error) {
	ts, ok := v[0].(float64)
	str, ok2 := v[1].(string)
	if !ok || !ok2 {
		return Sample{}, fmt.Errorf("malformed sample %v", v)
	}
	f, err := strconv.ParseFloat(str, 64) // NaN, +Inf and -Inf included
	if err != nil {
		return Sample{}, fmt.Errorf("malformed sample %v: %w", v, err)
	}
	return Sample{T: time.UnixMilli(int64(math.Round(ts * 1000))).UTC(), V: f}, nil
}

func unixSeconds(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

// call POSTs form to path and decodes the answer's data into out.
func (c *Client) call(ctx context.Context, path string, form url.Values, out any) error {
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	var body io.Reader
	method := http.MethodGet
	if form != nil {
		method, body = http.MethodPost, strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.URL, "/")+path, body)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRejected, err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	defer resp.Body.Close()
	var r apiResponse
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		// Not the API's JSON: something else answers on that address, or
		// Prometheus failed before producing an answer.
		return fmt.Errorf("%w: %s: %s", ErrUnreachable, resp.Status, err)
	}
	if r.Status != "success" {
		kind := ErrRejected
		if resp.StatusCode == http.StatusServiceUnavailable || r.ErrorType == "unavailable" {
			kind = ErrUnreachable
		}
		return fmt.Errorf("%w: %s: %s", kind, r.ErrorType, r.Error)
	}
	if err := json.Unmarshal(r.Data, out); err != nil {
		return fmt.Errorf("%w: decode %s: %s", ErrRejected, path, err)
	}
	return nil
}

// Target is one active scrape target.
type Target struct {
	ScrapeURL string            `json:"scrapeUrl"`
	Health    string            `json:"health"` // up | down | unknown
	Labels    map[string]string `json:"labels"`
	LastError string            `json:"lastError"`
}

// Targets lists the active targets (for a status line: how many are up).
func (c *Client) Targets(ctx context.Context) ([]Target, error) {
	var data struct {
		ActiveTargets []Target `json:"activeTargets"`
	}
	if err := c.call(ctx, "/api/v1/targets?state=active", nil, &data); err != nil {
		return nil, err
	}
	return data.ActiveTargets, nil
}
