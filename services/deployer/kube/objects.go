package kube

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/startup"
	"github.com/benchq/benchq/services/deployer/backend"
)

// defaultVolumeSize is the size of a volume given a storage class (-rst)
// but no size (-rss).
const defaultVolumeSize = "10Gi"

// kubeObjects are the objects of one configuration, built by buildObjects
// from the catalog and the spec alone: no I/O.
type kubeObjects struct {
	Names kubeNames
	// Volume is the PVC reused across experiments (storage class given);
	// it carries no experiment label, so teardown keeps it.
	Volume       *corev1.PersistentVolumeClaim
	Services     []*corev1.Service
	Deployments  []*appsv1.Deployment
	StatefulSets []*appsv1.StatefulSet
	// Jobs run in this order once every pod is ready: the cluster
	// bootstrap, then the schema.
	Jobs     []*batchv1.Job
	Endpoint contracts.Endpoint
	// Image of the DBMS (or pool) clients talk to, for Info.
	Image string
	// Ignored names the spec's fields that do not apply to this DBMS.
	Ignored []string
	// Args and Resources are the DBMS server container's, for Info (the
	// summary's Connections: args, requests_cpu, limits_memory, ...).
	Args      []string
	Resources corev1.ResourceRequirements
}

// ParseImages reads the deployer's SUT image overrides, "DBMS=image,…"
// (BENCHQ_SUT_IMAGES), into catalog image → image; a DBMS the catalog does
// not have, or a pair without "=", is an error naming it.
func ParseImages(s string) (map[string]string, error) {
	out := map[string]string{}
	for pair := range strings.SplitSeq(s, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		name, image, ok := strings.Cut(pair, "=")
		if !ok || strings.TrimSpace(image) == "" {
			return nil, fmt.Errorf("SUT image %q: want DBMS=image, e.g. Graphite=registry.example/benchq/graphite:1", pair)
		}
		e, err := catalog.Lookup(strings.TrimSpace(name))
		if err != nil {
			return nil, fmt.Errorf("SUT image %q: %w", pair, err)
		}
		out[e.Image] = strings.TrimSpace(image)
	}
	return out, nil
}

// replaceImages gives the DBMS containers (a pool's backend's too) the
// images that replace their catalog images.
func (o *kubeObjects) replaceImages(images map[string]string) {
	swap := func(spec *corev1.PodSpec) {
		for i := range spec.Containers {
			if img, ok := images[spec.Containers[i].Image]; ok && spec.Containers[i].Name == "dbms" {
				spec.Containers[i].Image = img
			}
		}
	}
	for _, d := range o.Deployments {
		swap(&d.Spec.Template.Spec)
	}
	for _, st := range o.StatefulSets {
		swap(&st.Spec.Template.Spec)
	}
	if img, ok := images[o.Image]; ok {
		o.Image = img
	}
}

// builder holds what every object of one configuration shares.
type builder struct {
	entry     catalog.Entry
	spec      backend.Spec
	sut       contracts.SUTSpec
	names     kubeNames
	namespace string
	server    *corev1.Container // the first DBMS server container built
}

