package procmetrics

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/procfs"
)

// Labels identify a component's series: cAdvisor's pod, container and
// namespace, so that Kubernetes' PromQL applies unchanged, and benchq's own.
type Labels struct {
	Namespace, Pod, Container string
	Experiment, Configuration string
	DBMS                      string
	Component                 string // sut | loader | benchmarker | service
	Phase                     string
}

var labelNames = []string{"namespace", "pod", "container", "experiment", "configuration", "dbms", "component", "phase"}

func (l Labels) values() []string {
	return []string{l.Namespace, l.Pod, l.Container, l.Experiment, l.Configuration, l.DBMS, l.Component, l.Phase}
}

var (
	cpuDesc = prometheus.NewDesc("container_cpu_usage_seconds_total",
		"User and system CPU seconds of the component's process tree, exited children reaped by the tree included.", labelNames, nil)
	workingSetDesc = prometheus.NewDesc("container_memory_working_set_bytes",
		"Proportional set size (Pss) summed over the component's process tree.", labelNames, nil)
	cacheDesc = prometheus.NewDesc("container_memory_cache",
		"File-backed and shared-memory part of the tree's Pss (Pss minus anonymous memory).", labelNames, nil)
)

// Collector exports the components registered with Set. It is safe for
// concurrent use; each scrape reads /proc afresh.
type Collector struct {
	fs procfs.FS

	mu         sync.Mutex
	components map[string]*component
}

type component struct {
	root   int
	labels Labels
	cpu    cpuCounter
}

// New makes a Collector reading procRoot ("" = /proc) and registers it with
// reg (nil: the caller registers it where it wants).
func New(reg prometheus.Registerer, procRoot string) (*Collector, error) {
	if procRoot == "" {
		procRoot = procfs.DefaultMountPoint
	}
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return nil, fmt.Errorf("procmetrics: %w", err)
	}
	c := &Collector{fs: fs, components: map[string]*component{}}
	if reg == nil {
		return c, nil
	}
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("procmetrics: register: %w", err)
	}
	return c, nil
}

// Set registers the process tree under root as component id, or updates its
// labels (a new phase). The CPU counter carries on across label changes of
// the same root; a new root starts it afresh.
func (c *Collector) Set(id string, root int, l Labels) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.components[id]; ok && old.root == root {
		old.labels = l
		return
	}
	c.components[id] = &component{root: root, labels: l}
}

// Remove stops exporting component id (its series disappear from the next
// scrape).
func (c *Collector) Remove(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.components, id)
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- cpuDesc
	ch <- workingSetDesc
	ch <- cacheDesc
}

// Collect implements prometheus.Collector. A component whose root process
// is gone exports nothing, as cAdvisor drops a deleted container.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.components) == 0 {
		return
	}
	snap, err := readSnapshot(c.fs)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(cpuDesc, fmt.Errorf("read /proc: %w", err))
		return
	}
	for _, comp := range c.components {
		tree := comp.tree(snap)
		if len(tree) == 0 {
			continue
		}
		var mem memory
		for pid := range tree {
			if m, ok := readMemory(c.fs, pid); ok {
				mem.workingSet += m.workingSet
				mem.cache += m.cache
			}
		}
		lv := comp.labels.values()
		ch <- prometheus.MustNewConstMetric(cpuDesc, prometheus.CounterValue, comp.cpu.observe(tree), lv...)
		ch <- prometheus.MustNewConstMetric(workingSetDesc, prometheus.GaugeValue, mem.workingSet, lv...)
		ch <- prometheus.MustNewConstMetric(cacheDesc, prometheus.GaugeValue, mem.cache, lv...)
	}
}

// CPU reads the CPU counters of components ids now, as a scrape would
// (the same counters: a read between two scrapes is a sample of the same
// series), and returns them by id; a component unknown or whose root is
// gone is left out. It reads /proc once.
func (c *Collector) CPU(ids ...string) (map[string]float64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	snap, err := readSnapshot(c.fs)
	if err != nil {
		return nil, fmt.Errorf("read /proc: %w", err)
	}
	out := make(map[string]float64, len(ids))
	for _, id := range ids {
		comp, ok := c.components[id]
		if !ok {
			continue
		}
		if tree := comp.tree(snap); len(tree) > 0 {
			out[id] = comp.cpu.observe(tree)
		}
	}
	return out, nil
}

// tree is the CPU of every process of comp's tree in snap (none when its
// root is gone).
func (comp *component) tree(snap snapshot) map[int]procCPU {
	pids := descendants(comp.root, snap.ppid)
	tree := make(map[int]procCPU, len(pids))
	for _, pid := range pids {
		tree[pid] = snap.cpu[pid]
	}
	return tree
}
