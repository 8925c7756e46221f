// Package k8stest starts a real Kubernetes control plane for tests: etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler v1.34.2, and
// kwok v0.8.0 simulating one node, all on free loopback ports in a temporary
// directory. Pods scheduled to the node reach Running (kwok marks them so;
// no container runs), Jobs' pods succeed, PVCs bind to pre-created PVs (the
// real PV controller), and garbage collection works.
//
// The binaries come from scripts/k8s/build-control-plane.sh (cached under
// ~/.cache/benchq/k8s). Without them Start skips the test, or fails it when
// BENCHQ_K8S_REQUIRED=1 (make test-k8s). Everything started is stopped when
// the test ends, pass or fail, and dies with the test binary (SIGKILL on
// parent death) if that is killed.
package k8stest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/benchq/benchq/internal/cachedir"
	"github.com/benchq/benchq/internal/procs"
)

// Version is the Kubernetes version of the binaries.
const Version = "v1.34.2"

// NodeName is the fake node kwok manages.
const NodeName = "kwok-node-0"

// startTimeout bounds the start of the whole control plane.
const startTimeout = 2 * time.Minute

// ControlPlane is a running control plane.
type ControlPlane struct {
	// Dir holds the processes' data, certificates and logs (<name>.log).
	Dir string
	// Kubeconfig is the path of an admin kubeconfig (system:masters).
	Kubeconfig string
	// Config is the admin client configuration; Client uses it.
	Config *rest.Config
	Client kubernetes.Interface
	// BinDir holds the binaries, kubectl among them when it was built.
	BinDir string
	// URL of the API server.
	URL string

	procs []*process
	opts  Options
}

// Options change the control plane for a scale test (StartWith).
type Options struct {
	// ControllerQPS is kube-controller-manager's --kube-api-qps (burst
	// twice that); 0 keeps its default of 20, which makes the Job
	// controller create at most 20 pods a second.
	ControllerQPS int
	// Nodes is how many kwok nodes to make (default 1: NodeName); the
	// others are kwok-node-1, kwok-node-2, ...
	Nodes int
	// JobPodsRunFor is how long a Job's pod stays Running before kwok
	// completes it (default: at once), so that a test can act on a pod
	// mid-phase.
	JobPodsRunFor time.Duration
}

type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// Paths returns the binary directory and kwok's stage directory:
// cachedir.K8s()'s bin and kwok-stage.
func Paths() (bin, stages string) {
	cache := cachedir.K8s()
	return filepath.Join(cache, "bin"), filepath.Join(cache, "kwok-stage")
}

// kwokStages are the stage files (relative to the stage directory) that make
// the fake node Ready and keep it so, run pods and complete Jobs' pods, and
// finish pod deletion.
var kwokStages = []string{
	"node/fast/node-initialize.yaml",
	"node/heartbeat/node-heartbeat.yaml",
	"pod/fast/pod-ready.yaml",
	podCompleteStage,
	"pod/fast/pod-delete.yaml",
}

// podCompleteStage completes a Job's Running pod.
const podCompleteStage = "pod/fast/pod-complete.yaml"

// delayedStage writes a copy of the stage file at path that waits d before
// it applies (kwok's spec.delay), and returns the copy's path.
func (cp *ControlPlane) delayedStage(path string, d time.Duration) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	text := string(b)
	if !strings.Contains(text, "\nspec:\n") || strings.Contains(text, "\n  delay:") {
		return "", fmt.Errorf("kwok stage %s: no spec to add a delay to, or one already there", path)
	}
	text = strings.Replace(text, "\nspec:\n", fmt.Sprintf("\nspec:\n  delay:\n    durationMilliseconds: %d\n", d.Milliseconds()), 1)
	out := filepath.Join(cp.Dir, "pod-complete-delayed.yaml")
	return out, os.WriteFile(out, []byte(text), 0o600)
}

