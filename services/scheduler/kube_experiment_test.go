//go:build k8s

// A whole experiment on the kubernetes backend (make test-k8s): a real
// control plane (internal/k8stest: etcd, kube-apiserver, controller-manager,
// scheduler, kwok), a real nats-server, this scheduler in-process and the
// deployer binary as a process of its own with BENCHQ_BACKEND=kubernetes.
//
// kwok runs no container: the SUT's pods are Running and the driver Jobs'
// pods Succeeded because kwok says so. So the experiment reaches every
// phase event, but no agent ever runs YCSB: each phase ends "simulated on
// kwok" with one shard final per shard saying so and no measurement. The
// numbers of benchq come from the local backend's tests.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/k8stest"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/testenv"
)

// startDeployer builds the deployer and runs it against the control plane
// until t ends; it returns its pid and log.
func startDeployer(t *testing.T, cp *k8stest.ControlPlane, natsURL, ns string) (int, string) {
	t.Helper()
	return startService(t, "deployer", []string{"-kubeconfig", cp.Kubeconfig, "-namespace", ns},
		"BENCHQ_BACKEND=kubernetes", "BENCHQ_NATS_URL="+natsURL,
		"BENCHQ_DRIVER_IMAGE=benchq/driver-agent:dev", "BENCHQ_DRIVER_NATS_URL=nats://nats:4222")
}

// startService builds services/<name> and runs it with args and env until
// t ends (SIGTERM, SIGKILL after 10 s; it also dies with the test binary).
// It returns the pid and the log's path.
func startService(t *testing.T, name string, args []string, env ...string) (int, string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, name)
	build := exec.Command("go", "build", "-o", bin, "../"+name)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", name, err, out)
	}
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		_ = logf.Close()
		if t.Failed() {
			t.Logf("%s log (last lines):\n%s", name, procs.LogTail(logPath, 40))
		}
	})
	return cmd.Process.Pid, logPath
}

// jobWatcher records every driver Job of the namespace it sees.
type jobWatcher struct {
	mu   sync.Mutex
	jobs map[string]batchv1.Job
}

