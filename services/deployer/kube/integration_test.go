//go:build k8s

// Tests of the kubernetes backend against a real control plane
// (internal/k8stest: etcd, kube-apiserver, controller-manager, scheduler,
// kwok). Run them with `make test-k8s`, or after
// scripts/k8s/build-control-plane.sh:
//
//	go test -tags k8s -run Kube ./services/deployer/
//
// kwok runs no container: pods become Running and Jobs' pods Succeeded
// because kwok says so, so these tests show that the API server accepts the
// objects, that the controllers and the scheduler act on them (pods
// scheduled and pinned, PVCs bound, garbage collection), and that the
// deployer's waits, volumes, RBAC and teardown work — not that Redis or a
// cluster bootstrap script runs.
package kube

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/credentials"
	"github.com/benchq/benchq/internal/k8stest"
	"github.com/benchq/benchq/internal/natsauth"
	"github.com/benchq/benchq/internal/startup"
	"github.com/benchq/benchq/internal/testenv"
	"github.com/benchq/benchq/services/deployer/backend"
	"github.com/benchq/benchq/services/deployer/deployer"
)

func TestKubeAgainstAPIServer(t *testing.T) {
	cp := k8stest.Start(t)
	// PVs stand in for a provisioner: the real PV controller binds claims
	// to them. Class "shared" for the golden objects and deploys, "reuse"
	// for the volume test, "" for deploy/k8s's StatefulSets.
	createPVs(t, cp.Client, "shared", 24)
	createPVs(t, cp.Client, "reuse", 2)
	createPVs(t, cp.Client, "", 4)

	t.Run("golden objects are accepted and run", func(t *testing.T) { testGoldenApplied(t, cp) })
	t.Run("deploy and teardown every golden case", func(t *testing.T) { testDeployTeardown(t, cp) })
	t.Run("volume reuse and removal", func(t *testing.T) { testVolumes(t, cp) })
	t.Run("a SUT pod deleted is a dead SUT, its teardown is not", func(t *testing.T) { testDeadSUT(t, cp) })
	t.Run("driver job completes", func(t *testing.T) { testDriverJob(t, cp) })
	t.Run("deployer service over NATS", func(t *testing.T) { testDeployerService(t, cp) })
	t.Run("deploy/k8s applies and its Role suffices", func(t *testing.T) { testDeployK8s(t, cp) })
	t.Run("deploy/k8s Prometheus labels the deployer's pods", func(t *testing.T) { testPrometheusConfig(t, cp) })
}