// Start starts a control plane for t (see the package comment).
func Start(t testing.TB) *ControlPlane {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith starts a control plane for t with opts.
func StartWith(t testing.TB, opts Options) *ControlPlane {
	t.Helper()
	bin, stages := Paths()
	var missing []string
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			missing = append(missing, b)
		}
	}
	for _, s := range kwokStages {
		if _, err := os.Stat(filepath.Join(stages, s)); err != nil {
			missing = append(missing, "kwok stage "+s)
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("kubernetes control plane not built (missing in %s: %s): run scripts/k8s/build-control-plane.sh or make test-k8s",
			filepath.Dir(bin), strings.Join(missing, ", "))
		if os.Getenv("BENCHQ_K8S_REQUIRED") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}

	dir, err := os.MkdirTemp("", "benchq-k8stest-")
	if err != nil {
		t.Fatal(err)
	}
	cp := &ControlPlane{Dir: dir, BinDir: bin, opts: opts}
	t.Cleanup(func() {
		cp.stop()
		if t.Failed() {
			for _, p := range cp.procs {
				t.Logf("%s log (last lines): %s", p.name, procs.LogTail(p.log, 5))
			}
			t.Logf("control plane files kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := cp.start(ctx, bin, stages); err != nil {
		t.Fatalf("start control plane: %v", err)
	}
	return cp
}

func (cp *ControlPlane) start(ctx context.Context, bin, stages string) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdClient, etcdPeer, apiPort := ports[0], ports[1], ports[2]
	p, err := writePKI(cp.Dir)
	if err != nil {
		return err
	}
	token := "benchq-admin-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	tokens := filepath.Join(cp.Dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(token+`,admin,admin-uid,"system:masters"`+"\n"), 0o600); err != nil {
		return err
	}
	cp.URL = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	cp.Config = &rest.Config{Host: cp.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: p.CertPEM}, QPS: 100, Burst: 200}
	cp.Kubeconfig = filepath.Join(cp.Dir, "admin.kubeconfig")
	if err := WriteKubeconfig(cp.Kubeconfig, cp.Config); err != nil {
		return err
	}
	if cp.Client, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return err
	}

	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	if err := cp.run(bin, "etcd",
		"--data-dir="+filepath.Join(cp.Dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL,
		"--unsafe-no-fsync", "--log-level=warn",
	); err != nil {
		return err
	}
	if err := cp.run(bin, "kube-apiserver",
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(apiPort),
		"--cert-dir="+filepath.Join(cp.Dir, "apiserver-certs"),
		"--tls-cert-file="+p.CertFile, "--tls-private-key-file="+p.KeyFile,
		"--token-auth-file="+tokens,
		"--authorization-mode=RBAC",
		"--service-account-key-file="+p.SAKeyFile, "--service-account-signing-key-file="+p.SAKeyFile,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--enable-priority-and-fairness=false", "--profiling=false",
	); err != nil {
		return err
	}
	if err := cp.waitReady(ctx); err != nil {
		return err
	}
	cmArgs := []string{"--kubeconfig=" + cp.Kubeconfig, "--secure-port=0", "--leader-elect=false",
		"--service-account-private-key-file=" + p.SAKeyFile, "--root-ca-file=" + p.CertFile,
		"--use-service-account-credentials=false",
		"--concurrent-gc-syncs=5", "--profiling=false"}
	if q := cp.opts.ControllerQPS; q > 0 {
		cmArgs = append(cmArgs, "--kube-api-qps="+strconv.Itoa(q), "--kube-api-burst="+strconv.Itoa(2*q))
	}
	if err := cp.run(bin, "kube-controller-manager", cmArgs...); err != nil {
		return err
	}
	// A pod the scheduler found unschedulable (its StatefulSet's claim not
	// yet bound) waits for a cluster event to be retried, and at most 5
	// minutes when it misses it: seen once in CI (results-db-0 Pending for
	// 90 s after "PostFilter … not found"). 15 s keeps a test within its wait.
	if err := cp.run(bin, "kube-scheduler",
		"--kubeconfig="+cp.Kubeconfig, "--secure-port=0", "--leader-elect=false", "--profiling=false",
		"--pod-max-in-unschedulable-pods-duration=15s",
	); err != nil {
		return err
	}
	kwokArgs := []string{"--kubeconfig=" + cp.Kubeconfig,
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--cidr=10.0.1.0/24", "--node-ip=127.0.0.1"}
	for _, s := range kwokStages {
		path := filepath.Join(stages, s)
		if s == podCompleteStage && cp.opts.JobPodsRunFor > 0 {
			var err error
			if path, err = cp.delayedStage(path, cp.opts.JobPodsRunFor); err != nil {
				return err
			}
		}
		kwokArgs = append(kwokArgs, "--config="+path)
	}
	if err := cp.run(bin, "kwok", kwokArgs...); err != nil {
		return err
	}
	for i := range max(cp.opts.Nodes, 1) {
		if err := cp.createNode(ctx, nodeName(i)); err != nil {
			return err
		}
	}
	return cp.waitUsable(ctx)
}

// nodeName is the i-th kwok node: NodeName, then kwok-node-1, ...
func nodeName(i int) string { return fmt.Sprintf("kwok-node-%d", i) }

// run starts a binary of bin, logging to <Dir>/<name>.log.
func (cp *ControlPlane) run(bin, name string, args ...string) error {
	logPath := filepath.Join(cp.Dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer f.Close() //nolint:errcheck // read only
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.Dir = cp.Dir
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), "HOME="+cp.Dir) // kwok and kubectl look there
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	cp.procs = append(cp.procs, p)
	return nil
}

