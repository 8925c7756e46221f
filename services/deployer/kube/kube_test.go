package kube

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/startup"
	"github.com/benchq/benchq/services/deployer/backend"
)

// fakeCluster is the fake clientset with controllers' effects simulated on
// create: Deployments and StatefulSets ready, Jobs complete (or failed).
type fakeCluster struct {
	*fake.Clientset
	failJobs bool
	notReady bool
}

func newFake(t *testing.T, objects ...runtime.Object) (*fakeCluster, *Kube) {
	t.Helper()
	f := &fakeCluster{Clientset: fake.NewClientset(objects...)}
	f.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch o := a.(k8stesting.CreateAction).GetObject().(type) {
		case *appsv1.Deployment:
			if !f.notReady {
				n := *o.Spec.Replicas
				o.Status = appsv1.DeploymentStatus{Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
			}
		case *appsv1.StatefulSet:
			n := *o.Spec.Replicas
			o.Status = appsv1.StatefulSetStatus{Replicas: n, ReadyReplicas: n, AvailableReplicas: n}
		case *batchv1.Job:
			c := batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}
			if f.failJobs {
				c = batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}
			}
			o.Status.Conditions = []batchv1.JobCondition{c}
		}
		return false, nil, nil
	})
	f.ClearActions()
	return f, &Kube{Client: f, Namespace: "ns", Poll: time.Millisecond, SUT: startup.SUTKey(testSUTKey)}
}

// actions renders the client's actions as "verb resource[ name]".
func (f *fakeCluster) actions() []string {
	var out []string
	for _, a := range f.Actions() {
		s := a.GetVerb() + " " + a.GetResource().Resource
		switch a := a.(type) {
		case k8stesting.CreateAction:
			if o, err := metaName(a.GetObject()); err == nil {
				s += " " + o
			}
		case k8stesting.GetAction: // any action on a named object: get, delete, patch
			s += " " + a.GetName()
		case k8stesting.ListAction:
			s += " " + a.GetListRestrictions().Labels.String()
		}
		out = append(out, s)
	}
	return out
}

func metaName(o runtime.Object) (string, error) {
	m, ok := o.(metav1.Object)
	if !ok {
		return "", errors.New("no metadata")
	}
	return m.GetName(), nil
}

func checkActions(t *testing.T, f *fakeCluster, want []string) {
	t.Helper()
	if got := f.actions(); !slices.Equal(got, want) {
		t.Errorf("actions:\n  got  %s\n  want %s", strings.Join(got, "\n       "), strings.Join(want, "\n       "))
	}
}

func kubeCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func sel(configuration string) string {
	return "app=benchq,configuration=" + configuration + ",experiment=7"
}

func TestKubeDeployRedis(t *testing.T) {
	f, k := newFake(t)
	d, err := k.Deploy(kubeCtx(t), backend.Spec{Code: "7", Configuration: "Redis-1", DBMS: "Redis", Benchmark: "ycsb"})
	if err != nil {
		t.Fatal(err)
	}
	checkActions(t, f, []string{
		"create secrets bq-7-redis-1-password",
		"create services bq-7-redis-1",
		"create deployments bq-7-redis-1",
		"get deployments bq-7-redis-1",
		"list pods " + sel("Redis-1"),
	})
	if d.Backend != BackendKubernetes || !reflect.DeepEqual(d.Endpoint, contracts.Endpoint{Host: "bq-7-redis-1.ns.svc", Port: 6379}) {
		t.Errorf("deployed %+v", d)
	}
	if d.Info["version"] != "7.0.15" || d.Info["namespace"] != "ns" {
		t.Errorf("info %v", d.Info)
	}

	// A redelivered deploy finds the objects and answers the same.
	f.ClearActions()
	d2, err := k.Deploy(kubeCtx(t), backend.Spec{Code: "7", Configuration: "Redis-1", DBMS: "Redis", Benchmark: "ycsb"})
	if err != nil || !reflect.DeepEqual(d2.Endpoint, d.Endpoint) {
		t.Fatalf("redeploy: %+v, %v", d2, err)
	}
	checkActions(t, f, []string{
		"create secrets bq-7-redis-1-password",
		"create services bq-7-redis-1",
		"get services bq-7-redis-1",
		"create deployments bq-7-redis-1",
		"get deployments bq-7-redis-1",
		"get deployments bq-7-redis-1",
		"list pods " + sel("Redis-1"),
	})
}

