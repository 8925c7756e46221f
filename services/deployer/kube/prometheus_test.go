//go:build k8s

package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/k8stest"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/startup"
	"github.com/benchq/benchq/internal/testenv"
	"github.com/benchq/benchq/services/deployer/backend"
)

// testPrometheusConfig checks deploy/k8s/prometheus.yaml against the pods
// the deployer creates on the real API server: promtool accepts the
// configuration and its rules; Prometheus' own kubernetes discovery and
// relabelling give each exporter sidecar of a SUT (a cluster's workers
// included) the labels the catalog's PromQL selects by; and the deployer's
// benchq_pod_info, which the recording rules join cAdvisor's series with,
// names every pod of the experiment, drivers included. Prometheus and
// promtool are built from the module proxy (scripts/k8s/build-prometheus.sh):
// Debian's leave out the kubernetes discovery.
func testPrometheusConfig(t *testing.T, cp *k8stest.ControlPlane) {
	bin := prometheusK8sBin(t)
	cfg, rules := prometheusConfigMap(t)
	dir := t.TempDir()
	// The in-cluster credentials files the cAdvisor job names, here as
	// empty files in their place: promtool checks that they exist.
	inCluster := "/var/run/secrets/kubernetes.io/serviceaccount/"
	local := strings.ReplaceAll(cfg, inCluster, dir+"/")
	for _, f := range []string{"ca.crt", "token", "rules.yml"} {
		data := ""
		if f == "rules.yml" {
			data = rules
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "prometheus.yml"), local)
	if out, err := exec.Command(filepath.Join(bin, "promtool"), "check", "config", filepath.Join(dir, "prometheus.yml")).CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}

	// An experiment's objects: a Redis with its exporter sidecar, a Redis
	// Cluster of 3 workers with theirs, a loading phase's driver Job.
	ns := cp.Namespace(t, "prom")
	k := &Kube{Client: cp.Client, Namespace: ns, Log: testenv.Logger(t, "kube"), Poll: 100 * time.Millisecond, SUT: startup.SUTKey(testSUTKey)}
	ctx := itCtx(t, 3*time.Minute)
	app := &contracts.Monitoring{SUT: true, Application: true}
	for _, s := range []backend.Spec{
		{Code: "mon1", Configuration: "Redis-1", DBMS: "Redis", Benchmark: "ycsb", SUT: &contracts.SUTSpec{Monitoring: app}},
		{Code: "mon1", Configuration: "RedisCluster-1", DBMS: "RedisCluster", Benchmark: "ycsb", SUT: &contracts.SUTSpec{Workers: 3, Monitoring: app}},
		// Its metrics on its client port, no exporter.
		{Code: "mon1", Configuration: "Dragonfly-1", DBMS: "Dragonfly", Benchmark: "ycsb", SUT: &contracts.SUTSpec{Monitoring: app}},
	} {
		if _, err := k.Deploy(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	d := backend.DriverSpec{Code: "mon1", Configuration: "Redis-1", DBMS: "Redis", Phase: "Redis-1-0", Kind: contracts.KindLoad, Shards: 2,
		Node: k8stest.NodeName, Image: "benchq/driver-agent:dev", NATSURL: "nats://nats:4222"}
	if _, err := k.StartDrivers(ctx, d); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the experiment's pods", func(ctx context.Context) error { return podsSettled(ctx, cp.Client, ns, "experiment=mon1", 1+3+1+2) })

	// benchq_pod_info: every pod, a worker as sut, drivers with their phase.
	reg := prometheus.NewRegistry()
	reg.MustRegister(k.Collectors()...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	info := map[string]map[string]string{} // pod → labels
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			info[l["pod"]] = l
		}
	}
	pods, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "experiment=mon1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		l, want := info[p.Name], monitoredComponent(p.Labels[labelComponent])
		if l == nil || l["experiment"] != "mon1" || l["configuration"] != p.Labels[labelConfiguration] || l["component"] != want ||
			l["namespace"] != ns || l["phase"] != p.Labels[labelPhase] {
			t.Errorf("benchq_pod_info of pod %s (labels %v): %v", p.Name, p.Labels, l)
		}
	}

	// Prometheus' relabelling of the same pods: the benchq-pods job alone,
	// its discovery pointed at the test's API server and namespace.
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := k8stest.WriteKubeconfig(kubeconfig, cp.Config); err != nil {
		t.Fatal(err)
	}
	targets := scrapeTargets(t, bin, dir, onlyPodsJob(t, cfg, ns, kubeconfig))
	exporters, dragonflies := 0, 0
	for _, tg := range targets {
		l := tg.Labels
		if l["experiment"] != "mon1" {
			continue
		}
		t.Logf("target %s: %v", tg.ScrapeURL, l)
		if l["namespace"] != ns || l["component"] != "sut" || l["dbms"] == "" || l["pod"] == "" || l["phase"] != "" {
			t.Errorf("target %s: labels %v", tg.ScrapeURL, l)
		}
		switch {
		case l["container"] == "exporter" && strings.HasPrefix(l["configuration"], "Redis"):
			exporters++
		case l["container"] == "dbms" && l["configuration"] == "Dragonfly-1" && strings.HasSuffix(tg.ScrapeURL, ":6379/metrics"):
			dragonflies++
		default:
			t.Errorf("target %s of the experiment: neither a Redis exporter nor Dragonfly's client port: %v", tg.ScrapeURL, l)
		}
	}
	if exporters != 1+3 || dragonflies != 1 {
		t.Errorf("%d exporter targets and %d of Dragonfly, want 4 (the Redis and 3 cluster workers) and 1 (its client port): %+v", exporters, dragonflies, targets)
	}
}

