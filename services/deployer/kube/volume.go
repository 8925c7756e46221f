package kube

import (
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/services/deployer/backend"

	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// claimVolume makes sure no other configuration's SUT uses volume claim,
// then returns holding k.volumes, which release lets go once the caller's
// own objects that mount it exist (so that two deploys cannot both find
// it free). A ReadWriteOnce volume serves one SUT at a time, as on the
// local backend (docs/volumes.md): two servers on one data directory would
// corrupt it, and -rsr's removal, or that of a volume never loaded to the
// end, would take it from under a SUT still loading it. A holder that is
// going away (its pods terminating) is waited for, within the deploy's
// time (ctx); a live one is refused at once (backend.VolumeInUse).
func (k *Kube) claimVolume(ctx context.Context, claim string, s backend.Spec) (release func(), err error) {
	logged := ""
	for {
		k.volumes.Lock()
		holder, going, err := k.volumeHolder(ctx, claim, s)
		if err == nil && holder == "" {
			return sync.OnceFunc(k.volumes.Unlock), nil
		}
		k.volumes.Unlock()
		switch {
		case err != nil:
			return nil, err
		case !going:
			return nil, backend.VolumeInUse(claim, holder)
		case holder != logged:
			k.log().Info("waiting for volume: its last user's pods are terminating", "volume", claim, "used by", holder, "configuration", s.Configuration)
			logged = holder
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("volume %s: %s's pods are still terminating: %w", claim, holder, ctx.Err())
		case <-time.After(k.poll()):
		}
	}
}

// volumeHolder names the configuration (code/configuration), other than
// s's, whose Deployment or pod mounts claim (a pod outlives its Deployment
// while it terminates, and holds the volume until it is gone), and whether
// all of what it found is being deleted; "" when none does.
func (k *Kube) volumeHolder(ctx context.Context, claim string, s backend.Spec) (holder string, going bool, err error) {
	opts := metav1.ListOptions{LabelSelector: labelApp + "=" + appName}
	mounts := func(l map[string]string, spec corev1.PodSpec) bool {
		if l[labelExperiment] == s.Code && l[labelConfiguration] == s.Configuration {
			return false
		}
		return slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool {
			return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim
		})
	}
	var deps *appsv1.DeploymentList
	var pods *corev1.PodList
	err = k.retry(ctx, func(ctx context.Context) error {
		var err error
		if deps, err = k.Client.AppsV1().Deployments(k.Namespace).List(ctx, opts); err != nil {
			return err
		}
		pods, err = k.Client.CoreV1().Pods(k.Namespace).List(ctx, opts)
		return err
	})
	if err != nil {
		return "", false, fmt.Errorf("volume %s: look for its users: %w", claim, err)
	}
	going = true
	found := func(m metav1.ObjectMeta) {
		if holder == "" {
			holder = m.Labels[labelExperiment] + "/" + m.Labels[labelConfiguration]
		}
		going = going && m.DeletionTimestamp != nil
	}
	for _, d := range deps.Items {
		if mounts(d.Labels, d.Spec.Template.Spec) {
			found(d.ObjectMeta)
		}
	}
	for _, p := range pods.Items {
		if mounts(p.Labels, p.Spec) {
			found(p.ObjectMeta)
		}
	}
	return holder, going, nil
}

// annotationCreatedBy names the deploy that created a volume (its job id;
// <code>/<configuration> when unknown): a redelivered deploy with -rsr must
// not delete the volume its first delivery made.
const annotationCreatedBy = "benchq.io/created-by"

// annotationEmptiedFor names the experiment whose -rsr made the volume:
// -rsr removes the storage once, at the experiment's start, and its later
// configurations (-nc, a grid) use what the first one loaded, as
// bexhoma's do.
const annotationEmptiedFor = "benchq.io/emptied-for"