func TestKubeDeployRedisClusterRunsBootstrap(t *testing.T) {
	f, k := newFake(t)
	_, err := k.Deploy(kubeCtx(t), backend.Spec{Code: "7", Configuration: "RedisCluster-1", DBMS: "RedisCluster", Benchmark: "ycsb",
		SUT: &contracts.SUTSpec{Workers: 3, WorkerReplicas: 1}})
	if err != nil {
		t.Fatal(err)
	}
	checkActions(t, f, []string{
		"create secrets bq-7-rediscluster-1-password",
		"create services bq-7-rediscluster-1-w",
		"create services bq-7-rediscluster-1",
		"create statefulsets bq-7-rediscluster-1-w",
		"get statefulsets bq-7-rediscluster-1-w",
		"create jobs bq-7-rediscluster-1-bootstrap",
		"get jobs bq-7-rediscluster-1-bootstrap",
		"list pods " + sel("RedisCluster-1"),
	})
}

func TestKubeDeployPgBouncer(t *testing.T) {
	f, k := newFake(t)
	d, err := k.Deploy(kubeCtx(t), backend.Spec{Code: "7", Configuration: "PgBouncer-1", DBMS: "PgBouncer", Benchmark: "ycsb",
		SUT: &contracts.SUTSpec{Pool: &contracts.Pool{Pods: 4, Inbound: 128, Outbound: 64}}})
	if err != nil {
		t.Fatal(err)
	}
	checkActions(t, f, []string{
		"create secrets bq-7-pgbouncer-1-password",
		"create services bq-7-pgbouncer-1-db",
		"create services bq-7-pgbouncer-1",
		"create deployments bq-7-pgbouncer-1-db",
		"create deployments bq-7-pgbouncer-1-pool",
		"get deployments bq-7-pgbouncer-1-db",
		"get deployments bq-7-pgbouncer-1-pool",
		"create jobs bq-7-pgbouncer-1-schema",
		"get jobs bq-7-pgbouncer-1-schema",
		"list pods " + sel("PgBouncer-1"),
	})
	if d.Endpoint.Host != "bq-7-pgbouncer-1.ns.svc" || !strings.Contains(d.Endpoint.JDBCURL, "prepareThreshold=0") {
		t.Errorf("endpoint %+v", d.Endpoint)
	}
}

// volumeUsers are a volume deploy's first actions: it looks for another
// configuration's SUT using the volume (claimVolume).
var volumeUsers = []string{"list deployments " + labelApp + "=" + appName, "list pods " + labelApp + "=" + appName}

func pgStorage(remove bool) *contracts.SUTSpec {
	return &contracts.SUTSpec{Storage: &contracts.Storage{Class: "shared", Size: "50Gi", Remove: remove}, UseCase: "ycsb-1"}
}

func TestKubeVolumeCreatedThenReusedLoaded(t *testing.T) {
	f, k := newFake(t)
	ctx := kubeCtx(t)
	d, err := k.Deploy(ctx, backend.Spec{Code: "7", Configuration: "PostgreSQL-1", DBMS: "PostgreSQL", Benchmark: "ycsb", SUT: pgStorage(false)})
	if err != nil {
		t.Fatal(err)
	}
	checkActions(t, f, []string{
		volumeUsers[0], volumeUsers[1],
		"get persistentvolumeclaims bq-postgresql-ycsb-1",
		"create persistentvolumeclaims bq-postgresql-ycsb-1",
		"create secrets bq-7-postgresql-1-password",
		"create services bq-7-postgresql-1",
		"create deployments bq-7-postgresql-1",
		"get deployments bq-7-postgresql-1",
		"create jobs bq-7-postgresql-1-schema",
		"get jobs bq-7-postgresql-1-schema",
		"list pods " + sel("PostgreSQL-1"),
	})
	if v := d.Volume; v == nil || v.Name != "bq-postgresql-ycsb-1" || !v.New || v.Loaded {
		t.Errorf("volume %+v", v)
	}

	at := time.Date(2025, 11, 21, 12, 0, 0, 0, time.UTC)
	if err := k.MarkLoaded(ctx, "bq-postgresql-ycsb-1", 93500*time.Millisecond, "7/PostgreSQL-1", at); err != nil {
		t.Fatal(err)
	}
	if err := k.Teardown(ctx, "7", "PostgreSQL-1"); err != nil {
		t.Fatal(err)
	}
	// The volume outlives the experiment, and the next one reuses it loaded.
	f.ClearActions()
	d, err = k.Deploy(ctx, backend.Spec{Code: "8", Configuration: "PostgreSQL-1", DBMS: "PostgreSQL", Benchmark: "ycsb", SUT: pgStorage(false)})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.actions()[:5]; !slices.Equal(got, []string{volumeUsers[0], volumeUsers[1], "get persistentvolumeclaims bq-postgresql-ycsb-1", "create secrets bq-8-postgresql-1-password", "create services bq-8-postgresql-1"}) {
		t.Errorf("reuse: %v", got)
	}
	want := contracts.VolumeState{Name: "bq-postgresql-ycsb-1", New: false, Loaded: true,
		LoadedAt: &at, LoadingTimeS: 93.5, LoadedBy: "7/PostgreSQL-1"}
	if d.Volume == nil || !reflect.DeepEqual(*d.Volume, want) {
		t.Errorf("volume %+v, want %+v", d.Volume, want)
	}
	vols, err := k.Volumes(ctx)
	if err != nil || len(vols) != 1 || !vols[0].Loaded || vols[0].Class != "shared" || vols[0].Size != "50Gi" || vols[0].UseCase != "ycsb-1" || vols[0].DBMS != "PostgreSQL" {
		t.Errorf("volumes %+v, %v", vols, err)
	}
}