// buildObjects returns the exact objects of configuration s of DBMS entry
// in namespace.
func buildObjects(entry catalog.Entry, s backend.Spec, namespace string) (*kubeObjects, error) {
	topology := entry.Kubernetes.Topology
	if entry.Workers != nil && s.SUT != nil && s.SUT.Workers > 0 {
		if entry.Kubernetes.Cluster == nil {
			return nil, fmt.Errorf("%w: %s with -nw %d (a cluster of %d behind a front server) runs on the local backend only (BENCHQ_BACKEND=local); on Kubernetes run it without -nw: one server in one pod", backend.ErrBadSpec, entry.Name, s.SUT.Workers, s.SUT.Workers)
		}
		topology = catalog.TopologyCluster // its kubernetes.cluster
	}
	names, err := namesFor(s.Code, s.Configuration)
	if err != nil {
		return nil, err
	}
	b := &builder{entry: entry, spec: s, names: names, namespace: namespace}
	if s.SUT != nil {
		b.sut = *s.SUT
	}
	o := &kubeObjects{Names: names, Image: entry.Image}
	switch topology {
	case catalog.TopologySingle:
		err = b.single(o)
	case catalog.TopologyCluster:
		err = b.cluster(o)
	case catalog.TopologyPool:
		err = b.pool(o)
	default:
		err = fmt.Errorf("%w: DBMS %s has topology %q", backend.ErrBadSpec, entry.Name, entry.Kubernetes.Topology)
	}
	if err != nil {
		return nil, err
	}
	if topology != catalog.TopologyCluster && (b.sut.Workers > 0 || b.sut.WorkerReplicas > 0) {
		o.Ignored = append(o.Ignored, "workers")
	}
	if entry.Kubernetes.Topology != catalog.TopologyPool && b.sut.Pool != nil {
		o.Ignored = append(o.Ignored, "pool")
	}
	if b.server != nil {
		o.Args, o.Resources = b.server.Args, b.server.Resources
	}
	return o, nil
}

// single: a Deployment and the Service clients connect to.
func (b *builder) single(o *kubeObjects) error {
	pod, vol, err := b.serverPod(b.entry, b.replacer(b.entry, nil), componentSUT, nil, true)
	if err != nil {
		return err
	}
	o.Volume = vol
	o.Deployments = append(o.Deployments, b.deployment(b.names.Base, componentSUT, pod))
	o.Services = append(o.Services, b.service(b.entry, b.names.Base, componentSUT, componentSUT, false))
	o.Jobs = append(o.Jobs, b.schemaJob(b.entry, b.host(b.names.Base))...)
	o.Endpoint = b.entry.Endpoint(b.host(b.names.Base), b.entry.Ports["client"])
	if t := tsdbPorts(b.entry); len(t) > 0 {
		o.Endpoint.Ports = t // on its Service too
	}
	return nil
}

// tsdbPorts are the ports a time-series database's roles name (carbon's
// listener, the query API, the /metrics of its stored points), by role;
// nil for another DBMS.
func tsdbPorts(e catalog.Entry) map[string]int {
	t := e.TSDB
	if t == nil {
		return nil
	}
	out := map[string]int{}
	for _, role := range []string{t.CarbonPort, t.QueryPort, t.MetricsPort} {
		if role != "" {
			out[role] = e.KubePort(role)
		}
	}
	return out
}