// admittedUnder creates spec as a Pod, dry run, in a fresh namespace that
// enforces Pod Security level: nil when the API server admits it.
func admittedUnder(ctx context.Context, t *testing.T, cp *k8stest.ControlPlane, level string, spec corev1.PodSpec) error {
	t.Helper()
	ns := cp.NamespaceAt(t, "psa-"+level, level)
	// Where it runs, as which account and on which claims are not Pod
	// Security's business (the accounts live in the pod's own namespace; a
	// StatefulSet's claims come from its templates): an emptyDir stands in.
	spec.NodeSelector, spec.ServiceAccountName, spec.DeprecatedServiceAccount = nil, "", ""
	have := map[string]bool{}
	for _, v := range spec.Volumes {
		have[v.Name] = true
	}
	for _, c := range append(slices.Clone(spec.Containers), spec.InitContainers...) {
		for _, m := range c.VolumeMounts {
			if !have[m.Name] {
				have[m.Name] = true
				spec.Volumes = append(spec.Volumes, corev1.Volume{Name: m.Name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			}
		}
	}
	_, err := cp.Client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "dry"}, Spec: spec},
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

func createPVs(t *testing.T, c kubernetes.Interface, class string, n int) {
	t.Helper()
	for i := range n {
		name := fmt.Sprintf("pv-%s-%d", cmpOrName(class), i)
		_, err := c.CoreV1().PersistentVolumes().Create(context.Background(), &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeSpec{
				StorageClassName:              class,
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("50Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + name}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func cmpOrName(class string) string {
	if class == "" {
		return "default"
	}
	return class
}

func itCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it returns nil (the test's deadline bounds it).
func eventually(t *testing.T, what string, cond func(ctx context.Context) error) {
	t.Helper()
	testenv.Eventually(t, 90*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := cond(ctx); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	})
}

// podsSettled: every pod matching sel is Running (and Ready) on the kwok
// node, or Succeeded (a Job's); at least atLeast of them.
func podsSettled(ctx context.Context, c kubernetes.Interface, ns, sel string, atLeast int) error {
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return err
	}
	if len(pods.Items) < atLeast {
		return fmt.Errorf("%d pods, want at least %d", len(pods.Items), atLeast)
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		if p.Status.Phase != corev1.PodRunning || !ready || p.Spec.NodeName != k8stest.NodeName {
			return fmt.Errorf("pod %s: %s on %q, ready %v", p.Name, p.Status.Phase, p.Spec.NodeName, ready)
		}
	}
	return nil
}

// decodeGolden reads a golden file's objects.
func decodeGolden(t *testing.T, path string) []runtime.Object {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []runtime.Object
	for _, doc := range strings.Split(string(b), "\n---\n") {
		if strings.TrimSpace(strings.TrimLeft(doc, "-")) == "" || !strings.Contains(doc, "kind:") {
			continue // the header comment
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, obj)
	}
	return out
}

// testGoldenApplied creates every object of every golden file, as written,
// in a namespace of its own: the API server's validation and admission
// accept them, and their pods run and their Jobs complete.
func testGoldenApplied(t *testing.T, cp *k8stest.ControlPlane) {
	files, err := filepath.Glob(filepath.Join("testdata", "kube", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("golden files: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			ns := cp.Namespace(t, "golden")
			ctx := itCtx(t, 2*time.Minute)
			c := cp.Client
			objs := decodeGolden(t, f)
			var pods int
			for _, obj := range objs {
				var err error
				switch o := obj.(type) {
				case *corev1.PersistentVolumeClaim:
					o.Namespace = ns
					_, err = c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, o, metav1.CreateOptions{})
				case *corev1.Service:
					o.Namespace = ns
					_, err = c.CoreV1().Services(ns).Create(ctx, o, metav1.CreateOptions{})
				case *appsv1.Deployment:
					o.Namespace = ns
					o.Spec.Template.Spec.NodeSelector = nil // pinned to a node this cluster does not have
					pods += int(*o.Spec.Replicas)
					_, err = c.AppsV1().Deployments(ns).Create(ctx, o, metav1.CreateOptions{})
				case *appsv1.StatefulSet:
					o.Namespace = ns
					pods += int(*o.Spec.Replicas)
					_, err = c.AppsV1().StatefulSets(ns).Create(ctx, o, metav1.CreateOptions{})
				case *batchv1.Job:
					o.Namespace = ns
					o.Spec.Template.Spec.NodeSelector = nil
					pods += int(ptr.Deref(o.Spec.Completions, 1))
					_, err = c.BatchV1().Jobs(ns).Create(ctx, o, metav1.CreateOptions{})
				default:
					t.Fatalf("unexpected object %T", obj)
				}
				if err != nil {
					t.Fatalf("%T refused: %v", obj, err)
				}
			}
			eventually(t, "pods", func(ctx context.Context) error { return podsSettled(ctx, c, ns, "app=benchq", pods) })
			eventually(t, "jobs", func(ctx context.Context) error {
				jobs, err := c.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					return err
				}
				for _, j := range jobs.Items {
					if j.Status.Succeeded != ptr.Deref(j.Spec.Completions, 1) {
						return fmt.Errorf("job %s: %d succeeded", j.Name, j.Status.Succeeded)
					}
				}
				return nil
			})
		})
	}
}

// leftovers lists every object in ns with the experiment's label, of every
// kind the deployer's objects make directly or through controllers.
func leftovers(ctx context.Context, c kubernetes.Interface, ns, code string) ([]string, error) {
	opts := metav1.ListOptions{LabelSelector: "experiment=" + code}
	var out []string
	add := func(kind string, l runtime.Object, err error) error {
		if err != nil {
			return err
		}
		items, err := namesOf(l)
		if err != nil {
			return err
		}
		for _, n := range items {
			out = append(out, kind+"/"+n)
		}
		return nil
	}
	for _, f := range []func() error{
		func() error { l, err := c.CoreV1().Pods(ns).List(ctx, opts); return add("pod", l, err) },
		func() error { l, err := c.CoreV1().Services(ns).List(ctx, opts); return add("service", l, err) },
		func() error { l, err := c.CoreV1().Secrets(ns).List(ctx, opts); return add("secret", l, err) },
		func() error {
			l, err := c.CoreV1().PersistentVolumeClaims(ns).List(ctx, opts)
			return add("pvc", l, err)
		},
		func() error { l, err := c.AppsV1().Deployments(ns).List(ctx, opts); return add("deployment", l, err) },
		func() error { l, err := c.AppsV1().ReplicaSets(ns).List(ctx, opts); return add("replicaset", l, err) },
		func() error { l, err := c.AppsV1().StatefulSets(ns).List(ctx, opts); return add("statefulset", l, err) },
		func() error {
			l, err := c.AppsV1().ControllerRevisions(ns).List(ctx, opts)
			return add("controllerrevision", l, err)
		},
		func() error { l, err := c.BatchV1().Jobs(ns).List(ctx, opts); return add("job", l, err) },
		func() error {
			l, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, opts)
			return add("endpointslice", l, err)
		},
	} {
		if err := f(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// testDeployTeardown deploys every golden case through the backend, checks
// that its pods run on the kwok node (pinned ones are re-pinned to it) and
// its Jobs completed, then tears it down and finds nothing left.
// testDeadSUT: a Redis SUT's pod deleted once it was ready (its Deployment
// makes another) is reported dead within seconds; a torn-down SUT is not.
func testDeadSUT(t *testing.T, cp *k8stest.ControlPlane) {
	ns := cp.Namespace(t, "deadsut")
	k := &Kube{Client: cp.Client, Namespace: ns, Log: testenv.Logger(t, "kube"), Poll: 100 * time.Millisecond, SUT: startup.SUTKey(testSUTKey)}
	ctx := itCtx(t, 3*time.Minute)
	for _, code := range []string{"dead1", "dead2"} {
		if _, err := k.Deploy(ctx, backend.Spec{Code: code, Configuration: "Redis-1", DBMS: "Redis", Benchmark: "ycsb"}); err != nil {
			t.Fatal(err)
		}
	}
	reported := map[string]bool{}
	if dead, err := k.DeadSUTs(ctx, reported); err != nil || len(dead) != 0 {
		t.Fatalf("ready SUTs: %v %v", dead, err)
	}
	pods, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "experiment=dead1,component=sut"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("dead1's pods: %v %v", pods, err)
	}
	if err := cp.Client.CoreV1().Pods(ns).Delete(ctx, pods.Items[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := k.Teardown(ctx, "dead2", ""); err != nil {
		t.Fatal(err)
	}
	var dead []backend.DeadSUT
	for deadline := time.Now().Add(30 * time.Second); len(dead) == 0 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if dead, err = k.DeadSUTs(ctx, reported); err != nil {
			t.Fatal(err)
		}
	}
	if len(dead) != 1 || dead[0].Code != "dead1" || dead[0].Configuration != "Redis-1" ||
		!strings.Contains(dead[0].Reason, "pod "+pods.Items[0].Name+" ") {
		t.Fatalf("dead %+v", dead)
	}
	t.Logf("reported: %s", dead[0].Reason)
	reported["dead1/Redis-1"] = true
	time.Sleep(time.Second)
	if again, err := k.DeadSUTs(ctx, reported); err != nil || len(again) != 0 {
		t.Errorf("after the report: %v %v (dead2 was torn down, dead1 reported)", again, err)
	}
	if err := k.Teardown(ctx, "dead1", ""); err != nil {
		t.Fatal(err)
	}
}

func testDeployTeardown(t *testing.T, cp *k8stest.ControlPlane) {
	ns := cp.Namespace(t, "deploy")
	k := &Kube{Client: cp.Client, Namespace: ns, Log: testenv.Logger(t, "kube"), Poll: 100 * time.Millisecond, SUT: startup.SUTKey(testSUTKey)}
	for i, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := itCtx(t, 3*time.Minute)
			s := tc.spec
			s.Code = fmt.Sprintf("it%d", i)
			if s.SUT != nil && s.SUT.Node != "" {
				sut := *s.SUT
				sut.Node = k8stest.NodeName
				s.SUT = &sut
			}
			if s.SUT != nil && s.SUT.Storage != nil && s.SUT.Storage.Class != "" {
				sut := *s.SUT
				sut.UseCase = s.Code // a volume per case: they run in parallel
				s.SUT = &sut
			}
			if tc.entry != nil {
				return // a catalog shape no DBMS has: its golden file is applied above
			}
			d, err := k.Deploy(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(d.Endpoint.Host, "."+ns+".svc") || d.Info["node"] != k8stest.NodeName {
				t.Errorf("deployed %+v", d)
			}
			sel := selectorString(s.Code, s.Configuration)
			if err := podsSettled(ctx, cp.Client, ns, sel, 1); err != nil {
				t.Errorf("after deploy: %v", err)
			}
			// The SUT's own password, in the Secret its pods read.
			names, _ := namesFor(s.Code, s.Configuration)
			if sec, err := cp.Client.CoreV1().Secrets(ns).Get(ctx, names.Password, metav1.GetOptions{}); err != nil || len(sec.Data[startup.SUTPasswordEnv]) != 43 {
				t.Errorf("the SUT's password secret %s: %v", names.Password, err)
			}
			jobs, err := cp.Client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range jobs.Items {
				if j.Status.Succeeded != 1 {
					t.Errorf("job %s: %d succeeded", j.Name, j.Status.Succeeded)
				}
			}
			if err := k.Teardown(ctx, s.Code, s.Configuration); err != nil {
				t.Fatal(err)
			}
			left, err := leftovers(ctx, cp.Client, ns, s.Code)
			if err != nil || len(left) > 0 {
				t.Errorf("after teardown: %v %v", left, err)
			}
		})
	}
}

// testVolumes: a volume outlives its experiment, is reused with its loaded
// mark (loading can be skipped), and -rsr replaces it by an empty one.
func testVolumes(t *testing.T, cp *k8stest.ControlPlane) {
	ns := cp.Namespace(t, "volumes")
	k := &Kube{Client: cp.Client, Namespace: ns, Log: testenv.Logger(t, "kube"), Poll: 100 * time.Millisecond, SUT: startup.SUTKey(testSUTKey)}
	ctx := itCtx(t, 3*time.Minute)
	spec := func(code string, remove bool) backend.Spec {
		return backend.Spec{Code: code, Configuration: "PostgreSQL-64-8-196608-1", DBMS: "PostgreSQL", Benchmark: "ycsb",
			SUT: &contracts.SUTSpec{Storage: &contracts.Storage{Class: "reuse", Size: "10Gi", Remove: remove}, UseCase: "ycsb-0.1"}}
	}
	pvc := func() *corev1.PersistentVolumeClaim {
		p, err := cp.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "bq-postgresql-ycsb-0.1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	d, err := k.Deploy(ctx, spec("vol1", false))
	if err != nil {
		t.Fatal(err)
	}
	first := pvc()
	if first.Status.Phase != corev1.ClaimBound || d.Volume == nil || !d.Volume.New || d.Volume.Loaded {
		t.Fatalf("first deploy: pvc %s, volume %+v", first.Status.Phase, d.Volume)
	}
	if err := k.MarkLoaded(ctx, first.Name, 12*time.Second, "vol1/PostgreSQL-64-8-196608-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := k.Teardown(ctx, "vol1", ""); err != nil {
		t.Fatal(err)
	}
	if p := pvc(); p.UID != first.UID || p.Status.Phase != corev1.ClaimBound {
		t.Fatalf("the volume must outlive its experiment: %s %s", p.UID, p.Status.Phase)
	}

	d, err = k.Deploy(ctx, spec("vol2", false))
	if err != nil {
		t.Fatal(err)
	}
	if d.Volume == nil || !d.Volume.Loaded || d.Volume.LoadingTimeS != 12.0 || pvc().UID != first.UID {
		t.Errorf("reuse: volume %+v", d.Volume)
	}
	if err := k.Teardown(ctx, "vol2", ""); err != nil {
		t.Fatal(err)
	}

	d, err = k.Deploy(ctx, spec("vol3", true))
	if err != nil {
		t.Fatal(err)
	}
	second := pvc()
	if second.UID == first.UID || second.Status.Phase != corev1.ClaimBound || d.Volume == nil || d.Volume.Loaded || !d.Volume.New {
		t.Errorf("-rsr: uid %s (was %s), %s, volume %+v", second.UID, first.UID, second.Status.Phase, d.Volume)
	}
	vols, err := k.Volumes(ctx)
	if err != nil || len(vols) != 1 || vols[0].Loaded || vols[0].Phase != "Bound" {
		t.Errorf("volumes %+v %v", vols, err)
	}
	if err := k.MarkLoaded(ctx, second.Name, 5*time.Second, "vol3/PostgreSQL-64-8-196608-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := k.Teardown(ctx, "vol3", ""); err != nil {
		t.Fatal(err)
	}
	// -rsr removes the storage once, at the experiment's start: the same
	// experiment's next configuration (-nc 2) keeps what the first loaded.
	again := spec("vol3", true)
	again.Configuration = "PostgreSQL-64-8-196608-2"
	d, err = k.Deploy(ctx, again)
	if err != nil {
		t.Fatal(err)
	}
	if p := pvc(); p.UID != second.UID || d.Volume == nil || !d.Volume.Loaded || d.Volume.New {
		t.Errorf("-rsr, the experiment's second configuration: uid %s (was %s), volume %+v; want the same, loaded", p.UID, second.UID, d.Volume)
	}
	if err := k.Teardown(ctx, "vol3", ""); err != nil {
		t.Fatal(err)
	}
}

func testDriverJob(t *testing.T, cp *k8stest.ControlPlane) {
	ns := cp.Namespace(t, "drivers")
	k := &Kube{Client: cp.Client, Namespace: ns, Log: testenv.Logger(t, "kube"), Poll: 100 * time.Millisecond, SUT: startup.SUTKey(testSUTKey)}
	ctx := itCtx(t, 2*time.Minute)
	d := backend.DriverSpec{Code: "drv1", Configuration: "Redis-8-2-16384-1", DBMS: "Redis", Phase: "Redis-8-2-16384-1-1",
		Kind: contracts.KindRun, Shards: 3, Node: k8stest.NodeName, Image: "benchq/driver-agent:dev", NATSURL: "nats://nats:4222"}
	name, err := k.StartDrivers(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.WaitDrivers(ctx, d, name); err != nil {
		t.Fatal(err)
	}
	j, err := cp.Client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || j.Status.Succeeded != 3 {
		t.Fatalf("job %v, %v: want 3 succeeded", j.Status, err)
	}
	pods, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "component=benchmarker,phase=Redis-8-2-16384-1-1"})
	if err != nil || len(pods.Items) != 3 {
		t.Fatalf("%d agent pods, %v", len(pods.Items), err)
	}
	// The driver pods pass the restricted level too (their namespace
	// enforces baseline, for the SUTs' sake).
	if err := admittedUnder(ctx, t, cp, "restricted", j.Spec.Template.Spec); err != nil {
		t.Errorf("a driver pod under Pod Security restricted: %v", err)
	}
	if err := k.Teardown(ctx, d.Code, d.Configuration); err != nil {
		t.Fatal(err)
	}
	if left, err := leftovers(ctx, cp.Client, ns, d.Code); err != nil || len(left) > 0 {
		t.Errorf("after teardown: %v %v", left, err)
	}
}

// testDeployerService runs the deployer service itself (../deployer) on the
// kubernetes backend against NATS: a deploy job becomes sut.ready with the
// Service's endpoint, a teardown job sut.removed.
func testDeployerService(t *testing.T, cp *k8stest.ControlPlane) {
	ns := cp.Namespace(t, "service")
	natsURL := testenv.NATS(t)
	log := testenv.Logger(t, "deployer")
	testenv.Go(t, func(ctx context.Context) error {
		return deployer.Run(ctx, deployer.Config{NATSURL: natsURL}, &Kube{Client: cp.Client, Namespace: ns, Log: log, Poll: 100 * time.Millisecond, SUT: startup.SUTKey(testSUTKey)}, log)
	})
	ctx := itCtx(t, 2*time.Minute)
	b, err := bus.Connect(ctx, natsURL, "", "test", log)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	events, err := b.JS.OrderedConsumer(ctx, contracts.StreamEvents, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"benchq.exp.svc1.>"}})
	if err != nil {
		t.Fatal(err)
	}
	next := func(want string) jetstream.Msg {
		t.Helper()
		m, err := events.Next(jetstream.FetchMaxWait(90 * time.Second))
		if err != nil {
			t.Fatalf("waiting for %s: %v", want, err)
		}
		if m.Subject() != want {
			t.Fatalf("got %s: %s, want %s", m.Subject(), m.Data(), want)
		}
		return m
	}
	now := time.Now()
	if err := b.Publish(ctx, contracts.SubjDeploy, &contracts.Deploy{
		Envelope: contracts.NewEnvelope("svc1", "svc1.deploy.RedisCluster-1", now), Configuration: "RedisCluster-1",
		DBMS: "RedisCluster", Benchmark: "ycsb", TimeoutS: 90, SUT: &contracts.SUTSpec{Workers: 3},
	}); err != nil {
		t.Fatal(err)
	}
	var ready contracts.SUTReady
	if err := bus.Decode(contracts.SchemaSUTReady, next("benchq.exp.svc1.sut.ready").Data(), &ready); err != nil {
		t.Fatal(err)
	}
	if ready.Backend != BackendKubernetes || ready.Endpoint.Host != "bq-svc1-rediscluster-1."+ns+".svc" || ready.Endpoint.Port != 6379 {
		t.Errorf("sut.ready %+v", ready)
	}
	if err := b.Publish(ctx, contracts.SubjTeardown, &contracts.Teardown{
		Envelope: contracts.NewEnvelope("svc1", "svc1.teardown.RedisCluster-1", time.Now()), Configuration: "RedisCluster-1", DBMS: "RedisCluster",
	}); err != nil {
		t.Fatal(err)
	}
	next("benchq.exp.svc1.sut.removed")
	if left, err := leftovers(ctx, cp.Client, ns, "svc1"); err != nil || len(left) > 0 {
		t.Errorf("after teardown: %v %v", left, err)
	}
}

