package kube

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nats-io/nats.go"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/testenv"
	"github.com/benchq/benchq/services/deployer/backend"
	"github.com/benchq/benchq/services/deployer/deployer"
)

// driverPods adds the pods the Job controller would have made, on node,
// with container IDs when a real runtime "ran" them.
func driverPods(t *testing.T, f *fakeCluster, job *batchv1.Job, node string, containerIDs bool) {
	t.Helper()
	for i := 0; i < int(*job.Spec.Parallelism); i++ {
		cs := corev1.ContainerStatus{Name: "driver-agent", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 0, Reason: "Completed", StartedAt: metav1.Now()}}}
		if containerIDs {
			cs.ContainerID = "containerd://abc"
		}
		labels := map[string]string{batchv1.JobNameLabel: job.Name}
		for k, v := range job.Spec.Template.Labels {
			labels[k] = v
		}
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: job.Name + "-" + string(rune('a'+i)), Namespace: "ns", Labels: labels},
			Spec:       corev1.PodSpec{NodeName: node},
			Status:     corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{cs}},
		}
		if _, err := f.CoreV1().Pods("ns").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func node(name string, kwok bool) runtime.Object {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if kwok {
		n.Annotations = map[string]string{kwokNodeAnnotation: "fake"}
	}
	return n
}

func startedDrivers(t *testing.T, k *Kube, f *fakeCluster, d backend.DriverSpec) *batchv1.Job {
	t.Helper()
	name, err := k.StartDrivers(kubeCtx(t), d)
	if err != nil {
		t.Fatal(err)
	}
	j, err := f.BatchV1().Jobs("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	j.Status.StartTime, j.Status.CompletionTime = &now, &now
	j.Status.Succeeded = *j.Spec.Parallelism
	if _, err := f.BatchV1().Jobs("ns").UpdateStatus(context.Background(), j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return j
}

func TestEndedDriversOnKwokAreSimulated(t *testing.T) {
	f, k := newFake(t, node("kwok-node-0", true))
	k.DriverImage, k.DriverNATSURL = "img:1", "nats://nats:4222"
	j := startedDrivers(t, k, f, backend.DriverSpec{Code: "7", Configuration: "Redis-8-2-16384-1", DBMS: "Redis", Phase: "Redis-8-2-16384-1-0",
		Kind: contracts.KindLoad, Attempt: 1, Shards: 2})
	if c := j.Spec.Template.Spec.Containers[0]; c.Image != "img:1" || c.Env[2].Value != "nats://nats:4222" {
		t.Errorf("image/env from the backend's configuration: %s %v", c.Image, c.Env)
	}
	driverPods(t, f, j, "kwok-node-0", false)
	ended, err := k.EndedDrivers(kubeCtx(t), nil)
	if err != nil || len(ended) != 1 {
		t.Fatalf("%+v %v", ended, err)
	}
	e := ended[0]
	if !e.Simulated || e.Job != "bq-7-redis-8-2-16384-1-0" || e.Code != "7" || e.Phase != "Redis-8-2-16384-1-0" || e.Kind != contracts.KindLoad ||
		e.Attempt != 1 || e.Shards != 2 || e.Succeeded != 2 || e.Failed != 0 || len(e.Nodes) != 1 || e.Nodes[0] != "kwok-node-0" ||
		e.StartedAt == nil || e.EndedAt == nil || !strings.Contains(e.Reason, "kwok.x-k8s.io/node=fake") {
		t.Errorf("%+v", e)
	}
	e.Stamp(time.Now())
	if e.ID != "7.Redis-8-2-16384-1-0.a1.driver.ended" {
		t.Errorf("id %s", e.ID)
	}
	if ended, _ := k.EndedDrivers(kubeCtx(t), map[string]bool{e.Job: true}); len(ended) != 0 {
		t.Errorf("reported again: %+v", ended)
	}
}

// A node that is not kwok's: the Job's pods ran for real.
func TestEndedDriversOnARealNodeAreNotSimulated(t *testing.T) {
	f, k := newFake(t, node("worker-1", false))
	k.DriverImage, k.DriverNATSURL = "img:1", "nats://nats:4222"
	j := startedDrivers(t, k, f, backend.DriverSpec{Code: "7", Configuration: "Redis-8-2-16384-1", DBMS: "Redis", Phase: "Redis-8-2-16384-1-1",
		Kind: contracts.KindRun, Attempt: 2, Shards: 1})
	if j.Name != "bq-7-redis-8-2-16384-1-1-a2" || j.Annotations[annotationAttempt] != "2" {
		t.Errorf("re-run job %s %v", j.Name, j.Annotations)
	}
	driverPods(t, f, j, "worker-1", false) // even without container IDs: the node says it is real
	ended, err := k.EndedDrivers(kubeCtx(t), nil)
	if err != nil || len(ended) != 1 || ended[0].Simulated || ended[0].Kind != contracts.KindRun || ended[0].Attempt != 2 {
		t.Fatalf("%+v %v", ended, err)
	}
}

// Without access to nodes (deploy/k8s's Role) the pods tell: kwok's have
// no container IDs, a kubelet's do.
func TestEndedDriversWithoutNodeAccess(t *testing.T) {
	for _, ids := range []bool{false, true} {
		f, k := newFake(t)
		f.PrependReactor("get", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, a.(k8stesting.GetAction).GetName(), nil)
		})
		k.DriverImage, k.DriverNATSURL = "img:1", "nats://nats:4222"
		j := startedDrivers(t, k, f, backend.DriverSpec{Code: "7", Configuration: "c-1", DBMS: "Redis", Phase: "c-1-0", Kind: contracts.KindLoad, Shards: 2})
		driverPods(t, f, j, "n1", ids)
		ended, err := k.EndedDrivers(kubeCtx(t), nil)
		if err != nil || len(ended) != 1 || ended[0].Simulated == ids {
			t.Fatalf("container IDs %v: %+v %v", ids, ended, err)
		}
		if !ids && !strings.Contains(ended[0].Reason, "no container ID") {
			t.Errorf("reason %q", ended[0].Reason)
		}
	}
}