// stop stops the processes in reverse order: SIGTERM, SIGKILL after 10 s.
func (cp *ControlPlane) stop() {
	var wg sync.WaitGroup
	for i := len(cp.procs) - 1; i >= 0; i-- {
		p := cp.procs[i]
		if p.name == "etcd" {
			wg.Wait() // etcd last: the others talk to it while stopping
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
				<-p.done
			}
		}()
	}
	wg.Wait()
}

// exited returns an error naming a process that is no longer running.
func (cp *ControlPlane) exited() error {
	for _, p := range cp.procs {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited: %s", p.name, procs.LogTail(p.log, 10))
		default:
		}
	}
	return nil
}

// poll calls cond every 100 ms until it returns nil, a process exits or ctx
// ends.
func (cp *ControlPlane) poll(ctx context.Context, what string, cond func(context.Context) error) error {
	for {
		err := cond(ctx)
		if err == nil {
			return nil
		}
		if perr := cp.exited(); perr != nil {
			return fmt.Errorf("%s: %w", what, perr)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last: %v)", what, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (cp *ControlPlane) waitReady(ctx context.Context) error {
	return cp.poll(ctx, "api server ready", func(ctx context.Context) error {
		var code int
		res := cp.Client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&code)
		if err := res.Error(); err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("/readyz: %d", code)
		}
		return nil
	})
}

// createNode registers the fake node kwok manages.
func (cp *ControlPlane) createNode(ctx context.Context, name string) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{
				"type": "kwok", corev1.LabelHostname: name,
				corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
			},
		},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"),
				corev1.ResourcePods: resource.MustParse("250"), corev1.ResourceEphemeralStorage: resource.MustParse("2Ti"),
			},
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"),
				corev1.ResourcePods: resource.MustParse("250"), corev1.ResourceEphemeralStorage: resource.MustParse("2Ti"),
			},
		},
	}
	return cp.poll(ctx, "create node", func(ctx context.Context) error {
		_, err := cp.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// waitUsable waits for the node to be Ready and for the controllers to work:
// the default namespace's service account exists (the token controller and
// the service-account controller run).
func (cp *ControlPlane) waitUsable(ctx context.Context) error {
	if err := cp.poll(ctx, "node ready", func(ctx context.Context) error {
		n, err := cp.Client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return errors.New("node not ready")
	}); err != nil {
		return err
	}
	return cp.poll(ctx, "default service account", func(ctx context.Context) error {
		_, err := cp.Client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// Namespace creates a namespace for t, named prefix plus a suffix, and
// returns its name. It is left to die with the control plane. Its pods are
// admitted under the Pod Security Standards' baseline level, as in
// deploy/k8s' namespace.
func (cp *ControlPlane) Namespace(t testing.TB, prefix string) string {
	t.Helper()
	return cp.NamespaceAt(t, prefix, "baseline")
}

// NamespaceAt is Namespace with the Pod Security level it enforces
// (privileged, baseline or restricted).
func (cp *ControlPlane) NamespaceAt(t testing.TB, prefix, level string) string {
	t.Helper()
	ns, err := cp.Client.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-",
			Labels: map[string]string{"pod-security.kubernetes.io/enforce": level}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Pods need the namespace's default service account to exist.
	if err := cp.poll(ctx, "service account of "+ns.Name, func(ctx context.Context) error {
		_, err := cp.Client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// Kubectl returns the path of kubectl, or "" when it was not built.
func (cp *ControlPlane) Kubectl() string {
	p := filepath.Join(cp.BinDir, "kubectl")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// WriteKubeconfig writes cfg (host, bearer token, CA) as a kubeconfig file.
func WriteKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["k8stest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["k8stest"] = &clientcmdapi.Context{Cluster: "k8stest", AuthInfo: "user"}
	kc.CurrentContext = "k8stest"
	return clientcmd.WriteToFile(*kc, path)
}

func freePorts(n int) ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for len(out) < n {
		p, err := procs.FreePort()
		if err != nil {
			return nil, err
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}
