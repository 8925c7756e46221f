package kube

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/natsauth"
	"github.com/benchq/benchq/internal/startup"
	"github.com/benchq/benchq/services/deployer/backend"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const (
	goldenCode      = "1700000000"
	goldenNamespace = "benchq"
	// testSUTKey is the stack's SUT key of the tests' backends: a SUT on a
	// volume needs one (Kube.SUT).
	testSUTKey = "the stack's SUT key"
)

// goldenCase is one configuration whose objects are kept in
// testdata/kube/<name>.yaml.
type goldenCase struct {
	name string
	spec backend.Spec
	// entry replaces the catalog's entry of spec.DBMS (a DBMS shape no
	// catalog file has yet).
	entry func(catalog.Entry) catalog.Entry
}

// goldenCases: every catalog entry with its defaults, and the option sets
// a SUT spec can carry (resources, storage, node, monitoring, workers, pool).
func goldenCases() []goldenCase {
	var cases []goldenCase
	for _, n := range catalog.Names() {
		cases = append(cases, goldenCase{name: strings.ToLower(n) + "-default", spec: backend.Spec{
			Code: goldenCode, Configuration: n + "-64-8-196608-1", DBMS: n, Benchmark: "ycsb",
		}})
	}
	return append(cases,
		goldenCase{name: "redis-single-host", spec: backend.Spec{Code: goldenCode, Configuration: "Redis-64-8-196608-1", DBMS: "Redis", Benchmark: "ycsb",
			SUT: &contracts.SUTSpec{UseCase: "ycsb-1"}}},
		goldenCase{name: "redis-resources-node-monitoring-ephemeral", spec: backend.Spec{Code: goldenCode, Configuration: "Redis-64-8-196608-1", DBMS: "Redis", Benchmark: "ycsb",
			SUT: &contracts.SUTSpec{
				Resources:  &contracts.Resources{RequestCPU: "4", RequestMemory: "8Gi", LimitMemory: "32Gi", LimitCPU: "8"},
				Storage:    &contracts.Storage{Size: "20Gi"},
				Node:       "worker-7",
				Monitoring: &contracts.Monitoring{SUT: true, Application: true},
				UseCase:    "ycsb-1",
			}}},
		goldenCase{name: "rediscluster-nw3-nwr1", spec: backend.Spec{Code: goldenCode, Configuration: "RedisCluster-64-8-196608-1", DBMS: "RedisCluster", Benchmark: "ycsb",
			SUT: &contracts.SUTSpec{Workers: 3, WorkerReplicas: 1, UseCase: "ycsb-1"}}},
		goldenCase{name: "rediscluster-nw3-storage-shared", spec: backend.Spec{Code: goldenCode, Configuration: "RedisCluster-64-8-196608-1", DBMS: "RedisCluster", Benchmark: "ycsb",
			SUT: &contracts.SUTSpec{Workers: 3, Storage: &contracts.Storage{Class: "shared", Size: "5Gi"}, Monitoring: &contracts.Monitoring{Application: true}, UseCase: "ycsb-1"}}},
		goldenCase{name: "dragonflycluster-nw3", spec: backend.Spec{Code: goldenCode, Configuration: "DragonflyCluster-64-8-196608-1", DBMS: "DragonflyCluster", Benchmark: "ycsb",
			SUT: &contracts.SUTSpec{Workers: 3, UseCase: "ycsb-1"}}},
		// A CPU limit sizes Dragonfly's threads (its limit rounded up),
		// which otherwise are the node's cores; it serves its metrics on its
		// client port.
		goldenCase{name: "dragonfly-limit-cpu-monitoring", spec: backend.Spec{Code: goldenCode, Configuration: "Dragonfly-64-8-196608-1", DBMS: "Dragonfly", Benchmark: "ycsb",
			SUT: &contracts.SUTSpec{Resources: &contracts.Resources{LimitCPU: "3500m"}, Monitoring: &contracts.Monitoring{Application: true}, UseCase: "ycsb-1"}}},
		goldenCase{name: "pgbouncer-pool-4-128-64", spec: backend.Spec{Code: goldenCode, Configuration: "PgBouncer-64-8-196608-1", DBMS: "PgBouncer", Benchmark: "ycsb",
			SUT: &contracts.SUTSpec{Pool: &contracts.Pool{Pods: 4, Inbound: 128, Outbound: 64}, Monitoring: &contracts.Monitoring{Application: true}, UseCase: "ycsb-1"}}},
		goldenCase{name: "postgresql-storage-shared-50gi", spec: backend.Spec{Code: goldenCode, Configuration: "PostgreSQL-64-8-196608-1", DBMS: "PostgreSQL", Benchmark: "ycsb",
			SUT: &contracts.SUTSpec{Storage: &contracts.Storage{Class: "shared", Size: "50Gi"}, UseCase: "ycsb-1"}}},
		// A Redis whose data lives on the PVC runs with AOF (catalog volume_settings).
		goldenCase{name: "redis-storage-shared", spec: backend.Spec{Code: goldenCode, Configuration: "Redis-64-8-196608-1", DBMS: "Redis", Benchmark: "ycsb",
			SUT: &contracts.SUTSpec{Storage: &contracts.Storage{Class: "shared"}, UseCase: "ycsb-1"}}},
		goldenCase{name: "cluster-with-master-storage", spec: backend.Spec{Code: goldenCode, Configuration: "RedisCluster-64-8-196608-1", DBMS: "RedisCluster", Benchmark: "ycsb",
			SUT: &contracts.SUTSpec{Workers: 3, Storage: &contracts.Storage{Class: "shared", Size: "5Gi"}, UseCase: "ycsb-1"}},
			entry: withMaster},
		// Graphite's carbon cluster: a relay pod (the master) in front of
		// two cache pods, formed by the relay (no bootstrap Job).
		goldenCase{name: "graphite-nw2-monitoring", spec: backend.Spec{Code: goldenCode, Configuration: "Graphite-1", DBMS: "Graphite", Benchmark: "tsdb",
			SUT: &contracts.SUTSpec{Workers: 2, Monitoring: &contracts.Monitoring{Application: true}}}},
	)
}

