package kube

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/startup"
	"github.com/benchq/benchq/services/deployer/backend"
)

// BackendKubernetes is the name of the kubernetes backend in events.
const BackendKubernetes = contracts.BackendKubernetes

// Kube runs SUTs as Kubernetes objects in one namespace (docs/kubernetes.md):
// it creates the objects buildObjects describes, waits until their pods are
// ready and their Jobs complete, and deletes them by label. It keeps no
// state: the API server holds it, so a redelivered deploy finds the objects
// it already made and waits for them again.
type Kube struct {
	Client    kubernetes.Interface
	Namespace string
	Log       *slog.Logger
	// Poll is how often a wait looks again (default 500ms).
	Poll time.Duration
	// DriverImage and DriverNATSURL go into the driver Jobs (StartDrivers):
	// the driver-agent image and the NATS URL as pods see it.
	DriverImage, DriverNATSURL string
	// DriverSeedSecret names the Secret with the agents' NATS seed
	// (BackendConfig.DriverSeedSecret).
	DriverSeedSecret string
	// SUT holds the stack's SUT key (startup.SUTAuth). A SUT on a
	// persistent volume gets the password derived from it for that volume:
	// PostgreSQL keeps the password it was made with in its data, so the
	// next experiment on the volume must log in with the same. Without a
	// key a SUT's password is random and no SUT is deployed on a volume.
	SUT startup.SUTAuth
	// Images replace catalog images, by image (ParseImages): a DBMS's own
	// image where the cluster pulls from a registry of its own, or benchq's
	// Graphite image pushed under another name.
	Images map[string]string

	watch      kubeWatch      // DeadSUTs (watch.go)
	driverPods runningDrivers // WatchDriverPods (driverpods.go)
	// volumes is held from a deploy's look for its volume's other users
	// until its objects that mount it exist (claimVolume, volume.go).
	volumes sync.Mutex
}

var _ backend.Backend = (*Kube)(nil)

// errNotReady is wrapped by wait conditions that are not met yet.
var errNotReady = errors.New("not ready")

// errNotOurs: an object of the same name belongs to another configuration.
var errNotOurs = errors.New("exists and belongs to another configuration")

// Deploy creates (or finds) the configuration's objects, waits for them and
// returns the endpoint: the client Service's DNS name and port.
func (k *Kube) Deploy(ctx context.Context, s backend.Spec) (backend.Deployed, error) {
	return backend.DeployEntry(ctx, s, k.deploy)
}

