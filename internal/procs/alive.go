package procs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Alive reports whether pid is a live process; a zombie (exited, not yet
// reaped) counts as gone.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	state, err := procState(pid)
	if err != nil {
		// Kill(pid, 0) succeeded, so /proc vanished between the two calls
		// (the process exited) or /proc is unavailable: trust /proc's absence.
		return !errors.Is(err, os.ErrNotExist)
	}
	return state != 'Z' && state != 'X'
}

// procState reads the one-letter state from /proc/<pid>/stat.
func procState(pid int) (byte, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStatState(b)
}

// parseStatState extracts the state field of /proc/<pid>/stat, which follows
// the parenthesised command name (which may itself contain spaces or ')').
func parseStatState(stat []byte) (byte, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return 0, fmt.Errorf("malformed /proc stat %q", stat)
	}
	return stat[i+2], nil
}

// Comm returns the command name of pid (/proc/<pid>/comm), used to tell a
// recorded pid that was reused by an unrelated process from our server.
func Comm(pid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "", fmt.Errorf("comm of pid %d: %w", pid, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// ReadPidFile reads a pid from the first line of path (postmaster.pid has
// more lines; the pid comes first there too).
func ReadPidFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read pid file: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 1 {
		return 0, fmt.Errorf("read pid file %s: no pid of a process benchq started in %q", path, line)
	}
	return pid, nil
}

// ReadPidFileOf is ReadPidFile for a process that must still be the one the
// file names: alive, and started no later than the file was written (a
// process that started after it has a recycled pid and is left alone).
func ReadPidFileOf(path string) (int, error) {
	pid, err := ReadPidFile(path)
	if err != nil {
		return 0, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	proc, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	if err != nil {
		return 0, fmt.Errorf("pid %d of %s: not running", pid, path)
	}
	// /proc/<pid> is made when the process starts; allow the second the
	// clocks' granularity may cost.
	if proc.ModTime().After(fi.ModTime().Add(time.Second)) {
		return 0, fmt.Errorf("pid %d of %s started at %s, after the file was written (%s): another process has the pid",
			pid, path, proc.ModTime().Format(time.RFC3339), fi.ModTime().Format(time.RFC3339))
	}
	return pid, nil
}

// IsDriverAgent reports whether pid is a live driver agent named name: its
// command is driver-agent and its arguments say -name name (or -name=name;
// an agent named by its environment passes on its command alone). The
// scheduler asks it before calling a late agent lost, an agent before
// running a job that another agent on this host may still run.
func IsDriverAgent(pid int, name string) bool {
	if !Alive(pid) {
		return false
	}
	if comm, err := Comm(pid); err != nil || !strings.HasPrefix(comm, "driver-agent") {
		return false
	}
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	for i, a := range args {
		switch {
		case a == "-name" && i+1 < len(args):
			return args[i+1] == name
		case strings.HasPrefix(a, "-name="):
			return strings.TrimPrefix(a, "-name=") == name
		}
	}
	return true
}