func watchJobs(ctx context.Context, c kubernetes.Interface, ns string) *jobWatcher {
	w := &jobWatcher{jobs: map[string]batchv1.Job{}}
	go func() {
		for ctx.Err() == nil {
			l, err := c.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=benchq,component in (loader,benchmarker)"})
			if err == nil {
				w.mu.Lock()
				for _, j := range l.Items {
					w.jobs[j.Name] = j
				}
				w.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *jobWatcher) get(name string) (batchv1.Job, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	j, ok := w.jobs[name]
	return j, ok
}

// labelled lists what is left labelled with the experiment.
func labelled(ctx context.Context, c kubernetes.Interface, ns, code string) ([]string, error) {
	opts := metav1.ListOptions{LabelSelector: "experiment=" + code}
	var out []string
	pods, err := c.CoreV1().Pods(ns).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for _, o := range pods.Items {
		out = append(out, "pod/"+o.Name)
	}
	svcs, err := c.CoreV1().Services(ns).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for _, o := range svcs.Items {
		out = append(out, "service/"+o.Name)
	}
	deps, err := c.AppsV1().Deployments(ns).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for _, o := range deps.Items {
		out = append(out, "deployment/"+o.Name)
	}
	rss, err := c.AppsV1().ReplicaSets(ns).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for _, o := range rss.Items {
		out = append(out, "replicaset/"+o.Name)
	}
	jobs, err := c.BatchV1().Jobs(ns).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for _, o := range jobs.Items {
		out = append(out, "job/"+o.Name)
	}
	pvcs, err := c.CoreV1().PersistentVolumeClaims(ns).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for _, o := range pvcs.Items {
		out = append(out, "pvc/"+o.Name)
	}
	eps, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for _, o := range eps.Items {
		out = append(out, "endpointslice/"+o.Name)
	}
	return out, nil
}

// TestKubeExperiment: benchq ycsb -dbms Redis -sf 0.01 -nlp 2 -nbp 1,2
// -rnl kwok-node-0 run, driven by the scheduler through the deployer on
// the kubernetes backend, to its end.
func TestKubeExperiment(t *testing.T) {
	// Job pods run 1.5 s, so that one can be deleted mid-phase (below).
	cp := k8stest.StartWith(t, k8stest.Options{JobPodsRunFor: 1500 * time.Millisecond})
	ns := cp.Namespace(t, "experiment")
	natsURL := testenv.NATS(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	log := testenv.Logger(t, "scheduler")
	testenv.Go(t, func(ctx context.Context) error {
		return Run(ctx, Config{NATSURL: natsURL, TickEvery: 200 * time.Millisecond}, log)
	})
	startDeployer(t, cp, natsURL, ns)
	jobs := watchJobs(ctx, cp.Client, ns)

	b, err := bus.Connect(ctx, natsURL, "", "kube-experiment-test", testenv.Logger(t, "test"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	const code = "kexp1"
	events, err := b.JS.OrderedConsumer(ctx, contracts.StreamEvents, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"benchq.exp." + code + ".>"}})
	if err != nil {
		t.Fatal(err)
	}
	request := `{"schema_version": 1, "id": "kexp1-request", "code": "kexp1", "dbms": ["Redis"], "sf": 0.01,
		"loading_pods": [2], "benchmarking_pods": [1, 2], "nodes": {"loading": "` + k8stest.NodeName + `"}}`
	start := time.Now()
	if err := b.PublishRaw(ctx, contracts.SubjRequest, "kexp1-request", []byte(request)); err != nil {
		t.Fatal(err)
	}

	// Every event of the experiment, in order, until it ends.
	var seq []string
	var ended []contracts.DriverEnded
	var phases []contracts.PhaseEvent
	var end contracts.ExperimentEnd
	for end.Status == "" {
		m, err := events.Next(jetstream.FetchMaxWait(3 * time.Minute))
		if err != nil {
			t.Fatalf("after %v: %v", seq, err)
		}
		subj := strings.TrimPrefix(m.Subject(), "benchq.exp."+code+".")
		msg, err := bus.DecodeSubject(m.Subject(), m.Data())
		if err != nil {
			t.Fatalf("%s: %v", m.Subject(), err)
		}
		switch e := msg.(type) {
		case *contracts.DriverEnded:
			ended = append(ended, *e)
			subj += fmt.Sprintf("(%s, simulated=%v)", e.Phase, e.Simulated)
		case *contracts.PhaseEvent:
			phases = append(phases, *e)
			subj += "(" + e.Phase + ")"
		case *contracts.Final: // the scheduler's, on the shard's behalf
			subj += fmt.Sprintf("(%s %d)", e.Phase, e.Shard)
		case *contracts.ExperimentEnd:
			end = *e
		}
		seq = append(seq, subj)
	}
	t.Logf("events after %.1fs:\n  %s", time.Since(start).Seconds(), strings.Join(seq, "\n  "))

	cfg := "Redis-64-2-16384-1"
	load, run1, run2 := cfg+"-0", cfg+"-1", cfg+"-2"
	want := []string{
		"planned",
		"sut.ready",
		"driver.ended(" + load + ", simulated=true)",
		"shard.ended(" + load + " 1)", "shard.ended(" + load + " 2)",
		"phase.started(" + load + ")",
		"phase.done(" + load + ")",
		"driver.ended(" + run1 + ", simulated=true)",
		"shard.ended(" + run1 + " 1)",
		"phase.started(" + run1 + ")",
		"phase.done(" + run1 + ")",
		"driver.ended(" + run2 + ", simulated=true)",
		"shard.ended(" + run2 + " 1)", "shard.ended(" + run2 + " 2)",
		"phase.started(" + run2 + ")",
		"phase.done(" + run2 + ")",
		"sut.removed",
		"done",
	}
	if strings.Join(seq, " ") != strings.Join(want, " ") {
		t.Errorf("events:\n  got  %s\n  want %s", strings.Join(seq, " "), strings.Join(want, " "))
	}
	if end.Status != contracts.ExperimentDone {
		t.Errorf("experiment %s: %s", end.Status, end.Reason)
	}
	for _, p := range phases {
		if p.Reason != SimulatedNote {
			t.Errorf("phase %s %s: reason %q, want %q", p.Phase, p.Status, p.Reason, SimulatedNote)
		}
	}

	// The driver Jobs: one per phase, one pod per shard, labelled, the
	// loading one pinned by -rnl; each reported simulated on the kwok node.
	shards := map[string]int{load: 2, run1: 1, run2: 2}
	for _, e := range ended {
		name := "bq-" + code + "-" + strings.ToLower(e.Phase)
		if e.Job != name || e.Shards != shards[e.Phase] || e.Succeeded != shards[e.Phase] || e.Failed != 0 ||
			!e.Simulated || len(e.Nodes) != 1 || e.Nodes[0] != k8stest.NodeName || e.Attempt != 1 {
			t.Errorf("driver.ended %+v", e)
		}
		j, ok := jobs.get(name)
		if !ok {
			t.Errorf("driver job %s never seen", name)
			continue
		}
		component := "benchmarker"
		if e.Kind == contracts.KindLoad {
			component = "loader"
		}
		l := j.Labels
		if *j.Spec.Parallelism != int32(shards[e.Phase]) || *j.Spec.Completions != int32(shards[e.Phase]) ||
			l["app"] != "benchq" || l["experiment"] != code || l["configuration"] != cfg || l["phase"] != e.Phase || l["component"] != component {
			t.Errorf("job %s: parallelism %d, labels %v", name, *j.Spec.Parallelism, l)
		}
		env := map[string]string{}
		for _, v := range j.Spec.Template.Spec.Containers[0].Env {
			env[v.Name] = v.Value
		}
		if env["BENCHQ_AGENT_PHASE"] != e.Phase || env["BENCHQ_AGENT_EXPERIMENT"] != code || env["BENCHQ_AGENT_MAX_SHARDS"] != "1" ||
			env["BENCHQ_NATS_URL"] != "nats://nats:4222" || j.Spec.Template.Spec.Containers[0].Image != "benchq/driver-agent:dev" {
			t.Errorf("job %s: env %v image %s", name, env, j.Spec.Template.Spec.Containers[0].Image)
		}
		pin := j.Spec.Template.Spec.NodeSelector["kubernetes.io/hostname"]
		if (e.Kind == contracts.KindLoad) != (pin == k8stest.NodeName) {
			t.Errorf("job %s: node selector %v", name, j.Spec.Template.Spec.NodeSelector)
		}
	}
	if len(ended) != 3 {
		t.Errorf("%d driver.ended events, want 3", len(ended))
	}

	// One final per shard, published by the scheduler on the shards'
	// behalf (on its own subject: agents sign theirs): simulated, no
	// measurement.
	results, err := b.JS.OrderedConsumer(ctx, contracts.StreamEvents, jetstream.OrderedConsumerConfig{FilterSubjects: []string{contracts.TopicShardEnded.For(code)}})
	if err != nil {
		t.Fatal(err)
	}
	finals := map[string]contracts.Final{}
	for len(finals) < 5 {
		m, err := results.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			t.Fatalf("finals %v: %v", finals, err)
		}
		var f contracts.Final
		if err := bus.Decode(contracts.SchemaFinal, m.Data(), &f); err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("%s/%d", f.Phase, f.Shard)
		if _, dup := finals[key]; dup {
			t.Errorf("two finals for %s", key)
		}
		finals[key] = f
		if f.Status != contracts.StatusSimulated || len(f.Operations) != 0 || f.Throughput != 0 || !strings.HasPrefix(f.Error, SimulatedNote) {
			t.Errorf("final %s: %+v", key, f)
		}
	}
	if m, err := results.Next(jetstream.FetchMaxWait(time.Second)); err == nil {
		t.Errorf("a sixth result: %s %s", m.Subject(), m.Data())
	}

	// The scheduler's stored state: done, no failures.
	kv, err := b.JS.KeyValue(ctx, contracts.KVExperiments)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, code)
	if err != nil {
		t.Fatal(err)
	}
	var st State
	if err := json.Unmarshal(e.Value(), &st); err != nil || st.Status != contracts.ExperimentDone || len(st.Failures) != 0 || len(st.Drivers) != 0 {
		t.Errorf("state %s %v %v (%v)", st.Status, st.Failures, st.Drivers, err)
	}

	// Nothing labelled with the experiment is left.
	if left, err := labelled(ctx, cp.Client, ns, code); err != nil || len(left) > 0 {
		t.Errorf("left after the experiment: %v %v", left, err)
	}

	t.Run("a driver pod deleted mid-phase", func(t *testing.T) { testDriverPodDeleted(ctx, t, cp, ns, b) })
}

// testDriverPodDeleted: benchq ycsb -dbms Redis -nlp 1 -nbp 2 run, and one
// of the benchmarking phase's two driver pods deleted while it runs. The
// deployer reports it (driver.lost), the scheduler re-runs the phase once
// (a Job -a2), and the experiment ends done.
func testDriverPodDeleted(ctx context.Context, t *testing.T, cp *k8stest.ControlPlane, ns string, b *bus.Bus) {
	const code = "kexp2"
	events, err := b.JS.OrderedConsumer(ctx, contracts.StreamEvents, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"benchq.exp." + code + ".>"}})
	if err != nil {
		t.Fatal(err)
	}
	// The deleter: the first benchmarking pod seen Running, deleted once
	// the deployer says it runs (what the scheduler asks of a late agent).
	type deletion struct {
		pod     string
		at      time.Time
		running []string // the deployer's answer for it and a pod that never was
	}
	ask := func(pods ...string) []string {
		q, _ := json.Marshal(contracts.PodsQuery{Pods: pods})
		m, err := b.NC.Request(contracts.SubjDriverPods, q, time.Second)
		if err != nil {
			return []string{"no answer: " + err.Error()}
		}
		var a contracts.PodsAnswer
		_ = json.Unmarshal(m.Data, &a)
		return a.Running
	}
	deleted := make(chan deletion, 1)
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for dctx.Err() == nil {
			l, err := cp.Client.CoreV1().Pods(ns).List(dctx, metav1.ListOptions{LabelSelector: "experiment=" + code + ",component=benchmarker"})
			if err == nil {
				for _, p := range l.Items {
					if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
						running := ask(p.Name, "bq-never-was")
						for try := 0; try < 20 && len(running) == 0; try++ { // its watch may be a moment behind
							time.Sleep(20 * time.Millisecond)
							running = ask(p.Name, "bq-never-was")
						}
						at := time.Now()
						if err := cp.Client.CoreV1().Pods(ns).Delete(dctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err == nil {
							deleted <- deletion{p.Name, at, running}
							return
						}
					}
				}
			}
			select {
			case <-dctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	request := `{"schema_version": 1, "id": "kexp2-request", "code": "kexp2", "dbms": ["Redis"], "sf": 0.01,
		"loading_pods": [1], "benchmarking_pods": [2]}`
	if err := b.PublishRaw(ctx, contracts.SubjRequest, "kexp2-request", []byte(request)); err != nil {
		t.Fatal(err)
	}
	var lost []contracts.DriverLost
	var lostAt time.Time
	var phases []contracts.PhaseEvent
	var end contracts.ExperimentEnd
	for end.Status == "" {
		m, err := events.Next(jetstream.FetchMaxWait(3 * time.Minute))
		if err != nil {
			t.Fatalf("after %d phase events: %v", len(phases), err)
		}
		msg, err := bus.DecodeSubject(m.Subject(), m.Data())
		if err != nil {
			t.Fatalf("%s: %v", m.Subject(), err)
		}
		switch e := msg.(type) {
		case *contracts.DriverLost:
			lost, lostAt = append(lost, *e), time.Now()
		case *contracts.PhaseEvent:
			phases = append(phases, *e)
		case *contracts.ExperimentEnd:
			end = *e
		}
	}
	var d deletion
	select {
	case d = <-deleted:
	default:
		t.Fatal("no benchmarking pod was seen Running")
	}
	if len(lost) != 1 {
		t.Fatalf("driver.lost %+v, want one for %s", lost, d.pod)
	}
	if len(d.running) != 1 || d.running[0] != d.pod {
		t.Errorf("the deployer says %v of Running pods %s and bq-never-was, want %s", d.running, d.pod, d.pod)
	}
	if running := ask(d.pod); len(running) != 0 {
		t.Errorf("the deployer says %v still runs after its deletion", running)
	}
	l := lost[0]
	t.Logf("pod %s deleted; driver.lost %.2fs later: %+v", d.pod, lostAt.Sub(d.at).Seconds(), l)
	if l.Pod != d.pod || l.Attempt != 1 || l.Kind != contracts.KindRun || l.Reason != "deleted" || !l.Simulated ||
		l.Node != k8stest.NodeName || !strings.HasPrefix(l.Job, "bq-kexp2-") || l.ID != contracts.DriverLostID(code, l.Phase, 1, d.pod) {
		t.Errorf("driver.lost %+v", l)
	}
	var seq []string
	for _, p := range phases {
		seq = append(seq, fmt.Sprintf("%s %s a%d", p.Status, p.Phase, p.Attempt))
	}
	load, run := l.Configuration+"-0", l.Phase
	want := []string{"started " + load + " a1", "done " + load + " a1", "failed " + run + " a1", "started " + run + " a2", "done " + run + " a2"}
	if strings.Join(seq, ", ") != strings.Join(want, ", ") {
		t.Errorf("phases:\n  got  %s\n  want %s", strings.Join(seq, ", "), strings.Join(want, ", "))
	}
	for _, p := range phases {
		if p.Status == contracts.PhaseFailed && p.Reason != fmt.Sprintf("lost driver pod %s of Job %s deleted on node %s (simulated: the pod stands for a shard); re-running the phase", d.pod, l.Job, k8stest.NodeName) {
			t.Errorf("phase.failed reason %q", p.Reason)
		}
	}
	if end.Status != contracts.ExperimentDone {
		t.Errorf("experiment %s: %s", end.Status, end.Reason)
	}
	if left, err := labelled(ctx, cp.Client, ns, code); err != nil || len(left) > 0 {
		t.Errorf("left after the experiment: %v %v", left, err)
	}
}
