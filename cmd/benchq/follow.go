package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/plan"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/stack"
)

// submitAndFollow publishes the request, prints one line per experiment
// event until the experiment ends, then prints the summary.
func submitAndFollow(ctx context.Context, st *State, s *stack.Stack, code, reqID string, data []byte, detach, report bool) int {
	b, rc := dial(st, s)
	if b == nil {
		return rc
	}
	defer b.Close()
	// A code that names an experiment already would be refused by the
	// scheduler; said here before anything is sent.
	if _, err := b.ExperimentState(ctx, code); err == nil {
		st.Errorf("experiment %s already exists (benchq summary -e %s shows it): give another code with -e, or leave -e out for a fresh one", code, code)
		return ExitFailed // as the scheduler's refusal would be
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		st.Errorf("read the experiments' state: %v", err)
		return ExitNotReady
	}
	// Follow the events from the stream's end before publishing, so that no
	// event of this request is missed and none of an earlier experiment of
	// the same code (the check above raced with another submission) is
	// replayed as this one's. A start sequence, not "new": the ordered
	// consumer is made again at each fetch until its first message, and
	// "new" would then skip what came in between.
	stream, err := b.JS.Stream(ctx, contracts.StreamEvents)
	if err != nil {
		st.Errorf("follow %s: %v", code, err)
		return ExitFailed
	}
	info, err := stream.Info(ctx)
	if err != nil {
		st.Errorf("follow %s: %v", code, err)
		return ExitFailed
	}
	cons, err := b.JS.OrderedConsumer(ctx, contracts.StreamEvents, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{contracts.ExperimentEvents(code)},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy, OptStartSeq: info.State.LastSeq + 1,
	})
	if err != nil {
		st.Errorf("follow %s: %v", code, err)
		return ExitFailed
	}
	if err := b.PublishRaw(ctx, contracts.SubjRequest, reqID, data); err != nil {
		st.Errorf("publish request: %v", err)
		return ExitFailed
	}
	start := time.Now()
	var mu sync.Mutex // guards the output, pr and active
	say := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(st.Stdout, "[%6.1fs] %s\n", time.Since(start).Seconds(), line)
	}
	fmt.Fprintf(st.Stdout, "experiment %s submitted\n", code)

	// Live progress from the shards' streamed intervals (core NATS: a
	// missed interval only makes a line a little older).
	pr, active := newProgress(), map[string]bool{}
	sub, err := b.NC.Subscribe(contracts.TopicInterval.For(code), func(m *nats.Msg) {
		var iv contracts.Interval
		if json.Unmarshal(m.Data, &iv) == nil {
			mu.Lock()
			pr.interval(iv)
			mu.Unlock()
		}
	})
	if err == nil {
		defer func() { _ = sub.Unsubscribe() }()
	}
	// A phase's first progress line comes as soon as it has one, the next
	// ones every progressEvery.
	tick := time.NewTicker(progressPoll)
	done := make(chan struct{})
	defer func() { tick.Stop(); close(done) }()
	printed := map[string]time.Time{}
	go func() {
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			mu.Lock()
			var lines []string
			for phase := range active {
				if time.Since(printed[phase]) < progressEvery {
					continue
				}
				if l := pr.line(phase); l != "" {
					lines = append(lines, l)
					printed[phase] = time.Now()
				}
			}
			mu.Unlock()
			sort.Strings(lines)
			for _, l := range lines {
				say(l)
			}
		}
	}()

	status := ""
	planned, deployed, waiting, endLine := false, false, "", ""
	var polled time.Time // the last look at the SUT slots
	for status == "" {
		msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			if ctx.Err() != nil {
				st.Errorf("interrupted; the experiment goes on (benchq status; benchq stop -e %s; benchq summary -e %s)", code, code)
				return ExitFailed
			}
			if planned && !deployed && time.Since(polled) >= slotPoll {
				// Nothing deployed yet: say when other experiments' SUTs
				// hold every slot -ms allows (once per change). Its own
				// state first; the others only while it has no SUT.
				polled = time.Now()
				if own, err := b.ExperimentState(ctx, code); err == nil && own.Alive() > 0 {
					deployed = true
				} else if err == nil {
					if xs, err := runningExperiments(ctx, b.JS); err == nil {
						if why := slotWait(*own, xs); why != waiting {
							if waiting = why; why != "" {
								say(why)
							}
						}
					}
				}
			}
			continue // no event for a while: the phase is running
		}
		subj, _ := contracts.ParseSubject(msg.Subject())
		if !answers(subj.Topic, msg.Data(), reqID) {
			continue // another submission's plan or refusal
		}
		planned = planned || subj.Topic == contracts.TopicPlanned
		deployed = deployed || subj.Topic != contracts.TopicPlanned
		mu.Lock()
		switch subj.Topic {
		case contracts.TopicPlanned:
			if p, err := decodePlanned(msg.Data()); err == nil {
				pr.plan(p)
			}
		case contracts.TopicPhaseStarted, contracts.TopicPhaseDone, contracts.TopicPhaseFailed:
			var pe contracts.PhaseEvent
			if json.Unmarshal(msg.Data(), &pe) == nil {
				if pe.Status == contracts.PhaseStarted {
					active[pe.Phase] = true
				} else {
					delete(active, pe.Phase)
					pr.end(pe.Phase)
				}
			}
		}
		mu.Unlock()
		line, end, rejected := describe(subj, msg.Data())
		if line != "" {
			say(line)
		}
		if rejected != "" {
			st.Errorf("request rejected: %s", rejected)
			return ExitFailed
		}
		if detach && subj.Topic == contracts.TopicPlanned {
			fmt.Fprintf(st.Stdout, "detached; follow it with: benchq status; the result with: benchq summary -e %s\n", code)
			return ExitOK
		}
		if status = end; end != "" {
			endLine = line
		}
	}
	if err := waitStored(ctx, b, s.DBURL, code, true); err != nil {
		st.Errorf("%v", err)
		return ExitFailed
	}
	if err := waitMetrics(ctx, s.DBURL, code); err != nil {
		st.Errorf("warning: %v; the summary shows the phases pulled so far (benchq summary -e %s shows them all later)", err, code)
	}
	fmt.Fprintln(st.Stdout)
	// With -tr a failed result test fails the run (the reporter says which),
	// so that a CI pipeline can gate on benchq's exit status.
	rc = runReporter(ctx, st, s, "summary", "-e", code, "--fail-on-tests")
	// The HTML report too, whatever the tests said: it shows why.
	if report {
		if path, rrc := writeReport(ctx, st, s, code, reportPath(st, code), ""); rrc == ExitOK {
			fmt.Fprintf(st.Stdout, "\nHTML report of %s (summary and plots; opens without network): %s\n", code, path)
		}
	}
	if status != contracts.ExperimentDone {
		// Why, on stderr too: a script that keeps only stderr sees the cause,
		// not just the result tests it failed.
		st.Errorf("%s", endLine)
	}
	if rc != ExitOK {
		return rc
	}
	if status != contracts.ExperimentDone {
		return ExitFailed
	}
	return ExitOK
}

