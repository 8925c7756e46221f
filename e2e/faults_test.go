package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/testenv"
)

// The bexhoma grid with repetitions, on a stack of its own: the longest
// experiment of the e2e (4 to 8 minutes on 2 cores shared with the other
// stacks), so that it runs beside the other tests rather than after them in
// one. Its time limit only stops a hang: it is no speed test.
func TestBexhomaGridWithRepetitions(t *testing.T) {
	t.Parallel() // its own stack (see the package comment)
	s := startStack(t)
	code := fmt.Sprintf("e2e-grid-%d", time.Now().Unix())
	out := s.cli(t, 12*time.Minute, "ycsb", "-e", code, "-dbms", "Redis", "-sf", "0.02", "-nlp", "2", "-nbp", "1,2", "-nbf", "1,2", "-nc", "2", "-tr", "-no-report", "run")
	checkSummary(t, out, "TEST passed: Workflow as planned")
	if n := tableRows(out, "### Execution", "#### Per Phase"); n != 8 {
		t.Errorf("%d execution rows (Per Phase), want 8: 2 repetitions × pods [1, 2] × factors [1, 2]", n)
	}
	if !strings.Contains(out, "* DBMS Redis-64-2-16384 - Pods [[1, 2, 1, 2], [1, 2, 1, 2]]") {
		t.Errorf("planned workflow missing:\n%s", out)
	}
}