// testDeployK8s applies deploy/k8s with kubectl, then drives the backend
// with the benchq-deployer service account's token: the Role grants every
// call the deployer makes, and not more than it needs.
func testDeployK8s(t *testing.T, cp *k8stest.ControlPlane) {
	kubectl := cp.Kubectl()
	if kubectl == "" {
		t.Skip("kubectl was not built (scripts/k8s/build-control-plane.sh builds it)")
	}
	ctx := itCtx(t, 3*time.Minute)
	dir, env := k8sManifests(t)
	out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", cp.Kubeconfig, "apply", "-k", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply -k deploy/k8s: %v\n%s", err, out)
	}
	t.Logf("kubectl apply -k deploy/k8s:\n%s", out)
	const ns = "benchq"
	checkCredentials(ctx, t, cp.Client, ns, env)
	// Every replica the manifests ask for runs (NATS, the results
	// database, the services; driver agents come as Jobs per phase).
	want := 0
	deps, err := cp.Client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=benchq"})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range deps.Items {
		want += int(ptr.Deref(d.Spec.Replicas, 1))
	}
	sets, err := cp.Client.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=benchq"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sets.Items {
		want += int(ptr.Deref(s.Spec.Replicas, 1))
	}
	if len(deps.Items) != 5 || len(sets.Items) != 2 {
		t.Errorf("deploy/k8s made %d Deployments and %d StatefulSets labelled app=benchq, want 5 (scheduler, deployer, collector, reporter, prometheus) and 2 (NATS, results database)", len(deps.Items), len(sets.Items))
	}
	eventually(t, "benchq's pods", func(ctx context.Context) error { return podsSettled(ctx, cp.Client, ns, "app=benchq", want) })
	// Pod Security: the namespace enforces baseline (its pods ran above);
	// every pod of benchq's own passes restricted, the results database
	// (whose image starts as root and steps down) baseline only.
	if got, err := cp.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil || got.Labels["pod-security.kubernetes.io/enforce"] != "baseline" {
		t.Errorf("namespace %s does not enforce Pod Security baseline (%v)", ns, err)
	}
	templates := map[string]corev1.PodSpec{}
	for _, d := range deps.Items {
		templates[d.Name] = d.Spec.Template.Spec
	}
	for _, s := range sets.Items {
		templates[s.Name] = s.Spec.Template.Spec
	}
	for name, spec := range templates {
		level := "restricted"
		if name == "results-db" {
			level = "baseline"
		}
		if err := admittedUnder(ctx, t, cp, level, spec); err != nil {
			t.Errorf("%s under Pod Security %s: %v", name, level, err)
		}
	}
	// The NetworkPolicies (TestNetworkPolicies reads what they allow) are applied.
	nps, err := cp.Client.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(nps.Items) != len(networkPolicies(t)) {
		t.Errorf("%d NetworkPolicies in %s (%v), want deploy/k8s/networkpolicies.yaml's %d", len(nps.Items), ns, err, len(networkPolicies(t)))
	}

	tok, err := cp.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "benchq-deployer", &authTokenRequest, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(cp.Config)
	cfg.BearerToken = tok.Status.Token
	var rec callRecorder // every call the deployer makes, for the RBAC check below
	rec.wrap(cfg)
	sa, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	k := &Kube{Client: sa, Namespace: ns, Log: testenv.Logger(t, "kube"), Poll: 100 * time.Millisecond, SUT: startup.SUTKey(testSUTKey)}
	for _, s := range []backend.Spec{
		{Code: "rbac1", Configuration: "PgBouncer-1", DBMS: "PgBouncer", Benchmark: "ycsb",
			SUT: &contracts.SUTSpec{Pool: &contracts.Pool{Pods: 2, Inbound: 64, Outbound: 32}, Storage: &contracts.Storage{Class: "shared", Size: "1Gi"}, UseCase: "ycsb-rbac"}},
		{Code: "rbac1", Configuration: "RedisCluster-1", DBMS: "RedisCluster", Benchmark: "ycsb", SUT: &contracts.SUTSpec{Workers: 3, WorkerReplicas: 1}},
	} {
		if _, err := k.Deploy(ctx, s); err != nil {
			t.Fatalf("as benchq-deployer: %v", err)
		}
	}
	if err := k.MarkLoaded(ctx, "bq-postgresql-ycsb-rbac", time.Second, "rbac1/PgBouncer-1", time.Now()); err != nil {
		t.Errorf("as benchq-deployer: %v", err)
	}
	if _, err := k.Volumes(ctx); err != nil {
		t.Errorf("as benchq-deployer: %v", err)
	}
	d := backend.DriverSpec{Code: "rbac1", Configuration: "PgBouncer-1", DBMS: "PgBouncer", Phase: "PgBouncer-1-0", Kind: contracts.KindLoad,
		Shards: 2, Image: "benchq/driver-agent:dev", NATSURL: "nats://nats:4222", SeedSecret: "benchq-credentials"}
	// The driver pods' watch runs meanwhile (what it reports is checked
	// in the scheduler's kube experiment).
	wctx, stopWatch := context.WithCancel(ctx)
	watching := make(chan struct{})
	go func() { defer close(watching); k.WatchDriverPods(wctx, func(contracts.DriverLost) {}) }()
	name, err := k.StartDrivers(ctx, d)
	if err != nil {
		t.Fatalf("as benchq-deployer: %v", err)
	}
	if err := k.WaitDrivers(ctx, d, name); err != nil {
		t.Errorf("as benchq-deployer: %v", err)
	}
	stopWatch()
	<-watching
	// -rsr on the volume: deleted and made again.
	rsr := backend.Spec{Code: "rbac2", Configuration: "PgBouncer-1", DBMS: "PgBouncer", Benchmark: "ycsb",
		SUT: &contracts.SUTSpec{Pool: &contracts.Pool{Pods: 1, Inbound: 64, Outbound: 32}, Storage: &contracts.Storage{Class: "shared", Size: "1Gi", Remove: true}, UseCase: "ycsb-rbac"}}
	if err := k.Teardown(ctx, "rbac1", "PgBouncer-1"); err != nil {
		t.Fatalf("as benchq-deployer: %v", err)
	}
	if _, err := k.Deploy(ctx, rsr); err != nil {
		t.Fatalf("as benchq-deployer, -rsr: %v", err)
	}
	if err := k.Teardown(ctx, "rbac2", ""); err != nil {
		t.Fatalf("as benchq-deployer: %v", err)
	}
	// The watches: dead SUTs (pods) and ended driver Jobs.
	if _, err := k.DeadSUTs(ctx, map[string]bool{}); err != nil {
		t.Errorf("as benchq-deployer: %v", err)
	}
	if _, err := k.EndedDrivers(ctx, map[string]bool{}); err != nil {
		t.Errorf("as benchq-deployer: %v", err)
	}
	if err := k.Teardown(ctx, "rbac1", ""); err != nil {
		t.Fatalf("as benchq-deployer: %v", err)
	}
	if left, err := leftovers(ctx, cp.Client, ns, "rbac1"); err != nil || len(left) > 0 {
		t.Errorf("after teardown: %v %v", left, err)
	}
	// Exactly what it used: each call allowed (SubjectAccessReview), each
	// rule of the Role used, nothing else allowed.
	checkRBAC(t, ctx, cp.Client, ns, "benchq-deployer", "benchq-deployer", &rec)
	// Not more than that: no secrets, nothing cluster-wide, no other
	// namespace, no updates.
	for what, err := range map[string]error{
		"list secrets":           errOf(sa.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})),
		"get the stack's secret": errOf(sa.CoreV1().Secrets(ns).Get(ctx, "benchq-credentials", metav1.GetOptions{})),
		"list nodes":             errOf(sa.CoreV1().Nodes().List(ctx, metav1.ListOptions{})),
		"list pods in default":   errOf(sa.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})),
		"update a deployment":    errOf(sa.AppsV1().Deployments(ns).Update(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "scheduler"}}, metav1.UpdateOptions{})),
		"watch pods in default":  errOf(sa.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s as benchq-deployer: %v, want forbidden", what, err)
		}
	}
}

