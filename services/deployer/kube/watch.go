package kube

import (
	"github.com/benchq/benchq/services/deployer/backend"

	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kubernetes backend's dead-SUT watch (docs/kubernetes.md): a SUT pod that
// has been ready and then restarts a container, fails, or goes away while
// its configuration is not being torn down is a dead SUT, reported as such
// (sut.failed, running) — bexhoma counts SUT restarts; benchq stops the
// phase that measures a SUT no longer the one it deployed.
//
// What counts: pods labelled as a SUT's server, cluster worker or pool
// (components sut, worker, pool), but not a Job's, once they were seen Ready; their
// containers' restart counts from that moment on. A pod never seen Ready is
// the deploy's business (its wait reports it). A restarted deployer starts
// watching the pods that are Ready then.

// sutComponents are the components of a SUT's pods.
var sutComponents = []string{componentSUT, componentWorker, componentPool}

// podWatch is what the watch keeps of a pod seen Ready.
type podWatch struct {
	key      string // code/configuration
	name     string // the pod's
	dbms     string
	restarts int32 // of all its containers, when first seen Ready
}

// kubeWatch is the state of Kube.DeadSUTs.
type kubeWatch struct {
	mu      sync.Mutex
	pods    map[string]podWatch // by pod UID
	tearing map[string]bool     // code/configuration being torn down ("code/": all of it)
}

// isTearing reports whether the pods of key (code/configuration) are being
// torn down.
func (w *kubeWatch) isTearing(key string) bool {
	code, _, _ := strings.Cut(key, "/")
	return w.tearing[key] || w.tearing[code+"/"]
}

func (w *kubeWatch) init() {
	if w.pods == nil {
		w.pods, w.tearing = map[string]podWatch{}, map[string]bool{}
	}
}

// tearingDown marks a configuration's pods (every one of the experiment's
// when configuration is "") as going away on purpose.
func (k *Kube) tearingDown(code, configuration string) {
	k.watch.mu.Lock()
	defer k.watch.mu.Unlock()
	k.watch.init()
	k.watch.tearing[code+"/"+configuration] = true
}

// DeadSUTs lists the SUTs with a pod that restarted, failed or vanished
// since it was seen Ready, whose code/configuration is not in reported.
func (k *Kube) DeadSUTs(ctx context.Context, reported map[string]bool) ([]backend.DeadSUT, error) {
	l, err := k.Client.CoreV1().Pods(k.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labelApp + "=" + appName + "," + labelComponent + " in (" + strings.Join(sutComponents, ",") + ")"})
	if err != nil {
		return nil, fmt.Errorf("list SUT pods: %w", err)
	}
	k.watch.mu.Lock()
	defer k.watch.mu.Unlock()
	k.watch.init()
	dead := map[string]backend.DeadSUT{}
	die := func(key, dbms, reason string) {
		if reported[key] || k.watch.isTearing(key) {
			return
		}
		if _, ok := dead[key]; !ok {
			code, cfg, _ := strings.Cut(key, "/")
			dead[key] = backend.DeadSUT{Code: code, Configuration: cfg, DBMS: dbms, Reason: reason}
		}
	}
	seen := map[string]bool{}
	for i := range l.Items {
		p := &l.Items[i]
		if ownedByJob(p) {
			continue // a bootstrap or schema Job's: it retries, ends and goes
		}
		uid := string(p.UID)
		seen[uid] = true
		key := p.Labels[labelExperiment] + "/" + p.Labels[labelConfiguration]
		w, watched := k.watch.pods[uid]
		if !watched {
			if p.DeletionTimestamp == nil && podReady(p) {
				k.watch.pods[uid] = podWatch{key: key, name: p.Name, dbms: p.Labels[labelDBMS], restarts: restarts(p)}
			}
			continue
		}
		switch {
		case p.DeletionTimestamp != nil:
			die(key, w.dbms, fmt.Sprintf("pod %s is being deleted", p.Name))
		case p.Status.Phase == corev1.PodFailed:
			die(key, w.dbms, fmt.Sprintf("pod %s failed: %s", p.Name, strings.TrimSpace(p.Status.Reason+" "+p.Status.Message)))
		case restarts(p) > w.restarts:
			die(key, w.dbms, fmt.Sprintf("pod %s: %s", p.Name, lastRestart(p)))
		}
	}
	for uid, w := range k.watch.pods {
		if !seen[uid] {
			die(w.key, w.dbms, fmt.Sprintf("pod %s was deleted", w.name))
			delete(k.watch.pods, uid)
		}
	}
	// Forget what was torn down: its pods are gone.
	for key := range k.watch.tearing {
		gone := true
		for _, w := range k.watch.pods {
			gone = gone && w.key != key && !(strings.HasSuffix(key, "/") && strings.HasPrefix(w.key, key))
		}
		if gone {
			delete(k.watch.tearing, key)
		}
	}
	out := make([]backend.DeadSUT, 0, len(dead))
	for _, d := range dead {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Code+out[i].Configuration < out[j].Code+out[j].Configuration })
	return out, nil
}

// ownedByJob: a pod of a Job (a cluster's bootstrap, a schema), which
// carries its SUT's labels for the network policies but is no server.
func ownedByJob(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "Job" {
			return true
		}
	}
	return false
}

// DeadSUT says how one configuration's SUT died, as DeadSUTs sees it.
func (k *Kube) DeadSUT(ctx context.Context, code, configuration string) (string, error) {
	dead, err := k.DeadSUTs(ctx, map[string]bool{})
	for _, d := range dead {
		if d.Code == code && d.Configuration == configuration {
			return d.Reason, err
		}
	}
	return "", err
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, c := range p.Status.ContainerStatuses {
		n += c.RestartCount
	}
	return n
}

// lastRestart says which container restarted and how its last run ended.
func lastRestart(p *corev1.Pod) string {
	for _, c := range p.Status.ContainerStatuses {
		if c.RestartCount == 0 {
			continue
		}
		msg := fmt.Sprintf("container %s restarted (%d restarts)", c.Name, c.RestartCount)
		if t := c.LastTerminationState.Terminated; t != nil {
			msg += fmt.Sprintf(", its last run ended: %s, exit code %d", t.Reason, t.ExitCode)
			if t.Signal != 0 {
				msg += fmt.Sprintf(", signal %d", t.Signal)
			}
		}
		return msg
	}
	return "a container restarted"
}

var _ backend.SUTWatcher = (*Kube)(nil)
