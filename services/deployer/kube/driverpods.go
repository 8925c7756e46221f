package kube

import (
	"context"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/benchq/benchq/contracts"
)

// The driver pods' watch. A driver pod deleted (by a user, an eviction, a
// node drain) or failed before it completed takes its agent, and the shard
// that agent runs, with it. The Job replaces the pod, but the new agent
// cannot pick up a shard half done: the deployer watches the namespace's
// driver pods and reports each such loss at once (driver.lost), and the
// scheduler re-runs the phase instead of waiting for the agent's
// heartbeats to stop. A loss while the watch is down (the deployer
// restarting, the API server unreachable) is not reported: the heartbeats
// catch it then, after contracts.AgentLiveness.
//
// The watch also knows which driver pods are Running: the scheduler asks
// (RunningDriverPods) before it calls an agent lost whose heartbeats are
// late, and does not while its pod runs.

// runningDrivers is what the watch knows of the driver pods.
type runningDrivers struct {
	mu      sync.Mutex
	running map[string]bool // pod name → Running, not being deleted
}

func (p *runningDrivers) reset() {
	p.mu.Lock()
	p.running = nil
	p.mu.Unlock()
}

func (p *runningDrivers) set(pod *corev1.Pod, gone bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running == nil {
		p.running = map[string]bool{}
	}
	if !gone && pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil {
		p.running[pod.Name] = true
	} else {
		delete(p.running, pod.Name)
	}
}

// RunningDriverPods returns the pods among names that the watch last saw
// Running (none while it is down).
func (k *Kube) RunningDriverPods(names []string) []string {
	k.driverPods.mu.Lock()
	defer k.driverPods.mu.Unlock()
	var out []string
	for _, n := range names {
		if k.driverPods.running[n] {
			out = append(out, n)
		}
	}
	return out
}

// WatchDriverPods calls lost for every driver pod that is deleted or fails
// before it completed, once per pod and process, until ctx ends. Losses
// count from when it starts; the pods Running then are known at once.
//
// A list, then a watch from the list's resource version, resumed from the
// last version seen when the API server closes it (it does every few
// minutes). Any error — the API server unreachable, a version too old
// (410 Gone) — forgets the Running pods (RunningDriverPods vouches for
// none) until a new list; the losses meanwhile are not reported.
func (k *Kube) WatchDriverPods(ctx context.Context, lost func(contracts.DriverLost)) {
	pods := k.Client.CoreV1().Pods(k.Namespace)
	reported := map[types.UID]bool{}
	for ctx.Err() == nil {
		rv, err := k.listDriverPods(ctx)
		for err == nil && ctx.Err() == nil {
			began := time.Now()
			var w watch.Interface
			w, err = pods.Watch(ctx, metav1.ListOptions{LabelSelector: driverSelector, ResourceVersion: rv, AllowWatchBookmarks: true})
			if err == nil {
				rv, err = k.lostPods(ctx, w.ResultChan(), rv, reported, lost)
				w.Stop()
			}
			if err == nil && time.Since(began) < time.Second {
				sleepCtx(ctx, time.Second) // closed at once (a proxy, a server stopping): no busy loop
			}
		}
		k.driverPods.reset()
		if ctx.Err() == nil {
			k.log().Warn("driver pods not watched; a lost one is noticed by its agent's silence meanwhile", "err", err)
		}
		sleepCtx(ctx, time.Second)
	}
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// listDriverPods records the Running driver pods, page by page, and
// returns the list's resource version.
func (k *Kube) listDriverPods(ctx context.Context) (string, error) {
	k.driverPods.reset()
	opts := metav1.ListOptions{LabelSelector: driverSelector, Limit: 500}
	for {
		l, err := k.Client.CoreV1().Pods(k.Namespace).List(ctx, opts)
		if err != nil {
			return "", err
		}
		for i := range l.Items {
			k.driverPods.set(&l.Items[i], false)
		}
		if l.Continue == "" {
			return l.ResourceVersion, nil
		}
		opts.Continue = l.Continue
	}
}

// lostPods reads a watch's events until it ends, reporting each lost pod;
// it returns the last resource version seen, and the error that ended the
// watch (nil when the server closed it).
func (k *Kube) lostPods(ctx context.Context, events <-chan watch.Event, rv string, reported map[types.UID]bool, lost func(contracts.DriverLost)) (string, error) {
	for {
		var ev watch.Event
		select {
		case <-ctx.Done():
			return rv, ctx.Err()
		case e, ok := <-events:
			if !ok {
				return rv, nil
			}
			ev = e
		}
		if ev.Type == watch.Error {
			return rv, apierrors.FromObject(ev.Object)
		}
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		rv = p.ResourceVersion
		if ev.Type == watch.Bookmark {
			continue
		}
		k.driverPods.set(p, ev.Type == watch.Deleted)
		how := podLost(ev.Type, p)
		if how == "" || reported[p.UID] {
			continue
		}
		reported[p.UID] = true
		lost(k.driverLost(ctx, p, how))
	}
}

// podLost says how a driver pod was lost ("" when it was not): deleted or
// failed before it succeeded.
func podLost(t watch.EventType, p *corev1.Pod) string {
	switch {
	case p.Status.Phase == corev1.PodSucceeded:
		return ""
	case p.Status.Phase == corev1.PodFailed:
		how := "failed"
		if p.Status.Reason != "" {
			how += ": " + p.Status.Reason
		}
		for _, c := range p.Status.ContainerStatuses {
			if x := c.State.Terminated; x != nil && x.ExitCode != 0 {
				how += fmt.Sprintf(" (container %s exited %d: %s)", c.Name, x.ExitCode, x.Reason)
			}
		}
		return how
	case t == watch.Deleted || p.DeletionTimestamp != nil:
		return "deleted"
	}
	return ""
}

// driverLost is the event of a lost pod, from its labels and annotations.
func (k *Kube) driverLost(ctx context.Context, p *corev1.Pod, how string) contracts.DriverLost {
	sim, _ := k.simulated(ctx, []corev1.Pod{*p})
	return contracts.DriverLost{
		Envelope: contracts.Envelope{Code: p.Labels[labelExperiment]}, DriverJob: driverJobOf(p.Labels, p.Annotations, p.Labels[batchv1.JobNameLabel]),
		Pod: p.Name, Node: p.Spec.NodeName, Simulated: sim, Reason: how,
	}
}
