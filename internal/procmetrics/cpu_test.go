package procmetrics

import (
	"slices"
	"testing"

	"github.com/prometheus/procfs"
)

func TestCPUCounter(t *testing.T) {
	t.Parallel()
	type step struct {
		tree map[int]procCPU
		want float64
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"children's time counts", []step{
			{map[int]procCPU{1: {own: 1, children: 2}, 2: {ppid: 1, own: 3}}, 6},
		}},
		{"a child reaped by its parent moves into the parent's children time", []step{
			{map[int]procCPU{1: {own: 1}, 2: {ppid: 1, own: 3}}, 4},
			{map[int]procCPU{1: {own: 1, children: 3.5}}, 4.5},
		}},
		{"a grandchild reaped by its parent, reaped by the root", []step{
			{map[int]procCPU{1: {own: 1}, 2: {ppid: 1, own: 1}, 3: {ppid: 2, own: 2}}, 4},
			{map[int]procCPU{1: {own: 1, children: 3}}, 4},
		}},
		{"a process leaving unreaped keeps its time, the others' growth still counts", []step{
			{map[int]procCPU{1: {own: 1}, 2: {ppid: 1, own: 5}, 3: {ppid: 2, own: 1}}, 7},
			// 2 exited unreaped by the tree (re-parented), taking 3 out
			// with it; the root gained 1.
			{map[int]procCPU{1: {own: 2}}, 8},
			{map[int]procCPU{1: {own: 2}, 4: {ppid: 1, own: 0.5}}, 8.5},
		}},
		{"one child reaped, one re-parented out of the tree", []step{
			{map[int]procCPU{1: {own: 1}, 2: {ppid: 1, own: 2}, 3: {ppid: 1, own: 4}}, 7},
			// 2 reaped after 0.5s more, 3 left with its 4s: the 2.5s the
			// root's children time grew by cannot be told apart, so 2's
			// last 0.5s (at most one scrape interval) is not seen.
			{map[int]procCPU{1: {own: 1, children: 2.5}}, 7},
		}},
		{"the root gone keeps the total", []step{
			{map[int]procCPU{1: {own: 1, children: 1}}, 2},
			{map[int]procCPU{}, 2},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c cpuCounter
			for i, s := range tc.steps {
				if got := c.observe(s.tree); got != s.want {
					t.Errorf("step %d: %v, want %v", i, got, s.want)
				}
			}
		})
	}
}

func TestDescendants(t *testing.T) {
	t.Parallel()
	ppid := map[int]int{1: 0, 10: 1, 11: 10, 12: 10, 13: 11, 20: 1, 21: 20}
	got := descendants(10, ppid)
	slices.Sort(got)
	if want := []int{10, 11, 12, 13}; !slices.Equal(got, want) {
		t.Errorf("descendants(10) = %v, want %v", got, want)
	}
	if got := descendants(99, ppid); got != nil {
		t.Errorf("descendants of a missing root = %v", got)
	}
}

func TestMemory(t *testing.T) {
	t.Parallel()
	if got := memoryFromRollup(procfs.ProcSMapsRollup{Pss: 300, Anonymous: 100}); got != (memory{workingSet: 300, cache: 200}) {
		t.Errorf("rollup: %+v", got)
	}
	// Anonymous pages shared after fork: Pss below the anonymous RSS.
	if got := memoryFromRollup(procfs.ProcSMapsRollup{Pss: 80, Anonymous: 100}); got != (memory{workingSet: 80, cache: 0}) {
		t.Errorf("rollup, shared anonymous: %+v", got)
	}
	if got := memoryFromStatus(procfs.ProcStatus{VmRSS: 500, RssAnon: 200, RssFile: 250, RssShmem: 50}); got != (memory{workingSet: 500, cache: 300}) {
		t.Errorf("status: %+v", got)
	}
}

// A tree's counter is the same number for the same ticks, whatever order
// its processes' times are added in (a map's): a sum that came out a unit
// in the last place lower than the read before would pass for a reset.
func TestCPUCounterIsExactInTicks(t *testing.T) {
	t.Parallel()
	tree := map[int]procCPU{}
	for pid := 1; pid <= 60; pid++ {
		tree[pid] = procCPU{ppid: 1, own: float64(pid*7) / userHZ, children: float64(pid%3) / userHZ}
	}
	var c cpuCounter
	first := c.observe(tree)
	for range 200 {
		if v := c.observe(tree); v != first {
			t.Fatalf("the same tree read %v, then %v", first, v)
		}
	}
}