// withMaster gives a cluster entry a coordinator pod, as a DBMS with one
// (Citus, say) would have.
func withMaster(e catalog.Entry) catalog.Entry {
	k := *e.Kubernetes
	c := *k.Cluster
	c.Master = &catalog.Master{Args: []string{"--coordinator", "yes"}}
	k.Cluster = &c
	e.Kubernetes = &k
	return e
}

// buildCase builds a golden case's objects.
func buildCase(t *testing.T, tc goldenCase, namespace string) *kubeObjects {
	t.Helper()
	e, err := catalog.Lookup(tc.spec.DBMS)
	if err != nil {
		t.Fatal(err)
	}
	if tc.entry != nil {
		e = tc.entry(e)
	}
	o, err := buildObjects(e, tc.spec, namespace)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// renderObjects is the golden form: the endpoint as a comment, then every
// object as a YAML document, in creation order.
func renderObjects(t *testing.T, o *kubeObjects) []byte {
	t.Helper()
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# endpoint: %s:%d", o.Endpoint.Host, o.Endpoint.Port)
	if o.Endpoint.JDBCURL != "" {
		fmt.Fprintf(&buf, " (%s)", o.Endpoint.JDBCURL)
	}
	buf.WriteString("\n")
	if len(o.Ignored) > 0 {
		fmt.Fprintf(&buf, "# ignored: %s\n", strings.Join(o.Ignored, ", "))
	}
	for _, obj := range o.all() {
		b, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	return buf.Bytes()
}

// all returns the objects in creation order.
func (o *kubeObjects) all() []runtime.Object {
	var out []runtime.Object
	if o.Volume != nil {
		out = append(out, o.Volume)
	}
	for _, x := range o.Services {
		out = append(out, x)
	}
	for _, x := range o.Deployments {
		out = append(out, x)
	}
	for _, x := range o.StatefulSets {
		out = append(out, x)
	}
	for _, x := range o.Jobs {
		out = append(out, x)
	}
	return out
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the builder makes now (review, then go test -update):\n%s", path, lineDiff(string(want), string(got)))
	}
}

// lineDiff shows the first lines that differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  want %q\n  got  %q", i+1, wl, gl)
		}
	}
	return ""
}