// answers reports whether an event of topic (its body data) can answer
// request reqID: a plan or a rejection names its request; every later
// event belongs to the experiment the plan started.
func answers(topic contracts.Topic, data []byte, reqID string) bool {
	switch topic {
	case contracts.TopicRejected:
		var r contracts.Rejected
		return json.Unmarshal(data, &r) == nil && r.RequestID == reqID
	case contracts.TopicPlanned:
		var p contracts.Planned
		var req struct {
			ID string `json:"id"`
		}
		return json.Unmarshal(data, &p) == nil && json.Unmarshal(p.Request, &req) == nil && req.ID == reqID
	}
	return true
}

// Live progress: looked at every progressPoll, printed per phase at most
// every progressEvery. Before its first SUT, an experiment looks at most
// every slotPoll whether other experiments' SUTs hold the slots.
const (
	progressPoll  = time.Second
	progressEvery = 10 * time.Second
	slotPoll      = 5 * time.Second
)

// describe turns an event into a progress line; end is the experiment's
// final status when the event ends it.
func describe(subj contracts.ParsedSubject, data []byte) (line, end, rejected string) {
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	str := func(k string) string { v, _ := m[k].(string); return v }
	num := func(k string) float64 { v, _ := m[k].(float64); return v }
	switch subj.Topic {
	case contracts.TopicRejected:
		// No progress line: the caller's error says it, once.
		return "", "", str("reason")
	case contracts.TopicPlanned:
		p, _ := decodePlanned(data)
		phases := 0
		for _, c := range p.Configurations {
			phases += len(c.Phases)
		}
		return fmt.Sprintf("planned: %d configuration(s), %d phase(s)", len(p.Configurations), phases), "", ""
	case contracts.TopicSUTReady:
		ep, _ := m["endpoint"].(map[string]any)
		return fmt.Sprintf("sut ready: %s (%s on %v:%v, %.1fs)", str("configuration"), str("dbms"), ep["host"], ep["port"], num("ready_after_ms")/1000), "", ""
	case contracts.TopicSUTFailed:
		return fmt.Sprintf("sut FAILED: %s: %s", str("configuration"), str("reason")), "", ""
	case contracts.TopicSUTRemoved:
		return "sut removed: " + str("configuration"), "", ""
	case contracts.TopicPhaseStarted:
		shards := fmt.Sprintf("%v shards", m["shards"])
		if num("shards") == 1 {
			shards = "1 shard"
		}
		return fmt.Sprintf("phase started: %s (%s, %s)", str("phase"), str("kind"), shards), "", ""
	case contracts.TopicPhaseDone:
		return fmt.Sprintf("phase done: %s (%s)", str("phase"), span(str("started_at"), str("ended_at"))), "", ""
	case contracts.TopicPhaseSkipped:
		return fmt.Sprintf("phase skipped: %s: %s", str("phase"), str("reason")), "", ""
	case contracts.TopicPhaseFailed:
		return fmt.Sprintf("phase FAILED: %s: %s", str("phase"), shortReason(str("reason"))), "", ""
	case contracts.TopicExperimentDone, contracts.TopicExperimentFailed, contracts.TopicExperimentCancelled:
		line := "experiment " + str("status")
		if r := str("reason"); r != "" {
			line += ": " + shortReason(r)
		}
		return line, str("status"), ""
	}
	return "", "", ""
}

