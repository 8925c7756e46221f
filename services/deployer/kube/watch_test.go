package kube

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func sutPod(name, uid, configuration string, ready bool) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(uid), Labels: map[string]string{
			labelApp: appName, labelComponent: componentSUT, labelExperiment: "7", labelConfiguration: configuration, labelDBMS: "Redis"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: st}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "dbms", Ready: ready}}},
	}
}

// A SUT pod seen Ready that then restarts its container, or vanishes, is a
// dead SUT named with what happened; a pod never Ready is the deploy's
// business, a pod that goes away in its configuration's teardown is not
// dead, and neither is a Job's.
func TestKubeDeadSUTs(t *testing.T) {
	ctx := context.Background()
	a := sutPod("bq-7-redis-a-x", "a", "Redis-A", true)
	b := sutPod("bq-7-redis-b-x", "b", "Redis-B", true)
	c := sutPod("bq-7-redis-c-x", "c", "Redis-C", false)
	d := sutPod("bq-7-redis-d-x", "d", "Redis-D", true)
	// A Job's pod with a SUT's labels (a cluster's bootstrap, a schema):
	// its container retried, or the pod removed with its Job, is no SUT
	// dying.
	j := sutPod("bq-7-redis-e-schema-x", "j", "Redis-E", true)
	j.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "bq-7-redis-e-schema", UID: "job"}}
	f, k := newFake(t, a, b, c, d, j)
	pods := f.CoreV1().Pods("ns")
	reported := map[string]bool{}
	if dead, err := k.DeadSUTs(ctx, reported); err != nil || len(dead) != 0 {
		t.Fatalf("first look: %v, %v", dead, err)
	}
	a.Status.ContainerStatuses[0].RestartCount = 1
	a.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137, Signal: 9}
	c.Status.ContainerStatuses[0].RestartCount = 4 // never Ready: not judged
	j.Status.ContainerStatuses[0].RestartCount = 1
	for _, p := range []*corev1.Pod{a, c, j} {
		if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := pods.Delete(ctx, b.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	k.tearingDown("7", "Redis-D")
	if err := pods.Delete(ctx, d.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	dead, err := k.DeadSUTs(ctx, reported)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range dead {
		got = append(got, x.Configuration+": "+x.Reason)
	}
	want := []string{
		"Redis-A: pod bq-7-redis-a-x: container dbms restarted (1 restarts), its last run ended: OOMKilled, exit code 137, signal 9",
		"Redis-B: pod bq-7-redis-b-x was deleted",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("dead:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if dead[0].Code != "7" || dead[0].DBMS != "Redis" {
		t.Errorf("dead[0] = %+v", dead[0])
	}
}
