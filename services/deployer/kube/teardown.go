package kube

import (
	"github.com/benchq/benchq/services/deployer/backend"

	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// collection is one kind of object teardown deletes by label.
type collection struct {
	kind string
	list func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	del  func(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// owned are the kinds a configuration's objects are, in deletion order:
// the Jobs (bootstrap, schema, drivers), the workloads, the Services and
// the per-configuration PVCs (cluster workers'). Reused volumes carry no
// experiment label and stay.
func (k *Kube) owned() []collection {
	ns := k.Namespace
	c := k.Client
	return []collection{
		{"job", listing(c.BatchV1().Jobs(ns).List), c.BatchV1().Jobs(ns).Delete},
		{"deployment", listing(c.AppsV1().Deployments(ns).List), c.AppsV1().Deployments(ns).Delete},
		{"statefulset", listing(c.AppsV1().StatefulSets(ns).List), c.AppsV1().StatefulSets(ns).Delete},
		{"service", listing(c.CoreV1().Services(ns).List), c.CoreV1().Services(ns).Delete},
		{"persistentvolumeclaim", listing(c.CoreV1().PersistentVolumeClaims(ns).List), c.CoreV1().PersistentVolumeClaims(ns).Delete},
	}
}

// derived are the kinds controllers make from them, carrying their labels:
// teardown waits for the garbage collector to remove them (it may learn of
// a ReplicaSet only after its Deployment is gone).
func (k *Kube) derived() []collection {
	ns := k.Namespace
	c := k.Client
	return []collection{
		{"replicaset", listing(c.AppsV1().ReplicaSets(ns).List), nil},
		{"controllerrevision", listing(c.AppsV1().ControllerRevisions(ns).List), nil},
	}
}

// pods are deleted last, once nothing that would replace them is left:
// only strays remain by then (the garbage collector removes the rest).
func (k *Kube) pods() collection {
	c := k.Client.CoreV1().Pods(k.Namespace)
	return collection{"pod", listing(c.List), c.Delete}
}

// listing turns a typed client's List (each kind returns its own list type)
// into the one signature teardown walks.
func listing[L runtime.Object](list func(context.Context, metav1.ListOptions) (L, error)) func(context.Context, metav1.ListOptions) (runtime.Object, error) {
	return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return list(ctx, o) }
}

// Teardown deletes every object of the configuration (of the whole
// experiment when configuration is "") by label and waits until none is
// left, pods, ReplicaSets and ControllerRevisions included. Nothing there
// is not an error.
func (k *Kube) Teardown(ctx context.Context, code, configuration string) error {
	k.tearingDown(code, configuration) // its pods go away on purpose
	if err := k.teardown(ctx, code, configuration); err != nil {
		return fmt.Errorf("teardown %s/%s: %w", code, configuration, err)
	}
	k.log().Info("sut removed", "code", code, "configuration", configuration)
	return nil
}

func (k *Kube) teardown(ctx context.Context, code, configuration string) error {
	if code == "" {
		return fmt.Errorf("%w: an experiment code is required", backend.ErrInvalidName)
	}
	sel := metav1.ListOptions{LabelSelector: selectorString(code, configuration)}
	spec := backend.Spec{Code: code, Configuration: configuration}
	if err := k.deleteAll(ctx, sel, k.owned()); err != nil {
		return err
	}
	// The SUTs' passwords (ensurePassword): by label, without listing
	// (listing a Secret reads it).
	if err := k.retry(ctx, func(ctx context.Context) error {
		return wrapIf(k.Client.CoreV1().Secrets(k.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, sel), "delete the SUTs' password secrets")
	}); err != nil {
		return err
	}
	if err := k.waitGone(ctx, spec, sel, append(k.owned(), k.derived()...)); err != nil {
		return err
	}
	pods := []collection{k.pods()}
	if err := k.deleteAll(ctx, sel, pods); err != nil {
		return err
	}
	return k.waitGone(ctx, spec, sel, pods)
}

// deleteAll deletes the objects of cs matching sel, in the foreground
// (owners wait for their dependents: ReplicaSets, pods, endpoint slices).
func (k *Kube) deleteAll(ctx context.Context, sel metav1.ListOptions, cs []collection) error {
	fg := metav1.DeletePropagationForeground
	for _, c := range cs {
		err := k.retry(ctx, func(ctx context.Context) error {
			names, err := listNames(ctx, c, sel)
			if err != nil {
				return err
			}
			for _, name := range names {
				if err := c.del(ctx, name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("delete %s %s: %w", c.kind, name, err)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// waitGone waits until no object of cs matches sel.
func (k *Kube) waitGone(ctx context.Context, s backend.Spec, sel metav1.ListOptions, cs []collection) error {
	return k.wait(ctx, s, "objects to be deleted", func(ctx context.Context) error {
		var left []string
		for _, c := range cs {
			names, err := listNames(ctx, c, sel)
			if err != nil {
				return err
			}
			for _, n := range names {
				left = append(left, c.kind+"/"+n)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("%w: still there: %s", errNotReady, strings.Join(left, ", "))
		}
		return nil
	})
}

func listNames(ctx context.Context, c collection, opts metav1.ListOptions) ([]string, error) {
	l, err := c.list(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", c.kind, err)
	}
	return namesOf(l)
}

// namesOf returns the names of a list's items.
func namesOf(l runtime.Object) ([]string, error) {
	items, err := meta.ExtractList(l)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(items))
	for _, it := range items {
		a, err := meta.Accessor(it)
		if err != nil {
			return nil, err
		}
		names = append(names, a.GetName())
	}
	return names, nil
}