// maxReason is the most of a failure's reason a progress line shows.
const maxReason = 240

// shortReason is a failure's reason for a progress line: its first line, at
// most maxReason bytes. A driver's stack trace is whole in the summary,
// under Failures and re-runs, printed at the end.
func shortReason(r string) string {
	first, _, more := strings.Cut(strings.TrimSpace(r), "\n")
	if !more && len(first) <= maxReason {
		return first
	}
	if len(first) > maxReason {
		first = strings.ToValidUTF8(first[:maxReason], "")
	}
	return strings.TrimSpace(first) + " … (in full in the summary, under Failures and re-runs)"
}

// decodePlanned reads the plan of a planned event: the CLI's one reading
// of it (progress targets, the planned line).
func decodePlanned(data []byte) (plan.Plan, error) {
	var ev contracts.Planned
	var p plan.Plan
	if err := json.Unmarshal(data, &ev); err != nil {
		return p, err
	}
	err := json.Unmarshal(ev.Plan, &p)
	return p, err
}

func span(a, b string) string {
	ta, err1 := time.Parse(time.RFC3339Nano, a)
	tb, err2 := time.Parse(time.RFC3339Nano, b)
	if err1 != nil || err2 != nil {
		return "?"
	}
	return fmt.Sprintf("%.1fs", tb.Sub(ta).Seconds())
}

// waitStored polls until the collector has stored everything published so
// far — both of its consumers have nothing pending and nothing unacked — and,
// with ended, the experiment's end is in the database, so the summary is
// complete. After a collector crash this includes the redelivery of what it
// had fetched.
func waitStored(ctx context.Context, b *bus.Bus, dbURL, code string, ended bool) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	what := "the collector to store what was published so far"
	if code != "" {
		what = "the collector to store experiment " + code
	}
	return procs.WaitFor(ctx, what, 200*time.Millisecond, func(ctx context.Context) error {
		for _, c := range []struct{ stream, durable string }{
			{contracts.StreamEvents, contracts.DurableCollectorEvents},
			{contracts.StreamResults, contracts.DurableCollectorResults},
		} {
			cons, err := b.JS.Consumer(ctx, c.stream, c.durable)
			if err != nil {
				return err
			}
			info, err := cons.Info(ctx)
			if err != nil {
				return err
			}
			if info.NumPending > 0 || info.NumAckPending > 0 {
				return fmt.Errorf("%s: %d pending, %d unacknowledged", c.durable, info.NumPending, info.NumAckPending)
			}
		}
		if !ended {
			return nil
		}
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		var status string
		if err := conn.QueryRow(ctx, `SELECT status FROM experiments WHERE code = $1`, code).Scan(&status); err != nil {
			return err
		}
		if status == contracts.ExperimentRunning {
			return fmt.Errorf("status still running")
		}
		return nil
	})
}