// A Job still running is not reported; a failed one is, with its reason.
func TestEndedDriversFailedAndRunning(t *testing.T) {
	f, k := newFake(t, node("kwok-node-0", true))
	f.failJobs = true
	k.DriverImage, k.DriverNATSURL = "img:1", "nats://nats:4222"
	if _, err := k.StartDrivers(kubeCtx(t), backend.DriverSpec{Code: "7", Configuration: "c-1", DBMS: "Redis", Phase: "c-1-1", Kind: contracts.KindRun, Shards: 1}); err != nil {
		t.Fatal(err)
	}
	f.failJobs = false
	running, _ := DriverJob(backend.DriverSpec{Code: "7", Configuration: "c-1", DBMS: "Redis", Phase: "c-1-2", Kind: contracts.KindRun, Shards: 1, Image: "i", NATSURL: "n"}, "ns")
	if err := f.Clientset.Tracker().Create(batchv1.SchemeGroupVersion.WithResource("jobs"), running, "ns"); err != nil {
		t.Fatal(err)
	}
	ended, err := k.EndedDrivers(kubeCtx(t), nil)
	if err != nil || len(ended) != 1 || ended[0].Phase != "c-1-1" || ended[0].Simulated || !strings.Contains(ended[0].Reason, "BackoffLimitExceeded") {
		t.Fatalf("%+v %v", ended, err)
	}
}