func (k *Kube) deploy(ctx context.Context, s backend.Spec, entry catalog.Entry) (backend.Deployed, error) {
	objs, err := buildObjects(entry, s, k.Namespace)
	if err != nil {
		return backend.Deployed{}, err
	}
	objs.replaceImages(k.Images)
	log := k.log().With("code", s.Code, "configuration", s.Configuration, "dbms", entry.Name)
	info := map[string]any{
		"namespace": k.Namespace,
		"image":     objs.Image, "version": imageTag(objs.Image),
	}
	if len(objs.Args) > 0 {
		info["args"] = objs.Args
	}
	for name, q := range map[string]*resource.Quantity{
		"requests_cpu": objs.Resources.Requests.Cpu(), "requests_memory": objs.Resources.Requests.Memory(),
		"limits_cpu": objs.Resources.Limits.Cpu(), "limits_memory": objs.Resources.Limits.Memory(),
	} {
		if !q.IsZero() {
			info[name] = q.String()
		}
	}
	if len(objs.Ignored) > 0 {
		info["ignored"] = objs.Ignored
		log.Info("spec fields that do not apply to this dbms are ignored", "fields", objs.Ignored)
	}
	// The password first: a volume deploy without the stack's key is
	// refused at once, before it looks for the volume's users.
	password, err := k.passwordOf(s, objs)
	if err != nil {
		return backend.Deployed{}, err
	}
	var volume *contracts.VolumeState
	release := func() {}
	defer func() { release() }()
	if objs.Volume != nil {
		// Before ensureVolume, which may remove a volume never loaded to
		// the end: another configuration may be loading it right now.
		claimed, err := k.claimVolume(ctx, objs.Volume.Name, s)
		if err != nil {
			return backend.Deployed{}, err
		}
		release = claimed
		v, err := k.ensureVolume(ctx, objs.Volume, s)
		if err != nil {
			return backend.Deployed{}, err
		}
		volume = v.state()
		log.Info("volume", "name", v.Name, "new", v.New, "loaded", v.Loaded)
	}

	if err := k.retry(ctx, func(ctx context.Context) error {
		return k.ensurePassword(ctx, s, entry.Name, objs.Names.Password, password)
	}); err != nil {
		return backend.Deployed{}, err
	}
	ns := k.Namespace
	for _, o := range objs.Services {
		if err := k.retry(ctx, func(ctx context.Context) error { return ensure(ctx, k.Client.CoreV1().Services(ns), o, s) }); err != nil {
			return backend.Deployed{}, err
		}
	}
	for _, o := range objs.Deployments {
		if err := k.retry(ctx, func(ctx context.Context) error { return ensure(ctx, k.Client.AppsV1().Deployments(ns), o, s) }); err != nil {
			return backend.Deployed{}, err
		}
	}
	for _, o := range objs.StatefulSets {
		if err := k.retry(ctx, func(ctx context.Context) error { return ensure(ctx, k.Client.AppsV1().StatefulSets(ns), o, s) }); err != nil {
			return backend.Deployed{}, err
		}
	}
	release() // the objects that mount the volume exist: the next deploy sees them
	for _, o := range objs.Deployments {
		if err := k.wait(ctx, s, "deployment "+o.Name, func(ctx context.Context) error { return k.deploymentReady(ctx, o.Name) }); err != nil {
			return backend.Deployed{}, err
		}
	}
	for _, o := range objs.StatefulSets {
		if err := k.wait(ctx, s, "statefulset "+o.Name, func(ctx context.Context) error { return k.statefulSetReady(ctx, o.Name) }); err != nil {
			return backend.Deployed{}, err
		}
	}
	for _, o := range objs.Jobs {
		if err := k.retry(ctx, func(ctx context.Context) error { return ensure(ctx, k.Client.BatchV1().Jobs(ns), o, s) }); err != nil {
			return backend.Deployed{}, err
		}
		if err := k.wait(ctx, s, "job "+o.Name, func(ctx context.Context) error { return k.jobComplete(ctx, o.Name) }); err != nil {
			return backend.Deployed{}, err
		}
	}
	if nodes := k.nodesOf(ctx, s); len(nodes) > 0 {
		info["node"] = strings.Join(nodes, ",")
	}
	log.Info("sut ready", "endpoint", fmt.Sprintf("%s:%d", objs.Endpoint.Host, objs.Endpoint.Port))
	return backend.Deployed{Endpoint: objs.Endpoint, Info: info, Backend: BackendKubernetes, Volume: volume}, nil
}

// passwordOf is the password of s's SUT: on a persistent volume, the one
// derived from the stack's key for that volume (the one its data was made
// with; refused without a key); otherwise the one derived for s, or 32
// random bytes without a key.
func (k *Kube) passwordOf(s backend.Spec, objs *kubeObjects) (string, error) {
	if objs.Volume != nil {
		if !k.SUT.HasKey() {
			return "", backend.Refused(fmt.Errorf("the kubernetes backend deploys a SUT on a persistent volume only with the stack's SUT key (%s), from which the volume's password derives, so that the next experiment on it can log in: set it (deploy/k8s: benchq-credentials)", startup.SUTKeyEnv))
		}
		return k.SUT.PasswordOf("", "volume/"+objs.Volume.Name), nil // no experiment code is empty
	}
	if k.SUT.HasKey() {
		return k.SUT.PasswordOf(s.Code, s.Configuration), nil
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// ensurePassword gives configuration s its SUT password: Secret name (key
// startup.SUTPasswordEnv), which the SUT's pods, its exporters and its
// driver pods read by reference (buildObjects, DriverJob) and teardown
// deletes. A redelivered deploy finds it and keeps it without reading it:
// the deployer may create and delete Secrets, never get or list one
// (deploy/k8s/rbac.yaml), so it cannot read the stack's.
func (k *Kube) ensurePassword(ctx context.Context, s backend.Spec, dbms, name, password string) error {
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.Namespace, Labels: labelsFor(s, dbms, componentPassword)},
		Type:       corev1.SecretTypeOpaque,
		StringData: map[string]string{startup.SUTPasswordEnv: password},
	}
	_, err := k.Client.CoreV1().Secrets(k.Namespace).Create(ctx, secret, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Its name is the configuration's alone (namesFor).
		return nil
	}
	return wrapIf(err, "create secret %s", name)
}

