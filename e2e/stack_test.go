// Package e2e runs the whole embedded stack as a user would: `benchq up`,
// real experiments through every service, `benchq down`. It needs the
// binaries, YCSB and the reporter venv that `make bootstrap` installs.
//
// Each test starts a stack of its own (its own BENCHQ_HOME, ports, NATS,
// results database, Prometheus), so the tests whose checks do not depend on
// having the machine to themselves run in parallel, all six at once (go
// test -parallel 6 in the Makefile: with fewer slots go test may start the
// longest last). Their time limits stop hangs; none is a speed test (on
// two cores the six stacks' first minutes run at a load average of 20-40).
// The saturation search is one of them, its stack in a cgroup of ten times
// the CPU weight of the rest (newCPUPriority): it measures a knee, and gets
// the share of the cores it needs first. The chaos harness (whose cpu-hog
// round takes every core) runs alone, before them.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/natsauth"
	"github.com/benchq/benchq/internal/startup"
)

// stack is one embedded stack started for a test, in its own home.
type stack struct {
	t    *testing.T
	repo string
	home string
	env  []string
	cg   *cpuGroup // the cgroup every process of the stack runs in (nil: none)
	info struct {
		NATSURL       string `json:"nats_url"`
		NATSKeys      string `json:"nats_keys"`
		DBURL         string `json:"db_url"`
		CollectorURL  string `json:"collector_db_url"`
		DBOwnerURL    string `json:"db_owner_url"`
		PrometheusURL string `json:"prometheus_url"`
		IntakeURL     string `json:"intake_url"`
		IntakeToken   string `json:"intake_token"`
		Procs         []struct {
			Name string `json:"name"`
			Pid  int    `json:"pid"`
			Log  string `json:"log"`
		} `json:"procs"`
	}
	nc *nats.Conn
	js jetstream.JetStream
}

func startStack(t *testing.T) *stack {
	t.Helper()
	return startStackIn(t, nil)
}

// startStackIn starts the stack with every process of it (services, NATS,
// results database, Prometheus, the SUTs and drivers they start) in
// cgroup cg, when not nil: `benchq up` joins it before it starts anything,
// and children stay in their parent's cgroup.
func startStackIn(t *testing.T, cg *cpuGroup) *stack {
	t.Helper()
	s := newStack(t, cg)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := s.benchq(ctx, "up"); err != nil {
		s.dumpLogs()
		t.Fatalf("benchq up: %v\n%s", err, out)
	}
	s.readStack()
	// The test reads as a client would (internal/natsauth): NATS refuses
	// anonymous connections.
	if nc, err := nats.Connect(s.info.NATSURL); err == nil {
		nc.Close()
		t.Fatal("the stack's NATS accepted an anonymous connection")
	}
	client, err := nats.NkeyOptionFromSeed(natsauth.SeedFile(s.info.NATSKeys, natsauth.Client))
	if err != nil {
		t.Fatal(err)
	}
	s.nc, err = nats.Connect(s.info.NATSURL, client, nats.CustomInboxPrefix(natsauth.InboxPrefix(natsauth.Client)))
	if err != nil {
		t.Fatal(err)
	}
	s.js, _ = jetstream.New(s.nc)
	return s
}

// newStack makes a stack's home and environment (extra: more variables,
// taking precedence) and takes it down when t ends, without starting it:
// `benchq up` (s.benchq) does.
func newStack(t *testing.T, cg *cpuGroup, extra ...string) *stack {
	t.Helper()
	repo, _ := filepath.Abs("..")
	bin := filepath.Join(repo, ".benchq", "bin")
	for _, b := range []string{"benchq", "scheduler", "deployer", "driver-agent", "collector", "nats-server", "reporter"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Fatalf("%s missing: run `make bootstrap` first (make test does)", b)
		}
	}
	home, err := os.MkdirTemp("", "benchq-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	// PostgreSQL runs as the postgres user and must reach its data dirs.
	if err := os.Chmod(home, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &stack{t: t, repo: repo, home: home, cg: cg}
	// Two standby JVMs per agent, not the default four: the e2e stacks
	// run side by side on two cores, and refilling eight JVMs after each
	// experiment cost make test a minute (its experiments are one or two
	// configurations; the grid the four are for is make bench-phases').
	//
	// Their drivers' JVMs compile with C1 only (-XX:TieredStopAtLevel=1):
	// the e2e's shards last seconds, and C2's compiles cost more CPU than
	// they save there (a 20,000-row Redis load shard: 1.5 CPU s against
	// 2.4, and sooner done). With about 150 JVMs in the e2e, on 2 cores
	// shared by six stacks, that is minutes. Users' stacks and make bench
	// keep the JVM's defaults (docs/status.md, "What make test covers").
	//
	// No BENCHQ_REPORTER: the CLI finds the reporter next to its binary
	// (the bootstrap's link), as a user's with a home outside the
	// repository must.
	s.env = append(os.Environ(), "BENCHQ_HOME="+home, "BENCHQ_BIN="+bin, "BENCHQ_AGENT_STANDBYS=2",
		"JAVA_TOOL_OPTIONS=-XX:TieredStopAtLevel=1")
	s.env = slices.DeleteFunc(s.env, func(v string) bool { return strings.HasPrefix(v, "BENCHQ_REPORTER=") })
	s.env = append(s.env, extra...) // exec uses a variable's last value
	t.Cleanup(func() {
		if s.nc != nil {
			s.nc.Close()
		}
		out, err := s.benchq(context.Background(), "down")
		if err != nil {
			t.Errorf("benchq down: %v\n%s", err, out)
		}
		if t.Failed() {
			s.dumpLogs()
		}
		_ = os.RemoveAll(home)
	})
	return s
}

func (s *stack) readStack() {
	data, err := os.ReadFile(filepath.Join(s.home, "stack.json"))
	if err != nil {
		s.t.Fatal(err)
	}
	if err := json.Unmarshal(data, &s.info); err != nil {
		s.t.Fatal(err)
	}
}

// command is a benchq command on the stack; with a cgroup, it runs in it,
// as the stack does (a summary starved of CPU by the other stacks took
// more than a minute).
func (s *stack) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(s.repo, ".benchq", "bin", "benchq"), args...)
	if s.cg != nil {
		cmd = exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, s.cg.dir, cmd.Path}, args...)...)
	}
	cmd.Dir, cmd.Env = s.repo, s.env
	return cmd
}

