package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/benchq/benchq/services/deployer/backend"
)

// networkPolicies are deploy/k8s/networkpolicies.yaml's policies.
func networkPolicies(t *testing.T) []networkingv1.NetworkPolicy {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "k8s", "networkpolicies.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []networkingv1.NetworkPolicy
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var p networkingv1.NetworkPolicy
		if err := yaml.UnmarshalStrict([]byte(doc), &p); err != nil {
			t.Fatalf("deploy/k8s/networkpolicies.yaml: %v", err)
		}
		out = append(out, p)
	}
	return out
}

func selects(t *testing.T, s *metav1.LabelSelector, l map[string]string) bool {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel.Matches(labels.Set(l))
}

// reachable says whether a pod labelled from may open a TCP connection to
// port of a pod labelled to, by the NetworkPolicy rules (ingress, one
// namespace): a pod no policy selects is open; a selected one is reachable
// on what any rule of a selecting policy allows.
func reachable(t *testing.T, policies []networkingv1.NetworkPolicy, from, to map[string]string, port int32) bool {
	t.Helper()
	isolated := false
	for _, p := range policies {
		if !selects(t, &p.Spec.PodSelector, to) {
			continue
		}
		isolated = true
		for _, rule := range p.Spec.Ingress {
			peer := len(rule.From) == 0
			for _, f := range rule.From {
				if f.NamespaceSelector != nil || f.IPBlock != nil {
					t.Fatalf("%s: a peer other than a pod of the namespace; the test does not read it", p.Name)
				}
				peer = peer || selects(t, f.PodSelector, from)
			}
			open := len(rule.Ports) == 0
			for _, pp := range rule.Ports {
				open = open || pp.Port != nil && pp.Port.IntVal == port && (pp.Protocol == nil || *pp.Protocol == corev1.ProtocolTCP)
			}
			if peer && open {
				return true
			}
		}
	}
	return !isolated
}

// TestNetworkPolicies: deploy/k8s' policies open exactly the paths benchq
// uses, between the pods as deploy/k8s and the deployer label them: the
// drivers reach their SUT and NATS, the SUTs nothing of benchq's, the
// results database only the collector and the reporter. (Applied on the
// real API server by make test-k8s; kwok runs no network to enforce them.)
func TestNetworkPolicies(t *testing.T) {
	policies := networkPolicies(t)
	spec := backend.Spec{Code: "e1", Configuration: "PostgreSQL-1-1-1024-1"}
	svc := func(component string) map[string]string {
		return map[string]string{"app": "benchq", "component": component, "app.kubernetes.io/part-of": "benchq"}
	}
	pods := map[string]map[string]string{
		"scheduler": svc("scheduler"), "deployer": svc("deployer"), "collector": svc("collector"), "reporter": svc("reporter"),
		"nats": svc("nats"), "results-db": svc("results-db"), "prometheus": svc("prometheus"),
		"sut": labelsFor(spec, "PostgreSQL", componentSUT), "worker": labelsFor(spec, "Redis", componentWorker),
		"pool":   labelsFor(spec, "PgBouncer", componentPool),
		"loader": labelsFor(spec, "PostgreSQL", componentLoader), "benchmarker": labelsFor(spec, "PostgreSQL", componentBenchmarker),
	}
	cases := []struct {
		from, to string
		port     int32
		want     bool
	}{
		{"scheduler", "nats", 4222, true}, {"deployer", "nats", 4222, true}, {"collector", "nats", 4222, true},
		{"loader", "nats", 4222, true}, {"benchmarker", "nats", 4222, true},
		{"sut", "nats", 4222, false}, {"reporter", "nats", 4222, false}, {"pool", "nats", 4222, false},
		{"collector", "results-db", 5432, true}, {"reporter", "results-db", 5432, true},
		{"benchmarker", "results-db", 5432, false}, {"sut", "results-db", 5432, false}, {"scheduler", "results-db", 5432, false},
		{"benchmarker", "sut", 5432, true}, {"loader", "worker", 6379, true}, {"worker", "worker", 16379, true},
		{"pool", "sut", 5432, true}, {"benchmarker", "pool", 6432, true},
		{"reporter", "sut", 5432, false}, {"scheduler", "sut", 5432, false}, {"collector", "worker", 6379, false},
		{"prometheus", "sut", 9187, true}, {"prometheus", "scheduler", 9464, true}, {"prometheus", "benchmarker", 9464, true},
		{"collector", "prometheus", 9090, true}, {"benchmarker", "prometheus", 9090, false}, {"sut", "prometheus", 9090, false},
		{"benchmarker", "scheduler", 8080, true}, {"sut", "scheduler", 9464, false}, {"benchmarker", "collector", 9464, false},
	}
	for _, c := range cases {
		if got := reachable(t, policies, pods[c.from], pods[c.to], c.port); got != c.want {
			t.Errorf("%s -> %s:%d reachable %v, want %v", c.from, c.to, c.port, got, c.want)
		}
	}
}
