package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Chaos (docs/chaos.md): each round runs a small Redis experiment (one
// loading shard, two benchmarking shards on the stack's two agents), kills
// one component of the stack with SIGKILL at a random moment of it, starts
// it again with `benchq restart` (a SUT is not restarted: the deployer
// notices its death), and checks what a reliability engineer would:
//
//   - the experiment ends within 4 minutes: done, or failed with a reason;
//     killing a component of benchq must not fail it — only a dead SUT may,
//     with a reason that says so (an agent killed during loading costs a
//     new SUT and a second load, not the experiment);
//   - done means true: its result tests pass (workflow as planned, no
//     failed operations);
//   - every shard result is stored exactly once: each one the shards
//     published is in shard_results, under its message id, and each phase
//     attempt that ended done has a result from every one of its shards;
//   - nothing is left behind: no SUT, no phase agent, no process that the
//     stack started outside its components; every component is alive.
//
// Round 0 kills nothing: it measures the experiment's duration D, and each
// round kills at a moment drawn uniformly from [0, D) after submitting.
//
//	BENCHQ_CHAOS_ROUNDS  rounds with a kill (default 3; make bench-chaos: 50)
//	BENCHQ_CHAOS_SEED    repeats a run's choices (printed at the start)
//	BENCHQ_CHAOS_REPORT  a file for the table of rounds (make bench-chaos prints it)
func TestChaos(t *testing.T) {
	rounds, err := envInt("BENCHQ_CHAOS_ROUNDS", 3)
	if err != nil {
		t.Fatal(err)
	}
	seed, err := envInt("BENCHQ_CHAOS_SEED", int(time.Now().UnixNano()%1e9))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("chaos: %d rounds, seed %d (BENCHQ_CHAOS_SEED=%d repeats them)", rounds, seed, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	s := startStack(t)

	calm := s.chaosRound(t, 0, "", 0)
	if calm.outcome != "done" {
		t.Fatalf("the experiment without a kill ended %s: %s", calm.outcome, calm.reason)
	}
	rows := []chaosRow{calm}
	// Every component in turn, in a new random order each cycle: three
	// rounds kill three different ones; 50 rounds each one five or six times.
	var order []string
	for i := 1; i <= rounds; i++ {
		if len(order) == 0 {
			order = slices.Clone(chaosVictims)
			rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
			if i == 1 {
				// The first cycle starts with the CPU hog, so that make
				// test's three rounds always check that a machine busy on
				// every core calls no agent lost.
				order = append([]string{cpuHog}, slices.DeleteFunc(order, func(v string) bool { return v == cpuHog })...)
			}
		}
		victim := order[0]
		order = order[1:]
		at := time.Duration(rng.Int64N(int64(calm.duration)))
		rows = append(rows, s.chaosRound(t, i, victim, at))
	}
	report := chaosReport(rows, seed)
	t.Log("\n" + report)
	if f := os.Getenv("BENCHQ_CHAOS_REPORT"); f != "" {
		if err := os.WriteFile(f, []byte(report), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// chaosVictims are the components a round may kill: the stack's stores,
// its services, an agent, Prometheus and the experiment's SUT.
// cpu-hog kills nothing: it starts a busy loop on every core, at normal
// priority, for the rest of the round.
var chaosVictims = []string{"nats-server", "results-db", "collector", "scheduler", "deployer", "driver-agent-1", "driver-agent-2", "prometheus", "sut", cpuHog}

// cpuHog is the victim that loads every core instead of killing.
const cpuHog = "cpu-hog"

// chaosFlags is the experiment of each round: about 11 s here.
var chaosFlags = []string{"-dbms", "Redis", "-sf", "0.05", "-xop", "0.1", "-nlt", "4", "-nbp", "2", "-nbt", "4", "-tr"}

type chaosRow struct {
	round    int
	victim   string        // "" in round 0
	at       time.Duration // the kill, after submitting
	killed   string        // what was killed, or why nothing was
	outcome  string        // done | failed | cancelled | HUNG
	reason   string
	duration time.Duration // submitting to the experiment's end
	shards   int           // shard results stored
	problems []string      // failed checks
}

// chaosRound runs one experiment, kills victim at `at` after submitting it
// and checks the aftermath (see TestChaos).
func (s *stack) chaosRound(t *testing.T, round int, victim string, at time.Duration) chaosRow {
	t.Helper()
	r := chaosRow{round: round, victim: victim, at: at}
	code := fmt.Sprintf("chaos-%d-%d", round, time.Now().Unix())
	s.cli(t, time.Minute, append([]string{"ycsb", "-e", code, "--detach"}, append(chaosFlags, "run")...)...)
	submitted := time.Now()
	if victim != "" {
		time.Sleep(at)
		if victim == cpuHog {
			var stop func()
			r.killed, stop = startCPUHog(t)
			defer stop()
		} else {
			r.killed = s.chaosKill(t, code, victim)
		}
	}
	r.outcome, r.reason = s.waitEnded(t, code, submitted.Add(4*time.Minute))
	r.duration = time.Since(submitted)
	if r.outcome == "HUNG" {
		out, _ := s.benchq(context.Background(), "status")
		r.problems = append(r.problems, "did not end within 4 minutes")
		t.Logf("round %d: %s did not end within 4 minutes; benchq status:\n%s", round, code, out)
		_, _ = s.benchq(context.Background(), "stop", "-e", code, "-reason", "chaos: hung")
	}
	r.problems = append(r.problems, s.checkAftermath(t, code, victim, &r)...)
	for _, p := range r.problems {
		t.Errorf("round %d (%s killed %.1f s after submitting: %s): %s", round, victim, at.Seconds(), r.killed, p)
	}
	t.Logf("round %d: %s killed %.1f s in (%s): %s %s in %.1f s", round, victim, at.Seconds(), r.killed, r.outcome, r.reason, r.duration.Seconds())
	return r
}

// chaosKill SIGKILLs victim and, unless it is the SUT, starts it again
// after a downtime of 0.5 s; it says what it killed.
func (s *stack) chaosKill(t *testing.T, code, victim string) string {
	t.Helper()
	if victim == "sut" {
		pid, name := s.sutPid(code)
		if pid == 0 {
			return noSUT
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return fmt.Sprintf("kill %s: %v", name, err)
		}
		return "redis-server of " + name
	}
	pid := s.pid(victim)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s (pid %d): %v", victim, pid, err)
	}
	time.Sleep(500 * time.Millisecond)
	if out, err := s.benchq(context.Background(), "restart", victim); err != nil {
		t.Fatalf("benchq restart %s: %v\n%s", victim, err, out)
	}
	return fmt.Sprintf("pid %d, restarted", pid)
}

// startCPUHog starts a busy loop per core (sh, at normal priority) and
// returns what it started and how to stop it.
func startCPUHog(t *testing.T) (string, func()) {
	t.Helper()
	var pids []int
	for range runtime.NumCPU() {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatalf("cpu hog: %v", err)
		}
		pids = append(pids, cmd.Process.Pid)
		go func() { _ = cmd.Wait() }()
	}
	return fmt.Sprintf("%d busy loops", len(pids)), func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// noSUT says a round's SUT victim was not alive at the drawn moment
// (before its deploy or after its teardown): nothing was killed.
const noSUT = "no SUT alive at that moment"

// sutPid is the pid of experiment code's live SUT (the local backend keeps
// its endpoint in suts/<code>/<configuration>/endpoint.json) and its
// configuration, or 0.
func (s *stack) sutPid(code string) (int, string) {
	files, _ := filepath.Glob(filepath.Join(s.home, "suts", code, "*", "endpoint.json"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var ep struct{ Pid int }
		if json.Unmarshal(data, &ep) == nil && ep.Pid > 0 && syscall.Kill(ep.Pid, 0) == nil {
			return ep.Pid, filepath.Base(filepath.Dir(f))
		}
	}
	return 0, ""
}

// waitEnded polls the results database (which may be restarting) until
// experiment code has ended; "HUNG" when deadline passes first.
func (s *stack) waitEnded(t *testing.T, code string, deadline time.Time) (status, reason string) {
	t.Helper()
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, s.info.DBURL)
		if err == nil {
			err = conn.QueryRow(ctx, `SELECT status, coalesce(reason, '') FROM experiments WHERE code = $1`, code).Scan(&status, &reason)
			conn.Close(ctx)
		}
		cancel()
		if err == nil && status != "running" {
			return status, reason
		}
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Logf("waiting for %s: %v", code, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	return "HUNG", ""
}

// checkAftermath checks an ended round (see TestChaos) and returns what
// failed.
func (s *stack) checkAftermath(t *testing.T, code, victim string, r *chaosRow) (problems []string) {
	t.Helper()
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	switch {
	case r.outcome == "done":
	case r.outcome == "HUNG":
	case r.reason == "":
		bad("ended %s without a reason", r.outcome)
	case victim == cpuHog:
		bad("a busy machine made the experiment end %s: %s", r.outcome, r.reason)
	case victim != "sut":
		bad("killing %s made the experiment end %s: %s", victim, r.outcome, r.reason)
	case !strings.Contains(r.reason, "died"):
		bad("the SUT was killed and the experiment ended %s, but the reason does not say it died: %s", r.outcome, r.reason)
	}
	// The summary waits until the collector stored everything; a done
	// experiment's result tests all pass.
	out, err := s.benchq(context.Background(), "summary", "-e", code)
	if err != nil {
		bad("benchq summary: %v\n%s", err, out)
	} else if r.outcome == "done" && (!strings.Contains(out, "TEST passed: Workflow as planned") || strings.Contains(out, "TEST failed")) {
		var failed []string
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "TEST failed") {
				failed = append(failed, strings.TrimSpace(l))
			}
		}
		bad("the experiment is done but its result tests say otherwise: %s", strings.Join(failed, "; "))
	}
	// Exactly once.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.info.DBURL)
	if err != nil {
		bad("results database: %v", err)
		return problems
	}
	defer conn.Close(ctx)
	var published, stored, unmatched int
	if err := conn.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM messages WHERE code = $1 AND subject LIKE 'benchq.results.%.final'),
		       (SELECT count(*) FROM shard_results WHERE code = $1),
		       (SELECT count(*) FROM shard_results r WHERE code = $1
		          AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = r.message_id))`, code).Scan(&published, &stored, &unmatched); err != nil {
		bad("count results: %v", err)
	}
	r.shards = stored
	if published != stored || unmatched != 0 {
		bad("%d final results published, %d stored, %d stored without their message: not exactly once", published, stored, unmatched)
	}
	rows, err := conn.Query(ctx, `
		SELECT p.phase, p.attempt, p.shards, count(r.shard) FILTER (WHERE r.status = 'ok')
		FROM phases p LEFT JOIN shard_results r USING (code, phase, attempt)
		WHERE p.code = $1 AND p.status = 'done'
		GROUP BY p.phase, p.attempt, p.shards`, code)
	if err != nil {
		bad("phases: %v", err)
	} else {
		for rows.Next() {
			var phase string
			var attempt, shards, ok int
			if err := rows.Scan(&phase, &attempt, &shards, &ok); err != nil {
				bad("phases: %v", err)
			} else if ok != shards {
				bad("%s attempt %d is done with %d of its %d shard results", phase, attempt, ok, shards)
			}
		}
		rows.Close()
	}
	// A busy machine is no reason to call an agent lost: no phase attempt
	// failed, none was re-run.
	if victim == cpuHog {
		var failed string
		if err := conn.QueryRow(ctx, `SELECT coalesce(string_agg(phase || ' attempt ' || attempt || ': ' || coalesce(reason, ''), '; '), '')
			FROM phases WHERE code = $1 AND (status <> 'done' OR attempt > 1)`, code).Scan(&failed); err != nil {
			bad("phases: %v", err)
		} else if failed != "" {
			bad("under a CPU hog, phases failed or were re-run: %s", failed)
		}
	}
	// Nothing left behind (teardown follows the end by a moment).
	var left []string
	wait := time.Now().Add(20 * time.Second)
	for {
		left = nil
		if n := s.liveSUTs(); n > 0 {
			left = append(left, fmt.Sprintf("%d SUTs", n))
		}
		if n := livePhaseAgents(code); n > 0 {
			left = append(left, fmt.Sprintf("%d phase agents", n))
		}
		left = append(left, s.strays()...)
		if len(left) == 0 || time.Now().After(wait) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if len(left) > 0 {
		bad("left behind: %s", strings.Join(left, ", "))
	}
	s.readStack()
	for _, p := range s.info.Procs {
		if syscall.Kill(p.Pid, 0) != nil {
			bad("%s (pid %d) is not running", p.Name, p.Pid)
		}
	}
	return problems
}

// strays are the processes started under this stack's home (they carry its
// BENCHQ_HOME) that are none of its components: a driver or SUT that
// outlived its experiment, a second copy of a service. PostgreSQL's own
// processes are the results database's.
func (s *stack) strays() []string {
	s.readStack()
	own := map[int]bool{}
	for _, p := range s.info.Procs {
		own[p.Pid] = true
	}
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, _ := strconv.Atoi(filepath.Base(d))
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || own[pid] || !slices.Contains(strings.Split(string(env), "\x00"), "BENCHQ_HOME="+s.home) {
			continue
		}
		if comm, _ := os.ReadFile(filepath.Join(d, "comm")); strings.TrimSpace(string(comm)) != "postgres" {
			out = append(out, fmt.Sprintf("pid %d (%s)", pid, strings.TrimSpace(string(comm))))
		}
	}
	return out
}

// chaosReport is the table of rounds and the totals against the goals.
func chaosReport(rows []chaosRow, seed int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos: %d rounds with a kill, seed %d; experiment: benchq ycsb %s run\n", len(rows)-1, seed, strings.Join(chaosFlags, " "))
	fmt.Fprintf(&b, "%5s  %-14s %8s  %-9s %9s %7s  %s\n", "round", "killed", "at (s)", "outcome", "took (s)", "shards", "what was killed / reason / problems")
	ended, done, problems, missed := 0, 0, 0, 0
	byVictim := map[string][2]int{}
	for _, r := range rows {
		victim := r.victim
		if victim == "" {
			victim = "(none)"
		}
		note := r.killed
		if r.reason != "" {
			note += "; " + r.reason
		}
		if len(r.problems) > 0 {
			note += "; PROBLEMS: " + strings.Join(r.problems, " | ")
		}
		fmt.Fprintf(&b, "%5d  %-14s %8.1f  %-9s %9.1f %7d  %s\n", r.round, victim, r.at.Seconds(), r.outcome, r.duration.Seconds(), r.shards, note)
		if r.round == 0 {
			continue
		}
		if r.outcome != "HUNG" {
			ended++
		}
		if r.outcome == "done" {
			done++
		}
		if len(r.problems) > 0 {
			problems++
		}
		if r.killed == noSUT {
			missed++
			continue
		}
		v := byVictim[r.victim]
		v[0]++
		if r.outcome == "done" {
			v[1]++
		}
		byVictim[r.victim] = v
	}
	n := len(rows) - 1
	fmt.Fprintf(&b, "ended %d of %d (goal: all), done %d, failed with a reason %d; rounds with a failed check: %d (goal: 0)\n", ended, n, done, ended-done, problems)
	var per []string
	for _, v := range chaosVictims {
		if c, ok := byVictim[v]; ok {
			per = append(per, fmt.Sprintf("%s %d/%d", v, c[1], c[0]))
		}
	}
	fmt.Fprintf(&b, "done per component killed: %s", strings.Join(per, ", "))
	if missed > 0 {
		fmt.Fprintf(&b, " (and %d SUT round(s) with no SUT alive at the moment: nothing killed)", missed)
	}
	b.WriteString("\n")
	// What a kill costs a user: the round's duration less the calm round's,
	// per component (mean and worst over the rounds that ended).
	costs := map[string][]float64{}
	for _, r := range rows[1:] {
		if r.outcome != "HUNG" && r.killed != noSUT {
			costs[r.victim] = append(costs[r.victim], (r.duration - rows[0].duration).Seconds())
		}
	}
	var cost []string
	for _, v := range chaosVictims {
		if c := costs[v]; len(c) > 0 {
			sum := 0.0
			for _, x := range c {
				sum += x
			}
			cost = append(cost, fmt.Sprintf("%s %+.1f (worst %+.1f)", v, sum/float64(len(c)), slices.Max(c)))
		}
	}
	fmt.Fprintf(&b, "seconds each kill cost against the calm round's %.1f s, mean (worst): %s\n", rows[0].duration.Seconds(), strings.Join(cost, ", "))
	return b.String()
}

func envInt(key string, dflt int) (int, error) {
	v := os.Getenv(key)
	if v == "" {
		return dflt, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q is not a number", key, v)
	}
	return n, nil
}