// cluster: a StatefulSet of workers behind a headless Service, the master
// where the DBMS has one, the client Service, and the bootstrap Job.
func (b *builder) cluster(o *kubeObjects) error {
	c := b.entry.Kubernetes.Cluster
	masters := b.sut.Workers
	if masters == 0 {
		masters = c.DefaultWorkers
	}
	if masters < c.MinMasters {
		return fmt.Errorf("%w: %s needs at least %d workers (-nw), got %d", backend.ErrBadSpec, b.entry.Name, c.MinMasters, masters)
	}
	if b.sut.WorkerReplicas < 0 {
		return fmt.Errorf("%w: worker replicas (-nwr) must not be negative, got %d", backend.ErrBadSpec, b.sut.WorkerReplicas)
	}
	if err := checkStatefulSetName(b.names.Workers); err != nil {
		return err
	}
	nodes := masters * (1 + b.sut.WorkerReplicas)
	port := b.entry.Ports["client"]
	podHosts := make([]string, nodes)
	hosts := make([]string, nodes)
	for i := range hosts {
		podHosts[i] = fmt.Sprintf("%s-%d.%s", b.names.Workers, i, b.host(b.names.Workers))
		hosts[i] = podHosts[i] + ":" + strconv.Itoa(port)
	}
	r := b.replacer(b.entry, map[string]string{"{worker_hosts}": strings.Join(podHosts, ",")})
	pod, _, err := b.serverPod(b.entry, r, componentWorker, c.WorkerArgs, false)
	if err != nil {
		return err
	}
	workers := b.service(b.entry, b.names.Workers, componentWorker, componentWorker, true)
	if c.Master != nil && c.Master.GathersMetrics {
		// The master's own /metrics speaks for the cluster (a
		// carbon-relay's gathers its caches' counts): Prometheus, which
		// scrapes the ports named metrics (or annotated), must not count
		// the workers' again.
		delete(pod.Annotations, "prometheus.io/scrape")
		delete(pod.Annotations, "prometheus.io/port")
		for i, p := range pod.Spec.Containers[0].Ports {
			if p.Name == "metrics" {
				pod.Spec.Containers[0].Ports[i].Name = workerMetricsPort
			}
		}
		for i, p := range workers.Spec.Ports {
			if p.Name == "metrics" {
				workers.Spec.Ports[i].Name, workers.Spec.Ports[i].TargetPort = workerMetricsPort, intstr.FromString(workerMetricsPort)
			}
		}
	}
	var claim *resource.Quantity
	if st := b.sut.Storage; st != nil && st.Class != "" {
		q, err := quantity("storage.size", cmp.Or(st.Size, defaultVolumeSize))
		if err != nil {
			return err
		}
		claim = &q
	}
	o.StatefulSets = append(o.StatefulSets, b.statefulSet(int32(nodes), pod, claim))
	o.Services = append(o.Services, workers)
	front := componentWorker
	if c.Master != nil {
		front = componentSUT
		// The master keeps the reusable volume, unless it holds no data;
		// workers have their own.
		mpod, vol, err := b.serverPod(b.entry, r, componentSUT, c.Master.Args, !c.Master.Stateless)
		if err != nil {
			return err
		}
		o.Volume = vol
		o.Deployments = append(o.Deployments, b.deployment(b.names.Base, componentSUT, mpod))
	}
	o.Services = append(o.Services, b.service(b.entry, b.names.Base, componentSUT, front, false))
	o.Jobs = append(o.Jobs, b.bootstrapJob(c, r, hosts, masters)...)
	o.Jobs = append(o.Jobs, b.schemaJob(b.entry, b.host(b.names.Base))...)
	o.Endpoint = b.entry.Endpoint(b.host(b.names.Base), port)
	if t := tsdbPorts(b.entry); len(t) > 0 {
		o.Endpoint.Ports = t // on the master's Service too
	}
	return nil
}

// workerMetricsPort names a cluster's workers' own metrics port when its
// master's speaks for them.
const workerMetricsPort = "worker-metrics"

// bootstrapJob is the Job that forms the cluster once every pod is ready;
// none for a cluster that forms by itself.
func (b *builder) bootstrapJob(c *catalog.Cluster, r *strings.Replacer, hosts []string, masters int) []*batchv1.Job {
	if c.Bootstrap.Image == "" {
		return nil
	}
	port := b.entry.Ports["client"]
	env := []corev1.EnvVar{
		{Name: "BENCHQ_NODES", Value: strings.Join(hosts, " ")},
		{Name: "BENCHQ_MASTERS", Value: strconv.Itoa(masters)},
		{Name: "BENCHQ_REPLICAS", Value: strconv.Itoa(b.sut.WorkerReplicas)},
		{Name: "BENCHQ_PORT", Value: strconv.Itoa(port)},
		b.passwordEnv(),
	}
	if c.Master != nil {
		env = append(env, corev1.EnvVar{Name: "BENCHQ_MASTER", Value: fmt.Sprintf("%s:%d", b.host(b.names.Base), port)})
	}
	return []*batchv1.Job{b.job(b.names.Bootstrap, componentWorker, corev1.Container{
		Name: "bootstrap", Image: c.Bootstrap.Image, Command: replaceAll(r, c.Bootstrap.Command), Env: env,
	})}
}

