package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/obs/obstest"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/prom"
	"github.com/benchq/benchq/internal/stack"
	"github.com/benchq/benchq/internal/testenv"
)

// serviceBinaries builds the services of this tree into a temporary
// directory (a stale .benchq/bin would not serve what this test checks),
// with the nats-server that bootstrap built beside them.
func serviceBinaries(t *testing.T) string {
	t.Helper()
	repo, _ := filepath.Abs("../..")
	nats := filepath.Join(repo, ".benchq", "bin", "nats-server")
	if _, err := os.Stat(nats); err != nil {
		t.Fatalf("%s missing: run scripts/bootstrap.sh first", nats)
	}
	bin := t.TempDir()
	cmd := exec.Command("go", "build", "-o", bin+"/", "./services/scheduler", "./services/deployer", "./services/driver-agent", "./services/collector")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := os.Symlink(nats, filepath.Join(bin, "nats-server")); err != nil {
		t.Fatal(err)
	}
	return bin
}

// `benchq up` starts Prometheus beside the services, every service's
// /metrics is a target of it and up, a restarted service keeps its address,
// and `benchq down` stops Prometheus too.
func TestUpMonitorsTheStack(t *testing.T) {
	if _, err := prom.Binary(); errors.Is(err, localdb.ErrNotInstalled) {
		t.Skipf("skipping: %v", err)
	}
	bin := serviceBinaries(t)
	home := t.TempDir()
	// PostgreSQL runs as the postgres user and must reach its data dir.
	for _, d := range []string{filepath.Dir(home), home} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"BENCHQ_HOME": home, "BENCHQ_BIN": bin, "BENCHQ_AGENTS": "1", "BENCHQ_SCRAPE_INTERVAL": "500ms"}
	run := func(args ...string) (int, string) {
		var out, errs bytes.Buffer
		code := Main(t.Context(), args, &State{Env: func(k string) string { return env[k] }, Stdout: &out, Stderr: &errs})
		return code, out.String() + errs.String()
	}
	code, out := run("up")
	t.Cleanup(func() {
		if code, out := run("down"); code != ExitOK {
			t.Errorf("down: exit %d\n%s", code, out)
		}
	})
	if code != ExitOK {
		t.Fatalf("up: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "\nprometheus http://127.0.0.1:") {
		t.Errorf("up does not name its Prometheus:\n%s", out)
	}
	st := &State{Env: func(k string) string { return env[k] }}
	s, err := stack.Load(st)
	if err != nil {
		t.Fatal(err)
	}
	var promPid int
	addrs := map[string]string{}
	for _, p := range s.Procs {
		if p.Name == stack.PromProc {
			promPid = p.Pid
		}
		if a := stack.MetricsAddr(p); a != "" {
			addrs[p.Name] = a
		}
	}
	if s.PrometheusURL == "" || !procs.Alive(promPid) {
		t.Fatalf("stack.json: prometheus %q, pid %d not running", s.PrometheusURL, promPid)
	}

	// Each service's own series, fetched as Prometheus does.
	for name, want := range map[string][]string{
		"scheduler":      {`benchq_scheduler_experiments{status="running"} 0`, `benchq_scheduler_phases{state="running"} 0`},
		"deployer":       {`benchq_deployer_suts_alive 0`},
		"collector":      {`benchq_collector_rows_stored_total 0`, `benchq_collector_consumer_lag{consumer="collector-events",stream="BENCHQ_EVENTS"} 0`},
		"driver-agent-1": {`go_goroutines`, `process_cpu_seconds_total`},
	} {
		if addrs[name] == "" {
			t.Errorf("%s has no %s", name, "BENCHQ_METRICS_ADDR")
			continue
		}
		testenv.Eventually(t, 30*time.Second, func() error {
			if missing := obstest.Lacks(obstest.Get(t, addrs[name]), want...); len(missing) > 0 {
				return fmt.Errorf("%s /metrics lacks %q", name, missing)
			}
			return nil
		})
	}

	// Four services, all up: Prometheus reads the target groups within
	// a few seconds (file_sd updates are batched every 5s).
	allUp := regexp.MustCompile(`(?m)^Prometheus: +Running \(http://127\.0\.0\.1:\d+, 4 of 4 targets up\)$`)
	status := func() {
		t.Helper()
		testenv.Eventually(t, time.Minute, func() error {
			code, out := run("status")
			if code != ExitOK || !allUp.MatchString(out) {
				return fmt.Errorf("status: exit %d\n%s", code, out)
			}
			return nil
		})
	}
	status()

	// A service that refuses its configuration exits at once: restart says
	// so, with the reason from its log, instead of "restarted".
	if err := os.Chmod(s.IntakeToken, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := run("restart", "scheduler"); code != ExitFailed || !strings.Contains(out, "exited at once") || !strings.Contains(out, "readable by others") {
		t.Errorf("restart of a scheduler whose token others may read: exit %d\n%s", code, out)
	}
	if err := os.Chmod(s.IntakeToken, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out := run("restart", "scheduler"); code != ExitOK {
		t.Fatalf("restart scheduler: exit %d\n%s", code, out)
	}

	if code, out := run("restart", "collector"); code != ExitOK {
		t.Fatalf("restart: exit %d\n%s", code, out)
	}
	again, err := stack.Load(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range again.Procs {
		if p.Name == "collector" && stack.MetricsAddr(p) != addrs["collector"] {
			t.Errorf("restarted collector serves on %s, not %s", stack.MetricsAddr(p), addrs["collector"])
		}
	}
	status()

	// Prometheus killed and restarted: on its port (the services' URL),
	// every target up again, `down` stops the new process.
	if err := syscall.Kill(promPid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code, out := run("restart", "prometheus"); code != ExitOK {
		t.Fatalf("restart prometheus: exit %d\n%s", code, out)
	}
	if again, err = stack.Load(st); err != nil {
		t.Fatal(err)
	}
	for _, p := range again.Procs {
		if p.Name == stack.PromProc {
			if p.Pid == promPid || !procs.Alive(p.Pid) {
				t.Errorf("prometheus after restart: pid %d (was %d), alive %v", p.Pid, promPid, procs.Alive(p.Pid))
			}
			promPid = p.Pid
		}
	}
	if again.PrometheusURL != s.PrometheusURL {
		t.Errorf("restarted Prometheus at %s, the services expect %s", again.PrometheusURL, s.PrometheusURL)
	}
	status()

	// down cancels the experiments in flight first: one left "running"
	// held its SUT slots after the next up, its SUT gone with the stack.
	if code, out := run("ycsb", "-dbms", "Redis", "-sf", "0.001", "-e", "inflight1", "start"); code != ExitOK {
		t.Fatalf("an experiment kept running (start): exit %d\n%s", code, out)
	}
	testenv.Eventually(t, time.Minute, func() error {
		if _, out := run("status"); !strings.Contains(out, "inflight1") {
			return fmt.Errorf("status does not show inflight1:\n%s", out)
		}
		return nil
	})
	// With the scheduler dead, down starts it again to cancel them (it
	// left them "running", holding their SUT slots after the next up); a
	// dead collector, which plays no part in a stop, does not keep it from
	// cancelling them.
	if again, err = stack.Load(st); err != nil {
		t.Fatal(err)
	}
	for _, p := range again.Procs {
		if p.Name == stack.SchedulerProc || p.Name == "collector" {
			if err := syscall.Kill(p.Pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, 10*time.Second, func() error {
				if procs.Alive(p.Pid) {
					return fmt.Errorf("%s (pid %d) still alive", p.Name, p.Pid)
				}
				return nil
			})
		}
	}
	code, out = run("down")
	if code != ExitOK {
		t.Fatalf("down: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "is not running: starting it again to cancel the experiments in flight") ||
		!strings.Contains(out, "stopping the experiments in flight first (their SUTs go with the stack): inflight1") ||
		!strings.Contains(out, "experiment inflight1 cancelled: cancelled by benchq stop: the stack was stopped (benchq down)") {
		t.Errorf("down with an experiment in flight:\n%s", out)
	}
	testenv.Eventually(t, 10*time.Second, func() error {
		if procs.Alive(promPid) {
			return fmt.Errorf("prometheus (pid %d) still runs after down", promPid)
		}
		return nil
	})
}