func TestGoldenObjects(t *testing.T) {
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			checkGolden(t, filepath.Join("testdata", "kube", tc.name+".yaml"), renderObjects(t, buildCase(t, tc, goldenNamespace)))
		})
	}
}

func TestGoldenDriverJob(t *testing.T) {
	j, err := DriverJob(backend.DriverSpec{
		Code: goldenCode, Configuration: "Redis-64-8-196608-1", DBMS: "Redis", Phase: "Redis-64-8-196608-1-0",
		Kind: contracts.KindLoad, Shards: 8, Node: "worker-3", Image: "benchq/driver-agent:dev", NATSURL: "nats://nats.benchq.svc:4222",
		SeedSecret: "benchq-credentials",
	}, goldenNamespace)
	if err != nil {
		t.Fatal(err)
	}
	// The agents' seed comes from the stack's Secret and the SUT's password
	// from the SUT's own, by reference: never a value.
	env := j.Spec.Template.Spec.Containers[0].Env
	for i, want := range map[int][3]string{
		2: {natsauth.SeedValueEnv, "benchq-credentials", "BENCHQ_NATS_SEED_AGENT"},
		1: {startup.SUTPasswordEnv, "bq-1700000000-redis-64-8-196608-1-password", startup.SUTPasswordEnv},
	} {
		got := env[len(env)-i]
		if got.Name != want[0] || got.Value != "" || got.ValueFrom == nil || got.ValueFrom.SecretKeyRef == nil ||
			got.ValueFrom.SecretKeyRef.Name != want[1] || got.ValueFrom.SecretKeyRef.Key != want[2] {
			t.Errorf("the driver pods' %s: %+v", want[0], got)
		}
	}
	// The one host the pods send that password to is their SUT's
	// endpoint, as sut.ready names it (for every kind of SUT).
	for _, dbms := range catalog.Names() {
		job, err := DriverJob(backend.DriverSpec{Code: goldenCode, Configuration: dbms + "-1", DBMS: dbms, Phase: dbms + "-1-0",
			Kind: contracts.KindLoad, Shards: 1, Image: "i", NATSURL: "n"}, goldenNamespace)
		if err != nil {
			t.Fatal(err)
		}
		sut := buildCase(t, goldenCase{spec: backend.Spec{Code: goldenCode, Configuration: dbms + "-1", DBMS: dbms, Benchmark: "ycsb"}}, goldenNamespace)
		i := slices.IndexFunc(job.Spec.Template.Spec.Containers[0].Env, func(e corev1.EnvVar) bool { return e.Name == startup.SUTHostsEnv })
		if i < 0 || job.Spec.Template.Spec.Containers[0].Env[i].Value != sut.Endpoint.Host {
			t.Errorf("%s: the driver pods' %s is not the SUT's endpoint host %q", dbms, startup.SUTHostsEnv, sut.Endpoint.Host)
		}
	}
	b, err := yaml.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "kube", "driver-job-load-8-shards.yaml"), b)
}

