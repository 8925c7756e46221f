package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/testenv"
)

// The container's program on this machine, with carbon's venv from
// make bootstrap: what is written to the carbon port is counted on the
// metrics port as the carbon-cache's own count, and graphite-web answers
// with the same points; the pod ends cleanly on its context (SIGTERM),
// and with an error naming the daemon when the carbon-cache dies, leaving
// nothing running either way.
func TestGraphitePodServesItsCountsAndEndsWithItsDaemons(t *testing.T) {
	if _, err := localdb.CarbonHome(); err != nil {
		testenv.SkipUnlessRequired(t, "BENCHQ_YCSB_REQUIRED", "%v", err)
	}
	for _, kill := range []bool{false, true} {
		name := map[bool]string{false: "stopped", true: "cache killed"}[kill]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := config{dir: filepath.Join(t.TempDir(), "data"), listen: "127.0.0.1"}
			for _, p := range []*int{&c.linePort, &c.httpPort, &c.metrics} {
				var err error
				if *p, err = procs.FreePort(); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			runCtx, stop := context.WithCancel(ctx)
			defer stop()
			done := make(chan error, 1)
			go func() { done <- run(runCtx, c, testenv.Logger(t, "graphite-pod")) }()

			testenv.Eventually(t, time.Minute, func() error { _, err := get(ctx, c.url(c.metrics)+"/healthz"); return err })
			if _, err := storedByCache(ctx, c.url(c.metrics)); err != nil {
				t.Fatalf("healthy, but /metrics: %v", err)
			}
			writeAndRead(t, ctx, c, map[string]bool{"cache-0": true})

			cache, err := procs.ReadPidFile(filepath.Join(c.dir, "cache-0", "carbon-cache.pid"))
			if err != nil {
				t.Fatal(err)
			}
			web, err := procs.ReadPidFile(filepath.Join(c.dir, "web", "graphite-web.pid"))
			if err != nil {
				t.Fatal(err)
			}
			if kill {
				if err := syscall.Kill(cache, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			} else {
				stop()
			}
			select {
			case err := <-done:
				switch {
				case kill && (err == nil || !strings.Contains(err.Error(), fmt.Sprintf("carbon-cache (pid %d) ended", cache))):
					t.Errorf("after the carbon-cache was killed, run returned %v; want an error naming it, pid %d", err, cache)
				case !kill && err != nil:
					t.Errorf("stopped: run returned %v", err)
				}
			case <-ctx.Done():
				t.Fatal("run did not return")
			}
			for _, pid := range []int{cache, web} {
				if procs.Alive(pid) {
					t.Errorf("pid %d still runs after run returned", pid)
				}
			}
		})
	}
}

func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), err
}