// What bexhoma users rely on, on one embedded stack: -ms across
// experiments, benchq stop, and the services killed (SIGKILL) in the
// middle of phases.
func TestExperimentsAsBexhomaUsersKnowThem(t *testing.T) {
	t.Parallel() // its own stack (see the package comment)
	s := startStack(t)

	t.Run("-ms 1 bounds SUTs across two experiments", func(t *testing.T) {
		codes := []string{fmt.Sprintf("e2e-ms-a-%d", time.Now().Unix()), fmt.Sprintf("e2e-ms-b-%d", time.Now().Unix())}
		// Two experiments one after the other, in the e2e's crowded first
		// minutes: 3 to 5 minutes on 2 cores; the limit only stops a hang.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		// Sample the SUT processes (every 50 ms) while both run.
		sampler := s.sampleSUTs(ctx)
		var wg sync.WaitGroup
		outs := make([]string, 2)
		// Each phase's 20,000 operations at 8,192/s (-xtb): about 2.4 s, so
		// that a status line (every second, -xli 1) reaches the CLI before
		// the phase ends however fast the machine. At the default 16,384/s
		// a phase took 1.2 s on a quiet machine, and the line came too late.
		for i, code := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i] = s.cli(t, 10*time.Minute, "ycsb", "-e", code, "-dbms", "Redis", "-sf", "0.02", "-nlp", "2", "-nlt", "8", "-nbt", "8", "-xtb", "8192", "-ms", "1", "-xli", "1", "-tr", "-no-report", "run")
			}()
		}
		wg.Wait()
		most, samples := sampler()
		t.Logf("SUT processes alive at once: max %d over %d samples", len(most), samples)
		if len(most) != 1 || samples < 20 {
			t.Errorf("max %d SUTs alive at once over %d samples (%v), want exactly 1", len(most), samples, most)
		}
		// The same from the events: one experiment's SUT lifetime (deploy
		// … sut.removed) never overlaps the other's.
		windows := make([][2]time.Time, 2)
		for i, code := range codes {
			if !strings.Contains(outs[i], "experiment done") {
				t.Errorf("%s did not finish:\n%s", code, outs[i])
			}
			if !strings.Contains(outs[i], "ops/s, elapsed") {
				t.Errorf("%s: no live progress line in the CLI output", code)
			}
			windows[i] = s.sutWindow(t, code)
		}
		if windows[0][0].Before(windows[1][1]) && windows[1][0].Before(windows[0][1]) {
			t.Errorf("SUT lifetimes overlap: %v and %v", windows[0], windows[1])
		}
	})

	t.Run("stop cancels and keeps what was measured", func(t *testing.T) {
		code := fmt.Sprintf("e2e-stop-%d", time.Now().Unix())
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		ev := s.events(ctx, code)
		s.cli(t, time.Minute, "ycsb", "-e", code, "-dbms", "Redis", "-sf", "0.05", "-xop", "1", "-nlt", "8", "-nbt", "8", "-m", "--detach", "run")
		s.waitPhase(t, ev, contracts.PhaseStarted, contracts.KindRun)
		status := s.cli(t, 30*time.Second, "status")
		for _, want := range []string{"Message queue:     Running", "Results database:  Running", "scheduler:         Running", "driver-agent-1", "| " + code, "Redis-8-1-16384-1-1", "(none: -rst keeps a SUT's data on one)"} {
			if !strings.Contains(status, want) {
				t.Errorf("benchq status lacks %q", want)
			}
		}
		out := s.cli(t, 2*time.Minute, "stop", "-e", code, "-reason", "e2e")
		if !strings.Contains(out, "cancelled") {
			t.Errorf("stop output:\n%s", out)
		}
		// The collector stores the end and the results a moment after the
		// CLI saw the end; events and results are two consumers, so the
		// stored end does not mean the results are in yet (seen once in CI).
		s.waitCount(t, 1, `SELECT count(*) FROM experiments WHERE code = $1 AND status = 'cancelled'`, code)
		s.waitCount(t, 1, `SELECT count(*) FROM shard_results WHERE code = $1 AND kind = 'load' AND status = 'ok'`, code)
		// The stopped phase keeps its window up to the stop, and the SUT's
		// metrics measured until then (they were never pulled before).
		s.waitCount(t, 1, `SELECT count(*) FROM phases WHERE code = $1 AND kind = 'run' AND status = 'failed' AND started_at IS NOT NULL AND ended_at IS NOT NULL`, code)
		s.waitCount(t, 1, `SELECT (count(*) > 0)::int FROM metric_summaries WHERE code = $1 AND kind = 'run' AND value IS NOT NULL`, code)
		// Stopped again: it says how the experiment ended.
		again, err := s.benchq(context.Background(), "stop", "-e", code)
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(again, "experiment "+code+" is not running: it ended cancelled") {
			t.Errorf("stop of a cancelled experiment: %v\n%s", err, again)
		}
		if n := s.liveSUTs(); n != 0 {
			t.Errorf("%d SUT processes left after stop", n)
		}
	})

	t.Run("-nbp 4,8 on a stack of 2 agents", func(t *testing.T) {
		// The local backend starts the agents a phase lacks, bound to it.
		code := fmt.Sprintf("e2e-pods-%d", time.Now().Unix())
		out := s.cli(t, 4*time.Minute, "ycsb", "-e", code, "-dbms", "Redis", "-sf", "0.01", "-nlp", "2", "-nbp", "4,8", "-tr", "-no-report", "run")
		checkSummary(t, out, "TEST passed: Workflow as planned")
		if n := s.count(t, `SELECT count(*)::int FROM shard_results WHERE code = $1 AND kind = 'run' AND status = 'ok'`, code); n != 12 {
			t.Errorf("%d ok benchmarking shards, want 4 + 8", n)
		}
		// The phase-bound agents ran shards of their phase only, and none
		// is left once the experiment is over.
		bound := s.count(t, `SELECT count(*)::int FROM shard_results WHERE code = $1 AND agent LIKE 'drv-%'`, code)
		wrong := s.count(t, `SELECT count(*)::int FROM shard_results WHERE code = $1 AND agent LIKE 'drv-%' AND agent NOT LIKE 'drv-' || code || '-' || phase || '-a%'`, code)
		if bound < 2+6 || wrong != 0 {
			t.Errorf("%d shards on phase-bound agents (want at least 8: 2 + 6 missing from the pool of 2), %d on an agent bound to another phase", bound, wrong)
		}
		if n := livePhaseAgents(code); n != 0 {
			t.Errorf("%d phase-bound agents still running after the experiment", n)
		}
		// The same code again is refused before anything is sent, and the
		// first experiment's events are not replayed as the new one's.
		again, err := s.benchq(context.Background(), "ycsb", "-e", code, "-dbms", "Redis", "-sf", "0.01", "run")
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(again, "experiment "+code+" already exists") || strings.Contains(again, "planned:") {
			t.Errorf("the same code again: %v\n%s", err, again)
		}
		if n := s.count(t, `SELECT count(*)::int FROM experiments WHERE code = $1`, code); n != 1 {
			t.Errorf("%d experiments stored under %s, want 1", n, code)
		}
	})

	t.Run("scheduler, deployer and Prometheus killed mid-phase", func(t *testing.T) {
		code := fmt.Sprintf("e2e-kill-%d", time.Now().Unix())
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		ev := s.events(ctx, code)
		s.cli(t, time.Minute, "ycsb", "-e", code, "-dbms", "Redis", "-sf", "0.15", "-xop", "0.15", "-nlp", "2", "-nlt", "8", "-nbt", "8", "-tr", "-m", "--detach", "run")
		s.waitPhase(t, ev, contracts.PhaseStarted, contracts.KindLoad)
		s.kill(t, "scheduler")
		s.waitPhase(t, ev, contracts.PhaseStarted, contracts.KindRun)
		s.kill(t, "scheduler")
		s.kill(t, "deployer")
		// Prometheus stays dead until the summary is printed.
		if err := syscall.Kill(s.pid("prometheus"), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if out, err := s.benchq(context.Background(), "restart", "prometheus"); err != nil {
				t.Errorf("restart prometheus: %v\n%s", err, out)
			}
		}()
		if end := s.waitEnd(t, ev); end.Status != contracts.ExperimentDone {
			t.Fatalf("experiment %s: %s", end.Status, end.Reason)
		}
		// The benchmark phase's monitoring: each figure missing, with the
		// reason, and its test failed, not passed on a 0.
		s.waitCount(t, 4, `SELECT count(*) FROM metric_summaries WHERE code = $1 AND kind = 'run' AND value IS NULL AND missing LIKE 'Prometheus at %unreachable%'`, code)
		out := s.cli(t, time.Minute, "summary", "-e", code)
		keepSummary(t, out)
		for _, line := range []string{"TEST passed: Workflow as planned", "TEST failed: Execution phase: SUT deployment contains 0 or NaN in CPU [CPUs]"} {
			if !strings.Contains(out, line) {
				t.Errorf("summary lacks %q", line)
			}
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "TEST failed") && !strings.HasSuffix(l, "SUT deployment contains 0 or NaN in CPU [CPUs]") {
				t.Errorf("a test other than the monitoring's failed: %s", l)
			}
		}
		sec := section(out, "Execution phase: SUT deployment")
		for _, title := range []string{"CPU [CPUs]", "Max CPU", "Max RAM [Gb]", "Max RAM Cached [Gb]"} {
			if !strings.Contains(sec, title+" of Redis") || !strings.Contains(sec, "is missing: Prometheus at ") {
				t.Errorf("%s is not named missing with its reason:\n%s", title, sec)
			}
		}
		if zero := regexp.MustCompile(`\|\s*0(\.0+)?\s*\|`); zero.MatchString(sec) || strings.Count(sec, "NaN") < 4 {
			t.Errorf("missing figures not shown as NaN:\n%s", sec)
		}
		// Each phase exactly once, each shard exactly once.
		if n := s.count(t, `SELECT count(*) FROM phases WHERE code = $1 AND status = 'done'`, code); n != 2 {
			t.Errorf("%d phases done, want 2 (load, run1) each once", n)
		}
		if n := s.count(t, `SELECT count(*) FROM shard_results WHERE code = $1`, code); n != 3 {
			t.Errorf("%d shard results, want 3", n)
		}
		if n := s.liveSUTs(); n != 0 {
			t.Errorf("%d SUT processes left: the restarted deployer did not tear down", n)
		}
	})

	t.Run("agents killed before READY, mid-load and mid-shard: the job is taken over, the loading runs again on a new SUT, the phase is re-run", func(t *testing.T) {
		code := fmt.Sprintf("e2e-agent-%d", time.Now().Unix())
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		ev := s.events(ctx, code)
		logsAt := s.agentLogSizes() // before the request: its loading shard may start at once
		// The standby JVMs stopped: the job handed to one cannot reach
		// READY before the agent is killed, however late this test reads
		// its log on a loaded machine (it once read it 3 ms too late).
		frozen := s.freezeStandbys(t)
		// -xop 0.1: the benchmark's first attempt runs for seconds, far longer
		// than its kill takes to land; the re-run does it all again.
		s.cli(t, time.Minute, "ycsb", "-e", code, "-dbms", "Redis", "-sf", "0.05", "-xop", "0.1", "-nlt", "8", "-nbt", "8", "-tr", "--detach", "run")
		// First the loading shard's agent dies before its READY, when the
		// scheduler cannot know who holds the job: JetStream hands the job
		// to another agent once its ack wait (5 s) passes untouched.
		loader, killed := s.killAgentBeforeReady(t, logsAt)
		frozen.release(loader)
		time.Sleep(500 * time.Millisecond)
		if out, err := s.benchq(context.Background(), "restart", loader); err != nil {
			t.Errorf("restart %s: %v\n%s", loader, err, out)
		}
		took := s.waitReadyOf(t, ev, contracts.KindLoad)
		if !took.at.After(killed) {
			t.Fatalf("%s published the loading shard's READY at %s, before it was killed at %s: the kill came too late for this test's case", took.agent, took.at.Format(time.RFC3339Nano), killed.Format(time.RFC3339Nano))
		}
		t.Logf("%s killed before the loading shard's READY; the shard was READY again %.1f s later, on %s", loader, took.at.Sub(killed).Seconds(), took.agent)
		// Then the agent that took it dies mid-load, after its READY: the
		// SUT holds part of the data, so the loading runs again on a new
		// SUT, which ends up with exactly the records loaded once.
		s.waitPhase(t, ev, contracts.PhaseStarted, contracts.KindLoad)
		if err := syscall.Kill(s.pid(took.agent), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		if out, err := s.benchq(context.Background(), "restart", took.agent); err != nil {
			t.Errorf("restart %s: %v\n%s", took.agent, err, out)
		}
		second := s.waitSUTReady(t, ev)
		if loaded := s.waitPhase(t, ev, contracts.PhaseDone, contracts.KindLoad); loaded.Attempt != 2 {
			t.Errorf("loading done in attempt %d, want 2", loaded.Attempt)
		}
		if rows, _ := s.sutRows(t, second); rows != 50000 {
			t.Errorf("the new SUT holds %d records after loading again, want the 50,000 of -sf 0.05 exactly once", rows)
		}
		agent := s.waitReadyAgent(t, ev, contracts.KindRun)
		s.waitPhase(t, ev, contracts.PhaseStarted, contracts.KindRun)
		if err := syscall.Kill(s.pid(agent), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		t.Logf("killed %s during the benchmark phase", agent)
		// Started again at once, it beats again under its name before it
		// could count as silent: its new run (instance) tells the scheduler
		// the shard is lost.
		time.Sleep(500 * time.Millisecond)
		if out, err := s.benchq(context.Background(), "restart", agent); err != nil {
			t.Errorf("restart %s: %v\n%s", agent, err, out)
		}
		end := s.waitEnd(t, ev)
		if end.Status != contracts.ExperimentDone {
			t.Fatalf("experiment %s: %s", end.Status, end.Reason)
		}
		out := s.cli(t, time.Minute, "summary", "-e", code)
		keepSummary(t, out)
		// Both re-runs: the loading (on a new SUT) and the benchmark.
		if !strings.Contains(out, "TEST passed: Workflow as planned") || strings.Count(out, "was re-run: its results are from attempt 2") != 2 ||
			!strings.Contains(out, "agent "+agent+" restarted since it took the shard") {
			t.Errorf("summary does not show the re-run and why:\n%s", out)
		}
		if n := tableRows(out, "### Execution", "#### Per Phase"); n != 1 {
			t.Errorf("%d execution rows, want 1: the re-run replaces the lost attempt, not doubled", n)
		}
	})

	// A SUT's death as a new user would try it: a 2-configuration Redis grid whose
	// first redis-server is SIGKILLed 2 s into its benchmark phase.
	t.Run("SUT killed mid-benchmark: the phase fails at once, the next configuration runs", func(t *testing.T) {
		code := fmt.Sprintf("e2e-sutdeath-%d", time.Now().Unix())
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		ev := s.events(ctx, code)
		var out bytes.Buffer
		cmd := s.command(ctx, "ycsb", "-e", code, "-dbms", "Redis", "-sf", "0.02", "-xop", "0.05", "-xtb", "4096",
			"-xnlf", "1,2", "-nlt", "4", "-nbt", "4", "-tr", "-no-report", "run")
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		started := s.waitPhase(t, ev, contracts.PhaseStarted, contracts.KindRun)
		time.Sleep(2 * time.Second)
		var st struct{ Pid int }
		data, err := os.ReadFile(filepath.Join(s.home, "suts", code, started.Configuration, "endpoint.json"))
		if err != nil || json.Unmarshal(data, &st) != nil || st.Pid <= 0 {
			t.Fatalf("the SUT's pid: %v %s", err, data)
		}
		if err := syscall.Kill(st.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		failed := s.waitPhase(t, ev, contracts.PhaseFailed, contracts.KindRun)
		t.Logf("redis-server killed; phase.failed %.1f s later: %s", time.Since(killed).Seconds(), failed.Reason)
		want := fmt.Sprintf("SUT %s died (Redis process %d killed by signal 9 (killed))", started.Configuration, st.Pid)
		if failed.Phase != started.Phase || !strings.HasPrefix(failed.Reason, want) || !strings.HasSuffix(failed.Reason, " s into "+started.Phase) {
			t.Errorf("phase.failed of %s: %q, want %q … s into %s", failed.Phase, failed.Reason, want, started.Phase)
		}
		if end := s.waitEnd(t, ev); end.Status != contracts.ExperimentFailed || !strings.Contains(end.Reason, "died") {
			t.Errorf("experiment %s: %s", end.Status, end.Reason)
		}
		// With -tr benchq's exit status says it: CI pipelines gate on it.
		err = cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Errorf("benchq run: %v, want exit 1\n%s", err, out.String())
		}
		keepSummary(t, out.String())
		// The other configuration ran through; what the dead one measured
		// before is kept (its loading, the benchmark's intervals).
		if n := s.count(t, `SELECT count(*)::int FROM phases WHERE code = $1 AND configuration <> '`+started.Configuration+`' AND status = 'done'`, code); n != 2 {
			t.Errorf("%d phases of the second configuration done, want 2", n)
		}
		if n := s.count(t, `SELECT count(*)::int FROM intervals WHERE code = $1 AND phase = '`+started.Phase+`'`, code); n == 0 {
			t.Errorf("no interval of %s kept", started.Phase)
		}
		if !strings.Contains(out.String(), "died (Redis process") {
			t.Errorf("the CLI does not say the SUT died:\n%s", out.String())
		}
		if n := s.liveSUTs(); n != 0 {
			t.Errorf("%d SUT processes left", n)
		}
	})

	t.Run("volumes: load once, benchmark many times (-rst, -rsr)", s.volumeExperiments)
}

// cli runs benchq and fails the test if it exits non-zero.
func (s *stack) cli(t *testing.T, timeout time.Duration, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out bytes.Buffer
	cmd := s.command(ctx, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("benchq %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	t.Logf("benchq %s:\n%s", strings.Join(args, " "), out.String())
	if strings.Contains(out.String(), "Permissions Violation") {
		t.Errorf("benchq %s: NATS refused the client something it needs", strings.Join(args, " "))
	}
	return out.String()
}

// kill SIGKILLs a service of the stack and starts it again.
func (s *stack) kill(t *testing.T, name string) {
	t.Helper()
	if err := syscall.Kill(s.pid(name), syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s: %v", name, err)
	}
	time.Sleep(500 * time.Millisecond) // let the dead service's pull requests lapse
	if out, err := s.benchq(context.Background(), "restart", name); err != nil {
		t.Fatalf("restart %s: %v\n%s", name, err, out)
	}
	t.Logf("killed and restarted %s", name)
}

func (s *stack) waitPhase(t *testing.T, ev jetstream.Consumer, status, kind string) contracts.PhaseEvent {
	t.Helper()
	var pe contracts.PhaseEvent
	s.waitEvent(t, ev, "phase "+kind+" "+status, func(m jetstream.Msg) bool {
		if !strings.Contains(m.Subject(), ".phase.") {
			return false
		}
		_ = json.Unmarshal(m.Data(), &pe)
		return pe.Status == status && pe.Kind == kind
	})
	return pe
}

// waitEvent reads ev until match accepts a message (within 3 minutes), and
// fails the test when the experiment ends first.
func (s *stack) waitEvent(t *testing.T, ev jetstream.Consumer, what string, match func(jetstream.Msg) bool) jetstream.Msg {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		m, err := ev.Next(jetstream.FetchMaxWait(time.Second))
		if err != nil {
			continue
		}
		if match(m) {
			return m
		}
		if isEnd(m.Subject()) {
			t.Fatalf("experiment ended before %s: %s", what, m.Data())
		}
	}
	t.Fatalf("no %s within 3 minutes", what)
	return nil
}

// waitReadyAgent returns the agent that reported READY for a shard of the
// first phase of the given kind.
// phaseKind is the kind of a phase by its name: bexhoma's <configuration>-0
// loads, <configuration>-<client> benchmarks (internal/plan.PhaseName).
func phaseKind(phase string) string {
	if strings.HasSuffix(phase, "-0") {
		return contracts.KindLoad
	}
	return contracts.KindRun
}

func (s *stack) waitReadyAgent(t *testing.T, ev jetstream.Consumer, kind string) string {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		m, err := ev.Next(jetstream.FetchMaxWait(time.Second))
		if err != nil || !strings.HasSuffix(m.Subject(), ".barrier.ready") {
			continue
		}
		var r contracts.BarrierReady
		_ = json.Unmarshal(m.Data(), &r)
		if phaseKind(r.Phase) == kind {
			return r.Agent
		}
	}
	t.Fatalf("no READY of a %s phase", kind)
	return ""
}

// poolAgents are the embedded stack's pool agents.
var poolAgents = []string{"driver-agent-1", "driver-agent-2"}

// agentLogSizes are the pool agents' log sizes now, by agent.
func (s *stack) agentLogSizes() map[string]int64 {
	sizes := map[string]int64{}
	for _, name := range poolAgents {
		if st, err := os.Stat(filepath.Join(s.home, "logs", name+".log")); err == nil {
			sizes[name] = st.Size()
		}
	}
	return sizes
}

// killAgentBeforeReady kills the pool agent that starts a loading shard
// before its READY, and returns the agent and when it was killed. The
// agent's log says when it starts the shard ("shard starting", with the
// -load command line); on a standby JVM the shard can be READY some 35 ms
// later, so the agent is stopped at once (SIGSTOP: it publishes nothing
// more, its READY included), then killed. Only what the agents logged
// after from (agentLogSizes, taken before the request) is read.
// frozenJVMs are the pool agents' standby JVMs, stopped (SIGSTOP), by agent.
type frozenJVMs map[string][]int

// freezeStandbys stops the pool agents' standby JVMs (their java children);
// the test's end lets any still stopped go on.
func (s *stack) freezeStandbys(t *testing.T) frozenJVMs {
	t.Helper()
	f := frozenJVMs{}
	for _, name := range poolAgents {
		for _, pid := range childJVMs(s.pid(name)) {
			if syscall.Kill(pid, syscall.SIGSTOP) == nil {
				f[name] = append(f[name], pid)
			}
		}
	}
	t.Cleanup(func() { f.release("") })
	t.Logf("standby JVMs stopped (by agent): %v", f)
	return f
}

// release kills the JVMs of the killed agent (orphans now) and lets the
// others go on.
func (f frozenJVMs) release(killed string) {
	for name, pids := range f {
		for _, pid := range pids {
			if name == killed {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
		delete(f, name)
	}
}

// childJVMs are the java processes whose parent is pid.
func childJVMs(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so split after its ')'.
		text := string(stat)
		open, end := strings.IndexByte(text, '('), strings.LastIndexByte(text, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(text[end+1:])
		if text[open+1:end] == "java" && len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

func (s *stack) killAgentBeforeReady(t *testing.T, from map[string]int64) (string, time.Time) {
	t.Helper()
	type agentLog struct {
		name string
		path string
		seen int64
	}
	var logs []*agentLog
	for _, name := range poolAgents {
		logs = append(logs, &agentLog{name: name, path: filepath.Join(s.home, "logs", name+".log"), seen: from[name]})
	}
	// The window between the log line and the READY is the standby JVM's
	// set-up of its job (tens of milliseconds): read only what is new,
	// every millisecond.
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		for _, l := range logs {
			f, err := os.Open(l.path)
			if err != nil {
				continue
			}
			n, _ := f.ReadAt(buf, l.seen)
			_ = f.Close()
			end := bytes.LastIndexByte(buf[:n], '\n') + 1 // whole lines only
			for _, line := range strings.Split(string(buf[:end]), "\n") {
				if !strings.Contains(line, `msg="shard starting"`) || !strings.Contains(line, " -load ") {
					continue
				}
				pid := s.pid(l.name)
				if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				return l.name, time.Now()
			}
			l.seen += int64(end)
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("no pool agent started a loading shard within a minute")
	return "", time.Time{}
}

// waitSUTReady waits for the next sut.ready.
func (s *stack) waitSUTReady(t *testing.T, ev jetstream.Consumer) contracts.SUTReady {
	t.Helper()
	var r contracts.SUTReady
	m := s.waitEvent(t, ev, "a sut.ready", func(m jetstream.Msg) bool { return strings.HasSuffix(m.Subject(), ".sut.ready") })
	if err := json.Unmarshal(m.Data(), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// readyOf is a shard's READY as the events show it.
type readyOf struct {
	agent string
	at    time.Time // when JetStream stored it
}

// waitReadyOf waits for the READY of a phase of kind.
func (s *stack) waitReadyOf(t *testing.T, ev jetstream.Consumer, kind string) readyOf {
	t.Helper()
	var r contracts.BarrierReady
	m := s.waitEvent(t, ev, "a READY of a "+kind+" phase", func(m jetstream.Msg) bool {
		if !strings.HasSuffix(m.Subject(), ".barrier.ready") {
			return false
		}
		_ = json.Unmarshal(m.Data(), &r)
		return phaseKind(r.Phase) == kind
	})
	meta, err := m.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	return readyOf{agent: r.Agent, at: meta.Timestamp}
}

func (s *stack) waitEnd(t *testing.T, ev jetstream.Consumer) contracts.ExperimentEnd {
	t.Helper()
	deadline := time.Now().Add(4 * time.Minute)
	for time.Now().Before(deadline) {
		m, err := ev.Next(jetstream.FetchMaxWait(time.Second))
		if err != nil {
			continue
		}
		if isEnd(m.Subject()) {
			var end contracts.ExperimentEnd
			_ = json.Unmarshal(m.Data(), &end)
			return end
		}
	}
	t.Fatal("the experiment did not end within 4 minutes")
	return contracts.ExperimentEnd{}
}

// isEnd: the subject of an experiment's end (not of a phase or SUT event).
func isEnd(subj string) bool {
	if strings.Contains(subj, ".phase.") || strings.Contains(subj, ".sut.") {
		return false
	}
	return strings.HasSuffix(subj, ".done") || strings.HasSuffix(subj, ".failed") || strings.HasSuffix(subj, ".cancelled")
}

// waitCount polls query until it counts want (30 s at most).
func (s *stack) waitCount(t *testing.T, want int, query string, args ...any) {
	t.Helper()
	s.waitCountWithin(t, 30*time.Second, want, query, args...)
}

// waitCountWithin is waitCount with its own bound, for a count that waits
// on work whose length depends on the machine's load (shards running).
func (s *stack) waitCountWithin(t *testing.T, within time.Duration, want int, query string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		n := s.count(t, query, args...)
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d, want %d", query, n, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// count is the one integer query returns.
func (s *stack) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	return queryOne[int](t, s, query, args...)
}

// text is the one text value query returns.
func (s *stack) text(t *testing.T, query string, args ...any) string {
	t.Helper()
	return queryOne[string](t, s, query, args...)
}

// queryOne is the one value query returns, in the results database.
func queryOne[T any](t *testing.T, s *stack, query string, args ...any) T {
	t.Helper()
	var v T
	s.withDB(t, func(ctx context.Context, conn *pgx.Conn) {
		if err := conn.QueryRow(ctx, query, args...).Scan(&v); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	})
	return v
}

// withDB runs f on a connection to the stack's results database.
func (s *stack) withDB(t *testing.T, f func(context.Context, *pgx.Conn)) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.info.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	f(ctx, conn)
}

// sutWindow is when the experiment's SUT was up: from its sut.ready to its
// sut.removed event, read from the stored messages.
func (s *stack) sutWindow(t *testing.T, code string) [2]time.Time {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.info.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var w [2]time.Time
	if err := conn.QueryRow(ctx, `SELECT min(ts) FILTER (WHERE subject LIKE '%.sut.ready'), max(ts) FILTER (WHERE subject LIKE '%.sut.removed') FROM messages WHERE code = $1`, code).Scan(&w[0], &w[1]); err != nil {
		t.Fatalf("sut window of %s: %v", code, err)
	}
	return w
}

// liveSUTs counts the SUTs with a live process: the local backend runs each
// SUT in <home>/suts/<code>/<configuration>, and its processes (Redis's one,
// PostgreSQL's several) have that folder as their working directory. Redis
// rewrites its command line, so the working directory is what identifies it.
func (s *stack) liveSUTs() int { return len(s.liveSUTNames()) }

// liveSUTNames names the SUTs ("code/configuration") that have a process
// running in their directory.
func (s *stack) liveSUTNames() []string {
	root := filepath.Join(s.home, "suts") + string(filepath.Separator)
	suts := map[string]bool{}
	cwds, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, c := range cwds {
		dir, err := os.Readlink(c)
		if err != nil || !strings.HasPrefix(dir, root) {
			continue
		}
		parts := strings.SplitN(strings.TrimPrefix(dir, root), string(filepath.Separator), 3)
		if len(parts) >= 2 {
			suts[parts[0]+"/"+parts[1]] = true
		}
	}
	return slices.Sorted(maps.Keys(suts))
}

// livePhaseAgents counts the running driver agents that the local backend
// started for a phase of experiment code (named drv-<code>-...).
func livePhaseAgents(code string) int {
	n := 0
	cmds, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, c := range cmds {
		b, err := os.ReadFile(c)
		if err == nil && strings.Contains(string(b), "drv-"+code+"-") {
			n++
		}
	}
	return n
}

// sampleSUTs counts the live SUTs every 50 ms until stopped; stop returns
// the largest set seen alive together and the number of samples.
func (s *stack) sampleSUTs(ctx context.Context) (stop func() (most []string, samples int)) {
	ctx, cancel := context.WithCancel(ctx)
	var most []string
	var n int
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if live := s.liveSUTNames(); len(live) > len(most) {
				most = live
			}
			n++
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return func() ([]string, int) {
		cancel()
		<-done
		return most, n
	}
}

// tableRows counts the data rows of the first Markdown table after the
// section heading and the sub-heading.
func tableRows(out, section, sub string) int {
	i := strings.Index(out, section)
	if i < 0 {
		return -1
	}
	j := strings.Index(out[i:], sub)
	if j < 0 {
		return -1
	}
	n := 0
	inTable := false
	for _, l := range strings.Split(out[i+j+len(sub):], "\n") {
		switch {
		case strings.HasPrefix(l, "|"):
			inTable = true
			n++
		case inTable:
			return n - 2 // header and rule
		}
	}
	return n - 2
}

// section is the part of a summary under the heading that ends with title,
// up to the next heading.
func section(out, title string) string {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "#") {
			if in {
				break
			}
			in = strings.HasSuffix(l, " "+title)
			continue
		}
		if in {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// A port of the stack that another process holds. The intake's port is the
// kernel's pick as the scheduler binds it (stacks started side by side once
// lost a port picked a moment before its bind, "http intake: … address
// already in use"); the stores' ports picked by benchq up are retried on
// others (localdb, stack.ErrPortTaken). A port the user set is not ours to
// replace: up fails at once naming the variable, and leaves nothing behind.
func TestUpWhenAPortIsTaken(t *testing.T) {
	t.Parallel() // stacks of their own
	for _, key := range []string{"BENCHQ_HTTP_PORT", "BENCHQ_NATS_PORT", "BENCHQ_DB_PORT"} {
		t.Run(key, func(t *testing.T) {
			began := time.Now()
			s := newStack(t, nil, "BENCHQ_AGENTS=1", "BENCHQ_AGENT_STANDBYS=1", fmt.Sprintf("%s=%d", key, testenv.HeldPort(t)))
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			out, err := s.benchq(ctx, "up")
			if err == nil {
				t.Fatalf("benchq up with %s held succeeded:\n%s", key, out)
			}
			if strings.Contains(out, "starting the stack again") || !strings.Contains(out, "address already in use") ||
				!strings.Contains(out, "free it, or unset "+key) {
				t.Errorf("benchq up: want no restart and %s named:\n%s", key, out)
			}
			if _, err := os.Stat(filepath.Join(s.home, "stack.json")); !os.IsNotExist(err) {
				t.Errorf("a failed up left stack.json behind (%v)", err)
			}
			if out, err := exec.Command("pgrep", "-f", s.home).CombinedOutput(); err == nil {
				t.Errorf("a failed up left processes of its home behind:\n%s", out)
			}
			t.Logf("failed in %v:\n%s", time.Since(began).Round(time.Millisecond), out)
		})
	}
}