// TestObjectShapes checks what the golden files show, so that a careless
// -update cannot silently change it.
func TestObjectShapes(t *testing.T) {
	build := func(dbms string, sut *contracts.SUTSpec) *kubeObjects {
		t.Helper()
		e, err := catalog.Lookup(dbms)
		if err != nil {
			t.Fatal(err)
		}
		o, err := buildObjects(e, backend.Spec{Code: "42", Configuration: dbms + "-1", DBMS: dbms, Benchmark: "ycsb", SUT: sut}, "ns")
		if err != nil {
			t.Fatal(err)
		}
		return o
	}

	rc := build("RedisCluster", &contracts.SUTSpec{Workers: 3, WorkerReplicas: 1})
	if n := *rc.StatefulSets[0].Spec.Replicas; n != 6 {
		t.Errorf("RedisCluster -nw 3 -nwr 1: %d nodes, want 6", n)
	}
	if len(rc.Deployments) != 0 || rc.Services[0].Spec.ClusterIP != "None" || rc.Services[1].Spec.Selector[labelComponent] != componentWorker {
		t.Errorf("RedisCluster: a headless worker Service and a client Service over the workers, no master")
	}
	if env := rc.Jobs[0].Spec.Template.Spec.Containers[0].Env; env[0].Name != "BENCHQ_NODES" || len(strings.Fields(env[0].Value)) != 6 ||
		!strings.HasPrefix(env[0].Value, "bq-42-rediscluster-1-w-0.bq-42-rediscluster-1-w.ns.svc:6379 ") || env[2].Value != "1" {
		t.Errorf("bootstrap env %+v", env)
	}
	if rc.Endpoint.Host != "bq-42-rediscluster-1.ns.svc" || rc.Endpoint.Port != 6379 {
		t.Errorf("endpoint %+v", rc.Endpoint)
	}

	// bexhoma's Dragonfly -nw 3 -nwr 1: master-copy replication, one master
	// and 2 replicas of it, 3 nodes (catalog.Entry.Shape, as the plan asks).
	df, err := catalog.Lookup("DragonflyCluster")
	if err != nil {
		t.Fatal(err)
	}
	masters, replicas := df.Shape(3, 1)
	dc := build("DragonflyCluster", &contracts.SUTSpec{Workers: masters, WorkerReplicas: replicas})
	env := map[string]string{}
	for _, e := range dc.Jobs[0].Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if n := *dc.StatefulSets[0].Spec.Replicas; n != 3 || env["BENCHQ_MASTERS"] != "1" || env["BENCHQ_REPLICAS"] != "2" || len(strings.Fields(env["BENCHQ_NODES"])) != 3 {
		t.Errorf("DragonflyCluster -nw 3 -nwr 1: %d nodes, bootstrap env %v: want 3 nodes, 1 master with 2 replicas", n, env)
	}

	m := buildCase(t, goldenCase{spec: backend.Spec{Code: "42", Configuration: "C-1", DBMS: "RedisCluster", Benchmark: "ycsb",
		SUT: &contracts.SUTSpec{Workers: 3, Storage: &contracts.Storage{Class: "shared"}, UseCase: "ycsb-1"}}, entry: withMaster}, "ns")
	if len(m.Deployments) != 1 || m.Deployments[0].Name != "bq-42-c-1" || m.Services[1].Spec.Selector[labelComponent] != componentSUT {
		t.Errorf("a master: a sut Deployment the client Service selects")
	}
	if m.Volume == nil || m.Deployments[0].Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != m.Volume.Name ||
		m.StatefulSets[0].Spec.VolumeClaimTemplates[0].Name != "data" {
		t.Errorf("a master keeps the reused volume, workers their claim templates")
	}
	if env := m.Jobs[0].Spec.Template.Spec.Containers[0].Env; env[len(env)-1].Name != "BENCHQ_MASTER" || env[len(env)-1].Value != "bq-42-c-1.ns.svc:6379" {
		t.Errorf("bootstrap env %+v", env)
	}

	pg := build("PgBouncer", &contracts.SUTSpec{Pool: &contracts.Pool{Pods: 4, Inbound: 128, Outbound: 63}})
	pool := pg.Deployments[1]
	if *pool.Spec.Replicas != 4 || pool.Labels[labelComponent] != componentPool {
		t.Errorf("pool deployment %s: %d replicas, component %s", pool.Name, *pool.Spec.Replicas, pool.Labels[labelComponent])
	}
	env = map[string]string{}
	for _, e := range pool.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if env["MAX_CLIENT_CONN"] != "33" || env["DEFAULT_POOL_SIZE"] != "16" || env["DB_HOST"] != "bq-42-pgbouncer-1-db.ns.svc" {
		t.Errorf("pool env %v: want 128/4 = 32 inbound and the exporter's console connection, 63/4 rounded up = 16 outbound per pod, the backend Service", env)
	}
	if pg.Services[1].Name != "bq-42-pgbouncer-1" || pg.Services[1].Spec.Selector[labelComponent] != componentPool ||
		!strings.Contains(pg.Endpoint.JDBCURL, "bq-42-pgbouncer-1.ns.svc:5432") {
		t.Errorf("clients must reach the pool: %+v %+v", pg.Services[1].Spec.Selector, pg.Endpoint)
	}
	if len(pg.Jobs) != 1 || pg.Jobs[0].Spec.Template.Spec.Containers[0].Env[0].Value != "bq-42-pgbouncer-1-db.ns.svc" {
		t.Errorf("the schema is created on the backend directly")
	}

	ps := build("PostgreSQL", &contracts.SUTSpec{Storage: &contracts.Storage{Class: "shared", Size: "50Gi"}, UseCase: "ycsb-1"})
	if ps.Volume == nil || ps.Volume.Name != "bq-postgresql-ycsb-1" || *ps.Volume.Spec.StorageClassName != "shared" ||
		ps.Volume.Labels[labelExperiment] != "" {
		t.Fatalf("volume %+v: want bq-postgresql-ycsb-1, class shared, no experiment label", ps.Volume)
	}
	if v := ps.Deployments[0].Spec.Template.Spec.Volumes[0]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != ps.Volume.Name {
		t.Errorf("data volume %+v", v)
	}

	eph := build("Redis", &contracts.SUTSpec{Storage: &contracts.Storage{Size: "20Gi"}})
	c := eph.Deployments[0].Spec.Template.Spec.Containers[0]
	if q := c.Resources.Requests["ephemeral-storage"]; q.String() != "20Gi" || eph.Volume != nil {
		t.Errorf("-rss without -rst: ephemeral-storage request %s, volume %v", q.String(), eph.Volume)
	}
	if ign := build("Redis", &contracts.SUTSpec{Workers: 3, Pool: &contracts.Pool{Pods: 1, Inbound: 1, Outbound: 1}}).Ignored; strings.Join(ign, ",") != "workers,pool" {
		t.Errorf("ignored %v", ign)
	}
}