// pool: the backend DBMS (Deployment and Service <base>-db), the pool
// Deployment, and the Service clients connect to in front of the pool.
func (b *builder) pool(o *kubeObjects) error {
	p := b.entry.Kubernetes.Pool
	server, err := catalog.Lookup(p.Backend)
	if err != nil {
		return fmt.Errorf("%w: pool %s: %w", backend.ErrBadSpec, b.entry.Name, err)
	}
	if server.Kubernetes == nil || server.Kubernetes.Topology != catalog.TopologySingle {
		return fmt.Errorf("%w: pool %s: its backend %s must be a single-host DBMS", backend.ErrBadSpec, b.entry.Name, server.Name)
	}
	size := contracts.Pool{Pods: p.Pods, Inbound: p.Inbound, Outbound: p.Outbound}
	if b.sut.Pool != nil {
		size = *b.sut.Pool
	}
	if size.Pods < 1 || size.Inbound < 1 || size.Outbound < 1 {
		return fmt.Errorf("%w: pool pods, inbound and outbound connections (-xnpp, -xnpi, -xnpo) must be at least 1, got %d, %d, %d",
			backend.ErrBadSpec, size.Pods, size.Inbound, size.Outbound)
	}

	bpod, vol, err := b.serverPod(server, b.replacer(server, nil), componentSUT, nil, true)
	if err != nil {
		return err
	}
	o.Volume = vol
	o.Deployments = append(o.Deployments, b.deployment(b.names.Backend, componentSUT, bpod))
	o.Services = append(o.Services, b.service(server, b.names.Backend, componentSUT, componentSUT, false))

	r := b.replacer(b.entry, map[string]string{
		"{backend_host}":     b.host(b.names.Backend),
		"{backend_port}":     strconv.Itoa(server.Ports["client"]),
		"{inbound_per_pod}":  strconv.Itoa(size.InboundPerPod()),
		"{max_client_conn}":  strconv.Itoa(size.MaxClientConn()),
		"{outbound_per_pod}": strconv.Itoa(size.OutboundPerPod()),
	})
	ppod, _, err := b.serverPod(b.entry, r, componentPool, nil, false)
	if err != nil {
		return err
	}
	d := b.deployment(b.names.Pool, componentPool, ppod)
	d.Spec.Replicas = ptr.To(int32(size.Pods))
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}
	o.Deployments = append(o.Deployments, d)
	o.Services = append(o.Services, b.service(b.entry, b.names.Base, componentPool, componentPool, false))
	o.Jobs = append(o.Jobs, b.schemaJob(server, b.host(b.names.Backend))...)
	o.Endpoint = b.entry.Endpoint(b.host(b.names.Base), b.entry.Ports["client"])
	return nil
}

// host is the cluster DNS name of Service name.
func (b *builder) host(name string) string { return serviceHost(name, b.namespace) }

// serviceHost is the DNS name of Service name in namespace.
func serviceHost(name, namespace string) string { return name + "." + namespace + ".svc" }

// passwordEnv is the SUT's own password from its Secret (names.Password,
// made by Kube.ensurePassword; the kubelet reads it, the deployer never
// does). It comes first in a container's env, so
// that the catalog's {password}, written $(BENCHQ_SUT_PASSWORD), expands
// in the variables after it and in the args.
func (b *builder) passwordEnv() corev1.EnvVar {
	return corev1.EnvVar{Name: startup.SUTPasswordEnv, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: b.names.Password}, Key: startup.SUTPasswordEnv}}}
}

// replacer fills the catalog's placeholders for entry e.
func (b *builder) replacer(e catalog.Entry, extra map[string]string) *strings.Replacer {
	vars := map[string]string{
		"{password}":        "$(" + startup.SUTPasswordEnv + ")",
		"{port}":            strconv.Itoa(e.Ports["client"]),
		"{workers_service}": b.names.Workers,
		"{namespace}":       b.namespace,
		"{database}":        e.Database,
		"{user}":            e.User,
	}
	for name, port := range e.Kubernetes.Ports {
		vars["{port_"+name+"}"] = strconv.Itoa(port)
	}
	maps.Copy(vars, extra)
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		pairs = append(pairs, k, vars[k])
	}
	return strings.NewReplacer(pairs...)
}

