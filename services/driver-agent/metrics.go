package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/procmetrics"
)

// agentMetrics is what an agent exports about the shard in flight, for
// Prometheus to pull beside the SUT's: its driver's process tree under cAdvisor's names, and its live
// operations from the intervals it streams.
type agentMetrics struct {
	procs  *procmetrics.Collector
	ops    *prometheus.GaugeVec
	rate   *prometheus.GaugeVec
	starts prometheus.Counter // driver processes started (standby.go)
}

// allOps is the operation label of a shard's figures over all operations.
const allOps = "all"

var shardLabels = []string{"experiment", "configuration", "dbms", "component", "phase", "shard", "operation"}

func newAgentMetrics(reg *prometheus.Registry) (*agentMetrics, error) {
	procs, err := procmetrics.New(reg, "")
	if err != nil {
		return nil, err
	}
	m := &agentMetrics{
		procs: procs,
		ops: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "benchq_agent_operations",
			Help: "Operations the shard in flight has done so far (per operation: those measured in its status intervals)."}, shardLabels),
		rate: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "benchq_agent_ops_per_second",
			Help: "Throughput of the shard in flight over its last status interval."}, shardLabels),
		starts: prometheus.NewCounter(prometheus.CounterOpts{Name: "benchq_agent_driver_starts_total",
			Help: "Driver processes (YCSB JVMs) the agent started; one that stays for later jobs counts once."}),
	}
	for _, c := range []prometheus.Collector{m.ops, m.rate, m.starts} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("agent metrics: %w", err)
		}
	}
	return m, nil
}

// liveShard exports one shard while it runs; a nil liveShard (an agent
// without metrics) does nothing.
type liveShard struct {
	m      *agentMetrics
	id     string
	labels prometheus.Labels // without operation

	mu          sync.Mutex
	ops         map[string]float64 // operation → measured so far
	lastElapsed int64
	ended       bool                // a driver's last lines may come after end
	cpu         []contracts.CPURead // the driver tree's CPU at the phase's edges (final.driver_cpu)
}

// inProcessShard is a shard whose generator runs inside the agent (the
// embedded TPC-C engine, the metrics generators): the agent's own process
// tree is the driver whose CPU it reports.
type inProcessShard struct {
	final *contracts.Final
	br    *bus.Barrier
	live  *liveShard
}

// joinInProcess makes the shard's final (threads and target as the job
// gives them), joins its barrier and starts tracking the agent's tree.
func (a *Agent) joinInProcess(job contracts.ShardJob, threads, target int) (*inProcessShard, error) {
	br, err := a.bus.JoinBarrier(job, a.cfg.Name, a.instance)
	if err != nil {
		return nil, err
	}
	return &inProcessShard{final: newFinal(job, a.cfg.Name, threads, target), br: br, live: a.track(job, os.Getpid())}, nil
}

// leave ends the tracking and closes the barrier.
func (s *inProcessShard) leave() { s.live.end(); s.br.Close() }

// fail is the shard's outcome when it fails before it settles: its final,
// failed now with the reason.
func (s *inProcessShard) fail(format string, args ...any) (*contracts.Final, error) {
	return failed(s.final, format, args...), nil
}

// track starts exporting job's shard with its driver's process tree under
// root (the YCSB JVM; the agent itself for the embedded TPC-C engine).
func (a *Agent) track(job contracts.ShardJob, root int) *liveShard {
	if a.metrics == nil {
		return nil
	}
	component := "benchmarker"
	if job.Kind == contracts.KindLoad {
		component = "loader"
	}
	s := &liveShard{m: a.metrics, id: job.ID, ops: map[string]float64{}, labels: prometheus.Labels{
		"experiment": job.Code, "configuration": job.Configuration, "dbms": job.DBMS,
		"component": component, "phase": job.Phase, "shard": strconv.Itoa(job.Shard),
	}}
	a.metrics.procs.Set(job.ID, root, procmetrics.Labels{
		Namespace: "benchq", Pod: a.cfg.Name, Container: "driver",
		Experiment: job.Code, Configuration: job.Configuration, DBMS: job.DBMS,
		Component: component, Phase: job.Phase,
	})
	return s
}

// cpuBefore reads the driver tree's CPU counter just before instant
// start, in the background: the driver waits idle for start (the JVM
// sleeps until it; an engine in the agent has not begun), so the value is
// the counter's at start, and is dated so when the read ended before it.
// A read that ended late keeps its own instant.
func (s *liveShard) cpuBefore(ctx context.Context, start time.Time) {
	if s == nil {
		return
	}
	go func() {
		t := time.NewTimer(time.Until(start.Add(-cpuReadLead)))
		defer t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.readCPU(start)
	}()
}

// cpuNow reads the driver tree's CPU counter now: the driver's operations
// have just ended.
func (s *liveShard) cpuNow() {
	if s != nil {
		s.readCPU(time.Time{})
	}
}

// cpuReadLead is how long before the start instant its read begins: a read
// of /proc takes a few milliseconds, more on a busy machine.
const cpuReadLead = 20 * time.Millisecond

// readCPU reads the counter and keeps it, dated at notAfter when the read
// ended by then (the driver was idle until notAfter), else when it ended.
func (s *liveShard) readCPU(notAfter time.Time) {
	v, err := s.m.procs.CPU(s.id)
	now := time.Now().UTC()
	seconds, ok := v[s.id]
	if err != nil || !ok {
		return // no tree (the driver is gone): the edge is estimated from the scrapes
	}
	at := now
	if !notAfter.IsZero() && !now.After(notAfter) {
		at = notAfter.UTC()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cpu = append(s.cpu, contracts.CPURead{At: at, Seconds: seconds})
}

// cpuReads are the reads made so far, in time order (final.driver_cpu).
func (s *liveShard) cpuReads() []contracts.CPURead {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.cpu)
	slices.SortFunc(out, func(a, b contracts.CPURead) int { return a.At.Compare(b.At) })
	return out
}

func (s *liveShard) with(op string) prometheus.Labels {
	l := prometheus.Labels{"operation": op}
	for k, v := range s.labels {
		l[k] = v
	}
	return l
}

// interval updates the live figures from a status interval: per-operation
// counts are the interval's, so they add up; the rate divides them by the
// interval's length.
func (s *liveShard) interval(iv *contracts.Interval) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.m.ops.With(s.with(allOps)).Set(float64(iv.Operations))
	s.m.rate.With(s.with(allOps)).Set(iv.OpsPerSec)
	length := iv.ElapsedS - s.lastElapsed
	s.lastElapsed = iv.ElapsedS
	for op, figures := range iv.PerOp {
		n, ok := figures["Count"]
		if !ok {
			continue
		}
		s.ops[op] += n
		s.m.ops.With(s.with(op)).Set(s.ops[op])
		if length > 0 {
			s.m.rate.With(s.with(op)).Set(n / float64(length))
		}
	}
}

// end stops exporting the shard: its series leave the next scrape.
func (s *liveShard) end() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	s.m.procs.Remove(s.id)
	s.m.ops.DeletePartialMatch(s.labels)
	s.m.rate.DeletePartialMatch(s.labels)
}
