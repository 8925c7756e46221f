package prom

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/testenv"
)

// countingTransport counts the requests a Client makes (one per chunk).
type countingTransport struct{ n atomic.Int32 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func TestServerScrapesAndQueryRangeInChunks(t *testing.T) {
	if _, err := Binary(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	// The target: a counter that goes up at every scrape.
	reg := prometheus.NewRegistry()
	ticks := prometheus.NewCounter(prometheus.CounterOpts{Name: "benchq_test_scrapes_total", Help: "Scrapes seen."})
	reg.MustRegister(ticks)
	metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ticks.Inc()
		metrics.ServeHTTP(w, r)
	}))
	defer app.Close()
	appAddr := strings.TrimPrefix(app.URL, "http://")

	dir := t.TempDir()
	srv, err := StartServer(ctx, dir, ServerOptions{Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	// No lifecycle API: any local user could stop it (a second start,
	// below, reloads it with SIGHUP).
	if resp, err := http.Post(srv.URL()+"/-/quit", "text/plain", nil); err != nil || resp.StatusCode == http.StatusOK {
		t.Errorf("POST /-/quit: %v %v; want it refused", resp, err)
	} else {
		resp.Body.Close()
	}
	if err := srv.Targets.Write("app", Group{Targets: []string{appAddr}, Labels: map[string]string{LabelExperiment: "e1", LabelComponent: "sut", LabelPhase: "load"}}); err != nil {
		t.Fatal(err)
	}
	client := &Client{URL: srv.URL()}
	testenv.Eventually(t, time.Minute, func() error {
		ts, err := client.Targets(ctx)
		if err != nil {
			return err
		}
		for _, tg := range ts {
			if strings.Contains(tg.ScrapeURL, appAddr) && tg.Health == "up" && tg.Labels[LabelExperiment] == "e1" {
				return nil
			}
		}
		return fmt.Errorf("target %s not up: %+v", appAddr, ts)
	})

	// Eight points of the counter at the scrape step.
	const query = `benchq_test_scrapes_total{experiment="e1"}`
	var first time.Time
	testenv.Eventually(t, time.Minute, func() error {
		now := time.Now()
		s, err := client.QueryRange(ctx, query, now.Add(-time.Minute), now, time.Second)
		if err != nil {
			return err
		}
		first = s[0].Samples[0].T
		if n := len(s[0].Samples); n < 9 {
			return fmt.Errorf("%d points", n)
		}
		return nil
	})
	start, end := first, first.Add(7*time.Second)
	whole, err := client.QueryRange(ctx, query, start, end, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	counting := &countingTransport{}
	chunked, err := (&Client{URL: srv.URL(), MaxPoints: 3, HTTP: &http.Client{Transport: counting}}).QueryRange(ctx, query, start, end, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if n := counting.n.Load(); n != 3 {
		t.Errorf("%d requests for 8 points at 3 a chunk, want 3", n)
	}
	if len(whole) != 1 || len(chunked) != 1 {
		t.Fatalf("series: whole %d, chunked %d", len(whole), len(chunked))
	}
	if l := whole[0].Labels; l[LabelExperiment] != "e1" || l[LabelComponent] != "sut" || l[LabelPhase] != "load" || l["__name__"] != "benchq_test_scrapes_total" {
		t.Errorf("labels %v", l)
	}
	w, c := whole[0].Samples, chunked[0].Samples
	if len(w) != 8 {
		t.Errorf("%d points in the unchunked answer, want 8: %v", len(w), w)
	}
	if fmt.Sprint(w) != fmt.Sprint(c) {
		t.Errorf("chunked answer differs:\nwhole   %v\nchunked %v", w, c)
	}
	for i := 1; i < len(c); i++ {
		if d := c[i].T.Sub(c[i-1].T); d != time.Second || c[i].V < c[i-1].V {
			t.Errorf("points %d..%d: %v then %v", i-1, i, c[i-1], c[i])
		}
	}

	// On the scrapes' grid every point is one scrape, dated at it: the
	// counter goes up by exactly one from point to point (no scrape seen
	// twice or skipped), and timestamp() of each point is its date.
	last, err := client.LastScrapes(ctx, query, start, end, time.Second)
	if err != nil || len(last) != 1 || last[appAddr].Scrape.IsZero() {
		t.Fatalf("LastScrapes = %v, %v; want one scrape time of %s", last, err, appAddr)
	}
	scraped := "max(timestamp(" + query + "))"
	on, err := client.QueryScrapes(ctx, query, scraped, last[appAddr].Scrape, start, end, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	stamps, err := client.QueryScrapes(ctx, "timestamp("+query+")", scraped, last[appAddr].Scrape, start, end, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	p, ts := on[0].Samples, stamps[0].Samples
	if len(p) < 7 || len(p) != len(ts) || p[0].T.After(start) {
		t.Fatalf("%d points on the scrapes' grid (%d timestamps), first at %v: want 8 from before %v", len(p), len(ts), p[0].T, start)
	}
	for i := range p {
		if at := time.UnixMilli(int64(math.Round(ts[i].V * 1000))); !ts[i].T.Equal(p[i].T) || !p[i].T.Equal(at) {
			t.Errorf("point %d dated %v, its scrape at %v", i, p[i].T, at)
		}
		if i > 0 && p[i].V != p[i-1].V+1 {
			t.Errorf("points %d..%d: %v then %v, want one scrape apart", i-1, i, p[i-1].V, p[i].V)
		}
	}

	// Why a metric is missing.
	if _, err := client.QueryRange(ctx, `benchq_no_such_metric`, start, end, time.Second); !errors.Is(err, ErrNoData) {
		t.Errorf("absent metric: %v, want ErrNoData", err)
	}
	if _, err := client.QueryRange(ctx, `rate(`, start, end, time.Second); !errors.Is(err, ErrRejected) {
		t.Errorf("bad PromQL: %v, want ErrRejected", err)
	}

	// The target's file removed, Prometheus drops the target.
	if err := srv.Targets.Remove("app"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() error {
		ts, err := client.Targets(ctx)
		if err != nil {
			return err
		}
		if len(ts) != 0 {
			return fmt.Errorf("targets left: %+v", ts)
		}
		return nil
	})

	// A second start keeps the running server; Stop ends it.
	again, err := StartServer(ctx, dir, ServerOptions{})
	if err != nil || again.Pid != srv.Pid || again.Port != srv.Port {
		t.Errorf("second start = %+v, %v; want the running %+v", again, err, srv)
	}
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if procs.Alive(srv.Pid) {
		t.Error("prometheus alive after Stop")
	}
	if _, err := client.QueryRange(ctx, query, start, end, time.Second); !errors.Is(err, ErrUnreachable) {
		t.Errorf("stopped server: %v, want ErrUnreachable", err)
	}
}

// A port the caller chose that another process holds: Prometheus exits,
// and the error says the port was taken (localdb.ErrAddrInUse) after the
// start's own log lines, with no retry on another port.
func TestServerOnATakenPortSaysSo(t *testing.T) {
	if _, err := Binary(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	port := testenv.HeldPort(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	srv, err := StartServer(ctx, t.TempDir(), ServerOptions{Port: port})
	if err == nil {
		_ = srv.Stop(context.Background())
		t.Fatalf("prometheus started on port %d, which another process holds", port)
	}
	if !errors.Is(err, localdb.ErrAddrInUse) || !strings.Contains(err.Error(), strconv.Itoa(port)) {
		t.Errorf("error %q: want the taken port %d named as such", err, port)
	}
}