// getCreator is the part of a typed client ensure needs.
type getCreator[T metav1.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
}

// ensure creates obj, or accepts the object of that name when it is the
// same configuration's (a redelivered deploy): objects are a function of
// the spec, so it is not updated.
func ensure[T metav1.Object](ctx context.Context, c getCreator[T], obj T, s backend.Spec) error {
	kind := kindOf(obj)
	_, err := c.Create(ctx, obj, metav1.CreateOptions{})
	if err == nil || !apierrors.IsAlreadyExists(err) {
		return wrapIf(err, "create %s %s", kind, obj.GetName())
	}
	cur, err := c.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get %s %s: %w", kind, obj.GetName(), err)
	}
	if cur.GetDeletionTimestamp() != nil {
		return fmt.Errorf("%s %s is being deleted (a teardown in progress)", kind, obj.GetName())
	}
	if l := cur.GetLabels(); l[labelExperiment] != s.Code || l[labelConfiguration] != s.Configuration {
		return fmt.Errorf("%s %s %w (experiment %q, configuration %q)", kind, obj.GetName(), errNotOurs, l[labelExperiment], l[labelConfiguration])
	}
	return nil
}

func kindOf(obj any) string {
	switch obj.(type) {
	case *corev1.Service:
		return "service"
	case *appsv1.Deployment:
		return "deployment"
	case *appsv1.StatefulSet:
		return "statefulset"
	case *batchv1.Job:
		return "job"
	case *corev1.PersistentVolumeClaim:
		return "persistentvolumeclaim"
	}
	return fmt.Sprintf("%T", obj)
}

func wrapIf(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}

// permanent reports whether retrying err cannot help: the request itself
// is wrong or not allowed.
func permanent(err error) bool {
	return errors.Is(err, backend.ErrBadSpec) || errors.Is(err, backend.ErrInvalidName) || errors.Is(err, errNotOurs) ||
		errors.Is(err, catalog.ErrUnknownDBMS) || errors.Is(err, errJobFailed) ||
		apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) ||
		apierrors.IsBadRequest(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) ||
		apierrors.IsNotAcceptable(err) || apierrors.IsUnsupportedMediaType(err) || apierrors.IsRequestEntityTooLargeError(err)
}

// retry calls f until it succeeds, fails permanently, or ctx ends: the API
// server being briefly away, a conflict or an object still being deleted
// must not fail a deploy.
func (k *Kube) retry(ctx context.Context, f func(context.Context) error) error {
	for {
		err := f(ctx)
		if err == nil || permanent(err) {
			return err
		}
		k.log().Debug("retrying", "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (gave up: %w)", err, ctx.Err())
		case <-time.After(k.poll()):
		}
	}
}

// wait polls check until it returns nil or a permanent error; when ctx
// ends first, the error says what was not ready and what the pods say.
func (k *Kube) wait(ctx context.Context, s backend.Spec, what string, check func(context.Context) error) error {
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		if !errors.Is(err, errNotReady) && permanent(err) {
			return fmt.Errorf("%s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %v)%s", what, ctx.Err(), err, k.podProblems(s))
		case <-time.After(k.poll()):
		}
	}
}

