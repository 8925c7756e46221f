package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/natsauth"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/startup"
	"github.com/benchq/benchq/services/deployer/backend"
)

// Phase agents of the local backend. The embedded stack runs a fixed pool
// of driver agents (benchq up, BENCHQ_AGENTS). A phase's shards run at once,
// one per agent, so a phase with more shards than the pool has live agents
// could never pass its barrier. For such a phase the local backend starts
// the missing agents itself, bound to the phase as a driver Job's pods are
// on Kubernetes (-experiment, -phase, -max-shards 1: they take only that
// phase's shards and exit after one). They run detached, like the SUTs, with
// a pid file and a log in the configuration's directory (drivers/), and the
// configuration's teardown stops any that are still waiting.

// phaseAgentPrefix starts the name of an agent started for one phase; the
// pool's agents are the others.
const phaseAgentPrefix = "drv-"

const driversDir = "drivers"

// agentVars are the variables a driver agent reads its configuration from
// (services/driver-agent and the packages it uses), which a phase agent
// gets with the deployer's values.
var agentVars = []string{"BENCHQ_NATS_URL", "BENCHQ_LOG_LEVEL", "BENCHQ_YCSB_LIB", "BENCHQ_YCSB_WORKLOADS",
	"BENCHQ_JAVA", "BENCHQ_CACHE", "BENCHQ_BENCHBASE_HOME", startup.SUTKeyFileEnv, startup.SUTKeyEnv, startup.SUTHostsEnv}

// agentEnv is a phase agent's environment besides procs.ChildEnv's: its
// configuration (agentVars), its metrics address and the agents' key the
// deployer was handed (natsauth.AgentEnv) — none of the deployer's own
// keys or other secrets.
func agentEnv(getenv func(string) string, metricsAddr string) []string {
	env := []string{"BENCHQ_METRICS_ADDR=" + metricsAddr}
	for _, k := range agentVars {
		if v := getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return append(env, natsauth.AgentEnv(getenv)...)
}

// PoolAgents counts the pool's live agents (contracts.AgentLiveness): not
// those started for a phase.
func (l *Local) PoolAgents(beats map[string]contracts.Heartbeat, now time.Time) int {
	return poolAgents(beats, now)
}

func poolAgents(beats map[string]contracts.Heartbeat, now time.Time) int {
	n := 0
	for name, hb := range beats {
		if !strings.HasPrefix(name, phaseAgentPrefix) && hb.Live(now) {
			n++
		}
	}
	return n
}

// StartPhaseAgents starts n driver agents bound to d's phase attempt, named
// drv-<code>-<phase>-a<attempt>-<k>. It is idempotent: an agent whose
// process is alive is not started again (a redelivered job).
func (l *Local) StartPhaseAgents(ctx context.Context, d backend.DriverSpec, n int) ([]string, error) {
	dir, err := l.dir(d.Code, d.Configuration)
	if err != nil {
		return nil, err
	}
	bin := l.AgentBin
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("driver-agent binary: %w", err)
		}
		bin = filepath.Join(filepath.Dir(exe), "driver-agent")
	}
	drivers := filepath.Join(dir, driversDir)
	if err := os.MkdirAll(drivers, 0o755); err != nil {
		return nil, err
	}
	var names []string
	for k := 1; k <= n; k++ {
		name := fmt.Sprintf("%s%s-%s-a%d-%d", phaseAgentPrefix, d.Code, d.Phase, d.Attempt, k)
		pidFile := filepath.Join(drivers, name+".pid")
		if pid, err := procs.ReadPidFile(pidFile); err == nil && procs.Alive(pid) {
			names = append(names, name)
			continue
		}
		port, err := procs.FreePort()
		if err != nil {
			return names, err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		if _, err := procs.Start(procs.Spec{
			Name: name, Path: bin,
			Args:    []string{"-name", name, "-experiment", d.Code, "-phase", d.Phase, "-max-shards", "1"},
			Env:     agentEnv(os.Getenv, addr),
			LogFile: filepath.Join(drivers, name+".log"), PidFile: pidFile,
		}); err != nil {
			return names, err
		}
		// Scraped until the configuration's teardown; an agent that ended
		// after its shard is a target down meanwhile.
		l.phaseAgentTarget(d, name, addr)
		names = append(names, name)
	}
	return names, nil
}

// stopPhaseAgents stops the configuration's phase agents that still run
// (those that never got a shard).
func stopPhaseAgents(ctx context.Context, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, driversDir, "*.pid"))
	if err != nil {
		return fmt.Errorf("stop phase agents: %w", err)
	}
	var errs []error
	for _, f := range files {
		pid, err := procs.ReadPidFile(f)
		if err != nil {
			continue
		}
		// A pid file outlives its process: stop only a driver agent.
		if comm, err := procs.Comm(pid); err != nil || !strings.HasPrefix(comm, "driver-agent") {
			continue
		}
		if err := procs.Stop(ctx, pid, 5*time.Second); err != nil {
			errs = append(errs, fmt.Errorf("stop %s (pid %s): %w", filepath.Base(f), strconv.Itoa(pid), err))
		}
	}
	return errors.Join(errs...)
}
