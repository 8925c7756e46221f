package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/testenv"
)

// The live figures follow the intervals: operations over all and per
// operation add up, rates per operation are the interval's count over its
// length, and the shard's series go when it ends.
func TestLiveShardFigures(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := newAgentMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{cfg: Config{Name: "agent-1"}, metrics: m}
	job := contracts.ShardJob{Envelope: contracts.Envelope{Code: "1234", ID: "1234.run1.2"}, Configuration: "Redis-1", DBMS: "Redis", Phase: "Redis-1-1", Kind: contracts.KindRun, Shard: 2}
	live := a.track(job, 0) // no process tree: only the operations
	live.interval(&contracts.Interval{ElapsedS: 1, Operations: 100, OpsPerSec: 100, PerOp: map[string]map[string]float64{"READ": {"Count": 60}, "UPDATE": {"Count": 40}}})
	live.interval(&contracts.Interval{ElapsedS: 3, Operations: 300, OpsPerSec: 100, PerOp: map[string]map[string]float64{"READ": {"Count": 120}, "UPDATE": {"Count": 80}}})
	labels := func(op string) []string {
		return []string{"1234", "Redis-1", "Redis", "benchmarker", "Redis-1-1", "2", op}
	}
	for _, c := range []struct {
		vec  *prometheus.GaugeVec
		op   string
		want float64
	}{
		{m.ops, allOps, 300}, {m.ops, "READ", 180}, {m.ops, "UPDATE", 120},
		{m.rate, allOps, 100}, {m.rate, "READ", 60}, {m.rate, "UPDATE", 40},
	} {
		if got := testutil.ToFloat64(c.vec.WithLabelValues(labels(c.op)...)); got != c.want {
			t.Errorf("%v %s = %v, want %v", c.vec, c.op, got, c.want)
		}
	}
	live.end()
	live.interval(&contracts.Interval{ElapsedS: 4, Operations: 400})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "benchq_agent_driver_starts_total" { // the agent's, not the shard's
			t.Errorf("%s: %d series after the shard ended", mf.GetName(), len(mf.GetMetric()))
		}
	}
}

// A shard's driver CPU reads (final.driver_cpu): the start's is made just
// before the start instant and dated at it (the driver waits idle until
// then), the end's when the operations end; both read the counter the
// agent's series exports.
func TestDriverCPUReadsAtTheEdges(t *testing.T) {
	m, err := newAgentMetrics(prometheus.NewPedanticRegistry())
	if err != nil {
		t.Fatal(err)
	}
	done := filepath.Join(t.TempDir(), "done")
	// The driver: idle for 300 ms, then a fixed amount of work, then idle.
	cmd := exec.Command("/bin/sh", "-c", `sleep 0.3; i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; : > "$0"; sleep 30`, done)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	a := &Agent{cfg: Config{Name: "agent-1"}, metrics: m}
	job := contracts.ShardJob{Envelope: contracts.Envelope{Code: "1234", ID: "1234.load.1"}, Configuration: "Redis-1", DBMS: "Redis", Phase: "Redis-1-0", Kind: contracts.KindLoad, Shard: 1}
	live := a.track(job, cmd.Process.Pid)
	start := time.Now().Add(100 * time.Millisecond)
	live.cpuBefore(t.Context(), start)
	testenv.Eventually(t, time.Minute, func() error {
		if _, err := os.Stat(done); err != nil {
			return err
		}
		return nil
	})
	live.cpuNow()
	reads := live.cpuReads()
	if len(reads) != 2 {
		t.Fatalf("reads %+v, want the start's and the end's", reads)
	}
	if !reads[0].At.Equal(start.UTC()) && !reads[0].At.After(start) {
		t.Errorf("start read dated %s, before the start instant %s", reads[0].At, start)
	}
	if reads[0].Seconds > 0.05 {
		t.Errorf("the driver used %.2f CPU s before its start: it was idle", reads[0].Seconds)
	}
	if reads[1].Seconds-reads[0].Seconds <= 0 || !reads[1].At.After(reads[0].At) {
		t.Errorf("reads %+v: the work between them not counted", reads)
	}
	live.end()
	live.cpuNow() // the tree is no longer tracked: no read
	if n := len(live.cpuReads()); n != 2 {
		t.Errorf("%d reads after the shard ended, want 2", n)
	}
}
