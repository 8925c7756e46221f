package procmetrics

import (
	"fmt"
	"time"

	"github.com/prometheus/procfs"
)

// ProcessCPU is one process's CPU time from /proc/<pid>/stat: that of its
// own threads and that of the children it has reaped (a child's CPU is
// added to its parent's when the parent waits for it), with its parent.
type ProcessCPU struct {
	PPid                   int
	User, System           time.Duration
	ChildUser, ChildSystem time.Duration
}

// Self is the process's own CPU time (user + system).
func (c ProcessCPU) Self() time.Duration { return c.User + c.System }

// Children is the CPU time (user + system) of the children it reaped.
func (c ProcessCPU) Children() time.Duration { return c.ChildUser + c.ChildSystem }

func ticks(n int) time.Duration { return time.Duration(n) * time.Second / userHZ }

// ReadCPU reads the CPU time of the live process pid.
func ReadCPU(pid int) (ProcessCPU, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return ProcessCPU{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	st, err := p.Stat()
	if err != nil {
		return ProcessCPU{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	return ProcessCPU{PPid: st.PPID, User: ticks(int(st.UTime)), System: ticks(int(st.STime)),
		ChildUser: ticks(st.CUTime), ChildSystem: ticks(st.CSTime)}, nil
}

// ChildrenOf lists the live children of pid.
func ChildrenOf(pid int) ([]int, error) {
	pfs, err := procfs.NewDefaultFS()
	if err != nil {
		return nil, fmt.Errorf("children of %d: %w", pid, err)
	}
	all, err := pfs.AllProcs()
	if err != nil {
		return nil, fmt.Errorf("children of %d: %w", pid, err)
	}
	var out []int
	for _, p := range all {
		if st, err := p.Stat(); err == nil && st.PPID == pid {
			out = append(out, p.PID)
		}
	}
	return out, nil
}

// Cmdline is the command line of the live process pid.
func Cmdline(pid int) ([]string, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return nil, fmt.Errorf("command line of pid %d: %w", pid, err)
	}
	args, err := p.CmdLine()
	if err != nil {
		return nil, fmt.Errorf("command line of pid %d: %w", pid, err)
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("command line of pid %d: empty (exited?)", pid)
	}
	return args, nil
}
