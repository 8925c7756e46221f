package main

import (
	"os"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/procmetrics"
	"github.com/benchq/benchq/internal/procs"
)

// A heartbeat is only one sign of life, and the first to go late on a busy
// machine: its put waits for CPU and for the NATS server. A late agent the
// scheduler can see — its heartbeat names this host and a process that is a
// driver agent of that name — is vouched for while the process and its
// children (the YCSB or Benchbase JVM) keep using CPU: the state machine
// does not call it lost. One that stopped using CPU, died, or runs
// elsewhere is judged by its heartbeats alone; the entry's TTL
// (contracts.AgentsTTL) bounds how long any silence is excused.

// voucher remembers the CPU time of the late agents' processes from one
// tick to the next.
type voucher struct {
	host string
	seen map[string]agentCPU // agent → its process's CPU at the last look
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

// vouch returns the agents of beats (read at at) that are late but whose
// process on this host used CPU since the last call.
func (v *voucher) vouch(beats map[string]contracts.Heartbeat, at time.Time) map[string]bool {
	var out map[string]bool
	looked := map[string]bool{}
	for name, hb := range beats {
		if at.Sub(hb.At) < lateAfter || hb.Host == "" || hb.Host != v.host || hb.Pid <= 0 {
			continue
		}
		cpu, ok := agentProcessCPU(hb.Pid, name)
		if !ok {
			continue
		}
		looked[name] = true
		prev, had := v.seen[name]
		v.seen[name] = agentCPU{pid: hb.Pid, cpu: cpu}
		if had && prev.pid == hb.Pid && cpu > prev.cpu {
			if out == nil {
				out = map[string]bool{}
			}
			out[name] = true
		}
	}
	for name := range v.seen {
		if !looked[name] {
			delete(v.seen, name)
		}
	}
	return out
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
