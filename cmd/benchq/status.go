package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/natsauth"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/stack"
)

// serviceConsumers are the durable consumers each service pulls from: a
// consumer with waiting pull requests proves a live instance, however it
// was started (embedded stack, Kubernetes, by hand).
var serviceConsumers = []struct{ service, stream, durable string }{
	{"scheduler", contracts.StreamRequests, contracts.DurableSchedulerRequests},
	{"scheduler", contracts.StreamEvents, contracts.DurableSchedulerEvents},
	{"scheduler", contracts.StreamResults, contracts.DurableSchedulerResults},
	{"deployer", contracts.StreamJobs, contracts.DurableDeployer},
	{"collector", contracts.StreamEvents, contracts.DurableCollectorEvents},
	{"collector", contracts.StreamResults, contracts.DurableCollectorResults},
	{"driver-agent", contracts.StreamJobs, contracts.DurableAgents},
}

// cmdStatus prints, like bexhoma's `bexperiments status`, the health of each
// component, the agents, the volumes and every running experiment.
func cmdStatus(ctx context.Context, args []string, st *State) int {
	s, err := stack.Load(st)
	if s == nil {
		st.Errorf("%v", err)
		return ExitNotReady
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	out := st.Stdout
	healthy := true
	line := func(name, state string) {
		fmt.Fprintf(out, "%-18s %s\n", name+":", state)
		if !strings.HasPrefix(state, "Running") && !strings.HasPrefix(state, "not configured") {
			healthy = false
		}
	}

	b, err := s.Dial()
	if errors.Is(err, natsauth.ErrSeed) {
		line("Message queue", fmt.Sprintf("benchq cannot log in (%s: %v)", s.NATSURL, err))
		return ExitFailed
	} else if err != nil {
		line("Message queue", fmt.Sprintf("NOT REACHABLE (%s: %v); start it again: benchq restart %s", s.NATSURL, err, stack.NATSProc))
		return ExitFailed
	}
	defer b.Close()
	js := b.JS
	line("Message queue", fmt.Sprintf("Running (NATS %s, JetStream, %s)", b.NC.ConnectedServerVersion(), s.NATSURL))
	line("Results database", dbStatus(ctx, s.DBURL))
	promURL := s.PrometheusURL
	if promURL == "" {
		promURL = st.Env("BENCHQ_PROMETHEUS_URL") // one run by hand beside the stack
	}
	line("Prometheus", stack.PrometheusStatus(ctx, promURL, s.MonitoringOff))
	if s.IntakeURL != "" {
		line("HTTP intake", intakeStatus(ctx, s.IntakeURL, s.IntakeToken))
	}

	// Services: the embedded stack's processes, and their consumers.
	pulling := map[string][]string{}
	for _, c := range serviceConsumers {
		cons, err := js.Consumer(ctx, c.stream, c.durable)
		if err != nil {
			continue
		}
		info, err := cons.Info(ctx)
		if err == nil && info.NumWaiting > 0 {
			pulling[c.service] = append(pulling[c.service], c.durable)
		}
	}
	pids := map[string][]string{}
	for _, p := range s.Procs {
		name := p.Name
		if strings.HasPrefix(name, "driver-agent") {
			name = "driver-agent"
		}
		state := fmt.Sprintf("%d", p.Pid)
		if !procs.Alive(p.Pid) {
			state += " (DEAD, see " + p.Log + ")"
		}
		pids[name] = append(pids[name], state)
	}
	for _, svc := range []string{"scheduler", "deployer", "collector", "driver-agent"} {
		state := "Running"
		if len(pulling[svc]) == 0 {
			state = "NOT PULLING (no live consumer)"
		}
		if len(pids[svc]) > 0 {
			state += " (pid " + strings.Join(pids[svc], ", ") + ")"
		}
		if strings.Contains(state, "DEAD") && state[:7] == "Running" {
			state = "DEGRADED " + state
		}
		line(svc, state)
	}

	fmt.Fprintln(out)
	agentRows := agentTable(ctx, js)
	fmt.Fprint(out, grid([]string{"Agents", "last heartbeat", "busy with"}, agentRows))
	fmt.Fprintln(out)
	fmt.Fprint(out, grid(volumeColumns, volumeTable(ctx, js, st.Home())))

	states, err := runningExperiments(ctx, js)
	if err != nil {
		st.Errorf("read experiments: %v", err)
		return ExitFailed
	}
	for _, x := range states {
		fmt.Fprintln(out)
		fmt.Fprint(out, grid([]string{x.Code, "dbms", "sut", "phase", "attempt", "pending", "running", "done"}, experimentRows(x)))
		if why := slotWait(x, states); why != "" {
			fmt.Fprintf(out, "%s: %s\n", x.Code, why)
		}
	}
	if len(states) == 0 {
		fmt.Fprintln(out, "\nNo experiment is running.")
	}
	if !healthy {
		return ExitFailed
	}
	return ExitOK
}

func dbStatus(ctx context.Context, url string) string {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Sprintf("NOT REACHABLE (%v); start it again: benchq restart %s", err, stack.DBProc)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, `SELECT current_setting('server_version')`).Scan(&v); err != nil {
		return fmt.Sprintf("NOT ANSWERING (%v)", err)
	}
	var ts bool
	_ = conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'timescaledb')`).Scan(&ts)
	kind := "PostgreSQL " + v
	if ts {
		kind += " with TimescaleDB"
	}
	return "Running (" + kind + ")"
}

// kvValues reads every entry of a named KV bucket.
func kvValues(ctx context.Context, js jetstream.JetStream, bucket string) (map[string][]byte, error) {
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", bucket, err)
	}
	return bus.Values(ctx, kv)
}

// kvRows renders a bucket's entries as rows sorted by their first cell,
// or one row saying why it could not be read.
func kvRows(ctx context.Context, js jetstream.JetStream, bucket string, cols int, row func(key string, value []byte) []string) [][]string {
	values, err := kvValues(ctx, js, bucket)
	if err != nil {
		return [][]string{padRow("(unreadable: "+err.Error()+")", cols)}
	}
	var rows [][]string
	for k, v := range values {
		rows = append(rows, row(k, v))
	}
	sortRows(rows)
	return rows
}

// orNone is rows, or when there are none one row saying why.
func orNone(rows [][]string, cols int, none string) [][]string {
	if len(rows) == 0 {
		return [][]string{padRow(none, cols)}
	}
	return rows
}

func padRow(first string, cols int) []string {
	return append([]string{first}, make([]string, cols-1)...)
}

func sortRows(rows [][]string) {
	sort.Slice(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
}

func agentTable(ctx context.Context, js jetstream.JetStream) [][]string {
	return orNone(kvRows(ctx, js, contracts.KVAgents, 3, func(k string, v []byte) []string {
		var hb contracts.Heartbeat
		_ = json.Unmarshal(v, &hb)
		name := hb.Name
		if err := contracts.VerifyHeartbeat(k, hb); err != nil {
			name = k + " (not its run's: " + err.Error() + ")"
		}
		return []string{name, fmt.Sprintf("%.0fs ago", time.Since(hb.At).Seconds()), hb.Busy}
	}), 3, "(none: start agents with benchq up)")
}

// volumeColumns are the volumes table's: the volumes record's, and the
// SUT using each (local backend; on Kubernetes the cluster knows).
var volumeColumns = []string{"Volumes", "dbms", "use case", "loaded", "timeLoading [s]", "size", "in use by"}

func volumeTable(ctx context.Context, js jetstream.JetStream, home string) [][]string {
	users := volumeClaims(home)
	listed := map[string]bool{}
	rows := kvRows(ctx, js, contracts.KVVolumes, len(volumeColumns), func(k string, v []byte) []string {
		var vol contracts.VolumeEntry
		_ = json.Unmarshal(v, &vol)
		listed[k] = true
		user := ""
		if u, ok := users[k]; ok {
			user = u.String()
		}
		return []string{k, vol.DBMS, vol.UseCase, fmt.Sprint(vol.Loaded), fmt.Sprintf("%.0f", vol.TimeLoadingS), vol.Size, user}
	})
	// A new volume has no record until its SUT is torn down: list it
	// while its first SUT uses it, not loaded.
	for name, u := range users {
		if !listed[name] {
			rows = append(rows, []string{name, "", "", "false (new)", "", "", u.String()})
		}
	}
	sortRows(rows)
	return orNone(rows, len(volumeColumns), "(none: -rst keeps a SUT's data on one)")
}

func runningExperiments(ctx context.Context, js jetstream.JetStream) ([]contracts.ExperimentState, error) {
	all, err := experimentStates(ctx, js)
	if err != nil {
		return nil, err
	}
	var out []contracts.ExperimentState
	for _, x := range all {
		if x.Status == contracts.ExperimentRunning {
			out = append(out, x)
		}
	}
	return out, nil
}

// experimentStates are the experiments the scheduler's state holds, running
// or ended, oldest first.
func experimentStates(ctx context.Context, js jetstream.JetStream) ([]contracts.ExperimentState, error) {
	values, err := kvValues(ctx, js, contracts.KVExperiments)
	if err != nil {
		return nil, err
	}
	var out []contracts.ExperimentState
	for _, v := range values {
		var x contracts.ExperimentState
		if json.Unmarshal(v, &x) == nil {
			out = append(out, x)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartedAt.Before(out[j].StartedAt) })
	return out, nil
}

// experimentRows: one row per configuration with its SUT state, phase and
// the current phase's shards.
func experimentRows(x contracts.ExperimentState) [][]string {
	var rows [][]string
	for i, c := range x.Configs {
		pc := x.Plan.Configurations[i]
		phase, attempt, pending, running, done := "", "", "", "", ""
		switch {
		case c.Current != nil:
			phase = pc.Phases[c.Phase].Name
			attempt = fmt.Sprint(c.Current.Attempt)
			p, r, d := c.Current.Shards()
			pending, running, done = fmt.Sprint(p), fmt.Sprint(r), fmt.Sprint(d)
		case c.Status == contracts.ConfigRunning && c.Phase >= len(pc.Phases):
			phase = "(held: benchq stop ends it)"
		case c.Status == contracts.ConfigRemoved:
			phase = fmt.Sprintf("(%d of %d phases)", min(c.Phase+1, len(pc.Phases)), len(pc.Phases))
		}
		sut := c.Status
		if c.Failed != "" {
			sut += " (" + c.Failed + ")"
		}
		rows = append(rows, []string{pc.Name, pc.DBMS, sut, phase, attempt, pending, running, done})
	}
	return rows
}

// cmdStop cancels one experiment (-e) or every running one, and waits
// until each has ended.
// intakeStatus asks the scheduler's HTTP intake for its health.
func intakeStatus(ctx context.Context, base, token string) string {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	if err != nil {
		return "NOT REACHABLE (" + err.Error() + ")"
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "NOT REACHABLE (" + err.Error() + ")"
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("UNHEALTHY (%s: %s)", base, resp.Status)
	}
	return fmt.Sprintf("Running (%s, token in %s)", base, token)
}

func cmdStop(ctx context.Context, args []string, st *State) int {
	fs := newFlagSet("stop [-e CODE] [-reason TEXT] [-wait DURATION]", "Cancel one running experiment (-e), or every running one: its phases stop, its SUTs are removed,\nand what was measured so far is kept.")
	code := fs.String("e", "", "the experiment to stop (default: every running experiment)")
	reason := fs.String("reason", "", "why, recorded with the experiment")
	wait := fs.Duration("wait", 2*time.Minute, "how long to wait for the teardown")
	if rc, done := parseArgs(fs, args, st); done {
		return rc
	}
	if fs.NArg() > 0 {
		st.Errorf("stop: unexpected %q (usage: benchq stop [-e CODE])", strings.Join(fs.Args(), " "))
		return ExitUsage
	}
	b, notReady := connectStack(st)
	if b == nil {
		return notReady
	}
	defer b.Close()
	states, err := experimentStates(ctx, b.JS)
	if err != nil {
		st.Errorf("read experiments: %v", err)
		return ExitFailed
	}
	var codes []string
	ended := "" // how experiment -e ended, when the state still holds it
	for _, x := range states {
		switch {
		case *code != "" && x.Code != *code:
		case x.Status == contracts.ExperimentRunning:
			codes = append(codes, x.Code)
		case *code != "":
			ended = x.Status
		}
	}
	if len(codes) == 0 {
		if *code != "" {
			if ended != "" {
				st.Errorf("experiment %s is not running: it ended %s (benchq summary -e %s shows it)", *code, ended, *code)
			} else {
				st.Errorf("experiment %s is not running (benchq list shows the experiments; benchq summary -e %s shows it, if it ran)", *code, *code)
			}
			return ExitFailed
		}
		fmt.Fprintln(st.Stdout, "no experiment is running")
		return ExitOK
	}
	return stopExperiments(ctx, st, b, codes, *reason, *wait)
}

// stopExperiments cancels the experiments codes and waits for their ends.
// Every stop goes out first, then each end is awaited within the one wait
// (each given a second at least, for an end already stored): N
// experiments take as long as the slowest, not N waits.
func stopExperiments(ctx context.Context, st *State, b *bus.Bus, codes []string, reason string, wait time.Duration) int {
	ends := make([]jetstream.Consumer, len(codes))
	for i, c := range codes {
		cons, err := b.JS.OrderedConsumer(ctx, contracts.StreamEvents, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{contracts.TopicExperimentCancelled.For(c),
				contracts.TopicExperimentDone.For(c), contracts.TopicExperimentFailed.For(c)},
		})
		if err != nil {
			st.Errorf("follow %s: %v", c, err)
			return ExitFailed
		}
		ends[i] = cons
		now := time.Now().UTC()
		stop := &contracts.Stop{Envelope: contracts.NewEnvelope(c, contracts.StopID(c, now), now), Reason: reason}
		if err := b.Publish(ctx, contracts.SubjStop, stop); err != nil {
			st.Errorf("publish stop: %v", err)
			return ExitFailed
		}
		fmt.Fprintf(st.Stdout, "stopping experiment %s ...\n", c)
	}
	rc := ExitOK
	deadline := time.Now().Add(wait)
	for i, c := range codes {
		msg, err := ends[i].Next(jetstream.FetchMaxWait(max(time.Until(deadline), time.Second)))
		if err != nil {
			st.Errorf("experiment %s did not end within %s; see: benchq status", c, wait)
			rc = ExitFailed
			continue
		}
		var end contracts.ExperimentEnd
		_ = json.Unmarshal(msg.Data(), &end)
		fmt.Fprintf(st.Stdout, "experiment %s %s: %s (what was measured is kept: benchq summary -e %s)\n", c, end.Status, end.Reason, c)
	}
	return rc
}
