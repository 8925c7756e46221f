package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/natsauth"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/testenv"
	"github.com/benchq/benchq/services/deployer/deployer"
)

// The pool is the live agents that are not bound to a phase.
func TestPoolAgentsCountsLiveUnboundAgents(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	beat := func(at time.Time) contracts.Heartbeat { return contracts.Heartbeat{At: at} }
	beats := map[string]contracts.Heartbeat{
		"driver-agent-1":         beat(now.Add(-2 * time.Second)),
		"driver-agent-2":         beat(now.Add(-14 * time.Second)),
		"driver-agent-3":         beat(now.Add(-16 * time.Second)), // silent too long
		"drv-e1-Redis-run1-a1-1": beat(now),                        // bound to a phase
	}
	if n := poolAgents(beats, now); n != 2 {
		t.Errorf("pool of %d, want 2", n)
	}
}

// A drivers job on the local backend starts the agents the phase lacks
// (shards minus the pool's live agents), bound to the phase; a redelivered
// job starts none twice, a pool big enough starts none, and teardown stops
// the ones still waiting. The agent is a stand-in script named
// driver-agent that records its arguments and waits (the real agent's
// phase binding is tested in services/driver-agent, the whole path in
// e2e "-nbp 4,8 on a stack of 2 agents").
func TestLocalDeployerStartsTheAgentsAPhaseLacks(t *testing.T) {
	url := testenv.NATS(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "driver-agent")
	calls := filepath.Join(t.TempDir(), "calls")
	script := "#!/bin/sh\necho \"$@\" >> " + calls + "\nsleep 60\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// The deployer's environment: an agent's configuration, the agents'
	// key it hands on, and secrets that are not the agents'.
	t.Setenv("BENCHQ_LOG_LEVEL", "debug")
	t.Setenv(natsauth.AgentSeedValueEnv, "agents-seed")
	t.Setenv("BENCHQ_HTTP_TOKEN", "not-for-agents")
	t.Setenv("BENCHQ_DB_URL", "postgresql://not-for-agents")
	local := &Local{Root: t.TempDir(), AgentBin: bin, Log: testenv.Logger(t, "local")}
	testenv.Go(t, func(ctx context.Context) error {
		return deployer.Run(ctx, deployer.Config{NATSURL: url}, local, testenv.Logger(t, "deployer"))
	})
	b := testenv.Bus(t, ctx, url)
	pool := testenv.Bus(t, ctx, url)
	var err error
	if pool.Signer, err = contracts.NewSigner(); err != nil {
		t.Fatal(err)
	}
	if err := pool.PutHeartbeat(ctx, contracts.Heartbeat{Name: "driver-agent-1", At: time.Now()}); err != nil { // a pool of one
		t.Fatal(err)
	}
	drivers := func(id string, shards int) {
		t.Helper()
		if err := b.Publish(ctx, contracts.SubjDrivers, &contracts.Drivers{Envelope: contracts.NewEnvelope("l1", id, time.Now()),
			Configuration: "c-1", DBMS: "Redis", Phase: "c-1-1", Kind: contracts.KindRun, Attempt: 1, Shards: shards}); err != nil {
			t.Fatal(err)
		}
	}
	queueEmpty := func() error {
		s, err := b.JS.Stream(ctx, contracts.StreamJobs)
		if err != nil {
			return err
		}
		info, err := s.Info(ctx)
		if err == nil && info.State.Msgs != 0 {
			err = errors.New("drivers job not acked yet")
		}
		return err
	}
	drivers("l1.c-1-1.a1.drivers", 3)
	testenv.Eventually(t, 20*time.Second, queueEmpty)
	drivers("l1.c-1-1.a1.drivers-again", 3) // as a redelivery would
	drivers("l1.c-1-1.a1.drivers-small", 1) // the pool suffices
	testenv.Eventually(t, 20*time.Second, queueEmpty)

	// Exactly two stand-in agents run (each sleeps for a minute), found by
	// their script's path: the deployer acks a job once its processes
	// started, so an agent started twice would be a third here, whatever
	// the pid files below say (a second start of one name overwrites the
	// first's file).
	running := standIns(t, bin)
	t.Cleanup(func() {
		for _, pid := range running {
			_ = procs.Stop(context.Background(), pid, time.Second)
		}
	})
	if len(running) != 2 {
		t.Fatalf("%d stand-in agents running (pids %v), want 2", len(running), running)
	}

	// The agents start concurrently: their lines come in either order, and
	// after the job's ack (each shell writes its line when it gets to it).
	var got []string
	testenv.Eventually(t, 20*time.Second, func() error {
		raw, _ := os.ReadFile(calls)
		got = strings.Split(strings.TrimSpace(string(raw)), "\n")
		if len(got) < 2 {
			return fmt.Errorf("%d agent(s) have written their arguments, want 2", len(got))
		}
		return nil
	})
	slices.Sort(got)
	want := []string{
		"-name drv-l1-c-1-1-a1-1 -experiment l1 -phase c-1-1 -max-shards 1",
		"-name drv-l1-c-1-1-a1-2 -experiment l1 -phase c-1-1 -max-shards 1",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("agents started:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	pids, _ := filepath.Glob(filepath.Join(local.Root, "l1", "c-1", driversDir, "*.pid"))
	var alive []int
	for _, f := range pids {
		if pid, err := procs.ReadPidFile(f); err == nil && procs.Alive(pid) {
			alive = append(alive, pid)
		}
	}
	t.Cleanup(func() {
		for _, pid := range alive {
			_ = procs.Stop(context.Background(), pid, time.Second)
		}
	})
	if len(alive) != 2 {
		t.Fatalf("%d live phase agents (pid files %v), want 2", len(alive), pids)
	}
	// A phase agent gets its configuration and the agents' key, and
	// nothing else of the deployer's environment.
	for _, pid := range alive {
		raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
		if err != nil {
			t.Fatal(err)
		}
		env := strings.Split(string(raw), "\x00")
		for _, want := range []string{"BENCHQ_LOG_LEVEL=debug", natsauth.SeedValueEnv + "=agents-seed"} {
			if !slices.Contains(env, want) {
				t.Errorf("phase agent %d lacks %s", pid, want)
			}
		}
		for _, kv := range env {
			name, _, _ := strings.Cut(kv, "=")
			if name == natsauth.AgentSeedValueEnv || name == "BENCHQ_HTTP_TOKEN" || name == "BENCHQ_DB_URL" {
				t.Errorf("phase agent %d has the deployer's %s", pid, name)
			}
		}
	}
	if err := local.Teardown(ctx, "l1", "c-1"); err != nil {
		t.Fatal(err)
	}
	for _, pid := range alive {
		if procs.Alive(pid) {
			t.Errorf("phase agent %d still runs after teardown", pid)
		}
	}
}

// standIns are the pids of the processes running script (an argument of
// their command line: the shell that runs it).
func standIns(t *testing.T, script string) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && slices.Contains(strings.Split(string(raw), "\x00"), script) {
			pids = append(pids, pid)
		}
	}
	return pids
}
