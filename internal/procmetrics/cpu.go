package procmetrics

import "math"

// procCPU is one process's CPU as /proc/<pid>/stat reports it, in seconds.
type procCPU struct {
	ppid     int
	own      float64 // utime+stime
	children float64 // cutime+cstime: waited-for children, exited
}

func (p procCPU) total() float64 { return p.own + p.children }

// cpuCounter turns the CPU of a tree, sampled at every scrape, into a
// counter that does not go down when a process leaves the tree.
type cpuCounter struct {
	prev   map[int]procCPU // the tree at the last scrape
	offset float64         // CPU of processes that left the tree unreaped
}

// observe takes the tree's processes now (pid → CPU) and returns the
// counter's value. The CPU of processes gone since the last scrape is either
// in the children time of a surviving ancestor (the tree reaped them) or
// lost from the sum: per surviving ancestor, the part of the gone processes'
// last CPU that its children time did not grow by goes into the offset; with
// no surviving ancestor, all of it.
func (c *cpuCounter) observe(now map[int]procCPU) float64 {
	gone := map[int]float64{} // nearest surviving ancestor (0: none) → CPU gone below it
	for pid, p := range c.prev {
		if _, ok := now[pid]; !ok {
			gone[survivor(c.prev, p.ppid, now)] += p.total()
		}
	}
	for anc, cpu := range gone {
		if anc != 0 {
			cpu -= now[anc].children - c.prev[anc].children
		}
		if cpu > 0 {
			c.offset += cpu
		}
	}
	c.prev = now
	sum := c.offset
	for _, p := range now {
		sum += p.total()
	}
	// Every term is a whole number of clock ticks, but their float sum,
	// added in map order, differs in the last places from one read to the
	// next: rounded to the tick, the counter is the same number for the
	// same ticks and never drops by rounding (which reduce would take for
	// a reset: the whole counter counted as the phase's CPU).
	c.offset = math.Round(c.offset*userHZ) / userHZ
	return math.Round(sum*userHZ) / userHZ
}

// survivor returns pid or its nearest ancestor (as known in tree) that is in
// now, or 0 when there is none.
func survivor(tree map[int]procCPU, pid int, now map[int]procCPU) int {
	for seen := 0; seen <= len(tree); seen++ {
		if _, ok := now[pid]; ok {
			return pid
		}
		p, ok := tree[pid]
		if !ok {
			return 0
		}
		pid = p.ppid
	}
	return 0 // a parent cycle (pids reused between two reads): give up
}

// descendants returns root and every process below it in the parent map
// (pid → ppid); nil when root is not in it.
func descendants(root int, ppid map[int]int) []int {
	if _, ok := ppid[root]; !ok {
		return nil
	}
	kids := map[int][]int{}
	for pid, parent := range ppid {
		if pid != root {
			kids[parent] = append(kids[parent], pid)
		}
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, kids[out[i]]...)
	}
	return out
}
