package metricsload_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/metricsload"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/prom"
)

// sumSeconds is what the per-second figures add up to.
func sumSeconds(r metricsload.Result) (sent, failed int64) {
	for _, s := range r.Seconds {
		sent, failed = sent+s.Sent, failed+s.Failed
	}
	return sent, failed
}

// A real Prometheus with its remote-write receiver stores every point the
// generator counted as sent: its own count of the samples equals ours.
func TestRemoteWriteIntoPrometheus(t *testing.T) {
	if _, err := prom.Binary(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	srv, err := prom.StartServer(ctx, t.TempDir(), prom.ServerOptions{Retention: time.Hour, RemoteWriteReceiver: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })

	cfg := metricsload.Config{Protocol: metricsload.RemoteWrite, Target: srv.URL() + "/api/v1/write", Agents: 3, Metrics: 40,
		FlushInterval: 200 * time.Millisecond, Jitter: 100 * time.Millisecond, Prefix: "benchq_rw_test", Duration: 2 * time.Second}
	res, err := metricsload.Run(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 0 || res.Sent == 0 || res.Sent%40 != 0 {
		t.Fatalf("sent %d, failed %d (%v)", res.Sent, res.Failed, res.Errors)
	}
	if sent, failed := sumSeconds(res); sent != res.Sent || failed != 0 {
		t.Errorf("the seconds add up to %d sent, %d failed; the run %d", sent, failed, res.Sent)
	}
	c := prom.Client{URL: srv.URL()}
	at := time.Now()
	for q, want := range map[string]int64{
		`sum(count_over_time(benchq_rw_test[10m]))`:                          res.Sent,
		`count(count_over_time(benchq_rw_test[10m]))`:                        3 * 40,
		`max(max_over_time(benchq_rw_test[10m]))`:                            res.Sent / (3 * 40) * 3, // an upper bound, checked below
		`count(count_over_time(benchq_rw_test{agent="3",metric="40"}[10m]))`: 1,
	} {
		series, err := c.QueryRange(ctx, q, at, at, time.Second)
		if err != nil || len(series) != 1 || len(series[0].Samples) != 1 {
			t.Errorf("%s: %v, %+v", q, err, series)
			continue
		}
		got := int64(series[0].Samples[0].V)
		if strings.HasPrefix(q, "max(") {
			// Values count an agent's flushes: at most the run's flushes.
			if got < 1 || got > int64(cfg.Duration/cfg.FlushInterval)+1 {
				t.Errorf("%s = %d: not a flush count", q, got)
			}
			continue
		}
		if got != want {
			t.Errorf("%s = %d, want %d", q, got, want)
		}
	}
}

var carbonLine = regexp.MustCompile(`^carbontest\.agent([0-9]+)\.metric([0-9]+) ([0-9]+) ([0-9]+)$`)

// Carbon's plaintext protocol, checked line by line by a listener of the
// test (the framing only: the carbon and VictoriaMetrics SUTs that store it
// are not built yet).
func TestCarbonPlaintextLines(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	lines, bad := 0, []string{}
	paths := map[string]bool{}
	var conns sync.WaitGroup
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				defer conn.Close()
				sc := bufio.NewScanner(conn)
				for sc.Scan() {
					m := carbonLine.FindStringSubmatch(sc.Text())
					mu.Lock()
					lines++
					if m == nil || m[4] == "0" {
						bad = append(bad, sc.Text())
					} else {
						paths[fmt.Sprintf("%s.%s", m[1], m[2])] = true
					}
					mu.Unlock()
				}
			}()
		}
	}()
	cfg := metricsload.Config{Protocol: metricsload.Carbon, Target: ln.Addr().String(), Agents: 4, Metrics: 25,
		FlushInterval: 100 * time.Millisecond, Jitter: 50 * time.Millisecond, SpawnInterval: 10 * time.Millisecond, Prefix: "carbontest", Duration: 1200 * time.Millisecond}
	res, err := metricsload.Run(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	conns.Wait() // the agents closed their connections: every line is read
	mu.Lock()
	defer mu.Unlock()
	if res.Failed != 0 || res.Sent == 0 || int64(lines) != res.Sent || len(bad) > 0 || len(paths) != 100 {
		t.Errorf("sent %d, failed %d; received %d lines, %d paths, malformed: %q", res.Sent, res.Failed, lines, len(paths), bad)
	}
}

// A target that is not there: every flush fails, is counted failed, and
// the error names the target; nothing is counted sent.
func TestUnreachableTargetIsCountedFailed(t *testing.T) {
	port, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for _, proto := range []string{metricsload.Carbon, metricsload.RemoteWrite} {
		target := addr
		if proto == metricsload.RemoteWrite {
			target = "http://" + addr + "/api/v1/write"
		}
		res, err := metricsload.Run(t.Context(), metricsload.Config{Protocol: proto, Target: target, Agents: 2, Metrics: 10,
			FlushInterval: 100 * time.Millisecond, Prefix: "x", Duration: 350 * time.Millisecond}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Sent != 0 || res.Failed < 20 || len(res.Errors) == 0 || !strings.Contains(res.Errors[0], addr) {
			t.Errorf("%s: sent %d, failed %d, errors %q", proto, res.Sent, res.Failed, res.Errors)
		}
	}
}

func TestConfigCheckNamesTheProblem(t *testing.T) {
	err := metricsload.Config{Protocol: "graphite", Agents: 0, Metrics: 10}.Check()
	for _, want := range []string{`protocol "graphite"`, "no target", "agents 0", "flush interval", "no prefix"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: does not say %q", err, want)
		}
	}
}

