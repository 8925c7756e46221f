package catalog

import (
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Topologies: the shape of a DBMS's objects in Kubernetes.
const (
	// TopologySingle is one server: a Deployment and a Service.
	TopologySingle = "single"
	// TopologyCluster is -nw workers (× 1 + -nwr replicas) in a StatefulSet
	// behind a headless Service, an optional master pod, and a bootstrap Job
	// that forms the cluster.
	TopologyCluster = "cluster"
	// TopologyPool is a connection pool Deployment (-xnpp pods, -xnpi/-xnpo
	// connections) in front of another catalog DBMS, its backend.
	TopologyPool = "pool"
)

// Kubernetes is how the kubernetes backend runs a DBMS. Strings in Args,
// Env, commands and probes may hold placeholders the backend fills in:
// {port} (the client port), {workers_service} (a cluster's headless
// Service), {worker_hosts} (a cluster's worker pods' DNS names, comma
// separated), {namespace}, {database}, {user}, {backend_host} and
// {backend_port} (a pool's backend Service), {inbound_per_pod},
// {outbound_per_pod} and {max_client_conn} (a pool's limits per pod; the
// last is the inbound share and one for the admin console, which the
// exporter keeps open: contracts.Pool); Kubernetes' own $(VAR) references
// to the container's environment work as usual.
type Kubernetes struct {
	Topology string `json:"topology"`
	// Command replaces the image's entrypoint (rarely needed); Args are
	// given to it, followed by one SettingArgs group per entry of the
	// entry's Settings (sorted by name).
	Command []string          `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// SettingArgs turns one setting into arguments: {name} and {value}
	// are replaced, e.g. ["-c", "{name}={value}"] for PostgreSQL.
	SettingArgs []string `json:"setting_args,omitempty"`
	// Ports beyond the entry's "client" port (cluster bus, admin), by
	// name; they go on the container and the Services.
	Ports     map[string]int `json:"ports,omitempty"`
	Readiness Probe          `json:"readiness"`
	// DataPath is where the data volume (PVC, or emptyDir) is mounted; a
	// pool has none.
	DataPath string `json:"data_path,omitempty"`
	// RunAsUser, for an image that runs as a non-root user of its own
	// (benchq's: 10001), is that user's uid: the server container runs
	// as it with no capability, and the pod's fsGroup lets it write the
	// data volume. 0: the image starts as root and steps down (most DBMS
	// images).
	RunAsUser int64 `json:"run_as_user,omitempty"`
	// CPULimitArgs are added to Args when the server has a CPU limit (-lc),
	// {cpus} in them the limit rounded up: for a server that otherwise
	// sizes its threads by the node's cores, which a pod with a CPU limit
	// cannot all use (Dragonfly's --proactor_threads).
	CPULimitArgs []string `json:"cpu_limit_args,omitempty"`
	// Resources are the DBMS container's defaults; -rc, -rr, -lr win.
	Resources Resources `json:"resources"`
	// Exporter is the Prometheus exporter sidecar for application metrics
	// (started with -ma); nil when the DBMS serves its own /metrics
	// (MetricsPort then names the port).
	Exporter    *Exporter `json:"exporter,omitempty"`
	MetricsPort int       `json:"metrics_port,omitempty"`
	// Metrics names the application metric set (queries, dashboards).
	Metrics string `json:"metrics"`
	// Cluster: for topology "cluster"; or beside topology "single" of an
	// entry with workers (Graphite), the cluster it runs as with -nw.
	Cluster *Cluster `json:"cluster,omitempty"`
	// Pool: topology "pool" only.
	Pool *Pool `json:"pool,omitempty"`
	// Schema runs the entry's schema statements (YCSB.Schema) as a Job once
	// the SUT is ready; the statements are in its env BENCHQ_SCHEMA. Nil
	// for DBMSs without a schema.
	Schema *Job `json:"schema,omitempty"`
}

// Probe is a readiness probe: a command (Exec) or a TCP connect to the
// named port (TCPPort, e.g. "client").
type Probe struct {
	Exec                []string `json:"exec,omitempty"`
	TCPPort             string   `json:"tcp_port,omitempty"`
	InitialDelaySeconds int32    `json:"initial_delay_s,omitempty"`
	PeriodSeconds       int32    `json:"period_s,omitempty"`
}

// Resources in Kubernetes quantity syntax.
type Resources struct {
	RequestCPU    string `json:"request_cpu,omitempty"`
	RequestMemory string `json:"request_memory,omitempty"`
	LimitMemory   string `json:"limit_memory,omitempty"`
}

// Exporter is a sidecar container exposing Prometheus metrics on Port.
type Exporter struct {
	Image string            `json:"image"`
	Port  int               `json:"port"`
	Args  []string          `json:"args,omitempty"`
	Env   map[string]string `json:"env,omitempty"`
}

// Cluster describes a multi-node DBMS.
type Cluster struct {
	// Master is a coordinator pod (component sut) in front of the workers,
	// for DBMSs that have one; clients then connect to it. Without one,
	// the client Service selects the workers.
	Master *Master `json:"master,omitempty"`
	// WorkerArgs are added to Args for worker pods.
	WorkerArgs []string `json:"worker_args,omitempty"`
	// MinMasters is the smallest number of -nw workers the DBMS accepts;
	// DefaultWorkers is used when the request gives none.
	MinMasters     int `json:"min_masters"`
	DefaultWorkers int `json:"default_workers"`
	// Replication is how -nwr replicates: "" (replicas each), -nw masters
	// each with -nwr replicas, -nw × (1 + -nwr) workers, as bexhoma's Redis
	// does; ReplicationMasterCopy, one master holding every key and the
	// other -nw − 1 workers copying it, as bexhoma's Dragonfly does ("only
	// the basic master-copy replication": it sets -nwr to workers − 1).
	Replication string `json:"replication,omitempty"`
	// Bootstrap forms the cluster once every pod is ready. Its env holds
	// BENCHQ_NODES (the workers' DNS names, masters first, space
	// separated), BENCHQ_MASTERS and BENCHQ_REPLICAS (the masters and the
	// replicas of each, as Entry.Shape makes them of -nw and -nwr) and
	// BENCHQ_PORT (the client port). None (no image) for a cluster that
	// forms by itself: a master that is given its workers
	// ({worker_hosts}).
	Bootstrap Job `json:"bootstrap,omitzero"`
}

// ReplicationMasterCopy: with -nwr, one master and -nw − 1 copies of it
// (Cluster.Replication).
const ReplicationMasterCopy = "master-copy"

// Master is the coordinator pod of a cluster. It keeps the reusable data
// volume (-rst), unless it is Stateless: it holds none of the data
// (Graphite's relay), its data path is scratch, and the cluster's data
// lives on the workers' volumes, which are not reused.
//
// GathersMetrics says the master's own /metrics carries its workers'
// counts (Graphite's relay gathers its caches' stored points, each under
// a cache label). Prometheus then scrapes the master only: the workers'
// metrics port is renamed (worker-metrics) and their scrape annotations
// dropped, so that no point is counted twice.
type Master struct {
	Args           []string `json:"args,omitempty"`
	Stateless      bool     `json:"stateless,omitempty"`
	GathersMetrics bool     `json:"gathers_metrics,omitempty"`
}

// Pool describes a connection pool in front of Backend.
type Pool struct {
	// Backend is the catalog name of the DBMS behind the pool.
	Backend string `json:"backend"`
	// Defaults when the configuration gives no pool: pods, and inbound and
	// outbound connections in total (each pod gets its share, rounded up).
	Pods     int `json:"pods"`
	Inbound  int `json:"inbound"`
	Outbound int `json:"outbound"`
}

// Job is a one-off container run by the backend.
type Job struct {
	Image   string   `json:"image"`
	Command []string `json:"command"`
}

// KubePort is the port of a role in the kubernetes backend's pods:
// "client", "metrics" (the DBMS's own /metrics, or its exporter's), or one
// of kubernetes.ports; 0 for none.
func (e Entry) KubePort(role string) int {
	switch k := e.Kubernetes; {
	case role == "client":
		return e.Ports["client"]
	case role == "metrics" && k.Exporter != nil:
		return k.Exporter.Port
	case role == "metrics":
		return k.MetricsPort
	default:
		return k.Ports[role]
	}
}

// OnVolume is e as it runs with a persistent volume: its Settings with its
// VolumeSettings added (they win).
func (e Entry) OnVolume() Entry {
	if len(e.VolumeSettings) == 0 {
		return e
	}
	s := maps.Clone(e.Settings)
	if s == nil {
		s = map[string]string{}
	}
	maps.Copy(s, e.VolumeSettings)
	e.Settings = s
	return e
}

// SettingArgsList returns the server arguments for the entry's settings:
// SettingArgs once per setting, sorted by name.
func (e Entry) SettingArgsList() []string {
	if e.Kubernetes == nil || len(e.Kubernetes.SettingArgs) == 0 {
		return nil
	}
	names := make([]string, 0, len(e.Settings))
	for n := range e.Settings {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		r := strings.NewReplacer("{name}", n, "{value}", e.Settings[n])
		for _, a := range e.Kubernetes.SettingArgs {
			out = append(out, r.Replace(a))
		}
	}
	return out
}

func (k *Kubernetes) validate(e Entry) error {
	var errs []error
	need := func(ok bool, field, what string) {
		if !ok {
			errs = append(errs, fmt.Errorf("kubernetes.%s: %s", field, what))
		}
	}
	need(k.Topology == TopologySingle || k.Topology == TopologyCluster || k.Topology == TopologyPool,
		"topology", `must be "single", "cluster" or "pool"`)
	need((len(k.Readiness.Exec) > 0) != (k.Readiness.TCPPort != ""), "readiness", "exactly one of exec or tcp_port")
	if k.Readiness.TCPPort != "" {
		need(k.Readiness.TCPPort == "client" || k.Ports[k.Readiness.TCPPort] > 0, "readiness.tcp_port", "must name a port (client or one of kubernetes.ports)")
	}
	need(strings.HasPrefix(k.DataPath, "/") || (k.Topology == TopologyPool && k.DataPath == ""), "data_path", "required (but for a pool), an absolute path")
	need(k.Metrics != "", "metrics", "required (the application metric set)")
	need(k.RunAsUser >= 0, "run_as_user", "a uid, not negative (0: the image steps down from root itself)")
	for name, p := range k.Ports {
		need(p > 0 && p < 65536 && name != "client" && name != "metrics" && len(name) <= 15, "ports."+name, "1-65535, a name of at most 15 characters other than client and metrics")
	}
	for field, q := range map[string]string{"request_cpu": k.Resources.RequestCPU, "request_memory": k.Resources.RequestMemory, "limit_memory": k.Resources.LimitMemory} {
		if q != "" {
			_, err := resource.ParseQuantity(q)
			need(err == nil, "resources."+field, fmt.Sprintf("%q is not a Kubernetes quantity", q))
		}
	}
	if k.Exporter != nil {
		need(k.Exporter.Image != "", "exporter.image", "required")
		need(k.Exporter.Port > 0 && k.Exporter.Port < 65536, "exporter.port", "required, 1-65535")
		need(k.MetricsPort == 0, "metrics_port", "not with an exporter (the exporter's port is the metrics port)")
	}
	need(k.Topology != TopologyCluster || k.Cluster != nil, "cluster", `required for topology "cluster"`)
	need(k.Cluster == nil || k.Topology == TopologyCluster || (k.Topology == TopologySingle && e.Workers != nil),
		"cluster", `only for topology "cluster", or topology "single" with workers (the cluster -nw runs as)`)
	if c := k.Cluster; c != nil {
		need(c.MinMasters >= 1, "cluster.min_masters", "at least 1")
		need(c.DefaultWorkers >= c.MinMasters, "cluster.default_workers", "at least min_masters")
		need(c.Replication == "" || c.Replication == ReplicationMasterCopy, "cluster.replication", `"" (replicas each) or "`+ReplicationMasterCopy+`"`)
		need(c.Replication == "" || c.MinMasters == 1, "cluster.replication", "master-copy needs min_masters 1: its cluster has one master")
		need((c.Bootstrap.Image != "") == (len(c.Bootstrap.Command) > 0), "cluster.bootstrap", "image and command, or neither (a cluster that forms by itself)")
		need(c.Bootstrap.Image != "" || c.Master != nil, "cluster.bootstrap", "required without a master: nothing else would form the cluster")
		need(c.Master == nil || !c.Master.GathersMetrics || k.Exporter == nil, "cluster.master.gathers_metrics",
			"not with an exporter: the master's own /metrics must be what Prometheus scrapes")
		need(c.Master == nil || !c.Master.GathersMetrics || k.MetricsPort != 0, "cluster.master.gathers_metrics",
			"needs metrics_port: Prometheus would scrape neither the master nor the workers")
	}
	need((k.Topology == TopologyPool) == (k.Pool != nil), "pool", `required for topology "pool", and only there`)
	if p := k.Pool; p != nil {
		need(p.Backend != "" && !strings.EqualFold(p.Backend, e.Name), "pool.backend", "required, another catalog DBMS")
		need(p.Pods >= 1 && p.Inbound >= 1 && p.Outbound >= 1, "pool", "pods, inbound and outbound defaults must be at least 1")
	}
	if k.Schema != nil {
		need(k.Schema.Image != "" && len(k.Schema.Command) > 0, "schema", "image and command required")
	}
	need(k.Schema != nil || len(e.YCSB.Schema) == 0, "schema", "required when ycsb.schema has statements (the Job that runs them)")
	return errors.Join(errs...)
}