// The deployer service with driver Jobs: a Job made by an earlier deployer
// process (found by label) and one made for a drivers job are both
// reported as driver.ended, once; on a backend without driver Jobs (local)
// a drivers job is acked and does nothing.
func TestDeployerReportsDriverJobs(t *testing.T) {
	url := testenv.NATS(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	b := testenv.Bus(t, ctx, url)
	ended := make(chan *nats.Msg, 16)
	sub, err := b.NC.ChanSubscribe(contracts.Subject(contracts.SubjDriverEnded, "", "", ""), ended)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	next := func() contracts.DriverEnded {
		t.Helper()
		select {
		case m := <-ended:
			var e contracts.DriverEnded
			if err := bus.Decode(contracts.SchemaDriverEnded, m.Data, &e); err != nil {
				t.Fatal(err)
			}
			return e
		case <-time.After(30 * time.Second):
			t.Fatal("no driver.ended")
		}
		return contracts.DriverEnded{}
	}

	f, k := newFake(t, node("kwok-node-0", true))
	k.DriverImage, k.DriverNATSURL = "img:1", "nats://nats:4222"
	before := startedDrivers(t, k, f, backend.DriverSpec{Code: "r1", Configuration: "c-1", DBMS: "Redis", Phase: "c-1-0", Kind: contracts.KindLoad, Shards: 2})
	driverPods(t, f, before, "kwok-node-0", false)
	testenv.Go(t, func(ctx context.Context) error {
		return deployer.Run(ctx, deployer.Config{NATSURL: url, DriverPoll: 50 * time.Millisecond}, k, testenv.Logger(t, "deployer"))
	})
	if e := next(); e.Job != before.Name || !e.Simulated || e.Succeeded != 2 || e.ID != "r1.c-1-0.a1.driver.ended" {
		t.Errorf("the earlier Job: %+v", e)
	}
	if err := b.Publish(ctx, contracts.SubjDrivers, &contracts.Drivers{Envelope: contracts.NewEnvelope("r1", "r1.c-1-1.a1.drivers", time.Now()),
		Configuration: "c-1", DBMS: "Redis", Phase: "c-1-1", Kind: contracts.KindRun, Attempt: 1, Shards: 1}); err != nil {
		t.Fatal(err)
	}
	if e := next(); e.Job != "bq-r1-c-1-1" || e.Kind != contracts.KindRun || e.Shards != 1 {
		t.Errorf("the new Job: %+v", e)
	}
	select {
	case m := <-ended:
		t.Errorf("reported twice: %s", m.Data)
	case <-time.After(500 * time.Millisecond):
	}
	// A Job the API server cannot take: reported at once, nothing succeeded.
	long := strings.Repeat("x", 60)
	if err := b.Publish(ctx, contracts.SubjDrivers, &contracts.Drivers{Envelope: contracts.NewEnvelope("r1", "r1.long.a1.drivers", time.Now()),
		Configuration: "c-1", DBMS: "Redis", Phase: long, Kind: contracts.KindRun, Attempt: 1, Shards: 1}); err != nil {
		t.Fatal(err)
	}
	if e := next(); e.Phase != long || e.Succeeded != 0 || e.Simulated || !strings.Contains(e.Reason, "not created") {
		t.Errorf("refused Job: %+v", e)
	}
}

// A driver pod is lost when it is deleted or fails before it succeeded;
// a pod that succeeded (deleted later with its Job) is not.
func TestPodLost(t *testing.T) {
	now := metav1.Now()
	failed := corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", ContainerStatuses: []corev1.ContainerStatus{
		{Name: "driver-agent", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"}}}}}
	for _, c := range []struct {
		name   string
		ev     watch.EventType
		status corev1.PodStatus
		del    *metav1.Time
		want   string
	}{
		{"running", watch.Modified, corev1.PodStatus{Phase: corev1.PodRunning}, nil, ""},
		{"succeeded, then deleted", watch.Deleted, corev1.PodStatus{Phase: corev1.PodSucceeded}, &now, ""},
		{"deleting", watch.Modified, corev1.PodStatus{Phase: corev1.PodRunning}, &now, "deleted"},
		{"deleted while pending", watch.Deleted, corev1.PodStatus{Phase: corev1.PodPending}, nil, "deleted"},
		{"failed", watch.Modified, failed, nil, "failed: Evicted (container driver-agent exited 137: Error)"},
	} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", DeletionTimestamp: c.del}, Status: c.status}
		if got := podLost(c.ev, p); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// A pod whose container never started has no container ID on any node
// (still waiting, or evicted before it started): it is not taken for
// kwok's when the node cannot be read.
func TestAWaitingPodIsNotSimulated(t *testing.T) {
	f, k := newFake(t)
	f.PrependReactor("get", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, a.(k8stesting.GetAction).GetName(), nil)
	})
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "driver-agent", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}}
	if sim, why := k.simulated(kubeCtx(t), []corev1.Pod{p}); sim {
		t.Errorf("a waiting pod taken for simulated: %s", why)
	}
	p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "ContainerStatusUnknown"}}
	if sim, why := k.simulated(kubeCtx(t), []corev1.Pod{p}); sim {
		t.Errorf("a pod evicted before its container started taken for simulated: %s", why)
	}
	p.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
	if sim, _ := k.simulated(kubeCtx(t), []corev1.Pod{p}); !sim {
		t.Error("a running container without an ID (kwok) not taken for simulated")
	}
}