// The cluster's three roles, each a pod of its own (here a loopback
// address of its own, the same ports on each, as on Kubernetes), the relay
// started and ready before its caches: what is written to the relay pod is
// spread over both cache pods, counted by each under its own name on the
// relay's /metrics and answered by the relay's graphite-web from theirs;
// with a cache pod gone, the relay's /metrics and its queries fail instead
// of counting or answering from the other alone.
func TestGraphitePodsFormACarbonCluster(t *testing.T) {
	if _, err := localdb.CarbonHome(); err != nil {
		testenv.SkipUnlessRequired(t, "BENCHQ_YCSB_REQUIRED", "%v", err)
	}
	// Not t.Context(), nor a deferred cancel: the cleanups below stop the
	// pods and wait for them after the test returns (and before its
	// TempDirs go); this cleanup, registered first, runs after them.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	base := config{role: roleCache}
	for _, p := range []*int{&base.linePort, &base.httpPort, &base.metrics, &base.picklePort} {
		var err error
		if *p, err = procs.FreePort(); err != nil {
			t.Fatal(err)
		}
	}
	pods := map[string]config{}
	for i, host := range []string{"127.0.0.2", "127.0.0.3"} {
		c := base
		c.name, c.listen, c.dir = localdb.CacheName(i), host, filepath.Join(t.TempDir(), "data")
		pods[c.name] = c
	}
	relay := base
	relay.role, relay.listen, relay.dir, relay.caches = roleRelay, "127.0.0.1", filepath.Join(t.TempDir(), "data"), "127.0.0.2,127.0.0.3"
	pods["relay"] = relay
	// The relay first, ready while no cache answers yet (on Kubernetes the
	// cache pods may start later); then the caches.
	stops := map[string]func() error{}
	for _, name := range []string{"relay", "cache-0", "cache-1"} {
		c := pods[name]
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- run(runCtx, c, testenv.Logger(t, "graphite-pod "+name)) }()
		stops[name] = sync.OnceValue(func() error {
			stop()
			select {
			case err := <-done:
				return err
			case <-ctx.Done():
				return fmt.Errorf("%s: run did not return", name)
			}
		})
		t.Cleanup(func() { _ = stops[name]() })
		testenv.Eventually(t, time.Minute, func() error { _, err := get(ctx, c.url(c.metrics)+"/healthz"); return err })
	}
	writeAndRead(t, ctx, relay, map[string]bool{"cache-0": true, "cache-1": true})

	if err := stops["cache-1"](); err != nil {
		t.Fatalf("cache-1 stopped: %v", err)
	}
	if n, err := storedByCache(ctx, relay.url(relay.metrics)); err == nil {
		t.Errorf("with cache-1 gone, the relay's /metrics answered %v; want an error (a missing count, not a partial one)", n)
	}
	if body, err := get(ctx, relay.url(relay.httpPort)+"/render?target=bq.pod.*&format=json&from=-60s"); err == nil {
		t.Errorf("with cache-1 gone, the relay's graphite-web answered %.200s; want a failed query, not a partial answer", body)
	}
	pids, _ := filepath.Glob(filepath.Join(pods["cache-1"].dir, "*", "*.pid"))
	for _, f := range pids {
		if pid, err := procs.ReadPidFile(f); err == nil && procs.Alive(pid) {
			t.Errorf("%s: pid %d still runs after run returned", f, pid)
		}
	}
}

// url is the base URL of port on the pod's address.
func (c config) url(port int) string {
	return "http://" + net.JoinHostPort(c.listen, strconv.Itoa(port))
}

// writeAndRead writes 5 points of each of 10 series, on distinct seconds,
// to the pod's carbon port, and checks that the caches (by name: those in
// want, each with some) count 50 stored, and that graphite-web answers the
// 10 series with their 50 points.
func writeAndRead(t *testing.T, ctx context.Context, c config, want map[string]bool) {
	t.Helper()
	conn, err := net.Dial("tcp", net.JoinHostPort(c.listen, strconv.Itoa(c.linePort)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	var b strings.Builder
	for s := range 10 {
		for k := range 5 {
			fmt.Fprintf(&b, "bq.pod.s%d %d %d\n", s, k+1, now-20+int64(k))
		}
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()
	testenv.Eventually(t, time.Minute, func() error {
		byCache, err := storedByCache(ctx, c.url(c.metrics))
		if err != nil {
			return err
		}
		total := 0.0
		for name, n := range byCache {
			if !want[name] || n == 0 {
				return fmt.Errorf("stored by cache %v, want some in each of %v", byCache, want)
			}
			total += n
		}
		if total != 50 || len(byCache) != len(want) {
			return fmt.Errorf("stored by cache %v, want 50 over %v", byCache, want)
		}
		return nil
	})
	body, err := get(ctx, c.url(c.httpPort)+"/render?target=bq.pod.*&format=json&from=-60s")
	if err != nil {
		t.Fatal(err)
	}
	var series []struct {
		Datapoints [][2]*float64 `json:"datapoints"`
	}
	if err := json.Unmarshal([]byte(body), &series); err != nil {
		t.Fatalf("graphite-web: %v: %s", err, body)
	}
	points := 0
	for _, s := range series {
		for _, p := range s.Datapoints {
			if p[0] != nil {
				points++
			}
		}
	}
	if len(series) != 10 || points != 50 {
		t.Errorf("graphite-web answered %d series, %d points; want 10 and 50", len(series), points)
	}
}

var storedLine = regexp.MustCompile(`(?m)^carbon_points_stored_total\{cache="([^"]+)"\} (\S+)$`)

// storedByCache reads carbon_points_stored_total by cache from /metrics.
func storedByCache(ctx context.Context, base string) (map[string]float64, error) {
	body, err := get(ctx, base+"/metrics")
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, m := range storedLine.FindAllStringSubmatch(body, -1) {
		n, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return nil, err
		}
		out[m[1]] = n
	}
	if len(out) == 0 {
		return nil, errors.New("no carbon_points_stored_total in /metrics")
	}
	return out, nil
}