func replaceAll(r *strings.Replacer, in []string) []string {
	if len(in) == 0 {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = r.Replace(s)
	}
	return out
}

// serverPod is the pod template of a DBMS server (or pool) of entry e. With
// volume, a storage class makes the data volume the PVC it returns;
// otherwise the data volume is an emptyDir (sized, with an ephemeral-storage
// request, when -rss is given). Cluster workers get their PVCs from the
// StatefulSet's claim template instead.
func (b *builder) serverPod(e catalog.Entry, r *strings.Replacer, component string, extraArgs []string, volume bool) (corev1.PodTemplateSpec, *corev1.PersistentVolumeClaim, error) {
	k := e.Kubernetes
	res, err := b.resources(e, component)
	if err != nil {
		return corev1.PodTemplateSpec{}, nil, err
	}
	var cpuArgs []string
	if lim, ok := res.Limits[corev1.ResourceCPU]; ok {
		cpus := strings.NewReplacer("{cpus}", strconv.FormatInt(max(1, (lim.MilliValue()+999)/1000), 10))
		cpuArgs = replaceAll(cpus, replaceAll(r, k.CPULimitArgs))
	}
	c := corev1.Container{
		Name:    "dbms",
		Image:   e.Image,
		Command: replaceAll(r, k.Command),
		// The CPU limit's args before the settings', so that a setting naming
		// the same flag (-xconfig) wins: the last of a flag counts.
		Args: slices.Concat(replaceAll(r, k.Args), replaceAll(r, extraArgs), cpuArgs, b.onVolume(e, volume).SettingArgsList()),
		Env: append([]corev1.EnvVar{{Name: "BENCHQ_POD_NAME", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}, b.passwordEnv()},
			envList(r, k.Env)...),
		Ports:           containerPorts(e),
		ReadinessProbe:  readiness(r, k.Readiness),
		SecurityContext: dbmsSecurity(),
	}
	if k.RunAsUser != 0 {
		c.SecurityContext = nonRootSecurity(k.RunAsUser)
	}
	c.Resources = res
	if component != componentPool && b.server == nil {
		b.server = &c
	}

	var vol *corev1.PersistentVolumeClaim
	var volumes []corev1.Volume
	if k.DataPath != "" {
		st := b.sut.Storage
		c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: k.DataPath}}
		switch {
		case st != nil && st.Class != "" && component == componentWorker:
			// the StatefulSet's volumeClaimTemplates
		case st != nil && st.Class != "" && volume:
			if vol, err = b.volume(e); err != nil {
				return corev1.PodTemplateSpec{}, nil, err
			}
			volumes = append(volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: vol.Name}}})
		case st != nil && st.Size != "" && st.Class == "":
			// -rss without -rst: the size as an ephemeral-storage request.
			// With -rst, the size is the volumes'; a stateless master (a
			// carbon-relay) keeps no series and gets a plain emptyDir.
			q, err := quantity("storage.size", st.Size)
			if err != nil {
				return corev1.PodTemplateSpec{}, nil, err
			}
			c.Resources.Requests[corev1.ResourceEphemeralStorage] = q
			volumes = append(volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &q}}})
		default:
			volumes = append(volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		}
	}

	pod := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labelsFor(b.spec, e.Name, component)},
		Spec: corev1.PodSpec{
			Containers:                   []corev1.Container{c},
			Volumes:                      volumes,
			AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks:           ptr.To(false),
			SecurityContext:              podSecurity(),
		},
	}
	if k.RunAsUser != 0 {
		pod.Spec.SecurityContext.FSGroup = ptr.To(k.RunAsUser) // the data volume is its user's
	}
	if b.sut.Node != "" {
		pod.Spec.NodeSelector = map[string]string{corev1.LabelHostname: b.sut.Node}
	}
	if b.sut.Monitoring != nil && b.sut.Monitoring.Application {
		port := k.MetricsPort
		if x := k.Exporter; x != nil {
			port = x.Port
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
				Name: "exporter", Image: x.Image, Args: replaceAll(r, x.Args), Env: append([]corev1.EnvVar{b.passwordEnv()}, envList(r, x.Env)...),
				Ports:           []corev1.ContainerPort{{Name: "metrics", ContainerPort: int32(x.Port), Protocol: corev1.ProtocolTCP}},
				SecurityContext: nonRootSecurity(nobodyUID),
			})
		}
		if port != 0 {
			pod.Annotations = map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": strconv.Itoa(port),
				annotationMetricsPort: metricsPortName(&pod.Spec, port)}
		}
	}
	return pod, vol, nil
}