func TestKubeVolumeRemovedFirst(t *testing.T) {
	old := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "bq-postgresql-ycsb-1", Namespace: "ns", UID: "old",
			Annotations: map[string]string{annotationLoaded: "true", annotationCreatedBy: "6/PostgreSQL-1"}},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("shared"),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("50Gi")}}},
	}
	f, k := newFake(t, old)
	d, err := k.Deploy(kubeCtx(t), backend.Spec{Code: "7", Configuration: "PostgreSQL-1", DBMS: "PostgreSQL", Benchmark: "ycsb", SUT: pgStorage(true)})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.actions()[:8]; !slices.Equal(got, []string{
		volumeUsers[0], volumeUsers[1],
		"get persistentvolumeclaims bq-postgresql-ycsb-1",
		"delete persistentvolumeclaims bq-postgresql-ycsb-1",
		"get persistentvolumeclaims bq-postgresql-ycsb-1",
		"create persistentvolumeclaims bq-postgresql-ycsb-1",
		"create secrets bq-7-postgresql-1-password",
		"create services bq-7-postgresql-1",
	}) {
		t.Errorf("actions %v", got)
	}
	if v := d.Volume; v == nil || v.Loaded || !v.New {
		t.Errorf("volume %+v", v)
	}

	// Redelivered: the volume this configuration created is not removed again.
	f.ClearActions()
	if _, err := k.Deploy(kubeCtx(t), backend.Spec{Code: "7", Configuration: "PostgreSQL-1", DBMS: "PostgreSQL", Benchmark: "ycsb", SUT: pgStorage(true)}); err != nil {
		t.Fatal(err)
	}
	for _, a := range f.actions() {
		if strings.HasPrefix(a, "delete") {
			t.Errorf("redelivered deploy: %s", a)
		}
	}
}

// A volume an earlier configuration created but never marked loaded (its
// loading failed or was stopped) may hold part of the data: it is removed
// and made again, as -rsr would, rather than loaded into twice.
func TestKubeVolumeNeverLoadedIsMadeAgain(t *testing.T) {
	old := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "bq-postgresql-ycsb-1", Namespace: "ns", UID: "old",
			Annotations: map[string]string{annotationCreatedBy: "6/PostgreSQL-1"}},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("shared"),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("50Gi")}}},
	}
	f, k := newFake(t, old)
	d, err := k.Deploy(kubeCtx(t), backend.Spec{Code: "7", Configuration: "PostgreSQL-1", DBMS: "PostgreSQL", Benchmark: "ycsb", SUT: pgStorage(false)})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.actions()[:6]; !slices.Equal(got, []string{
		volumeUsers[0], volumeUsers[1],
		"get persistentvolumeclaims bq-postgresql-ycsb-1",
		"delete persistentvolumeclaims bq-postgresql-ycsb-1",
		"get persistentvolumeclaims bq-postgresql-ycsb-1",
		"create persistentvolumeclaims bq-postgresql-ycsb-1",
	}) {
		t.Errorf("actions %v", got)
	}
	if v := d.Volume; v == nil || v.Loaded || !v.New {
		t.Errorf("volume %+v", v)
	}
}

