//go:build k8s

// The kubernetes backend at scale (make bench-k8s-scale;
// skipped elsewhere). On the real control plane with kwok: N experiments,
// each a loading and a benchmarking phase of S shards (one driver Job of S
// pods per phase), on K simulated nodes, driven by the scheduler and the
// deployer as processes of their own. It checks what must hold at any
// scale — every experiment ends done, every driver Job is created once and
// cleaned up with its pods, the deployer meets no API throttling — and
// prints what it cost: wall time, the scheduler's and the deployer's CPU
// seconds and peak memory.
//
//	BENCHQ_K8S_SCALE=1            run it
//	BENCHQ_SCALE_EXPERIMENTS=200  experiments
//	BENCHQ_SCALE_SHARDS=64        shards per phase
//	BENCHQ_SCALE_NODES=100        kwok nodes
//	BENCHQ_SCALE_MS=20            -ms of each experiment: SUTs alive at once
//	BENCHQ_SCALE_REPORT=FILE      the report, also printed
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/procfs"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/k8stest"
	"github.com/benchq/benchq/internal/testenv"
)

func scaleParam(t *testing.T, key string, dflt int) int {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		return dflt
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", key, v)
	}
	return n
}

// usage samples a process's CPU seconds and peak resident memory.
type usage struct {
	cpu    float64 // seconds, user + system
	peakMB float64 // VmHWM
}

func usageOf(pid int) (usage, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return usage{}, err
	}
	st, err := p.Stat()
	if err != nil {
		return usage{}, err
	}
	status, err := p.NewStatus()
	if err != nil {
		return usage{}, err
	}
	return usage{cpu: st.CPUTime(), peakMB: float64(status.VmHWM) / (1 << 20)}, nil
}