// Carbon into a real VictoriaMetrics: its own counter of rows inserted
// over Graphite, and a count of the stored points by query, both equal
// what the generator counted as sent.
func TestCarbonIntoVictoriaMetrics(t *testing.T) {
	if _, err := localdb.VictoriaMetricsBinary(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	vm, err := localdb.StartVictoriaMetrics(ctx, t.TempDir(), 0, localdb.VictoriaMetricsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = vm.Stop(context.Background()) })

	// The read side runs beside the load: a query of one series a second.
	probeCtx, stopProbe := context.WithCancel(ctx)
	var readings []metricsload.Reading
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		metricsload.Probe{URL: vm.URL(), Query: "vmtest.agent1.metric1", Every: 500 * time.Millisecond}.Run(probeCtx, func(r metricsload.Reading) {
			readings = append(readings, r)
		})
	}()
	res, err := metricsload.Run(ctx, metricsload.Config{Protocol: metricsload.Carbon, Target: vm.GraphiteAddr(), Agents: 3, Metrics: 30,
		FlushInterval: 250 * time.Millisecond, Jitter: 100 * time.Millisecond, Prefix: "vmtest", Duration: 1500 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 0 || res.Sent == 0 {
		t.Fatalf("sent %d, failed %d (%v)", res.Sent, res.Failed, res.Errors)
	}
	// Carbon has no acknowledgement: wait until the counter stops short of
	// nothing, then make the newest points queryable.
	var inserted int64
	deadline := time.Now().Add(30 * time.Second)
	for {
		body, err := vm.Get(ctx, "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		inserted = counter(string(body), `vm_rows_inserted_total{type="graphite"}`)
		if inserted >= res.Sent || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if inserted != res.Sent {
		t.Errorf("vm_rows_inserted_total{type=\"graphite\"} = %d, sent %d", inserted, res.Sent)
	}
	if _, err := vm.Get(ctx, "/internal/force_flush"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // -search.latencyOffset
	q := url.QueryEscape(`sum(count_over_time({__name__=~"vmtest[.].*"}[10m]))`)
	body, err := vm.Get(ctx, "/api/v1/query?query="+q)
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil || len(answer.Data.Result) != 1 {
		t.Fatalf("%s: %v", body, err)
	}
	if stored, _ := answer.Data.Result[0].Value[1].(string); stored != strconv.FormatInt(res.Sent, 10) {
		t.Errorf("points stored (by query) %s, sent %d", stored, res.Sent)
	}

	// Every reading answered, each with a latency; the last ones (after
	// the flush) saw the series.
	time.Sleep(600 * time.Millisecond)
	stopProbe()
	<-probed
	if len(readings) < 4 {
		t.Fatalf("%d readings", len(readings))
	}
	for _, r := range readings {
		if r.Err != nil || r.Latency <= 0 {
			t.Errorf("reading at %s: %v, %s", r.At.Format("15:04:05.000"), r.Err, r.Latency)
		}
	}
	if last := readings[len(readings)-1]; last.Points == 0 {
		t.Errorf("the last reading found no point of vmtest.agent1.metric1: %+v", last)
	}
}

// counter is the value of one series line of a /metrics page, or -1.
func counter(page, series string) int64 {
	for _, l := range strings.Split(page, "\n") {
		if rest, ok := strings.CutPrefix(l, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return int64(v)
			}
		}
	}
	return -1
}

// The probe speaks graphite-web's /render too: points the generator sent
// to a real carbon-cache come back from graphite-web, read from whisper or
// from the cache's memory (carbonlink), and an unknown series is an empty
// answer, not an error.
func TestProbeReadsGraphite(t *testing.T) {
	if _, err := localdb.CarbonHome(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	g, err := localdb.StartGraphite(ctx, t.TempDir(), localdb.GraphiteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Stop(context.Background()) })
	res, err := metricsload.Run(ctx, metricsload.Config{Protocol: metricsload.Carbon, Target: g.Front().Addr(), Agents: 1, Metrics: 5,
		FlushInterval: 250 * time.Millisecond, Prefix: "gtest", Duration: 1200 * time.Millisecond}, nil)
	if err != nil || res.Sent == 0 {
		t.Fatalf("sent %d: %v", res.Sent, err)
	}
	read := func(series string) metricsload.Reading {
		probeCtx, stop := context.WithCancel(ctx)
		defer stop()
		var r metricsload.Reading
		metricsload.Probe{URL: g.Web.URL(), Path: "/render", API: catalog.QueryGraphite, Query: series}.Run(probeCtx, func(got metricsload.Reading) {
			r = got
			stop()
		})
		return r
	}
	var r metricsload.Reading
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if r = read(metricsload.SeriesName(metricsload.Carbon, "gtest", 1, 1)); r.Err != nil || r.Points > 0 {
			break
		}
	}
	// The series got a point a second at most (whisper keeps one per
	// second) over the 1.2 s the generator ran: 3 seconds at most.
	if r.Err != nil || r.Points < 1 || r.Points > 3 || r.Latency <= 0 {
		t.Errorf("graphite-web's answer: %d points in %s, %v", r.Points, r.Latency, r.Err)
	}
	if r := read("gtest.nothing"); r.Err != nil || r.Points != 0 {
		t.Errorf("an unknown series: %d points, %v", r.Points, r.Err)
	}
}
