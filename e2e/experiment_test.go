package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
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
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/procfs"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/natsauth"
	"github.com/benchq/benchq/internal/procs"
)

// The default experiment of `make run` (see the Makefile's EXPERIMENT),
// monitored: the SUT, every component and the DBMS's application metrics.
func defaultFlags(dbms, code string) []string {
	return []string{"ycsb", "-e", code, "-dbms", dbms, "-sf", "0.1", "-xop", "0.2", "-xwl", "a", "-nlp", "2", "-nlt", "8",
		"-nbp", "1", "-nbt", "8", "-xtb", "16384", "-xnlf", "1", "-xnbf", "1", "-xli", "2", "-tr", "-m", "-mc", "-ma", "run"}
}

func TestEmbeddedStack(t *testing.T) {
	t.Parallel() // its own stack (see the package comment)
	s := startStack(t)

	// A bad request is answered with a rejection naming the field; the
	// scheduler keeps running and serves the experiments below.
	t.Run("rejects unknown DBMS", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		code := "e2e-bad"
		ev := s.events(ctx, code)
		if _, err := s.js.Publish(ctx, contracts.SubjRequest, []byte(`{"schema_version":1,"code":"e2e-bad","dbms":["NoSuchDB"]}`)); err != nil {
			t.Fatal(err)
		}
		m, err := ev.Next(jetstream.FetchMaxWait(20 * time.Second))
		if err != nil {
			t.Fatalf("no answer to a bad request: %v", err)
		}
		var rej contracts.Rejected
		_ = json.Unmarshal(m.Data(), &rej)
		if !strings.HasSuffix(m.Subject(), ".rejected") || len(rej.Errors) == 0 || rej.Errors[0].Field != "dbms[0]" || !strings.Contains(rej.Reason, "allowed: ") || !strings.Contains(rej.Reason, "PostgreSQL") || !strings.Contains(rej.Reason, "Redis") {
			t.Fatalf("got %s: %s", m.Subject(), m.Data())
		}
		// The CLI prints the rejection and exits non-zero.
		out, err := s.benchq(ctx, "ycsb", "-e", "e2e-bad-cli", "-dbms", "NoSuchDB", "run")
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(out, `unknown DBMS "NoSuchDB"`) {
			t.Fatalf("cli: %v\n%s", err, out)
		}
	})

	var compared []string // the default experiments, for reporter compare
	t.Run("Redis default experiment, collector killed mid-benchmark", func(t *testing.T) {
		code := fmt.Sprintf("e2e-redis-%d", time.Now().Unix())
		compared = append(compared, code)
		counted := map[string]int64{}
		// redis-server's CPU seconds as the kernel counts them, sampled
		// every 50 ms from the SUT's start to the experiment's end.
		var cpu *cpuSampler
		// The loaders' JVMs, the same way (their agents' children).
		var drivers *cpuSampler
		// Another agent forging the benchmarking shard's results and its
		// agent's heartbeats (forgery_test.go).
		var loaded string // the configuration, once its loading is done
		var forged *forger
		out := s.runExperiment(t, code, "Redis", 0, func(subject string, data []byte, ep *contracts.Endpoint) {
			var pe contracts.PhaseEvent
			_ = json.Unmarshal(data, &pe)
			switch {
			case strings.HasSuffix(subject, ".sut.ready") && cpu == nil:
				// The samplers must have read the counters before the
				// loading starts: on a crowded machine the drivers' first
				// read (a scan of every process) took longer than the 0.6 s
				// to the loading's first operation, and the check had no
				// sample before it. The scheduler is held meanwhile
				// (SIGSTOP), so no GO goes out until they have.
				sched := s.pid("scheduler")
				if err := syscall.Kill(sched, syscall.SIGSTOP); err != nil {
					t.Errorf("pause the scheduler: %v", err)
				}
				cpu, drivers = sampleCPU(t, ep.Port), s.sampleDriverCPU()
				for what, c := range map[string]*cpuSampler{"the SUT's": cpu, "the drivers'": drivers} {
					if err := c.waitFirst(30 * time.Second); err != nil {
						t.Errorf("%s CPU sampler: %v", what, err)
					}
				}
				if err := syscall.Kill(sched, syscall.SIGCONT); err != nil {
					t.Errorf("resume the scheduler: %v", err)
				}
				// The SUT's exporter holds none of the stack's secrets (nor does
				// the SUT, started the same way; redis-server rewrites its
				// environment's memory with its process title, so its
				// /proc/<pid>/environ cannot tell).
				s.checkNoSecrets(t, "the SUT's exporter", "REDIS_PASSWORD", s.sutPassword(t, code, pe.Configuration), "prometheus-redis-exporter", fmt.Sprintf(":%d", ep.Port))
			case strings.HasSuffix(subject, ".barrier.go") && loaded != "" && forged == nil:
				var g contracts.BarrierGo
				_ = json.Unmarshal(data, &g)
				forged = s.forge(t, code, loaded, g)
			case strings.HasSuffix(subject, ".phase.done") && pe.Kind == contracts.KindLoad:
				loaded = pe.Configuration
				// The SUT takes no client without its own password: neither
				// with none, nor with the stack's key, nor with the password
				// of another SUT (this configuration in another experiment).
				addr := fmt.Sprintf("%s:%d", ep.Host, ep.Port)
				if _, err := localdb.RedisCommand(context.Background(), addr, "DBSIZE"); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
					t.Errorf("DBSIZE without the SUT's password: %v, want NOAUTH", err)
				}
				for what, pw := range map[string]string{"the stack's key": s.sutKey(t), "another SUT's password": s.sutPassword(t, code+"0", pe.Configuration)} {
					if _, err := localdb.RedisCommandAs(context.Background(), addr, pw, "DBSIZE"); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
						t.Errorf("DBSIZE with %s: %v, want WRONGPASS", what, err)
					}
				}
				// Every key once: DBSIZE counts the data keys plus our binding's scan index.
				n, err := localdb.RedisCommandAs(context.Background(), addr, s.sutPassword(t, code, pe.Configuration), "DBSIZE")
				if err != nil {
					t.Errorf("DBSIZE: %v", err)
				}
				var keys int64
				fmt.Sscan(strings.TrimPrefix(n, ":"), &keys)
				counted["keys"] = keys - 1
			case strings.HasSuffix(subject, ".phase.started") && pe.Kind == contracts.KindRun:
				// The benchmarker's JVM holds none of the agent's secrets. It
				// is a standby, handed its job's arguments on stdin: every
				// standby JVM on the machine is checked, this stack's among
				// them.
				s.checkNoSecrets(t, "a YCSB JVM", "", s.sutPassword(t, code, pe.Configuration), "io.benchq.ycsb.Launcher", "--standby")
				// SIGKILL the collector during the benchmark phase, then start it again.
				if err := syscall.Kill(s.pid("collector"), syscall.SIGKILL); err != nil {
					t.Errorf("kill collector: %v", err)
				}
				if out, err := s.benchq(context.Background(), "restart", "collector"); err != nil {
					t.Errorf("restart collector: %v\n%s", err, out)
				}
				counted["killed"] = 1
			}
		})
		if counted["keys"] != 100000 {
			t.Errorf("Redis holds %d keys after loading, want 100000", counted["keys"])
		}
		if counted["killed"] != 1 {
			t.Error("the collector was not killed during the benchmark phase")
		}
		if forged == nil {
			t.Error("no GO of the benchmarking phase: nothing was forged")
		} else {
			forged.check(t, s)
		}
		s.checkResults(t, code, out)
		// The experiment as DataFrames: exported as CSV and parquet, read
		// back equal (docs/dataframes.md), with the build's version.
		s.python(t, "benchq_reporter.selfcheck.export", "--db", s.info.DBURL, "-e", code)
		// Its HTML report in headless Chromium: no console message, every
		// plot rendered, a screenshot that is not blank.
		s.python(t, "benchq_reporter.selfcheck.report", "--db", s.info.DBURL, "-e", code)
		// Every query of the Grafana dashboards, expanded as Grafana does,
		// against this results database and Prometheus (scraping every 1 s):
		// each returns rows the panel can use; only the live application
		// panels of the DBMSs this experiment does not run stay empty
		// (docs/grafana.md).
		s.python(t, "benchq_reporter.grafana.queries", "--db", s.info.DBURL, "--prometheus", s.info.PrometheusURL,
			"--scrape-interval", "1", "-e", code, "--require-rows",
			"--may-be-empty", "dragonfly application metrics, live", "--may-be-empty", "pgbouncer application metrics, live",
			"--may-be-empty", "postgresql application metrics, live",
			"--may-be-empty", "victoriametrics application metrics, live", "--may-be-empty", "prometheus application metrics, live",
			"--may-be-empty", "graphite application metrics, live",
			"--may-be-empty", "Ingest: sent against stored per second", "--may-be-empty", "Ingest: backlog",
			"--may-be-empty", "Queries under load", // benchq tsdb's
			// No saturation search here: e2e/saturation_test.go fills these.
			"--may-be-empty", "Saturation: goodput against the offered load", "--may-be-empty", "Saturation: p99 against goodput",
			"--may-be-empty", "Saturation steps")
		s.checkDashboardLink(t, code)
		// Ground truth: the SUT's CPU seconds of the loading phase (about
		// 2 s), as the summary reduces them from Prometheus' samples and the
		// deployer's reads at the phase's edges, within 5 % of what the
		// kernel counted for redis-server over the same window.
		if cpu == nil {
			t.Fatal("redis-server's CPU was not sampled")
		}
		cpu.stop()
		from, to := s.metricWindow(t, code, contracts.KindLoad)
		t.Logf("loading phase %s to %s", from.Format("15:04:05.000"), to.Format("15:04:05.000"))
		cpu.check(t, "SUT", s.metric(t, code, contracts.KindLoad, "sut", "cpu_seconds"), from, to)
		// The same for the loaders, whose agents read their JVMs' counters
		// at the phase's edges (final.driver_cpu): from the scrapes alone,
		// the JVMs' start-up before GO was carried into the phase (−20 %).
		drivers.stop()
		if !drivers.check(t, "loaders'", s.metric(t, code, contracts.KindLoad, "loader", "cpu_seconds"), from, to) {
			s.logDriverCPU(t, code, contracts.KindLoad, from, to)
		}
	})

	t.Run("PostgreSQL default experiment", func(t *testing.T) {
		code := fmt.Sprintf("e2e-pg-%d", time.Now().Unix())
		compared = append(compared, code)
		var rows int64 = -1
		// With thresholds, k6-style: one that holds, one no SUT can meet
		// (a p99 of 1 µs): its test fails and so does the run (exit 1),
		// naming the figure, the limit and the measured value.
		out := s.runExperiment(t, code, "PostgreSQL", 1, func(subject string, data []byte, ep *contracts.Endpoint) {
			var pe contracts.PhaseEvent
			_ = json.Unmarshal(data, &pe)
			if strings.HasSuffix(subject, ".phase.done") && pe.Kind == contracts.KindLoad {
				ctx := context.Background()
				// The SUT takes no login without its own password, nor with
				// another SUT's.
				addr := fmt.Sprintf("%s:%d", ep.Host, ep.Port)
				if conn, err := pgx.Connect(ctx, fmt.Sprintf("postgresql://%s@%s/%s?sslmode=disable", ep.User, addr, ep.Database)); err == nil {
					conn.Close(ctx)
					t.Error("the PostgreSQL SUT let a client in without its password")
				}
				if conn, err := pgx.Connect(ctx, s.sutURL(t, code+"0", pe.Configuration, addr, ep.User, ep.Database)); err == nil {
					conn.Close(ctx)
					t.Error("the PostgreSQL SUT let a client in with another SUT's password")
				}
				conn, err := pgx.Connect(ctx, s.sutURL(t, code, pe.Configuration, addr, ep.User, ep.Database))
				if err != nil {
					t.Errorf("connect SUT: %v", err)
					return
				}
				defer conn.Close(ctx)
				if err := conn.QueryRow(ctx, `SELECT count(*) FROM usertable`).Scan(&rows); err != nil {
					t.Errorf("count: %v", err)
				}
			}
		}, "-threshold", "error_share<1%", "-threshold", "p99[READ]<1us")
		const failed = "* TEST failed: Threshold p99[READ]<1us not met ("
		if !strings.Contains(out, failed) || !strings.Contains(out, "result test(s) failed (-tr): Threshold p99[READ]<1us not met (") {
			t.Errorf("the summary and the CLI do not name the failed threshold p99[READ]<1us")
		}
		// The other checks of the summary: that test failed as planned.
		out = strings.Replace(out, failed, "* TEST expected to fail, and did: Threshold p99[READ]<1us (", 1)
		checkSummary(t, out, "TEST passed: Threshold error_share<1% met in every benchmarking phase")
		if rows != 100000 {
			t.Errorf("usertable holds %d rows after loading, want 100000", rows)
		}
		s.checkResults(t, code, out)
	})

	// Both side by side (benchq compare: no database URL to type): a row
	// each, every figure measured (both ran with -m), the baseline at ratio
	// 1, a note that the phases paired are of two DBMSs; benchq list shows
	// both, done, with their configurations.
	t.Run("benchq compare and list", func(t *testing.T) {
		if len(compared) != 2 {
			t.Skipf("the default experiments did not both start: %v", compared)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := s.benchq(ctx, "compare", "-e", compared[0], "-e", compared[1])
		if err != nil {
			t.Fatalf("benchq compare: %v\n%s", err, out)
		}
		for _, code := range compared {
			row := ""
			for _, line := range strings.Split(out, "\n") {
				if strings.HasPrefix(line, "| "+code+" ") {
					row = line
				}
			}
			if row == "" || strings.Contains(row, "missing") {
				t.Errorf("%s: no row, or a figure missing:\n%s", code, out)
			}
		}
		if !strings.Contains(out, "| 1.000 ") {
			t.Errorf("the baseline is not at ratio 1:\n%s", out)
		}
		// Redis against PostgreSQL: the pairing by position says so.
		if !strings.Contains(out, "* "+compared[1]+": 1 of its phases are compared with a phase of another DBMS") {
			t.Errorf("no note that %s's phase is paired with another DBMS's:\n%s", compared[1], out)
		}
		t.Logf("benchq compare:\n%s", out)
		list, err := s.benchq(ctx, "list")
		if err != nil {
			t.Fatalf("benchq list: %v\n%s", err, list)
		}
		for _, code := range compared {
			if !regexp.MustCompile(`\| ` + regexp.QuoteMeta(code) + ` +\| done +\| \S+ +\| +\d+ \| +1 \| (Redis|PostgreSQL) +\|`).MatchString(list) {
				t.Errorf("benchq list: no row of %s, done, with its duration, 1 configuration and its DBMS:\n%s", code, list)
			}
		}
	})

	// Access control (docs/security.md) on the stack as `benchq up` made
	// it, after the experiments above ran through it: NATS admits each
	// process as its role only (anonymous connections: see startStack),
	// the results database password logins only, and no secret is in a
	// log, the stack file, a stored message or a result.
	t.Run("access control", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		agent, err := nats.NkeyOptionFromSeed(natsauth.SeedFile(s.info.NATSKeys, natsauth.Agent))
		if err != nil {
			t.Fatal(err)
		}
		refused := make(chan error, 8)
		nc, err := nats.Connect(s.info.NATSURL, agent, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { refused <- err }))
		if err != nil {
			t.Fatalf("the agents' key is refused: %v", err)
		}
		defer nc.Close()
		spoof := contracts.TopicPhaseDone.For("e2e-spoof")
		if err := nc.Publish(spoof, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		_ = nc.Flush()
		select {
		case err := <-refused:
			if !strings.Contains(err.Error(), "Permissions Violation") || !strings.Contains(err.Error(), spoof) {
				t.Errorf("publishing %s as an agent: %v", spoof, err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("an agent's key may publish %s", spoof)
		}

		// The owner, the collector's role and the readers' role each log in
		// with a password file of their own, and not without it.
		secrets := map[string]string{}
		for _, dbURL := range []string{s.info.DBOwnerURL, s.info.CollectorURL, s.info.DBURL} {
			u, err := url.Parse(dbURL)
			if err != nil {
				t.Fatal(err)
			}
			q := u.Query()
			passFile := q.Get("passfile")
			q.Del("passfile")
			u.RawQuery = q.Encode()
			if conn, err := pgx.Connect(ctx, u.String()); err == nil {
				conn.Close(ctx)
				t.Errorf("the results database let %s in without a password", u)
			}
			pass, err := os.ReadFile(passFile)
			if err != nil {
				t.Fatal(err)
			}
			secrets["the results database's password of "+u.User.Username()] = strings.TrimSpace(string(pass[strings.LastIndex(string(pass), ":")+1:]))
		}
		for _, r := range natsauth.Roles {
			seed, err := os.ReadFile(natsauth.SeedFile(s.info.NATSKeys, r))
			if err != nil {
				t.Fatal(err)
			}
			secrets["the NATS key of "+string(r)] = strings.TrimSpace(string(seed))
		}
		// The SUTs' key, and the password of every SUT this stack ran.
		secrets["the SUTs' key"] = s.sutKey(t)
		suts, err := s.results(t).Query(ctx, `SELECT code, name FROM configurations`)
		if err != nil {
			t.Fatal(err)
		}
		for suts.Next() {
			var code, name string
			if err := suts.Scan(&code, &name); err != nil {
				t.Fatal(err)
			}
			secrets["the SUT password of "+code+"/"+name] = s.sutPassword(t, code, name)
		}
		if suts.Err() != nil || len(secrets) < 4+len(natsauth.Roles) {
			t.Fatalf("the SUTs of the stack: %v (%d secrets)", suts.Err(), len(secrets))
		}
		files, _ := filepath.Glob(filepath.Join(s.home, "logs", "*"))
		files = append(files, filepath.Join(s.home, "stack.json"), filepath.Join(s.home, "results-db", "postgres.log"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			// Every role had what its part needs: nothing it did was refused.
			if i := strings.Index(string(b), "Permissions Violation"); i >= 0 {
				t.Errorf("%s: a refused publish or subscription: %s", f, strings.SplitN(string(b[i:]), "\n", 2)[0])
			}
			for what, secret := range secrets {
				if len(secret) < 16 || strings.Contains(string(b), secret) {
					t.Errorf("%s is in %s (or too short to search for)", what, f)
				}
			}
		}
		conn, err := pgx.Connect(ctx, s.info.DBURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`)
		if err != nil {
			t.Fatal(err)
		}
		tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(tables) < 5 {
			t.Fatalf("tables %v: %v", tables, err)
		}
		for _, table := range tables {
			for what, secret := range secrets {
				var n int
				q := fmt.Sprintf(`SELECT count(*) FROM %s t WHERE t::text LIKE '%%' || $1 || '%%'`, pgx.Identifier{table}.Sanitize())
				if err := conn.QueryRow(ctx, q, secret).Scan(&n); err != nil {
					t.Errorf("%s: %v", table, err)
				} else if n > 0 {
					t.Errorf("%s is stored in %d rows of %s", what, n, table)
				}
			}
		}
	})
	t.Run("attacks on NATS", s.security)
	t.Run("attacks on the results database", s.databaseRoles)
}

// runExperiment runs `benchq ycsb ... run` (the default flags, then extra)
// and calls onEvent for every event while it runs (with the SUT endpoint
// once known). It returns the CLI output; the CLI must exit with wantExit.
func (s *stack) runExperiment(t *testing.T, code, dbms string, wantExit int, onEvent func(subject string, data []byte, ep *contracts.Endpoint), extra ...string) string {
	// 1 to 4 minutes on 2 cores shared with the other stacks: the limit
	// only stops a hang.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ev := s.events(ctx, code)
	var out bytes.Buffer
	args := defaultFlags(dbms, code)
	args = append(append(args[:len(args)-1:len(args)-1], extra...), "run")
	cmd := s.command(ctx, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var ep *contracts.Endpoint
	for {
		select {
		case err := <-done:
			exit := 0
			if ee, ok := err.(*exec.ExitError); ok {
				exit = ee.ExitCode()
			} else if err != nil {
				t.Fatalf("benchq ycsb run: %v\n%s", err, out.String())
			}
			if exit != wantExit {
				t.Fatalf("benchq ycsb run: exit %d, want %d\n%s", exit, wantExit, out.String())
			}
			t.Logf("benchq output:\n%s", out.String())
			return out.String()
		default:
		}
		m, err := ev.Next(jetstream.FetchMaxWait(time.Second))
		if err != nil {
			continue
		}
		if strings.HasSuffix(m.Subject(), ".sut.ready") {
			var r contracts.SUTReady
			_ = json.Unmarshal(m.Data(), &r)
			ep = &r.Endpoint
		}
		onEvent(m.Subject(), m.Data(), ep)
	}
}

// checkResults: every shard exactly once in the database, all tests passed,
// Per Run throughput = the sum of its shard rows, and the monitoring of
// every component (-m -mc -ma) with CPU seconds and memory above 0.
func (s *stack) checkResults(t *testing.T, code, out string) {
	t.Helper()
	checkSummary(t, out, "TEST passed: Workflow as planned", "Loading Phase: [OVERALL].Throughput(ops/sec) contains no 0 or NaN", "Execution Phase: [OVERALL].Throughput(ops/sec) contains no 0 or NaN",
		"TEST passed: Loading phase: SUT deployment contains no 0 or NaN in CPU [CPUs]",
		"TEST passed: Loading phase: component loader contains no 0 or NaN in CPU [CPUs]",
		"TEST passed: Execution phase: SUT deployment contains no 0 or NaN in CPU [CPUs]",
		"TEST passed: Execution phase: component benchmarker contains no 0 or NaN in CPU [CPUs]",
		"### Application Metrics", "#### Execution phase: SUT deployment")
	for _, kc := range [][2]string{{contracts.KindLoad, "sut"}, {contracts.KindLoad, "loader"}, {contracts.KindRun, "sut"}, {contracts.KindRun, "benchmarker"}} {
		for _, metric := range []string{"cpu_seconds", "max_ram"} {
			if v := s.metric(t, code, kc[0], kc[1], metric); !(v > 0) {
				t.Errorf("%s phase, %s: %s = %v, want > 0", kc[0], kc[1], metric, v)
			}
		}
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.info.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var shards, distinct int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT (phase, shard)) FROM shard_results WHERE code = $1`, code).Scan(&shards, &distinct); err != nil {
		t.Fatal(err)
	}
	if shards != 3 || distinct != 3 {
		t.Errorf("%d shard results (%d distinct), want 3: two loaders and one benchmarker, each once", shards, distinct)
	}
	var loadSum float64
	if err := conn.QueryRow(ctx, `SELECT sum(throughput) FROM shard_results WHERE code = $1 AND kind = 'load'`, code).Scan(&loadSum); err != nil {
		t.Fatal(err)
	}
	perRun := perRunThroughput(t, out)
	if d := perRun - loadSum; d > 0.01 || d < -0.01 {
		t.Errorf("Per Run throughput %.2f != sum of shard rows %.2f", perRun, loadSum)
	}
	checkRunOutput(t, code, out)
}

// checkRunOutput: what `benchq … run` prints besides the summary: the
// Workload's lines on monitoring (with -m -mc -ma, on the local backend), the
// estimated duration beside the actual one (logged: the closing notes
// quote them), and the HTML report it wrote.
func checkRunOutput(t *testing.T, code, out string) {
	t.Helper()
	checkSummary(t, out, "  * System metrics are monitored by the deployer's process exporter (SUT) and the driver agents' (loaders, benchmarkers).",
		"  * Application metrics are monitored by exporter processes beside the SUT.")
	if m := regexp.MustCompile(`\* Duration: (\d+)s \(estimated (\d+)s\)`).FindStringSubmatch(out); m == nil {
		t.Errorf("no Duration line with the estimate in:\n%s", out)
	} else {
		t.Logf("%s: duration %s s, estimated %s s", code, m[1], m[2])
	}
	m := regexp.MustCompile(`HTML report of ` + regexp.QuoteMeta(code) + ` \(summary and plots; opens without network\): (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Errorf("benchq run did not say where its HTML report is:\n%s", out)
		return
	}
	if b, err := os.ReadFile(m[1]); err != nil || !strings.Contains(string(b), code) {
		t.Errorf("the HTML report %s: %v (or it does not name %s)", m[1], err, code)
	}
}

// metric is one figure of metric_summaries (the collector's reduction of
// the raw samples it pulled from Prometheus) for code's phase of kind, or
// NaN when it is missing.
func (s *stack) metric(t *testing.T, code, kind, component, metric string) float64 {
	t.Helper()
	ctx, conn := context.Background(), s.results(t)
	var v *float64
	var missing *string
	err := conn.QueryRow(ctx, `SELECT value, missing FROM metric_summaries WHERE code = $1 AND kind = $2 AND component = $3 AND metric = $4
		ORDER BY attempt DESC LIMIT 1`, code, kind, component, metric).Scan(&v, &missing)
	if err != nil {
		t.Errorf("%s phase, %s: %s: %v", kind, component, metric, err)
		return math.NaN()
	}
	if v == nil {
		t.Logf("%s phase, %s: %s missing: %v", kind, component, metric, *missing)
		return math.NaN()
	}
	return *v
}

// results connects to the stack's results database until t ends.
func (s *stack) results(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), s.info.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// metricWindow is the window [start, end] the collector reduced code's
// phase of kind over.
func (s *stack) metricWindow(t *testing.T, code, kind string) (from, to time.Time) {
	t.Helper()
	ctx, conn := context.Background(), s.results(t)
	if err := conn.QueryRow(ctx, `SELECT window_start, window_end FROM metric_summaries WHERE code = $1 AND kind = $2
		ORDER BY attempt DESC LIMIT 1`, code, kind).Scan(&from, &to); err != nil {
		t.Fatal(err)
	}
	return from, to
}

// cpuSampler reads a process' CPU seconds every 10 ms (its own and its
// reaped children's, as the SUT's tree counter has them: a BGSAVE fork's).
// Each sample keeps when its read began and when it ended: on a crowded
// machine the sampler can be held up for most of a second, in the middle
// of a read as well as between reads.
type cpuSampler struct {
	mu      sync.Mutex
	begun   []time.Time
	times   []time.Time // when each read ended
	seconds []float64
	parts   []map[int]float64 // per process (sampleDriverCPU), to explain a failed check
	done    chan struct{}
	stopped sync.WaitGroup
}

func sampleCPU(t *testing.T, port int) *cpuSampler {
	pid := 0
	return newCPUSampler(func() (float64, map[int]float64, bool) {
		if pid == 0 {
			pid = redisPid(port)
		}
		v := cpuSecondsOf(pid)
		return v, nil, pid != 0 && v >= 0
	})
}

// reapedByAgents is the key of sampleDriverCPU's parts that holds the CPU
// seconds of the agents' children they have reaped.
const reapedByAgents = 0

// sampleDriverCPU samples the CPU seconds of the drivers the stack's agents
// start (their child processes: the YCSB JVMs), summed: the live children's
// counters plus what the kernel added to the agents' own counters of
// reaped children (cutime, cstime) since the sampler began. A driver that
// exits is thus counted whole, even when the sampler was held up around
// its last moments. The children are found anew every 100 ms; one found
// late brings its CPU seconds so far with it.
func (s *stack) sampleDriverCPU() *cpuSampler {
	var agents []int
	for _, p := range s.info.Procs {
		if strings.HasPrefix(p.Name, "driver-agent") {
			agents = append(agents, p.Pid)
		}
	}
	reaped := func() float64 {
		var sum float64
		for _, pid := range agents {
			if v := reapedCPUOf(pid); v > 0 {
				sum += v
			}
		}
		return sum
	}
	reaped0 := reaped()
	children := map[int]bool{}
	var scanned time.Time
	return newCPUSampler(func() (float64, map[int]float64, bool) {
		if time.Since(scanned) > 100*time.Millisecond {
			stats, _ := filepath.Glob("/proc/[0-9]*/stat")
			for _, f := range stats {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
				if !children[pid] && slices.Contains(agents, parentOf(pid)) {
					children[pid] = true
				}
			}
			scanned = time.Now()
		}
		// A child reaped between the agents' read and its own would be
		// counted nowhere (or twice, read the other way round): read
		// again until the agents' reaped seconds hold still across it.
		for range 5 {
			before := reaped()
			parts := map[int]float64{reapedByAgents: before - reaped0}
			sum := before - reaped0
			for pid := range children {
				v := cpuSecondsOf(pid)
				if v < 0 {
					delete(children, pid) // reaped: its seconds are the agents' now
					continue
				}
				parts[pid] = v
				sum += v
			}
			if reaped() == before {
				return sum, parts, true
			}
		}
		return 0, nil, false
	})
}

// reapedCPUOf is the CPU time the kernel counted for pid's reaped children
// (cutime + cstime), -1 when pid is gone.
func reapedCPUOf(pid int) float64 {
	st, ok := statOf(pid)
	if !ok {
		return -1
	}
	return float64(st.CUTime+st.CSTime) / 100
}

// parentOf is pid's parent (0: gone).
func parentOf(pid int) int {
	st, _ := statOf(pid)
	return st.PPID
}

// statOf is /proc/<pid>/stat; false when pid is gone.
func statOf(pid int) (procfs.ProcStat, bool) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return procfs.ProcStat{}, false
	}
	st, err := p.Stat()
	return st, err == nil
}

// newCPUSampler calls read every 10 ms, keeping what it reads.
func newCPUSampler(read func() (float64, map[int]float64, bool)) *cpuSampler {
	c := &cpuSampler{done: make(chan struct{})}
	c.stopped.Add(1)
	go func() {
		defer c.stopped.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			begun := time.Now()
			if v, parts, ok := read(); ok {
				c.mu.Lock()
				c.begun, c.times, c.seconds, c.parts = append(c.begun, begun), append(c.times, time.Now()), append(c.seconds, v), append(c.parts, parts)
				c.mu.Unlock()
			}
			select {
			case <-c.done:
				return
			case <-tick.C:
			}
		}
	}()
	return c
}

// waitFirst waits until c holds a sample, up to timeout.
func (c *cpuSampler) waitFirst(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return procs.WaitFor(ctx, "a first sample", 5*time.Millisecond, func(context.Context) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.times) == 0 {
			return errors.New("none yet")
		}
		return nil
	})
}

func (c *cpuSampler) stop() {
	select {
	case <-c.done:
	default:
		close(c.done)
	}
	c.stopped.Wait()
}

// edge is what the samples tell of the counter at an instant: its value
// lies between lo, the last sample whose read had ended by then, and hi, the
// first whose read began after it; mid interpolates between the two.
type edge struct {
	lo, hi, mid    float64
	gap            time.Duration // from the end of lo's read to the start of hi's
	loPart, hiPart map[int]float64
}

func (c *cpuSampler) edge(t *testing.T, when time.Time) edge {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	lo := -1
	for i := range c.times {
		if !c.times[i].After(when) {
			lo = i
		}
	}
	hi := slices.IndexFunc(c.begun, func(b time.Time) bool { return !b.Before(when) })
	if lo < 0 || hi < 0 {
		t.Fatalf("no CPU samples either side of %s (%d samples)", when.Format("15:04:05.000"), len(c.times))
	}
	f := 0.5
	if span := c.begun[hi].Sub(c.times[lo]); span > 0 {
		f = float64(when.Sub(c.times[lo])) / float64(span)
	}
	return edge{lo: c.seconds[lo], hi: c.seconds[hi], mid: c.seconds[lo] + f*(c.seconds[hi]-c.seconds[lo]),
		gap: c.begun[hi].Sub(c.times[lo]), loPart: c.parts[lo], hiPart: c.parts[hi]}
}

// check holds got, the CPU seconds a summary gives for the window from..to,
// to what the kernel counted, within 5 %. The kernel's count is known
// between the samples around each edge: at least the samples' difference
// from the later one around from to the earlier one around to, at most the
// other way round. Sampled every 10 ms that range is narrow; on a crowded
// machine the sampler wakes far less often, and a linear interpolation
// across an edge where the CPU use jumps (the loaders start at from) was
// off by 6 % once (a 46 s loading phase in make test). It reports whether
// got held.
func (c *cpuSampler) check(t *testing.T, what string, got float64, from, to time.Time) bool {
	t.Helper()
	f, e := c.edge(t, from), c.edge(t, to)
	lo, hi, truth := e.lo-f.hi, e.hi-f.lo, e.mid-f.mid
	t.Logf("%s CPU seconds %.3f (summary) vs %.3f (/proc/<pid>/stat, interpolated; %.3f..%.3f between the samples %v and %v apart around the edges): %+.1f %%",
		what, got, truth, lo, hi, f.gap.Round(time.Millisecond), e.gap.Round(time.Millisecond), 100*(got-truth)/truth)
	if !(truth > 0) || got < 0.95*lo || got > 1.05*hi {
		t.Errorf("loading phase: %s CPU seconds %.3f in the summary, %.3f..%.3f from /proc: want within 5 %%", what, got, lo, hi)
		if f.loPart != nil {
			// Per process, to tell which side is wrong next time.
			pids := map[int]bool{}
			for _, part := range []map[int]float64{f.loPart, f.hiPart, e.loPart, e.hiPart} {
				for pid := range part {
					pids[pid] = true
				}
			}
			for _, pid := range slices.Sorted(maps.Keys(pids)) {
				name := fmt.Sprintf("pid %d", pid)
				if pid == reapedByAgents {
					name = "reaped by the agents"
				}
				t.Logf("  %s: %.2f..%.2f at the start, %.2f..%.2f at the end", name, f.loPart[pid], f.hiPart[pid], e.loPart[pid], e.hiPart[pid])
			}
		}
		return false
	}
	return true
}

// logDriverCPU logs what the summary's drivers' CPU seconds of a phase
// come from: each agent's reads at the phase's edges (final.driver_cpu) and
// the samples stored for it, reads and scrapes merged.
func (s *stack) logDriverCPU(t *testing.T, code, kind string, from, to time.Time) {
	t.Helper()
	ctx, conn := context.Background(), s.results(t)
	rows, err := conn.Query(ctx, `SELECT m.payload->>'agent', coalesce(m.payload->>'driver_cpu', 'none') FROM shard_results r
		JOIN messages m ON m.id = r.message_id JOIN phases ph ON ph.code = r.code AND ph.phase = r.phase AND ph.attempt = r.attempt
		WHERE r.code = $1 AND ph.kind = $2 ORDER BY 1`, code, kind)
	if err != nil {
		t.Logf("driver reads: %v", err)
		return
	}
	for rows.Next() {
		var agent, reads string
		if rows.Scan(&agent, &reads) == nil {
			t.Logf("  %s read %s", agent, reads)
		}
	}
	rows.Close()
	rows, err = conn.Query(ctx, `SELECT labels->>'pod', time, value FROM metrics m
		WHERE m.code = $1 AND m.phase IN (SELECT phase FROM phases WHERE code = $1 AND kind = $2) AND m.metric = 'cpu_seconds' AND m.component IN ('loader', 'benchmarker')
		ORDER BY 1, 2`, code, kind)
	if err != nil {
		t.Logf("driver samples: %v", err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var pod string
		var at time.Time
		var v float64
		if rows.Scan(&pod, &at, &v) == nil {
			t.Logf("  %s stored %s %.3f (%+.3f s from the start, %+.3f s from the end)", pod, at.Format("15:04:05.000"), v, at.Sub(from).Seconds(), at.Sub(to).Seconds())
		}
	}
}

// redisPid is the pid of the redis-server that listens on port (0: none
// yet).
func redisPid(port int) int {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		data, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(data), "redis-server") && strings.Contains(string(data), fmt.Sprintf(":%d", port)) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			return pid
		}
	}
	return 0
}

// cpuSecondsOf is the CPU time the kernel counted for pid and its reaped
// children (user + system), -1 when it is gone. The counters are in clock
// ticks (100/s).
func cpuSecondsOf(pid int) float64 {
	st, ok := statOf(pid)
	if !ok {
		return -1
	}
	return float64(st.UTime+st.STime)/100 + float64(st.CUTime+st.CSTime)/100
}

// checkNoSecrets fails t unless exactly the processes whose command line
// holds every string of match (at least one) have none of the stack's
// secrets in their environment (/proc/<pid>/environ): no BENCHQ_* variable
// and nothing named like a key, seed, token or password.
// checkNoSecrets finds the processes whose command line holds every
// string of match and fails if one has a secret of the stack in its
// environment, or the stack's SUT key or the SUT's password (sutPassword)
// anywhere in its command line. allow names a variable the process is
// meant to hold (an exporter's REDIS_PASSWORD: the SUT's own password,
// which its account knows).
func (s *stack) checkNoSecrets(t *testing.T, what string, allow, sutPassword string, match ...string) {
	t.Helper()
	key := s.sutKey(t)
	found := 0
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(data), "\x00", " ")
		if strings.Contains(cmd, key) || strings.Contains(cmd, sutPassword) {
			t.Errorf("%s (%s) has the SUTs' key or a SUT's password on its command line", what, filepath.Dir(f))
		}
		all := true
		for _, m := range match {
			all = all && strings.Contains(cmd, m)
		}
		if !all {
			continue
		}
		environ, err := os.ReadFile(filepath.Join(filepath.Dir(f), "environ"))
		if err != nil {
			t.Errorf("%s: %v", what, err)
			continue
		}
		found++
		for _, kv := range strings.Split(string(environ), "\x00") {
			name, _, _ := strings.Cut(kv, "=")
			upper := strings.ToUpper(name)
			if name == allow {
				continue
			}
			if strings.HasPrefix(name, "BENCHQ_") || strings.Contains(upper, "NKEY") || strings.Contains(upper, "SEED") ||
				strings.Contains(upper, "TOKEN") || strings.Contains(upper, "PASSWORD") {
				t.Errorf("%s (%s) has %s in its environment", what, filepath.Dir(f), name)
			}
		}
	}
	if found == 0 {
		t.Errorf("%s: no process with %q in its command line to check", what, match)
	}
}

// perRunThroughput reads [OVERALL].Throughput(ops/sec) from the Loading
// "Per Run" table of the printed summary.
func perRunThroughput(t *testing.T, out string) float64 {
	t.Helper()
	sec := out[strings.Index(out, "#### Per Run"):]
	lines := strings.Split(sec, "\n")
	var header, row []string
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "|") {
			if header != nil {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case header == nil:
			header = cells
		case strings.HasPrefix(cells[0], ":--") || strings.HasPrefix(cells[0], "--"):
		default:
			row = cells
		}
	}
	for i, h := range header {
		if h == "[OVERALL].Throughput(ops/sec)" && i < len(row) {
			var v float64
			fmt.Sscan(row[i], &v)
			return v
		}
	}
	t.Fatalf("no throughput column in Per Run:\n%s", sec)
	return 0
}

// checkDashboardLink checks `benchq dashboard -e code`: the link to the
// experiment's dashboard on the configured Grafana, over the experiment's
// time (no Grafana is contacted without -upload).
func (s *stack) checkDashboardLink(t *testing.T, code string) {
	t.Helper()
	cmd := s.command(context.Background(), "dashboard", "-e", code)
	cmd.Env = append(cmd.Env, "BENCHQ_GRAFANA_URL=http://grafana.invalid:3000")
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("benchq dashboard: %v", err)
		return
	}
	u, err := url.Parse(strings.TrimSpace(string(out)))
	if err != nil || u.Host != "grafana.invalid:3000" || u.Path != "/d/benchq-experiment/benchq-experiment" || u.Query().Get("var-code") != code {
		t.Errorf("benchq dashboard printed %q", out)
		return
	}
	from, _ := strconv.ParseInt(u.Query().Get("from"), 10, 64)
	to, _ := strconv.ParseInt(u.Query().Get("to"), 10, 64)
	var start, end time.Time
	db, err := pgx.Connect(context.Background(), s.info.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	if err := db.QueryRow(context.Background(), `SELECT started_at, ended_at FROM experiments WHERE code = $1`, code).Scan(&start, &end); err != nil {
		t.Fatal(err)
	}
	if !(from < start.UnixMilli() && end.UnixMilli() < to && to-from < end.Sub(start).Milliseconds()+60_000) {
		t.Errorf("benchq dashboard: range %d..%d does not frame the experiment's %s..%s", from, to, start, end)
	}
}

// python runs a module of the reporter's venv and fails t when it exits
// non-zero (the self-checks name what is wrong).
func (s *stack) python(t *testing.T, module string, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(s.repo, ".venv", "bin", "python"), append([]string{"-m", module}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("python -m %s: %v\n%s", module, err, out)
		return
	}
	t.Logf("python -m %s:\n%s", module, out)
}