// prometheusK8sBin is the directory of the prometheus and promtool that
// read kubernetes_sd (scripts/k8s/build-prometheus.sh).
func prometheusK8sBin(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(filepath.Join("..", "..", "..", "scripts", "k8s", "build-prometheus.sh")).Output()
	if err != nil {
		t.Fatalf("scripts/k8s/build-prometheus.sh: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// prometheusConfigMap returns prometheus.yml and rules.yml of
// deploy/k8s/prometheus.yaml's ConfigMap.
func prometheusConfigMap(t *testing.T) (cfg, rules string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "k8s", "prometheus.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var cm struct {
			Kind string            `json:"kind"`
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal([]byte(doc), &cm); err != nil {
			t.Fatal(err)
		}
		if cm.Kind == "ConfigMap" {
			return cm.Data["prometheus.yml"], cm.Data["rules.yml"]
		}
	}
	t.Fatal("deploy/k8s/prometheus.yaml has no ConfigMap")
	return "", ""
}

// onlyPodsJob is cfg with its benchq-pods job alone, discovering in ns
// through kubeconfig, and no rules.
func onlyPodsJob(t *testing.T, cfg, ns, kubeconfig string) string {
	t.Helper()
	var c map[string]any
	if err := yaml.Unmarshal([]byte(cfg), &c); err != nil {
		t.Fatal(err)
	}
	var jobs []any
	for _, j := range c["scrape_configs"].([]any) {
		job := j.(map[string]any)
		if job["job_name"] != "benchq-pods" {
			continue
		}
		for _, sd := range job["kubernetes_sd_configs"].([]any) {
			sd := sd.(map[string]any)
			sd["namespaces"] = map[string]any{"names": []string{ns}}
			sd["kubeconfig_file"] = kubeconfig
		}
		jobs = append(jobs, job)
	}
	c["scrape_configs"] = jobs
	delete(c, "rule_files")
	out, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

type activeTarget struct {
	ScrapeURL string            `json:"scrapeUrl"`
	Labels    map[string]string `json:"labels"`
}

// scrapeTargets runs prometheus on cfg until its discovery has found the
// experiment's exporters, and returns its active targets.
func scrapeTargets(t *testing.T, bin, dir, cfg string) []activeTarget {
	t.Helper()
	writeFile(t, filepath.Join(dir, "pods.yml"), cfg)
	port, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "prometheus"), "--config.file="+filepath.Join(dir, "pods.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port))
	cmd.Stdout, cmd.Stderr = testenv.Writer(t), testenv.Writer(t)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var got []activeTarget
	testenv.Eventually(t, time.Minute, func() error {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/v1/targets?state=active", port))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var r struct {
			Data struct {
				ActiveTargets []activeTarget `json:"activeTargets"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return err
		}
		got = r.Data.ActiveTargets
		if len(got) < 5 {
			return fmt.Errorf("%d active targets", len(got))
		}
		return nil
	})
	return got
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