func errOf[T any](_ T, err error) error { return err }

var authTokenRequest = authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))}}

// k8sManifests copies deploy/k8s into a temp dir with a fresh .env, as
// `benchq credentials deploy/k8s` writes it, and returns the dir and the
// credentials.
func k8sManifests(t *testing.T) (string, map[string]string) {
	t.Helper()
	src := filepath.Join("..", "..", "..", "deploy", "k8s")
	dir := t.TempDir()
	files, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.IsDir() || f.Name() == ".env" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text, err := credentials.Env()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			env[k] = v
		}
	}
	return dir, env
}

// checkCredentials: the Secret holds the credentials as written; every
// pod template takes only its own role's NATS seed, by reference (no
// credential is a plain value in a manifest), NATS gets every public key,
// the results database and its clients the password.
func checkCredentials(ctx context.Context, t *testing.T, c kubernetes.Interface, ns string, env map[string]string) {
	t.Helper()
	sec, err := c.CoreV1().Secrets(ns).Get(ctx, "benchq-credentials", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the credentials Secret: %v", err)
	}
	for k, v := range env {
		if string(sec.Data[k]) != v {
			t.Errorf("Secret benchq-credentials: %s is not the .env's", k)
		}
	}
	refs := map[string]map[string]string{} // workload -> env name -> Secret key
	add := func(name string, pod corev1.PodSpec) {
		refs[name] = map[string]string{}
		for i, ctr := range append(slices.Clone(pod.Containers), pod.InitContainers...) {
			who := name // an init container is a workload of its own here
			if i >= len(pod.Containers) {
				who = name + "/" + ctr.Name
				refs[who] = map[string]string{}
			}
			for _, e := range ctr.Env {
				for _, v := range env {
					if e.Value != "" && strings.Contains(e.Value, v) {
						t.Errorf("%s: %s holds a credential as a plain value", name, e.Name)
					}
				}
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					if e.ValueFrom.SecretKeyRef.Name != "benchq-credentials" {
						t.Errorf("%s: %s from Secret %q", name, e.Name, e.ValueFrom.SecretKeyRef.Name)
					}
					refs[who][e.Name] = e.ValueFrom.SecretKeyRef.Key
				}
			}
		}
	}
	deps, err := c.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range deps.Items {
		add(d.Name, d.Spec.Template.Spec)
	}
	sets, err := c.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sets.Items {
		add(s.Name, s.Spec.Template.Spec)
	}
	want := map[string]map[string]string{
		"scheduler": {"BENCHQ_NATS_SEED": "BENCHQ_NATS_SEED_SCHEDULER", "BENCHQ_HTTP_TOKEN": "BENCHQ_HTTP_TOKEN"},
		"deployer":  {"BENCHQ_NATS_SEED": "BENCHQ_NATS_SEED_DEPLOYER", "BENCHQ_SUT_KEY": "BENCHQ_SUT_KEY"},
		// The admin key and the database owner's password go to the
		// one-shot init containers only.
		"scheduler/declare": {"BENCHQ_NATS_SEED": "BENCHQ_NATS_SEED_ADMIN"},
		"collector/migrate": {"PGPASSWORD": "BENCHQ_DB_PASSWORD",
			"BENCHQ_DB_COLLECTOR_PASSWORD": "BENCHQ_DB_COLLECTOR_PASSWORD", "BENCHQ_DB_READER_PASSWORD": "BENCHQ_DB_READER_PASSWORD"},
		"collector":  {"BENCHQ_NATS_SEED": "BENCHQ_NATS_SEED_COLLECTOR", "PGPASSWORD": "BENCHQ_DB_COLLECTOR_PASSWORD"},
		"reporter":   {"PGPASSWORD": "BENCHQ_DB_READER_PASSWORD"},
		"results-db": {"POSTGRES_PASSWORD": "BENCHQ_DB_PASSWORD"},
		"prometheus": {},
		"nats":       {},
	}
	for _, r := range natsauth.Roles {
		want["nats"][natsauth.PubEnv(r)] = natsauth.PubEnv(r)
	}
	for name, w := range want {
		if got, ok := refs[name]; !ok || !maps.Equal(got, w) {
			t.Errorf("%s takes %v from the Secret, want %v", name, got, w)
		}
	}
}