// annotationMetricsPort names the container port Prometheus scrapes a pod
// on (deploy/k8s/prometheus.yaml keeps that port's target): "metrics" for
// an exporter's, "client" for a DBMS that serves its metrics where its
// clients connect (Dragonfly, VictoriaMetrics, Prometheus).
const annotationMetricsPort = "benchq.io/metrics-port"

// metricsPortName is the name of the container port number port of spec,
// which gets a port "metrics" on its first container when none has it.
func metricsPortName(spec *corev1.PodSpec, port int) string {
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			if int(p.ContainerPort) == port && p.Name != "" {
				return p.Name
			}
		}
	}
	c := &spec.Containers[0]
	c.Ports = append(c.Ports, corev1.ContainerPort{Name: "metrics", ContainerPort: int32(port), Protocol: corev1.ProtocolTCP})
	return "metrics"
}

func envList(r *strings.Replacer, env map[string]string) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, corev1.EnvVar{Name: k, Value: r.Replace(env[k])})
	}
	return out
}

// containerPorts: the client port, the DBMS's other ports, and the
// metrics port of its own that a time-series database's stored points are
// read from (Graphite's).
func containerPorts(e catalog.Entry) []corev1.ContainerPort {
	out := []corev1.ContainerPort{{Name: "client", ContainerPort: int32(e.Ports["client"]), Protocol: corev1.ProtocolTCP}}
	for _, name := range slices.Sorted(maps.Keys(e.Kubernetes.Ports)) {
		out = append(out, corev1.ContainerPort{Name: name, ContainerPort: int32(e.Kubernetes.Ports[name]), Protocol: corev1.ProtocolTCP})
	}
	if p, ok := tsdbPorts(e)["metrics"]; ok && e.Kubernetes.Exporter == nil {
		out = append(out, corev1.ContainerPort{Name: "metrics", ContainerPort: int32(p), Protocol: corev1.ProtocolTCP})
	}
	return out
}

// servicePorts: the client port, the DBMS's other ports (cluster bus,
// admin) on a headless Service only, a time-series database's ports that
// its clients use (carbon, queries, stored points), and the metrics port
// when an exporter runs.
func (b *builder) servicePorts(e catalog.Entry, headless bool) []corev1.ServicePort {
	var out []corev1.ServicePort
	tsdb := tsdbPorts(e)
	for _, p := range containerPorts(e) {
		if _, used := tsdb[p.Name]; p.Name == "client" || headless || used {
			out = append(out, corev1.ServicePort{Name: p.Name, Port: p.ContainerPort, TargetPort: intstr.FromString(p.Name), Protocol: corev1.ProtocolTCP})
		}
	}
	if x := e.Kubernetes.Exporter; x != nil && b.sut.Monitoring != nil && b.sut.Monitoring.Application {
		out = append(out, corev1.ServicePort{Name: "metrics", Port: int32(x.Port), TargetPort: intstr.FromString("metrics"), Protocol: corev1.ProtocolTCP})
	}
	return out
}