// The same configuration deployed again because its loading lost an agent
// (the next generation's deploy) finds the volume its first SUT began to
// load: not loaded to the end, so it is made again, not loaded into twice;
// the first deploy, redelivered, keeps it.
func TestKubeVolumeOfAnEarlierGenerationIsMadeAgain(t *testing.T) {
	old := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "bq-postgresql-ycsb-1", Namespace: "ns", UID: "old",
			Annotations: map[string]string{annotationCreatedBy: contracts.DeployID("7", "PostgreSQL-1")}},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("shared"),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("50Gi")}}},
	}
	for _, tc := range []struct {
		deploy  string
		deleted bool
	}{{contracts.DeployID("7", "PostgreSQL-1"), false}, {contracts.DeployIDAt("7", "PostgreSQL-1", 1), true}} {
		f, k := newFake(t, old.DeepCopy())
		if _, err := k.Deploy(kubeCtx(t), backend.Spec{Code: "7", Configuration: "PostgreSQL-1", DBMS: "PostgreSQL", Benchmark: "ycsb", SUT: pgStorage(false), DeployID: tc.deploy}); err != nil {
			t.Fatal(err)
		}
		if deleted := slices.Contains(f.actions(), "delete persistentvolumeclaims bq-postgresql-ycsb-1"); deleted != tc.deleted {
			t.Errorf("deploy %s: volume deleted %v, want %v (actions %v)", tc.deploy, deleted, tc.deleted, f.actions())
		}
	}
}

// A loaded volume of another class is kept and refused (one never loaded
// would be made again, TestKubeVolumeNeverLoadedIsMadeAgain).
func TestKubeVolumeOfAnotherClassIsRefused(t *testing.T) {
	other := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "bq-postgresql-ycsb-1", Namespace: "ns", Annotations: map[string]string{annotationLoaded: "true"}},
		Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("local")},
	}
	_, k := newFake(t, other)
	_, err := k.Deploy(kubeCtx(t), backend.Spec{Code: "7", Configuration: "PostgreSQL-1", DBMS: "PostgreSQL", SUT: pgStorage(false)})
	if !errors.Is(err, backend.ErrBadSpec) || !strings.Contains(err.Error(), `exists with storage class "local", not "shared": remove it first (-rsr)`) {
		t.Errorf("err = %v", err)
	}
}

func TestKubeDeployFailedJobIsPermanent(t *testing.T) {
	f, k := newFake(t)
	f.failJobs = true
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err := k.Deploy(ctx, backend.Spec{Code: "7", Configuration: "PostgreSQL-1", DBMS: "PostgreSQL", Benchmark: "ycsb"})
	if !errors.Is(err, errJobFailed) || ctx.Err() != nil || !strings.Contains(err.Error(), "job bq-7-postgresql-1-schema: job failed: BackoffLimitExceeded") {
		t.Errorf("err = %v (ctx %v): want the job's failure at once", err, ctx.Err())
	}
}

func TestKubeDeployTimeoutSaysWhy(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bq-7-redis-1-abc", Namespace: "ns",
			Labels: map[string]string{"app": "benchq", "experiment": "7", "configuration": "Redis-1", "component": "sut"}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "dbms", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "pull access denied"}}}}},
	}
	f, k := newFake(t, pod)
	f.notReady = true
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := k.Deploy(ctx, backend.Spec{Code: "7", Configuration: "Redis-1", DBMS: "Redis"})
	for _, want := range []string{"waiting for deployment bq-7-redis-1", "0 of 1 pods ready", "pod bq-7-redis-1-abc Pending container dbms: ImagePullBackOff pull access denied"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to contain %q", err, want)
		}
	}
}

func TestKubeRefusesAnotherConfigurationsObject(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "bq-7-redis-1", Namespace: "ns",
		Labels: map[string]string{"experiment": "7", "configuration": "redis-1"}}}
	_, k := newFake(t, svc)
	_, err := k.Deploy(kubeCtx(t), backend.Spec{Code: "7", Configuration: "Redis-1", DBMS: "Redis"})
	if !errors.Is(err, errNotOurs) {
		t.Errorf("err = %v, want errNotOurs", err)
	}
}