func TestKubeScale(t *testing.T) {
	if os.Getenv("BENCHQ_K8S_SCALE") != "1" {
		t.Skip("a benchmark: make bench-k8s-scale (BENCHQ_K8S_SCALE=1)")
	}
	n := scaleParam(t, "BENCHQ_SCALE_EXPERIMENTS", 200)
	shards := scaleParam(t, "BENCHQ_SCALE_SHARDS", 64)
	nodes := scaleParam(t, "BENCHQ_SCALE_NODES", 100)
	ms := scaleParam(t, "BENCHQ_SCALE_MS", 20)

	// The Job controller creates the driver pods: at its default 20
	// requests a second it alone would take 21 minutes for 200 x 2 x 64.
	cp := k8stest.StartWith(t, k8stest.Options{ControllerQPS: 300, Nodes: nodes})
	ns := cp.Namespace(t, "scale")
	natsURL := testenv.NATS(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Hour)
	defer cancel()
	schedPid, schedLog := startService(t, "scheduler", nil, "BENCHQ_NATS_URL="+natsURL)
	deployPid, deployLog := startDeployer(t, cp, natsURL, ns)
	jobs := watchJobNames(ctx, t, cp, ns)

	b, err := bus.Connect(ctx, natsURL, "", "kube-scale-test", testenv.Logger(t, "test"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	idleFrom := map[int]usage{}
	time.Sleep(5 * time.Second) // started, connected: the idle baseline
	for _, pid := range []int{schedPid, deployPid} {
		if idleFrom[pid], err = usageOf(pid); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(10 * time.Second)
	idle := map[int]float64{}
	for _, pid := range []int{schedPid, deployPid} {
		u, err := usageOf(pid)
		if err != nil {
			t.Fatal(err)
		}
		idle[pid] = (u.cpu - idleFrom[pid].cpu) / 10
	}

	ends, err := b.JS.OrderedConsumer(ctx, contracts.StreamEvents, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{"benchq.exp.*.done", "benchq.exp.*.failed", "benchq.exp.*.cancelled"}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	before := map[int]usage{}
	for _, pid := range []int{schedPid, deployPid} {
		before[pid], _ = usageOf(pid)
	}
	// Sample CPU while it runs: the busiest 10 s of each process.
	var mu sync.Mutex
	busiest := map[int]float64{}
	sampleCtx, stopSampling := context.WithCancel(ctx)
	go func() {
		last := maps.Clone(before) // not before itself: the totals are after minus before
		for sampleCtx.Err() == nil {
			select {
			case <-sampleCtx.Done():
				return
			case <-time.After(10 * time.Second):
			}
			mu.Lock()
			for _, pid := range []int{schedPid, deployPid} {
				if u, err := usageOf(pid); err == nil {
					busiest[pid] = max(busiest[pid], (u.cpu-last[pid].cpu)/10)
					last[pid] = u
				}
			}
			mu.Unlock()
		}
	}()
	codes := make([]string, n)
	for i := range n {
		codes[i] = fmt.Sprintf("scale%d", i)
		req := fmt.Sprintf(`{"schema_version": 1, "id": "%[1]s-request", "code": "%[1]s", "dbms": ["Redis"], "sf": 0.01,
			"loading_pods": [%[2]d], "benchmarking_pods": [%[2]d], "max_suts": %[3]d}`, codes[i], shards, ms)
		if err := b.PublishRaw(ctx, contracts.SubjRequest, codes[i]+"-request", []byte(req)); err != nil {
			t.Fatal(err)
		}
	}
	submitted := time.Since(start)
	status := map[string]string{}
	reasons := map[string]string{}
	for len(status) < n {
		m, err := ends.Next(jetstream.FetchMaxWait(10 * time.Minute))
		if err != nil {
			t.Fatalf("%d of %d experiments ended after %s: %v", len(status), n, time.Since(start).Round(time.Second), err)
		}
		var end contracts.ExperimentEnd
		if err := json.Unmarshal(m.Data(), &end); err != nil {
			t.Fatal(err)
		}
		if _, dup := status[end.Code]; dup {
			t.Errorf("experiment %s ended twice", end.Code)
		}
		status[end.Code], reasons[end.Code] = end.Status, end.Reason
	}
	wall := time.Since(start)
	stopSampling()
	after := map[int]usage{}
	for _, pid := range []int{schedPid, deployPid} {
		if after[pid], err = usageOf(pid); err != nil {
			t.Fatal(err)
		}
	}

	// Cleaned up: no driver Job or pod of benchq left.
	var left string
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		js, err1 := cp.Client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=benchq"})
		pods, err2 := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=benchq"})
		if err1 == nil && err2 == nil {
			left = ""
			if len(js.Items)+len(pods.Items) > 0 {
				left = fmt.Sprintf("%d jobs, %d pods", len(js.Items), len(pods.Items))
			}
			if left == "" {
				break
			}
		}
		time.Sleep(2 * time.Second)
	}
	done := 0
	var failed []string
	for _, c := range codes {
		if status[c] == contracts.ExperimentDone {
			done++
		} else {
			failed = append(failed, fmt.Sprintf("%s %s: %s", c, status[c], reasons[c]))
		}
	}
	seen, err := jobs.count()
	if err != nil {
		t.Error(err)
	}
	// Client-side waits slow the deployer down (a figure); 429s are the API
	// server refusing it (a failure).
	waits := grepLines(t, deployLog, "kubernetes API: client-side throttling")
	refused := grepLines(t, deployLog, "kubernetes API: 429")

	mu.Lock()
	defer mu.Unlock()
	var r strings.Builder
	fmt.Fprintf(&r, "kubernetes backend at scale: %d experiments x (1 loading + 1 benchmarking phase) of %d shards, -ms %d, %d kwok nodes; %d cores, %s\n",
		n, shards, ms, nodes, runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(&r, "  ended done: %d of %d (goal: all); submitting took %s; all ended after %s\n", done, n, submitted.Round(time.Millisecond), wall.Round(time.Second))
	fmt.Fprintf(&r, "  driver Jobs seen: %d (want %d), pods simulated: %d; left after the end: %s (goal: none)\n", seen, 2*n, 2*n*shards, cmp.Or(left, "none"))
	fmt.Fprintf(&r, "  deployer: 429 answers (API server throttling) %s (goal: none); client-side rate-limiter waits of 50 ms or more %s\n",
		lastCount(refused), lastCount(waits))
	for _, p := range []struct {
		name string
		pid  int
	}{{"scheduler", schedPid}, {"deployer", deployPid}} {
		cpu := after[p.pid].cpu - before[p.pid].cpu
		fmt.Fprintf(&r, "  %-9s CPU %.1f s over the run (%.3f cores on average, busiest 10 s %.2f cores; idle %.4f cores), peak RSS %.0f MiB\n",
			p.name, cpu, cpu/wall.Seconds(), busiest[p.pid], idle[p.pid], after[p.pid].peakMB)
	}
	t.Log("\n" + r.String())
	if f := os.Getenv("BENCHQ_SCALE_REPORT"); f != "" {
		_ = os.WriteFile(f, []byte(r.String()), 0o644)
	}
	if done != n {
		t.Errorf("%d experiments did not end done: %s", n-done, strings.Join(failed[:min(len(failed), 5)], "; "))
	}
	if seen != 2*n {
		t.Errorf("%d driver Jobs seen, want %d", seen, 2*n)
	}
	if left != "" {
		t.Errorf("left after the end: %s", left)
	}
	if len(refused) > 0 {
		t.Errorf("the API server refused the deployer (429): %s", refused[len(refused)-1])
	}
	if t.Failed() {
		t.Logf("scheduler log: %s; deployer log: %s", schedLog, deployLog)
	}
}

// jobNames counts the driver Jobs created in ns, from a watch (a Job may
// live for less than any poll's period).
type jobNames struct {
	mu    sync.Mutex
	names map[string]bool
	err   error
}

func watchJobNames(ctx context.Context, t *testing.T, cp *k8stest.ControlPlane, ns string) *jobNames {
	t.Helper()
	w, err := cp.Client.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "app=benchq,component in (loader,benchmarker)"})
	if err != nil {
		t.Fatal(err)
	}
	j := &jobNames{names: map[string]bool{}}
	go func() {
		for ev := range w.ResultChan() {
			if job, ok := ev.Object.(*batchv1.Job); ok && ev.Type == watch.Added {
				j.mu.Lock()
				j.names[job.Name] = true
				j.mu.Unlock()
			}
		}
		if ctx.Err() == nil {
			j.mu.Lock()
			j.err = fmt.Errorf("the watch of driver Jobs ended early")
			j.mu.Unlock()
		}
	}()
	return j
}

func (j *jobNames) count() (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.names), j.err
}

// lastCount reads the running count (times=N) and the longest wait of the
// last of a throttling report's log lines: "none" without any.
func lastCount(lines []string) string {
	if len(lines) == 0 {
		return "none"
	}
	out := ""
	for _, f := range strings.Fields(lines[len(lines)-1]) {
		if strings.HasPrefix(f, "times=") || strings.HasPrefix(f, "longest=") {
			out += " " + f
		}
	}
	return strings.TrimSpace(out)
}

// grepLines are the lines of a log that hold word.
func grepLines(t *testing.T, path, word string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Error(err)
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return out
}
