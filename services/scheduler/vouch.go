package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/procmetrics"
	"github.com/benchq/benchq/internal/procs"
)

// A heartbeat is only one sign of life, and the first to go late on a busy
// machine: its put waits for CPU and for the NATS server. A late agent the
// scheduler can see — its heartbeat names this host and a process that is a
// driver agent of that name — is vouched for while the process and its
// children (the YCSB or Benchbase JVM) keep using CPU: the state machine
// does not call it lost. On Kubernetes an agent is named after its pod and
// runs on a host of that name: a late one is vouched for while the
// deployer, which watches the driver pods, says its pod is Running
// (contracts.PodsQuery; a pod lost mid-phase is reported as driver.lost at
// once instead). Any other late agent is judged by its heartbeats alone;
// the entry's TTL (contracts.AgentsTTL) bounds how long any silence is
// excused.

// voucher remembers the CPU time of the late agents' processes from one
// tick to the next.
type voucher struct {
	host string
	seen map[string]agentCPU // agent run (instance) → its process's CPU at the last look
	// podsRunning asks which of the named driver pods are Running (the
	// deployer's answer); nil: none asked.
	podsRunning func(ctx context.Context, pods []string) ([]string, error)
}

type agentCPU struct {
	pid int
	cpu time.Duration
}

func newVoucher() *voucher {
	host, _ := os.Hostname()
	return &voucher{host: host, seen: map[string]agentCPU{}}
}

// lateAfter is when the voucher starts looking at an agent: well before it
// could count as lost, so that a first CPU reading is there to compare.
const lateAfter = contracts.AgentLiveness / 2

// vouch returns the runs of runs (instance → last heartbeat, read at at)
// that are late but whose process on this host used CPU since the last
// call, or whose pod runs.
func (v *voucher) vouch(ctx context.Context, runs map[string]contracts.Heartbeat, at time.Time) map[string]bool {
	var out map[string]bool
	looked := map[string]bool{}
	var pods []string
	podRun := map[string]string{} // pod → the newest of the late runs named after it
	for instance, hb := range runs {
		name := hb.Name
		if at.Sub(hb.At) < lateAfter || hb.Host == "" {
			continue
		}
		if hb.Host == name && hb.Host != v.host {
			if prev, ok := podRun[name]; !ok || runs[prev].At.Before(hb.At) {
				if !ok {
					pods = append(pods, name) // an agent in a pod of its name
				}
				podRun[name] = instance
			}
			continue
		}
		if hb.Host != v.host || hb.Pid <= 0 {
			continue
		}
		cpu, ok := agentProcessCPU(hb.Pid, name)
		if !ok {
			continue
		}
		looked[instance] = true
		prev, had := v.seen[instance]
		v.seen[instance] = agentCPU{pid: hb.Pid, cpu: cpu}
		if had && prev.pid == hb.Pid && cpu > prev.cpu {
			if out == nil {
				out = map[string]bool{}
			}
			out[instance] = true
		}
	}
	for instance := range v.seen {
		if !looked[instance] {
			delete(v.seen, instance)
		}
	}
	if len(pods) > 0 && v.podsRunning != nil {
		running, err := v.podsRunning(ctx, pods)
		if err != nil {
			return out // no answer (no deployer watches pods): the heartbeats decide
		}
		for _, name := range running {
			if slices.Contains(pods, name) {
				if out == nil {
					out = map[string]bool{}
				}
				out[podRun[name]] = true
			}
		}
	}
	return out
}

// gone returns the runs of runs on this host whose process no longer runs
// as a driver agent of their name while a newer run beats under that name:
// the agent was restarted, and the old run's shard is lost at once rather
// than after restartAfter (watchdog.go).
func (v *voucher) gone(runs map[string]contracts.Heartbeat) map[string]bool {
	newest := contracts.NewestRuns(runs)
	var out map[string]bool
	for instance, hb := range runs {
		if newest[hb.Name].Instance == instance || hb.Host != v.host || hb.Pid <= 0 || procs.IsDriverAgent(hb.Pid, hb.Name) {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[instance] = true
	}
	return out
}

// podsQueryTimeout bounds the wait for the deployer's answer.
const podsQueryTimeout = 500 * time.Millisecond

// askDeployer asks the deployer which of pods are Running (a core NATS
// request, contracts.SubjDriverPods).
func askDeployer(nc *nats.Conn) func(ctx context.Context, pods []string) ([]string, error) {
	return func(ctx context.Context, pods []string) ([]string, error) {
		q, err := json.Marshal(contracts.PodsQuery{Pods: pods})
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(ctx, podsQueryTimeout)
		defer cancel()
		m, err := nc.RequestWithContext(ctx, contracts.SubjDriverPods, q)
		if err != nil {
			return nil, err
		}
		var a contracts.PodsAnswer
		if err := json.Unmarshal(m.Data, &a); err != nil {
			return nil, fmt.Errorf("the deployer's answer on %s: %w", contracts.SubjDriverPods, err)
		}
		return a.Running, nil
	}
}

// agentProcessCPU is the CPU time of pid and its live children, if pid is
// a live driver agent named name (procs.IsDriverAgent).
func agentProcessCPU(pid int, name string) (time.Duration, bool) {
	if !procs.IsDriverAgent(pid, name) {
		return 0, false
	}
	own, err := procmetrics.ReadCPU(pid)
	if err != nil {
		return 0, false
	}
	total := own.Self() + own.Children()
	kids, _ := procmetrics.ChildrenOf(pid)
	for _, k := range kids {
		if c, err := procmetrics.ReadCPU(k); err == nil {
			total += c.Self() + c.Children()
		}
	}
	return total, true
}