func (k *Kube) deploymentReady(ctx context.Context, name string) error {
	d, err := k.Client.AppsV1().Deployments(k.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := rolledOut(d.Generation, d.Status.ObservedGeneration, d.Spec.Replicas, d.Status.ReadyReplicas, d.Status.Replicas); err != nil {
		return err
	}
	// Pods of the previous ReplicaSet still count as ready mid-rollout.
	if want := replicas(d.Spec.Replicas); d.Status.UpdatedReplicas != want {
		return fmt.Errorf("%w: %d of %d pods updated", errNotReady, d.Status.UpdatedReplicas, want)
	}
	return nil
}

func (k *Kube) statefulSetReady(ctx context.Context, name string) error {
	s, err := k.Client.AppsV1().StatefulSets(k.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	return rolledOut(s.Generation, s.Status.ObservedGeneration, s.Spec.Replicas, s.Status.ReadyReplicas, s.Status.Replicas)
}

// rolledOut says whether a controller has seen its latest spec
// (generation) and runs exactly the replicas it asks for, all ready.
func rolledOut(generation, observed int64, spec *int32, ready, current int32) error {
	want := replicas(spec)
	if observed < generation || ready != want || current != want {
		return fmt.Errorf("%w: %d of %d pods ready", errNotReady, ready, want)
	}
	return nil
}

// replicas is a spec's replica count; the API server defaults nil to 1.
func replicas(spec *int32) int32 {
	if spec == nil {
		return 1
	}
	return *spec
}

// errJobFailed: a Job gave up (its backoff limit); redeploying the same
// configuration would fail the same way.
var errJobFailed = errors.New("job failed")

func (k *Kube) jobComplete(ctx context.Context, name string) error {
	j, err := k.Client.BatchV1().Jobs(k.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return nil
		case batchv1.JobFailed:
			return fmt.Errorf("%w: %s: %s", errJobFailed, c.Reason, c.Message)
		}
	}
	return fmt.Errorf("%w: %d active, %d succeeded, %d failed pods", errNotReady, j.Status.Active, j.Status.Succeeded, j.Status.Failed)
}

// podsOf lists the configuration's pods (a short call of its own, so that
// it also works after the deploy's context ended).
func (k *Kube) podsOf(ctx context.Context, s backend.Spec) ([]corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	l, err := k.Client.CoreV1().Pods(k.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selectorString(s.Code, s.Configuration)})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// nodesOf returns the nodes the configuration's server pods run on.
func (k *Kube) nodesOf(ctx context.Context, s backend.Spec) []string {
	pods, err := k.podsOf(ctx, s)
	if err != nil {
		k.log().Warn("cannot list the sut's pods", "err", err)
		return nil
	}
	var nodes []string
	for _, p := range pods {
		if c := p.Labels[labelComponent]; (c == componentSUT || c == componentWorker || c == componentPool) &&
			p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning && !slices.Contains(nodes, p.Spec.NodeName) {
			nodes = append(nodes, p.Spec.NodeName)
		}
	}
	slices.Sort(nodes)
	return nodes
}

// podProblems describes the configuration's pods that are not ready, for
// the error of a wait that timed out: unschedulable, image pull failures,
// crash loops.
func (k *Kube) podProblems(s backend.Spec) string {
	pods, err := k.podsOf(context.Background(), s)
	if err != nil {
		return ""
	}
	var out []string
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		var why []string
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue && c.Message != "" {
				why = append(why, fmt.Sprintf("%s: %s", c.Type, c.Message))
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && w.Reason != "" {
				why = append(why, fmt.Sprintf("container %s: %s %s", cs.Name, w.Reason, w.Message))
			}
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
				why = append(why, fmt.Sprintf("container %s exited %d: %s", cs.Name, t.ExitCode, t.Reason))
			}
		}
		if len(why) > 0 || p.Status.Phase != corev1.PodRunning {
			out = append(out, fmt.Sprintf("pod %s %s %s", p.Name, p.Status.Phase, strings.Join(why, "; ")))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "; " + strings.Join(out, "; ")
}

func (k *Kube) poll() time.Duration {
	if k.Poll > 0 {
		return k.Poll
	}
	return 500 * time.Millisecond
}

func (k *Kube) log() *slog.Logger {
	if k.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return k.Log.With("component", "deployer-kubernetes")
}

// imageTag is the version part of an image reference ("" without one).
func imageTag(image string) string {
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[i+1:]
	}
	return ""
}
