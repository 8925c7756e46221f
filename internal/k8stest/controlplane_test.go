//go:build k8s

package k8stest

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestControlPlane starts the control plane and runs one Deployment's pod
// to Running on the kwok node.
func TestControlPlane(t *testing.T) {
	cp := Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	info, err := cp.Client.Discovery().ServerVersion()
	if err != nil || info.GitVersion != Version {
		t.Fatalf("server version %v, %v; want %s", info, err, Version)
	}
	ns := cp.Namespace(t, "smoke")
	labels := map[string]string{"app": "smoke"}
	_, err = cp.Client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "smoke"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = cp.poll(ctx, "deployment ready", func(ctx context.Context) error {
		pods, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=smoke"})
		if err != nil {
			return err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == NodeName {
				running++
			}
		}
		if running != 2 {
			return fmt.Errorf("%d of 2 pods running", running)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