func TestBuildObjectsRefuses(t *testing.T) {
	long := strings.Repeat("x", 50)
	for _, tc := range []struct {
		name string
		spec backend.Spec
		is   error
		want string
	}{
		{"service name too long", backend.Spec{Code: "1700000000", Configuration: "Redis-" + long, DBMS: "Redis"}, backend.ErrInvalidName,
			`gives object name "bq-1700000000-redis-` + long + `"`},
		{"statefulset name too long", backend.Spec{Code: "1700000000", Configuration: "RedisCluster-" + strings.Repeat("y", 25), DBMS: "RedisCluster"}, backend.ErrInvalidName,
			"at most 52 are possible"},
		{"too few masters", backend.Spec{Code: "1", Configuration: "RedisCluster-1", DBMS: "RedisCluster", SUT: &contracts.SUTSpec{Workers: 2}}, backend.ErrBadSpec,
			"RedisCluster needs at least 3 workers (-nw), got 2"},
		{"bad cpu", backend.Spec{Code: "1", Configuration: "Redis-1", DBMS: "Redis", SUT: &contracts.SUTSpec{Resources: &contracts.Resources{RequestCPU: "lots"}}}, backend.ErrBadSpec,
			`resources.request_cpu: "lots" is not a Kubernetes quantity`},
		{"request above limit", backend.Spec{Code: "1", Configuration: "Redis-1", DBMS: "Redis", SUT: &contracts.SUTSpec{Resources: &contracts.Resources{RequestMemory: "8Gi", LimitMemory: "4Gi"}}}, backend.ErrBadSpec,
			"memory request 8Gi is above the memory limit 4Gi"},
		{"CPU request above limit", backend.Spec{Code: "1", Configuration: "Redis-1", DBMS: "Redis", SUT: &contracts.SUTSpec{Resources: &contracts.Resources{RequestCPU: "4", LimitCPU: "2"}}}, backend.ErrBadSpec,
			"CPU request 4 is above the CPU limit 2 (-rc, -lc)"},
		{"bad size", backend.Spec{Code: "1", Configuration: "PostgreSQL-1", DBMS: "PostgreSQL", SUT: &contracts.SUTSpec{Storage: &contracts.Storage{Class: "c", Size: "big"}}}, backend.ErrBadSpec,
			`storage.size: "big"`},
		{"empty pool", backend.Spec{Code: "1", Configuration: "PgBouncer-1", DBMS: "PgBouncer", SUT: &contracts.SUTSpec{Pool: &contracts.Pool{Pods: 0, Inbound: 1, Outbound: 1}}}, backend.ErrBadSpec,
			"must be at least 1"},
		{"bad code", backend.Spec{Code: "a b", Configuration: "Redis-1", DBMS: "Redis"}, backend.ErrInvalidName, `code "a b" is not a label value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := catalog.Lookup(tc.spec.DBMS)
			if err != nil {
				t.Fatal(err)
			}
			_, err = buildObjects(e, tc.spec, "ns")
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %v containing %q", err, tc.is, tc.want)
			}
		})
	}
}

// Every SUT of the catalog requires its own password, and no object holds
// it: each container that logs in or serves (servers, pools, exporters,
// bootstrap and schema Jobs) gets it from the SUT's own Secret by
// reference, first in its env so that $(BENCHQ_SUT_PASSWORD) expands after
// it; no variable holds a password as a value; PostgreSQL trusts nobody;
// Redis and Dragonfly are started with requirepass.
func TestEverySUTRequiresThePasswordByReference(t *testing.T) {
	for _, tc := range goldenCases() {
		o := buildCase(t, tc, goldenNamespace)
		secret := "bq-" + strings.ToLower(tc.spec.Code+"-"+tc.spec.Configuration) + "-password"
		var pods []corev1.PodSpec
		for _, d := range o.Deployments {
			pods = append(pods, d.Spec.Template.Spec)
		}
		for _, s := range o.StatefulSets {
			pods = append(pods, s.Spec.Template.Spec)
		}
		for _, j := range o.Jobs {
			pods = append(pods, j.Spec.Template.Spec)
		}
		required := false
		for _, p := range pods {
			for _, c := range p.Containers {
				at := slices.IndexFunc(c.Env, func(v corev1.EnvVar) bool { return v.Name == startup.SUTPasswordEnv })
				if at < 0 || c.Env[at].ValueFrom == nil || c.Env[at].ValueFrom.SecretKeyRef == nil ||
					c.Env[at].ValueFrom.SecretKeyRef.Name != secret || c.Env[at].ValueFrom.SecretKeyRef.Key != startup.SUTPasswordEnv {
					t.Errorf("%s: container %s lacks %s from Secret %s", tc.name, c.Name, startup.SUTPasswordEnv, secret)
					continue
				}
				for _, v := range c.Env[:at] {
					if strings.Contains(v.Value, "$(") {
						t.Errorf("%s: container %s: %s comes before the password it may use", tc.name, c.Name, v.Name)
					}
				}
				for _, v := range c.Env {
					if strings.Contains(strings.ToUpper(v.Name), "PASS") && v.Value != "" && v.Value != "$("+startup.SUTPasswordEnv+")" {
						t.Errorf("%s: container %s: %s=%q holds a value", tc.name, c.Name, v.Name, v.Value)
					}
					if v.Name == "POSTGRES_HOST_AUTH_METHOD" {
						t.Errorf("%s: container %s sets %s=%s", tc.name, c.Name, v.Name, v.Value)
					}
					required = required || v.Name == "POSTGRES_PASSWORD" || v.Name == "DB_PASSWORD"
				}
				args := strings.Join(c.Args, " ")
				required = required || strings.Contains(args, "--requirepass $(") || strings.Contains(args, "--requirepass=$(")
			}
		}
		if e, err := catalog.Lookup(tc.spec.DBMS); err == nil && e.IsTSDB() {
			// Carbon's plaintext protocol has no authentication at all:
			// a time-series database is open to its namespace
			// (docs/security.md, "Not covered yet").
			continue
		}
		if !required {
			t.Errorf("%s: no server of it requires the password", tc.name)
		}
	}
}

// Graphite without -nw is one pod, and with -nw 2 a relay pod in front of
// two cache pods that it is given by name (no bootstrap Job). Either way the
// Service clients reach carries the ports they use: carbon's,
// graphite-web's and its stored points'; in the cluster those are the
// relay pod's, and only its metrics port is named metrics (Prometheus
// scrapes the relay's gathered counts, not each cache's again); the relay,
// holding no series, keeps no reusable volume. A DBMS
// with workers but no kubernetes.cluster is refused with the way out.
func TestGraphiteOnKubernetes(t *testing.T) {
	g, err := catalog.Lookup("Graphite")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"client": 2003, "query": 8080, "metrics": 9108}
	servicePorts := func(s *corev1.Service) map[string]int {
		got := map[string]int{}
		for _, p := range s.Spec.Ports {
			got[p.Name] = int(p.Port)
		}
		return got
	}
	spec := backend.Spec{Code: goldenCode, Configuration: "Graphite-1", DBMS: "Graphite", Benchmark: "tsdb"}
	o, err := buildObjects(g, spec, "benchq")
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(o.Endpoint.Ports, want) || !maps.Equal(servicePorts(o.Services[0]), want) {
		t.Errorf("one pod: endpoint ports %v, service ports %v; want %v", o.Endpoint.Ports, servicePorts(o.Services[0]), want)
	}

	spec.SUT = &contracts.SUTSpec{Workers: 2}
	o, err = buildObjects(g, spec, "benchq")
	if err != nil {
		t.Fatal(err)
	}
	if len(o.StatefulSets) != 1 || *o.StatefulSets[0].Spec.Replicas != 2 || len(o.Deployments) != 1 || len(o.Jobs) != 0 {
		t.Fatalf("-nw 2: %d StatefulSets, %d Deployments, %d Jobs; want a StatefulSet of 2 caches, the relay's Deployment and no Job",
			len(o.StatefulSets), len(o.Deployments), len(o.Jobs))
	}
	cache, relay := o.StatefulSets[0].Spec.Template.Spec.Containers[0], o.Deployments[0].Spec.Template.Spec.Containers[0]
	workers := o.Names.Workers + ".benchq.svc"
	if !slices.Contains(cache.Args, "-role=cache") || !slices.Contains(relay.Args, "-role=relay") ||
		!slices.Contains(relay.Args, "-caches="+o.Names.Workers+"-0."+workers+","+o.Names.Workers+"-1."+workers) {
		t.Errorf("cache args %q, relay args %q", cache.Args, relay.Args)
	}
	for _, p := range cache.Ports {
		if p.Name == "metrics" {
			t.Errorf("a cache pod's port %d is named metrics: Prometheus would count its points twice", p.ContainerPort)
		}
	}
	// The rename is the catalog's word (master.gathers_metrics), not
	// every master's: without it the caches keep their metrics port.
	k8s, cl, m := *g.Kubernetes, *g.Kubernetes.Cluster, *g.Kubernetes.Cluster.Master
	m.GathersMetrics, cl.Master, k8s.Cluster = false, &m, &cl
	own := g
	own.Kubernetes = &k8s
	if o2, err := buildObjects(own, spec, "benchq"); err != nil {
		t.Fatal(err)
	} else if !slices.ContainsFunc(o2.StatefulSets[0].Spec.Template.Spec.Containers[0].Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" }) {
		t.Errorf("a master that does not gather its workers' metrics: the caches' metrics port was renamed")
	}
	front := o.Services[len(o.Services)-1]
	if !maps.Equal(o.Endpoint.Ports, want) || !maps.Equal(servicePorts(front), want) || front.Spec.Selector[labelComponent] != componentSUT ||
		o.Endpoint.Host != o.Names.Base+".benchq.svc" {
		t.Errorf("-nw 2: endpoint %+v, front service %s ports %v selecting %v; want %v on the relay's",
			o.Endpoint, front.Name, servicePorts(front), front.Spec.Selector, want)
	}

	// With -rst the series live on the caches' volumes, which are not
	// reused: the relay keeps no reusable volume (the use case is never
	// marked loaded by it), only scratch, and -rss sizes the caches'
	// volumes, not the relay's scratch (500Gi of ephemeral storage could
	// leave it unschedulable).
	spec.SUT = &contracts.SUTSpec{Workers: 2, Storage: &contracts.Storage{Class: "shared", Size: "500Gi"}}
	o, err = buildObjects(g, spec, "benchq")
	if err != nil {
		t.Fatal(err)
	}
	if vols := o.Deployments[0].Spec.Template.Spec.Volumes; o.Volume != nil || len(vols) != 1 || vols[0].EmptyDir == nil ||
		vols[0].EmptyDir.SizeLimit != nil || len(o.StatefulSets[0].Spec.VolumeClaimTemplates) != 1 {
		t.Errorf("-nw 2 -rst shared -rss 500Gi: reusable volume %v, relay volumes %+v, cache claims %d; want none, an emptyDir without a limit, one",
			o.Volume, vols, len(o.StatefulSets[0].Spec.VolumeClaimTemplates))
	}
	for _, c := range o.Deployments[0].Spec.Template.Spec.Containers {
		if q, ok := c.Resources.Requests[corev1.ResourceEphemeralStorage]; ok {
			t.Errorf("-rst shared -rss 500Gi: the relay's %s requests %s of ephemeral storage", c.Name, q.String())
		}
	}
	if claims := o.StatefulSets[0].Spec.VolumeClaimTemplates; len(claims) == 1 {
		if q := claims[0].Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "500Gi" {
			t.Errorf("-rss 500Gi: the caches' claims request %s", q.String())
		}
	}

	noCluster := g
	k := *g.Kubernetes
	k.Cluster = nil
	noCluster.Kubernetes = &k
	_, err = buildObjects(noCluster, spec, "benchq")
	if !errors.Is(err, backend.ErrBadSpec) || !strings.Contains(err.Error(), "Graphite with -nw 2") || !strings.Contains(err.Error(), "local backend only (BENCHQ_BACKEND=local)") {
		t.Errorf("workers without kubernetes.cluster on kubernetes: %v", err)
	}
}

// BENCHQ_SUT_IMAGES replaces a DBMS's catalog image in its server
// containers, a pool's backend's too, and nothing else (an exporter keeps
// its own); a DBMS the catalog lacks, or a pair without an image, is
// refused by name.
func TestSUTImagesReplaceTheCatalogs(t *testing.T) {
	images, err := ParseImages(" Graphite=reg.example/bq/graphite:1, postgresql=reg.example/postgres:15 ")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dbms, want string
		sut        *contracts.SUTSpec
	}{
		{"Graphite", "reg.example/bq/graphite:1", nil},
		{"PgBouncer", "reg.example/postgres:15", &contracts.SUTSpec{Monitoring: &contracts.Monitoring{Application: true}}},
	} {
		e, err := catalog.Lookup(c.dbms)
		if err != nil {
			t.Fatal(err)
		}
		o, err := buildObjects(e, backend.Spec{Code: goldenCode, Configuration: c.dbms + "-1", DBMS: c.dbms, Benchmark: "ycsb", SUT: c.sut}, "benchq")
		if err != nil {
			t.Fatal(err)
		}
		o.replaceImages(images)
		replaced := 0
		for _, d := range o.Deployments {
			for _, ct := range d.Spec.Template.Spec.Containers {
				if ct.Image == c.want {
					replaced++
					if ct.Name != "dbms" {
						t.Errorf("%s: container %s got %s", c.dbms, ct.Name, ct.Image)
					}
				}
			}
		}
		if replaced != 1 {
			t.Errorf("%s: %d containers run %s, want the one server", c.dbms, replaced, c.want)
		}
	}
	for _, bad := range []string{"MongoDB=mongo:7", "Graphite", "Graphite="} {
		if _, err := ParseImages(bad); err == nil || !strings.Contains(err.Error(), strings.Split(bad, "=")[0]) {
			t.Errorf("ParseImages(%q): %v", bad, err)
		}
	}
}