// Volume is a PVC that holds a DBMS's data for a use case, reused across
// experiments, and what its annotations say about the data.
type Volume struct {
	Name        string    `json:"name"`
	DBMS        string    `json:"dbms"`
	UseCase     string    `json:"use_case"`
	Class       string    `json:"class"`
	Size        string    `json:"size"`
	Phase       string    `json:"phase"` // Pending, Bound, Lost
	New         bool      `json:"new,omitempty"`
	Loaded      bool      `json:"loaded"`
	LoadedAt    time.Time `json:"loaded_at,omitzero"`
	LoadingTime float64   `json:"loading_time_s,omitempty"`
	LoadedBy    string    `json:"loaded_by,omitempty"`
}

func volumeFromPVC(p *corev1.PersistentVolumeClaim) Volume {
	v := Volume{
		Name: p.Name, DBMS: p.Labels[labelDBMS], UseCase: p.Labels[labelUseCase],
		Phase: string(p.Status.Phase), Loaded: p.Annotations[annotationLoaded] == "true",
		LoadedBy: p.Annotations[annotationLoadedBy],
	}
	if p.Spec.StorageClassName != nil {
		v.Class = *p.Spec.StorageClassName
	}
	if q, ok := p.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		v.Size = q.String()
	}
	v.LoadedAt, _ = time.Parse(time.RFC3339, p.Annotations[annotationLoadedAt])
	v.LoadingTime, _ = strconv.ParseFloat(p.Annotations[annotationLoadingTime], 64)
	return v
}

// state is the volume as sut.ready reports it: the scheduler skips loading
// when it is loaded (bexhoma's "Database is persisted to disk").
func (v Volume) state() *contracts.VolumeState {
	st := &contracts.VolumeState{Name: v.Name, New: v.New, Loaded: v.Loaded}
	if v.Loaded {
		st.LoadingTimeS, st.LoadedBy = v.LoadingTime, v.LoadedBy
		if !v.LoadedAt.IsZero() {
			at := v.LoadedAt.UTC()
			st.LoadedAt = &at
		}
	}
	return st
}

// ensureVolume creates the volume want, or reuses the one an earlier
// experiment left, with its data. With -rsr (Storage.Remove) an existing
// volume is deleted first (and waited for: a pod still using it holds it),
// unless this experiment's -rsr made it (annotationEmptiedFor),
// and so is one that was never marked loaded (its loading failed or was
// interrupted: it may hold part of the data), unless this configuration
// created it, i.e. the deploy is redelivered.
func (k *Kube) ensureVolume(ctx context.Context, want *corev1.PersistentVolumeClaim, s backend.Spec) (Volume, error) {
	pvcs := k.Client.CoreV1().PersistentVolumeClaims(k.Namespace)
	// The deploy that created it: a redelivered deploy keeps a volume it
	// began to load; the configuration's next generation (its loading run
	// again) is another deploy and gets it emptied.
	owner := s.Code + "/" + s.Configuration
	if s.DeployID != "" {
		owner = s.DeployID
	}
	var cur *corev1.PersistentVolumeClaim
	err := k.retry(ctx, func(ctx context.Context) error {
		var err error
		cur, err = pvcs.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cur = nil
			return nil
		}
		return err
	})
	if err != nil {
		return Volume{}, fmt.Errorf("volume %s: %w", want.Name, err)
	}
	remove := s.SUT != nil && s.SUT.Storage != nil && s.SUT.Storage.Remove
	if remove && cur != nil && cur.Annotations[annotationEmptiedFor] == s.Code {
		remove = false // this experiment's -rsr made it: keep what it loaded
	}
	if cur != nil && cur.Annotations[annotationCreatedBy] != owner && (remove || cur.Annotations[annotationLoaded] != "true") {
		why := "-rsr"
		if !remove {
			why = "never loaded to the end"
		}
		k.log().Info("removing volume first", "volume", want.Name, "why", why, "loaded", cur.Annotations[annotationLoaded])
		err := k.retry(ctx, func(ctx context.Context) error {
			err := pvcs.Delete(ctx, want.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}})
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) { // gone, or already another one
				return nil
			}
			return err
		})
		if err != nil {
			return Volume{}, fmt.Errorf("remove volume %s: %w", want.Name, err)
		}
		err = k.wait(ctx, s, "volume "+want.Name+" to be removed (a pod still using it keeps it)", func(ctx context.Context) error {
			p, err := pvcs.Get(ctx, want.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				return nil
			case err != nil:
				return err
			case p.UID != cur.UID:
				return nil // already re-created
			}
			return fmt.Errorf("%w: still there", errNotReady)
		})
		if err != nil {
			return Volume{}, err
		}
		cur = nil
	}
	if cur == nil {
		want = want.DeepCopy()
		want.Annotations[annotationCreatedBy] = owner
		if s.SUT != nil && s.SUT.Storage != nil && s.SUT.Storage.Remove {
			want.Annotations[annotationEmptiedFor] = s.Code
		}
		err := k.retry(ctx, func(ctx context.Context) error {
			var err error
			cur, err = pvcs.Create(ctx, want, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) { // created meanwhile (another configuration)
				cur, err = pvcs.Get(ctx, want.Name, metav1.GetOptions{})
			}
			return err
		})
		if err != nil {
			return Volume{}, fmt.Errorf("create volume %s: %w", want.Name, err)
		}
		v := volumeFromPVC(cur)
		v.New = cur.Annotations[annotationCreatedBy] == owner && !v.Loaded
		return v, nil
	}
	if err := compatible(cur, want); err != nil {
		return Volume{}, err
	}
	return volumeFromPVC(cur), nil
}

