package kube

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/benchq/benchq/contracts"
)

// The end of driver Jobs. The deployer polls the namespace's driver Jobs
// (by label: a restarted deployer finds those it created before) and
// reports every Job that completed or failed once per process; the event's
// id is deterministic, so a report repeated after a restart is dropped by
// JetStream (and ignored by the scheduler when the phase has moved on).

// kwokNodeAnnotation marks the nodes kwok simulates: pods "run" there
// without any container.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// driverSelector selects every driver Job (and its pods) of the namespace.
var driverSelector = labelApp + "=" + appName + "," + labelComponent + " in (" + componentLoader + "," + componentBenchmarker + ")"

// EndedDrivers returns the driver Jobs that completed or failed, except
// those named in skip (already reported).
// Their envelopes are stamped when they are published.
func (k *Kube) EndedDrivers(ctx context.Context, skip map[string]bool) ([]contracts.DriverEnded, error) {
	l, err := k.Client.BatchV1().Jobs(k.Namespace).List(ctx, metav1.ListOptions{LabelSelector: driverSelector})
	if err != nil {
		return nil, fmt.Errorf("list driver jobs: %w", err)
	}
	var out []contracts.DriverEnded
	for i := range l.Items {
		j := &l.Items[i]
		if skip[j.Name] || j.DeletionTimestamp != nil {
			continue
		}
		cond := jobEnded(j)
		if cond == nil {
			continue
		}
		d, err := k.driverEnd(ctx, j, cond)
		if err != nil {
			return out, err
		}
		out = append(out, d)
	}
	return out, nil
}

// driverJobOf reads what a driver Job or its pod says of its phase attempt:
// the labels, the attempt annotation (1 when absent), the Job's name.
func driverJobOf(labels, annotations map[string]string, job string) contracts.DriverJob {
	kind := contracts.KindRun
	if labels[labelComponent] == componentLoader {
		kind = contracts.KindLoad
	}
	attempt, _ := strconv.Atoi(annotations[annotationAttempt])
	if attempt < 1 {
		attempt = 1
	}
	return contracts.DriverJob{Configuration: labels[labelConfiguration], Phase: labels[labelPhase], Kind: kind, Attempt: attempt, Job: job}
}

// jobEnded returns the Job's Complete or Failed condition, nil while it runs.
func jobEnded(j *batchv1.Job) *batchv1.JobCondition {
	for i, c := range j.Status.Conditions {
		if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

func (k *Kube) driverEnd(ctx context.Context, j *batchv1.Job, cond *batchv1.JobCondition) (contracts.DriverEnded, error) {
	shards := 1
	if j.Spec.Parallelism != nil && *j.Spec.Parallelism > 0 {
		shards = int(*j.Spec.Parallelism)
	}
	d := contracts.DriverEnded{
		Envelope: contracts.Envelope{Code: j.Labels[labelExperiment]}, DriverJob: driverJobOf(j.Labels, j.Annotations, j.Name), Shards: shards,
		Succeeded: int(j.Status.Succeeded), Failed: int(j.Status.Failed),
	}
	if t := j.Status.StartTime; t != nil {
		st := t.UTC()
		d.StartedAt = &st
	}
	end := cond.LastTransitionTime.UTC()
	if t := j.Status.CompletionTime; t != nil {
		end = t.UTC()
	}
	if !end.IsZero() {
		d.EndedAt = &end
	}
	pods, err := k.Client.CoreV1().Pods(k.Namespace).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + j.Name})
	if err != nil {
		return d, fmt.Errorf("pods of driver job %s: %w", j.Name, err)
	}
	for _, p := range pods.Items {
		if n := p.Spec.NodeName; n != "" && !slices.Contains(d.Nodes, n) {
			d.Nodes = append(d.Nodes, n)
		}
	}
	slices.Sort(d.Nodes)
	sim, why := k.simulated(ctx, pods.Items)
	d.Simulated = sim
	what := string(cond.Type)
	if cond.Reason != "" {
		what += ": " + cond.Reason
	}
	if cond.Message != "" {
		what += ": " + cond.Message
	}
	d.Reason = fmt.Sprintf("%s (%d of %d pods succeeded, %d failed)", what, d.Succeeded, shards, d.Failed)
	if sim {
		d.Reason += "; simulated: " + why
	}
	return d, nil
}

// simulated reports whether every pod ran on a simulated node, and why it
// thinks so. A node annotated kwok.x-k8s.io/node=fake is kwok's. Where the
// deployer may not read nodes (deploy/k8s's Role grants no node access) the
// pod itself tells: kwok writes container states without a container ID,
// which a kubelet always sets once a container runtime created the
// container.
func (k *Kube) simulated(ctx context.Context, pods []corev1.Pod) (bool, string) {
	if len(pods) == 0 {
		return false, ""
	}
	fake := map[string]bool{}
	readable := map[string]bool{}
	var reasons []string
	for _, p := range pods {
		n := p.Spec.NodeName
		if n == "" {
			return false, "" // never scheduled: it ran nowhere, simulated or not
		}
		if _, seen := readable[n]; !seen {
			node, err := k.Client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			switch {
			case err == nil:
				readable[n] = true
				fake[n] = node.Annotations[kwokNodeAnnotation] == "fake"
				if fake[n] {
					reasons = append(reasons, fmt.Sprintf("node %s is annotated %s=fake", n, kwokNodeAnnotation))
				}
			case apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
				readable[n] = false
			default:
				readable[n] = false
				k.log().Debug("node not readable", "node", n, "err", err)
			}
		}
		if readable[n] {
			if !fake[n] {
				return false, ""
			}
			continue
		}
		if !withoutContainerIDs(p) {
			return false, ""
		}
		reasons = append(reasons, fmt.Sprintf("pod %s has container states but no container ID (node %s not readable)", p.Name, n))
	}
	return true, strings.Join(reasons, "; ") + ": no container ran"
}

// withoutContainerIDs: the pod has container states, every one started
// (running, or terminated after it started) without a container ID — no
// container runtime ran it (a kubelet sets the ID when the container
// starts). A container that never started has none anywhere, so it proves
// nothing: one still waiting, or one a kubelet ended before it started
// (an eviction: terminated, ContainerStatusUnknown, no start).
func withoutContainerIDs(p corev1.Pod) bool {
	if len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		started := (cs.State.Running != nil && !cs.State.Running.StartedAt.IsZero()) ||
			(cs.State.Terminated != nil && !cs.State.Terminated.StartedAt.IsZero() && cs.State.Terminated.Reason != "ContainerStatusUnknown")
		if cs.ContainerID != "" || !started {
			return false
		}
	}
	return true
}