func (s *stack) benchq(ctx context.Context, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := s.command(ctx, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// dumpLogs keeps a failed stack's service logs (under the system's temp
// directory, named in the test's output) and prints only their errors,
// the last few of each log: a test's own failure messages must stay near
// its FAIL line, where a CI excerpt shows them, not scroll away under
// pages of logs.
func (s *stack) dumpLogs() {
	keep := filepath.Join(os.TempDir(), "benchq-e2e-logs", strings.ReplaceAll(s.t.Name(), "/", "_")+"-"+time.Now().Format("150405"))
	if err := os.MkdirAll(keep, 0o755); err != nil {
		keep = ""
	}
	logs, _ := filepath.Glob(filepath.Join(s.home, "logs", "*.log"))
	var errs []string
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		if keep != "" {
			_ = os.WriteFile(filepath.Join(keep, filepath.Base(l)), data, 0o644)
		}
		var bad []string
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "level=ERROR") || strings.Contains(line, "panic") || strings.Contains(line, "fatal") {
				bad = append(bad, line)
			}
		}
		if len(bad) > 3 {
			bad = bad[len(bad)-3:]
		}
		for _, b := range bad {
			errs = append(errs, filepath.Base(l)+": "+b)
		}
	}
	s.t.Logf("the stack's service logs are kept in %s; their last errors:\n%s", keep, strings.Join(errs, "\n"))
}

// events follows every event of experiment code from the beginning.
func (s *stack) events(ctx context.Context, code string) jetstream.Consumer {
	c, err := s.js.OrderedConsumer(ctx, contracts.StreamEvents, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"benchq.exp." + code + ".>"}})
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

func (s *stack) pid(name string) int {
	s.readStack()
	for _, p := range s.info.Procs {
		if p.Name == name {
			return p.Pid
		}
	}
	s.t.Fatalf("no process %s in stack.json", name)
	return 0
}

// checkSummary fails t unless the printed summary out holds every line of
// want and no failed result test.
func checkSummary(t *testing.T, out string, want ...string) {
	t.Helper()
	keepSummary(t, out)
	for _, line := range want {
		if !strings.Contains(out, line) {
			t.Errorf("summary lacks %q", line)
		}
	}
	if strings.Contains(out, "TEST failed") {
		t.Error("a result test failed")
	}
}

// keepSummary writes a printed summary to $BENCHQ_E2E_SUMMARIES/<test>.md
// when that is set, so the summaries of two commits can be compared
// (scripts/compare-summaries.sh masks codes and measured figures).
func keepSummary(t *testing.T, out string) {
	dir := os.Getenv("BENCHQ_E2E_SUMMARIES")
	if dir == "" {
		return
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	f, err := os.OpenFile(filepath.Join(dir, name+".md"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Errorf("keep summary: %v", err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(out + "\n"); err != nil {
		t.Errorf("keep summary: %v", err)
	}
}

// sutKey is the stack's SUT key (benchq up writes it once into the home's
// auth/sut.key), from which each SUT's password derives.
func (s *stack) sutKey(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.home, "auth", "sut.key"))
	if err != nil {
		t.Fatalf("the SUTs' key: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// sutPassword is the password configuration's SUT of experiment code
// requires, derived as the deployer and the agents derive it.
func (s *stack) sutPassword(t *testing.T, code, configuration string) string {
	t.Helper()
	return startup.SUTPasswordOf(s.sutKey(t), code, configuration)
}

// sutURL is a pgx URL for user on the PostgreSQL or PgBouncer SUT at addr
// (configuration's of experiment code), with its password.
func (s *stack) sutURL(t *testing.T, code, configuration, addr, user, database string) string {
	u := url.URL{Scheme: "postgresql", User: url.UserPassword(user, s.sutPassword(t, code, configuration)), Host: addr, Path: "/" + database, RawQuery: "sslmode=disable"}
	return u.String()
}