func readiness(r *strings.Replacer, p catalog.Probe) *corev1.Probe {
	probe := &corev1.Probe{InitialDelaySeconds: p.InitialDelaySeconds, PeriodSeconds: p.PeriodSeconds}
	if len(p.Exec) > 0 {
		probe.Exec = &corev1.ExecAction{Command: replaceAll(r, p.Exec)}
	} else {
		probe.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromString(p.TCPPort)}
	}
	return probe
}

// resources: the catalog's defaults, with -rc, -rr, -lr and -lc winning
// for the DBMS's servers (not for a pool, which sizes itself).
func (b *builder) resources(e catalog.Entry, component string) (corev1.ResourceRequirements, error) {
	want := e.Kubernetes.Resources
	limitCPU := ""
	if r := b.sut.Resources; r != nil && component != componentPool {
		limitCPU = r.LimitCPU
		if r.RequestCPU != "" {
			want.RequestCPU = r.RequestCPU
		}
		if r.RequestMemory != "" {
			want.RequestMemory = r.RequestMemory
		}
		if r.LimitMemory != "" {
			want.LimitMemory = r.LimitMemory
		}
	}
	out := corev1.ResourceRequirements{Requests: corev1.ResourceList{}}
	for _, q := range []struct {
		field, value string
		list         corev1.ResourceList
		name         corev1.ResourceName
	}{
		{"resources.request_cpu", want.RequestCPU, out.Requests, corev1.ResourceCPU},
		{"resources.request_memory", want.RequestMemory, out.Requests, corev1.ResourceMemory},
	} {
		if q.value != "" {
			v, err := quantity(q.field, q.value)
			if err != nil {
				return out, err
			}
			q.list[q.name] = v
		}
	}
	if want.LimitMemory != "" {
		v, err := quantity("resources.limit_memory", want.LimitMemory)
		if err != nil {
			return out, err
		}
		out.Limits = corev1.ResourceList{corev1.ResourceMemory: v}
		if req, ok := out.Requests[corev1.ResourceMemory]; ok && req.Cmp(v) > 0 {
			return out, fmt.Errorf("%w: memory request %s is above the memory limit %s (-rr, -lr)", backend.ErrBadSpec, req.String(), v.String())
		}
	}
	if limitCPU != "" {
		v, err := quantity("resources.limit_cpu", limitCPU)
		if err != nil {
			return out, err
		}
		if out.Limits == nil {
			out.Limits = corev1.ResourceList{}
		}
		out.Limits[corev1.ResourceCPU] = v
		if req, ok := out.Requests[corev1.ResourceCPU]; ok && req.Cmp(v) > 0 {
			return out, fmt.Errorf("%w: CPU request %s is above the CPU limit %s (-rc, -lc)", backend.ErrBadSpec, req.String(), v.String())
		}
	}
	return out, nil
}

func quantity(field, s string) (resource.Quantity, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return q, fmt.Errorf("%w: %s: %q is not a Kubernetes quantity (e.g. 500m, 4, 16Gi)", backend.ErrBadSpec, field, s)
	}
	return q, nil
}

// onVolume is e with its volume settings when the pod keeps its data on
// the configuration's persistent volume (-rst; volume: the pod mounts that
// PVC, not a claim template's, which goes with the experiment).
func (b *builder) onVolume(e catalog.Entry, volume bool) catalog.Entry {
	if volume && backend.WantsVolume(b.spec) {
		return e.OnVolume()
	}
	return e
}