func TestKubeRetriesTransientErrors(t *testing.T) {
	f, k := newFake(t)
	fails := 2
	f.PrependReactor("create", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fails > 0 {
			fails--
			return true, nil, apierrors.NewServiceUnavailable("etcd leader changed")
		}
		return false, nil, nil
	})
	if _, err := k.Deploy(kubeCtx(t), backend.Spec{Code: "7", Configuration: "Redis-1", DBMS: "Redis"}); err != nil {
		t.Fatal(err)
	}
	if got := f.actions()[:4]; !slices.Equal(got, []string{"create secrets bq-7-redis-1-password", "create services bq-7-redis-1", "create services bq-7-redis-1", "create services bq-7-redis-1"}) {
		t.Errorf("actions %v", got)
	}
	// A forbidden create is not retried.
	f2, k2 := newFake(t)
	f2.PrependReactor("create", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "x", errors.New("RBAC"))
	})
	if _, err := k2.Deploy(kubeCtx(t), backend.Spec{Code: "7", Configuration: "Redis-1", DBMS: "Redis"}); !apierrors.IsForbidden(err) {
		t.Errorf("err = %v, want forbidden", err)
	}
	checkActions(t, f2, []string{"create secrets bq-7-redis-1-password", "create services bq-7-redis-1"})
}

func TestKubeTeardown(t *testing.T) {
	f, k := newFake(t)
	ctx := kubeCtx(t)
	if _, err := k.Deploy(ctx, backend.Spec{Code: "7", Configuration: "PostgreSQL-1", DBMS: "PostgreSQL", Benchmark: "ycsb", SUT: pgStorage(false)}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.StartDrivers(ctx, backend.DriverSpec{Code: "7", Configuration: "PostgreSQL-1", DBMS: "PostgreSQL", Phase: "PostgreSQL-1-0",
		Kind: contracts.KindLoad, Shards: 2, Image: "agent", NATSURL: "nats://nats:4222"}); err != nil {
		t.Fatal(err)
	}
	f.ClearActions()
	if err := k.Teardown(ctx, "7", "PostgreSQL-1"); err != nil {
		t.Fatal(err)
	}
	s := sel("PostgreSQL-1")
	checkActions(t, f, []string{
		"list jobs " + s,
		"delete jobs bq-7-postgresql-1-0",
		"delete jobs bq-7-postgresql-1-schema",
		"list deployments " + s,
		"delete deployments bq-7-postgresql-1",
		"list statefulsets " + s,
		"list services " + s,
		"delete services bq-7-postgresql-1",
		"list persistentvolumeclaims " + s,
		// the SUT's password, by label, never listed (a list reads them)
		"delete-collection secrets " + s,
		// wait until the objects and what controllers made of them are gone
		"list jobs " + s, "list deployments " + s, "list statefulsets " + s, "list services " + s, "list persistentvolumeclaims " + s,
		"list replicasets " + s, "list controllerrevisions " + s,
		// then delete stray pods, and wait for them
		"list pods " + s,
		"list pods " + s,
	})
	for _, a := range f.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok && (d.GetDeleteOptions().PropagationPolicy == nil || *d.GetDeleteOptions().PropagationPolicy != metav1.DeletePropagationForeground) {
			t.Errorf("%s %s: not a foreground deletion", d.GetResource().Resource, d.GetName())
		}
	}
	if _, err := f.CoreV1().PersistentVolumeClaims("ns").Get(ctx, "bq-postgresql-ycsb-1", metav1.GetOptions{}); err != nil {
		t.Errorf("the volume must survive teardown: %v", err)
	}
	// Nothing left: a second teardown only lists.
	f.ClearActions()
	if err := k.Teardown(ctx, "7", ""); err != nil {
		t.Fatal(err)
	}
	for _, a := range f.actions() {
		if !(strings.HasPrefix(a, "list ") || strings.HasPrefix(a, "delete-collection ")) || !strings.HasSuffix(a, "app=benchq,experiment=7") {
			t.Errorf("teardown of nothing: %s", a)
		}
	}
}

