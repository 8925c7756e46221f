package procmetrics

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/benchq/benchq/internal/testenv"
)

// The test binary doubles as the process tree under measurement:
// PROCMETRICS_HELPER=tree runs a child that burns CPU and exits (reaped:
// its CPU lands in the root's cutime), then a child that spins until killed.
func TestMain(m *testing.M) {
	switch os.Getenv("PROCMETRICS_HELPER") {
	case "tree":
		helperTree()
	case "burn":
		burn(600 * time.Millisecond)
	case "spin":
		burn(30 * time.Second) // bounded, should the test die without killing it
	default:
		os.Exit(m.Run())
	}
	os.Exit(0)
}

func helperTree() {
	child := func(mode string) *exec.Cmd {
		c := exec.Command(os.Args[0])
		c.Env = append(os.Environ(), "PROCMETRICS_HELPER="+mode)
		return c
	}
	if err := child("burn").Run(); err != nil {
		os.Exit(3)
	}
	spin := child("spin")
	if err := spin.Start(); err != nil {
		os.Exit(4)
	}
	_ = spin.Wait()
}

// burn spends d of this process's CPU time.
func burn(d time.Duration) {
	x := 0
	for {
		for i := 0; i < 1e6; i++ {
			x += i
		}
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		if time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) >= d {
			_ = x
			return
		}
	}
}

// statTimes reads utime+stime and cutime+cstime of pid from /proc/<pid>/stat
// by hand, as ground truth independent of the code under test.
func statTimes(pid int) (own, children float64, ppid int, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	// f[0] is field 3 (state): ppid is field 4, utime..cstime 14..17.
	n := func(field int) float64 { v, _ := strconv.ParseFloat(f[field-3], 64); return v }
	return (n(14) + n(15)) / 100, (n(16) + n(17)) / 100, int(n(4)), nil
}

// groundTruth sums statTimes over root's tree (found by hand, too).
func groundTruth(t *testing.T, root int) (total, rootOwn, rootChildren float64) {
	t.Helper()
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	kids := map[int][]int{}
	times := map[int][2]float64{}
	for _, p := range paths {
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		own, ch, ppid, err := statTimes(pid)
		if err != nil {
			continue
		}
		kids[ppid] = append(kids[ppid], pid)
		times[pid] = [2]float64{own, ch}
	}
	tree := []int{root}
	for i := 0; i < len(tree); i++ {
		tree = append(tree, kids[tree[i]]...)
	}
	for _, pid := range tree {
		total += times[pid][0] + times[pid][1]
	}
	return total, times[root][0], times[root][1]
}

// gathered returns component's value of metric name, and whether it is there.
func gathered(t *testing.T, reg *prometheus.Registry, name, component string) (float64, map[string]string, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if labels["component"] == component {
				return value(m), labels, true
			}
		}
	}
	return 0, nil, false
}

func value(m *dto.Metric) float64 {
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

func TestCollectorProcessTree(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PROCMETRICS_HELPER=tree")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	root := cmd.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(-root, syscall.SIGKILL)
		_ = cmd.Wait()
	})

	reg := prometheus.NewPedanticRegistry()
	c, err := New(reg, "")
	if err != nil {
		t.Fatal(err)
	}
	labels := Labels{Namespace: "benchq", Pod: "sut-1", Container: "postgres", Experiment: "1234", Configuration: "PostgreSQL-1", DBMS: "PostgreSQL", Component: "sut", Phase: "load"}
	c.Set("sut", root, labels)
	c.Set("self", os.Getpid(), Labels{Component: "service"})

	// The burner has exited and been reaped, the spinner has spun a while.
	testenv.Eventually(t, time.Minute, func() error {
		if total, _, children := groundTruth(t, root); children < 0.5 || total < 0.8 {
			return fmt.Errorf("tree at %.2fs CPU, root's reaped children %.2fs", total, children)
		}
		return nil
	})
	before, rootOwn, rootChildren := groundTruth(t, root)
	cpu, got, ok := gathered(t, reg, "container_cpu_usage_seconds_total", "sut")
	after, _, _ := groundTruth(t, root)
	if !ok {
		t.Fatal("no container_cpu_usage_seconds_total for the sut")
	}
	t.Logf("cpu %.2fs (ground truth %.2f..%.2f; root own %.2f, reaped children %.2f)", cpu, before, after, rootOwn, rootChildren)
	if cpu < before-1e-9 || cpu > after+1e-9 {
		t.Errorf("cpu %.3fs outside the tree's /proc figures %.3f..%.3f", cpu, before, after)
	}
	if cpu-rootOwn < 0.45+0.3 {
		t.Errorf("children's cpu %.3fs: the exited burner (≥0.6s) and the live spinner are not both counted", cpu-rootOwn)
	}
	want := map[string]string{"namespace": "benchq", "pod": "sut-1", "container": "postgres", "experiment": "1234", "configuration": "PostgreSQL-1", "dbms": "PostgreSQL", "component": "sut", "phase": "load"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("labels %v, want %v", got, want)
	}
	for _, name := range []string{"container_memory_working_set_bytes", "container_memory_cache"} {
		if v, _, ok := gathered(t, reg, name, "sut"); !ok || v < 1<<20 {
			t.Errorf("%s = %.0f (present %v), want ≥ 1 MiB", name, v, ok)
		}
	}

	// A read between scrapes is a sample of the same series: at least the
	// scrape before it, at most the scrape after it and the tree's /proc
	// figure; an unknown component is left out.
	read, err := c.CPU("sut", "absent")
	if err != nil {
		t.Fatal(err)
	}
	truth, _, _ := groundTruth(t, root)
	scraped, _, _ := gathered(t, reg, "container_cpu_usage_seconds_total", "sut")
	if _, ok := read["absent"]; ok || len(read) != 1 || read["sut"] < cpu || read["sut"] > truth+1e-9 || read["sut"] > scraped {
		t.Errorf("CPU() = %v: want the sut between the scrape before (%.3f), /proc (%.3f) and the scrape after (%.3f)", read, cpu, truth, scraped)
	}
	cpu = scraped

	// A new phase: new labels, the counter carries on.
	labels.Phase = "run"
	c.Set("sut", root, labels)
	next, got, _ := gathered(t, reg, "container_cpu_usage_seconds_total", "sut")
	if got["phase"] != "run" || next < cpu {
		t.Errorf("after the phase switch: %.3fs %v", next, got)
	}

	c.Remove("sut")
	if _, _, ok := gathered(t, reg, "container_cpu_usage_seconds_total", "sut"); ok {
		t.Error("removed component still exported")
	}
	if _, _, ok := gathered(t, reg, "container_cpu_usage_seconds_total", "service"); !ok {
		t.Error("the other component went with it")
	}

	// A component whose root died exports nothing.
	c.Set("sut", root, labels)
	_ = syscall.Kill(-root, syscall.SIGKILL)
	_ = cmd.Wait()
	if _, _, ok := gathered(t, reg, "container_memory_working_set_bytes", "sut"); ok {
		t.Error("a dead root's component still exported")
	}
}