// volume is the PVC of entry's data for the configuration's use case.
func (b *builder) volume(e catalog.Entry) (*corev1.PersistentVolumeClaim, error) {
	st := b.sut.Storage
	useCase := backend.UseCaseOf(b.spec)
	name, err := backend.VolumeName(e.Name, useCase)
	if err != nil {
		return nil, err
	}
	if errs := validation.IsValidLabelValue(useCase); len(errs) > 0 {
		return nil, fmt.Errorf("%w: use case %q is not a label value: %s", backend.ErrBadSpec, useCase, strings.Join(errs, "; "))
	}
	size, err := quantity("storage.size", cmp.Or(st.Size, defaultVolumeSize))
	if err != nil {
		return nil, err
	}
	return &corev1.PersistentVolumeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: b.namespace,
			Labels: map[string]string{
				labelApp: appName, labelDBMS: e.Name, labelUseCase: useCase,
				"app.kubernetes.io/name": strings.ToLower(e.Name), "app.kubernetes.io/part-of": appName,
				"app.kubernetes.io/managed-by": "benchq-deployer",
			},
			Annotations: map[string]string{annotationDataSet: useCase},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(st.Class),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}, nil
}

func (b *builder) meta(name, dbms, component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: b.namespace, Labels: labelsFor(b.spec, dbms, component)}
}

func (b *builder) deployment(name, component string, pod corev1.PodTemplateSpec) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: b.meta(name, pod.Labels[labelDBMS], component),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: selectorFor(b.spec, component)},
			// A database's volume is ReadWriteOnce: the old pod goes first.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: pod,
		},
	}
}

// statefulSet of the workers; with claim, each gets a PVC of that size
// (per configuration, deleted with it: cluster volumes are not reused).
func (b *builder) statefulSet(replicas int32, pod corev1.PodTemplateSpec, claim *resource.Quantity) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: b.meta(b.names.Workers, b.entry.Name, componentWorker),
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(replicas),
			ServiceName: b.names.Workers,
			Selector:    &metav1.LabelSelector{MatchLabels: selectorFor(b.spec, componentWorker)},
			// The bootstrap needs every node: start them all at once.
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Template:            pod,
		},
	}
	if claim != nil {
		s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: labelsFor(b.spec, b.entry.Name, componentWorker)},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: ptr.To(b.sut.Storage.Class),
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *claim}},
			},
		}}
		s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
			WhenScaled:  appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
		}
	}
	return s
}

// service selects the pods of component selects; headless for a cluster's
// workers (stable per-pod DNS names, published before they are ready so
// that the bootstrap can find them).
func (b *builder) service(e catalog.Entry, name, component, selects string, headless bool) *corev1.Service {
	s := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: b.meta(name, e.Name, component),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: selectorFor(b.spec, selects),
			Ports:    b.servicePorts(e, headless),
		},
	}
	if headless {
		s.Spec.ClusterIP = corev1.ClusterIPNone
		s.Spec.PublishNotReadyAddresses = true
	}
	return s
}

// schemaJob creates the benchmark's schema through the Service at host,
// when entry e has schema statements for it.
func (b *builder) schemaJob(e catalog.Entry, host string) []*batchv1.Job {
	stmts := e.Schema(b.spec.Benchmark)
	if len(stmts) == 0 || e.Kubernetes.Schema == nil {
		return nil
	}
	r := b.replacer(e, nil)
	return []*batchv1.Job{b.job(b.names.Schema, componentSUT, corev1.Container{
		Name: "schema", Image: e.Kubernetes.Schema.Image, Command: replaceAll(r, e.Kubernetes.Schema.Command),
		Env: []corev1.EnvVar{
			{Name: "BENCHQ_HOST", Value: host},
			{Name: "BENCHQ_PORT", Value: strconv.Itoa(e.Ports["client"])},
			{Name: "BENCHQ_SCHEMA", Value: strings.Join(stmts, ";\n")},
			b.passwordEnv(),
		},
	})}
}

func (b *builder) job(name, component string, c corev1.Container) *batchv1.Job {
	c.SecurityContext = toolSecurity()
	labels := labelsFor(b.spec, b.entry.Name, component)
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To(int32(4)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec: corev1.PodSpec{
					Containers:                   []corev1.Container{c},
					RestartPolicy:                corev1.RestartPolicyOnFailure,
					AutomountServiceAccountToken: ptr.To(false),
					EnableServiceLinks:           ptr.To(false),
					SecurityContext:              podSecurity(),
				},
			},
		},
	}
}
