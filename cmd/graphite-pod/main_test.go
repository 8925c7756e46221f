package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
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

			base := func(port int) string { return "http://" + net.JoinHostPort(c.listen, strconv.Itoa(port)) }
			stored := regexp.MustCompile(`(?m)^carbon_points_stored_total\{cache="cache-0"\} (\S+)$`)
			metric := func() (float64, error) {
				body, err := get(ctx, base(c.metrics)+"/metrics")
				if err != nil {
					return 0, err
				}
				m := stored.FindStringSubmatch(body)
				if m == nil {
					return 0, fmt.Errorf("no carbon_points_stored_total in /metrics")
				}
				return strconv.ParseFloat(m[1], 64)
			}
			testenv.Eventually(t, time.Minute, func() error { _, err := get(ctx, base(c.metrics)+"/healthz"); return err })
			if _, err := metric(); err != nil {
				t.Fatalf("healthy, but /metrics: %v", err)
			}

			// 5 points of each of 10 series, on distinct seconds: 50 stored.
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
				if n, err := metric(); err != nil || n != 50 {
					return fmt.Errorf("stored %v, want 50 (%v)", n, err)
				}
				return nil
			})
			body, err := get(ctx, base(c.httpPort)+"/render?target=bq.pod.*&format=json&from=-60s")
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
