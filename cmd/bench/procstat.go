package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of the times in /proc/<pid>/stat: USER_HZ, which
// Linux fixes at 100 for user space whatever the kernel's own HZ.
const clockTick = 10 * time.Millisecond

// procStat is what we read of /proc/<pid>/stat: the parent, the CPU time of
// the process's own threads, and that of the children it has reaped (a
// child's CPU is added to its parent's when the parent waits for it).
type procStat struct {
	PPid                   int
	User, System           time.Duration
	ChildUser, ChildSystem time.Duration
}

// Self is the process's own CPU time (user + system).
func (s procStat) Self() time.Duration { return s.User + s.System }

// Children is the CPU time (user + system) of the children it reaped.
func (s procStat) Children() time.Duration { return s.ChildUser + s.ChildSystem }

// parseProcStat parses /proc/<pid>/stat. The command name, in parentheses,
// may hold spaces and parentheses itself: fields are counted after the last
// ')'.
func parseProcStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("malformed /proc stat %q", b)
	}
	// Fields from 3 (state) on; field n is f[n-3].
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("malformed /proc stat: %d fields after the name, want at least 15", len(f))
	}
	num := func(n int) (int64, error) {
		v, err := strconv.ParseInt(f[n-3], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat field %d: %w", n, err)
		}
		return v, nil
	}
	var v [5]int64
	for k, n := range []int{4, 14, 15, 16, 17} { // ppid, utime, stime, cutime, cstime
		var err error
		if v[k], err = num(n); err != nil {
			return procStat{}, err
		}
	}
	tick := func(x int64) time.Duration { return time.Duration(x) * clockTick }
	return procStat{PPid: int(v[0]), User: tick(v[1]), System: tick(v[2]), ChildUser: tick(v[3]), ChildSystem: tick(v[4])}, nil
}

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, err
	}
	s, err := parseProcStat(b)
	if err != nil {
		return procStat{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	return s, nil
}

// cpuOf is the own CPU time of a long-running server (NATS, Redis) now, 0
// when it cannot be read: these figures are context, not the measurement.
func cpuOf(pid int) time.Duration {
	s, err := readProcStat(pid)
	if err != nil {
		return 0
	}
	return s.Self()
}

// childrenOf lists the live children of pid.
func childrenOf(pid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("children of %d: %w", pid, err)
	}
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, err := readProcStat(p); err == nil && s.PPid == pid {
			out = append(out, p)
		}
	}
	return out, nil
}

func readCmdline(pid int) ([]string, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return nil, fmt.Errorf("command line of pid %d: %w", pid, err)
	}
	args := parseCmdline(b)
	if len(args) == 0 {
		return nil, fmt.Errorf("command line of pid %d: empty (exited?)", pid)
	}
	return args, nil
}