// waitMetrics waits (up to a minute) until the collector has pulled the
// monitoring figures of every ended phase of code that asked for them: it
// pulls a phase a few scrape intervals after its end (services/collector/
// pull.go), so the last phase's figures come after the experiment's end.
func waitMetrics(ctx context.Context, dbURL, code string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return procs.WaitFor(ctx, "the collector to pull the monitoring figures of "+code, 500*time.Millisecond, func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		var unpulled int
		// The plan's monitoring switches are omitted when off, so any key
		// present asks for figures.
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM phases ph
			JOIN experiments e ON e.code = ph.code
			CROSS JOIN LATERAL jsonb_array_elements(e.plan->'configurations') cfg
			WHERE ph.code = $1 AND cfg->>'name' = ph.configuration AND ph.status IN ($2, $3)
			  AND ph.started_at IS NOT NULL AND ph.ended_at IS NOT NULL -- the collector pulls only a window
			  AND coalesce(cfg->'sut'->'monitoring', '{}'::jsonb) ?| array['sut', 'cluster', 'application']
			  AND NOT EXISTS (SELECT 1 FROM metric_summaries m WHERE m.code = ph.code AND m.phase = ph.phase AND m.attempt = ph.attempt)`,
			code, contracts.PhaseDone, contracts.PhaseFailed).Scan(&unpulled); err != nil {
			return err
		}
		if unpulled > 0 {
			return fmt.Errorf("%d phase(s) not pulled yet", unpulled)
		}
		return nil
	})
}

// reporterPath is the reporter benchq runs (findReporter), next to the
// running binary.
func reporterPath(st *State) string {
	exe, err := os.Executable()
	if err != nil {
		return findReporter(st, "")
	}
	return findReporter(st, filepath.Dir(exe))
}

// findReporter: BENCHQ_REPORTER; else the reporter in binDir (the
// bootstrap links the repository venv's console script next to benchq, so
// a BENCHQ_HOME anywhere finds it; a stale link is returned too, and the
// error of running it names it); else the venv beside the stack's home (a
// binary built elsewhere, run from the repository).
func findReporter(st *State, binDir string) string {
	if p := st.Env("BENCHQ_REPORTER"); p != "" {
		return p
	}
	if binDir != "" {
		p := filepath.Join(binDir, "reporter")
		if _, err := os.Lstat(p); err == nil {
			return p
		}
	}
	return filepath.Join(filepath.Dir(st.Home()), ".venv", "bin", "reporter")
}

func runReporter(ctx context.Context, st *State, s *stack.Stack, args ...string) int {
	cmd := exec.CommandContext(ctx, reporterPath(st), append(args, "--db", s.DBURL)...)
	cmd.Stdout, cmd.Stderr = st.Stdout, st.Stderr
	// BENCHQ_CLI: the reporter's hints ("list them with: …", "To see the
	// summary again run: …") then name benchq, the command the user typed.
	cmd.Env = append(os.Environ(), "BENCHQ_CLI=benchq")
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		st.Errorf("run reporter %s: %v (make bootstrap in the repository installs it next to benchq; or name it with BENCHQ_REPORTER=/path/to/.venv/bin/reporter)", reporterPath(st), err)
		return ExitFailed
	}
	return ExitOK
}

func cmdSummary(ctx context.Context, args []string, st *State) int {
	s, rc := loadStack(st)
	if s == nil {
		return rc
	}
	// What the collector has not stored yet would be missing: wait briefly
	// — unless it is not running, which waiting would not mend.
	if dead := deadProc(s, "collector"); dead != "" {
		st.Errorf("warning: %s; what it has not stored is missing from this summary (start it again: benchq restart collector)", dead)
	} else if b, err := s.Dial(); err == nil {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := waitStored(wctx, b, s.DBURL, "", false); err != nil {
			st.Errorf("warning: the collector has not stored everything yet (%v); the summary may be incomplete", err)
		}
		cancel()
		b.Close()
	}
	return runReporter(ctx, st, s, append([]string{"summary"}, args...)...)
}

// experimentBenchmark is the benchmark experiment code was planned with,
// as the stack's results database holds it ("" when it cannot tell: the
// summary that follows says what is wrong).
func experimentBenchmark(ctx context.Context, st *State, code string) string {
	var benchmark string
	_ = experimentRow(ctx, st, 5*time.Second, `SELECT coalesce(plan->'settings'->>'benchmark', request->>'benchmark', '') FROM experiments WHERE code = $1`, code, &benchmark)
	return benchmark
}

// deadProc says that the stack's process name is not running ("": it
// runs, or the stack has none of that name).
func deadProc(s *stack.Stack, name string) string {
	for _, p := range s.Procs {
		if p.Name == name && !procs.Alive(p.Pid) {
			return fmt.Sprintf("the %s (pid %d) is not running", name, p.Pid)
		}
	}
	return ""
}