// compatible refuses to reuse a volume of another class or a smaller size
// than requested.
func compatible(cur, want *corev1.PersistentVolumeClaim) error {
	cc, wc := ptrString(cur.Spec.StorageClassName), ptrString(want.Spec.StorageClassName)
	if cc != wc {
		return fmt.Errorf("%w: volume %s exists with storage class %q, not %q: remove it first (-rsr)", backend.ErrBadSpec, cur.Name, cc, wc)
	}
	have, want1 := cur.Spec.Resources.Requests[corev1.ResourceStorage], want.Spec.Resources.Requests[corev1.ResourceStorage]
	if have.Cmp(want1) < 0 {
		return fmt.Errorf("%w: volume %s exists with %s, less than the %s requested: remove it first (-rsr)", backend.ErrBadSpec, cur.Name, have.String(), want1.String())
	}
	return nil
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// MarkLoaded records on a volume that a loading phase filled it: when, in
// how long, by which experiment and configuration. The next Deploy of the
// DBMS and use case reports it loaded, so that loading can be skipped.
func (k *Kube) MarkLoaded(ctx context.Context, volume string, loadingTime time.Duration, by string, at time.Time) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		annotationLoaded:      "true",
		annotationLoadedAt:    at.UTC().Format(time.RFC3339),
		annotationLoadingTime: strconv.FormatFloat(loadingTime.Seconds(), 'f', 3, 64),
		annotationLoadedBy:    by,
	}}})
	if err != nil {
		return err
	}
	return k.retry(ctx, func(ctx context.Context) error {
		_, err := k.Client.CoreV1().PersistentVolumeClaims(k.Namespace).Patch(ctx, volume, types.MergePatchType, patch, metav1.PatchOptions{})
		return wrapIf(err, "mark volume %s loaded", volume)
	})
}

// Volumes lists the volumes of the namespace (benchq status), by name.
func (k *Kube) Volumes(ctx context.Context) ([]Volume, error) {
	l, err := k.Client.CoreV1().PersistentVolumeClaims(k.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labelApp + "=" + appName + "," + labelUseCase})
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	out := make([]Volume, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, volumeFromPVC(&l.Items[i]))
	}
	slices.SortFunc(out, func(a, b Volume) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// VolumeEntries lists the volumes as entries of the volumes KV bucket.
func (k *Kube) VolumeEntries(ctx context.Context) ([]contracts.VolumeEntry, error) {
	vols, err := k.Volumes(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]contracts.VolumeEntry, 0, len(vols))
	for _, v := range vols {
		out = append(out, contracts.VolumeEntry{Name: v.Name, DBMS: v.DBMS, UseCase: v.UseCase, Loaded: v.Loaded,
			TimeLoadingS: v.LoadingTime, Size: v.Size, Class: v.Class})
	}
	return out, nil
}

var _ backend.Volumes = (*Kube)(nil) // the kubernetes backend keeps persistent volumes