// A SUT on a persistent volume gets the password derived for the volume,
// so that the next experiment on it logs in with the password PostgreSQL
// kept in its data; other SUTs each their own. Without the stack's key a
// SUT on a volume is refused, naming the key.
func TestKubeVolumeSUTKeepsItsPassword(t *testing.T) {
	f, k := newFake(t)
	ctx := kubeCtx(t)
	password := func(code string) string {
		t.Helper()
		sec, err := f.CoreV1().Secrets("ns").Get(ctx, "bq-"+code+"-postgresql-1-password", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return sec.StringData[startup.SUTPasswordEnv]
	}
	if _, err := k.Deploy(ctx, backend.Spec{Code: "7", Configuration: "PostgreSQL-1", DBMS: "PostgreSQL", Benchmark: "ycsb", SUT: pgStorage(false)}); err != nil {
		t.Fatal(err)
	}
	// One user at a time: experiment 8 is refused while 7's SUT holds the
	// volume, naming it.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err := k.Deploy(short, backend.Spec{Code: "8", Configuration: "PostgreSQL-1", DBMS: "PostgreSQL", Benchmark: "ycsb", SUT: pgStorage(false)})
	if err == nil || !strings.Contains(err.Error(), "volume bq-postgresql-ycsb-1 is in use by 7/PostgreSQL-1") {
		t.Fatalf("a second SUT on a volume in use: %v, want a refusal naming the holder", err)
	}
	first := password("7")
	if err := k.Teardown(ctx, "7", "PostgreSQL-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Deploy(ctx, backend.Spec{Code: "8", Configuration: "PostgreSQL-1", DBMS: "PostgreSQL", Benchmark: "ycsb", SUT: pgStorage(false)}); err != nil {
		t.Fatal(err)
	}
	if a, b := first, password("8"); a == "" || a != b {
		t.Errorf("two experiments on one volume: passwords %q and %q, want the same", a, b)
	}
	if _, err := k.Deploy(ctx, backend.Spec{Code: "9", Configuration: "PostgreSQL-1", DBMS: "PostgreSQL", Benchmark: "ycsb"}); err != nil {
		t.Fatal(err)
	}
	if password("9") == first || len(password("9")) != 43 {
		t.Errorf("a SUT without a volume has the volume's password, or not a derived one: %q", password("9"))
	}
	_, keyless := newFake(t)
	keyless.SUT = startup.SUTAuth{}
	_, err = keyless.Deploy(ctx, backend.Spec{Code: "7", Configuration: "PostgreSQL-1", DBMS: "PostgreSQL", Benchmark: "ycsb", SUT: pgStorage(false)})
	if err == nil || !strings.Contains(err.Error(), startup.SUTKeyEnv) {
		t.Errorf("a volume SUT without the stack's key: %v, want a refusal naming %s", err, startup.SUTKeyEnv)
	}
}

// A volume's last user still terminating is waited for; a live one is
// refused at once, naming it (waiting would be futile: its teardown is a
// job behind this one).
func TestKubeClaimVolumeWaitsOnlyForATerminatingUser(t *testing.T) {
	mount := corev1.PodSpec{Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "bq-redis-ycsb-1"}}}}}
	labels := map[string]string{labelApp: appName, labelExperiment: "7", labelConfiguration: "Redis-1"}
	now := metav1.Now()
	going := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "ns", Labels: labels, DeletionTimestamp: &now,
		Finalizers: []string{"test"}}, Spec: mount}
	f, k := newFake(t, going)
	ctx := kubeCtx(t)
	me := backend.Spec{Code: "8", Configuration: "Redis-1"}
	time.AfterFunc(100*time.Millisecond, func() { _ = f.CoreV1().Pods("ns").Delete(context.Background(), "old", metav1.DeleteOptions{}) })
	release, err := k.claimVolume(ctx, "bq-redis-ycsb-1", me)
	if err != nil {
		t.Fatalf("a terminating user: %v, want a wait until it is gone", err)
	}
	release()
	live := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "live", Namespace: "ns", Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(1)), Template: corev1.PodTemplateSpec{Spec: mount}}}
	if _, err := f.AppsV1().Deployments("ns").Create(ctx, live, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = k.claimVolume(ctx, "bq-redis-ycsb-1", me)
	if !errors.Is(err, backend.ErrRefused) || !strings.Contains(err.Error(), "volume bq-redis-ycsb-1 is in use by 7/Redis-1") {
		t.Errorf("a live user: %v, want a refusal naming it", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a live user was waited for (%s)", d)
	}
	// The configuration's own objects (a redelivered deploy) hold nothing.
	if release, err := k.claimVolume(ctx, "bq-redis-ycsb-1", backend.Spec{Code: "7", Configuration: "Redis-1"}); err != nil {
		t.Errorf("its own deploy again: %v", err)
	} else {
		release()
	}
}
