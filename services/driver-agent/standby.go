package main

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/benchq/benchq/internal/procs"
)

// A driver's JVM takes about 0.3 s to start and preload YCSB's classes on
// two busy cores, and it did so between a phase's shard job and its READY.
// An idle agent keeps a standby JVM instead (io.benchq.ycsb.Launcher
// --standby): started and preloaded ahead of any job, it is handed the
// job's arguments on stdin. The agent starts one when it starts and again
// once it has been idle for standbyIdle after a shard, never right after
// one: between two phases the next job comes within a few hundred
// milliseconds, and a JVM starting then would compete with the other shards
// still finishing their phase, whose operations are being measured.
const standbyIdle = time.Second

// driverProc is a started driver process and its pipes.
type driverProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bytes.Buffer
	stderr io.ReadCloser
}

// startDriver starts args as a driver process: none of the agent's keys in
// its environment, killed with the agent (no orphaned load generators), in
// a process group of its own so it can be stopped as a whole.
func startDriver(args []string) (*driverProc, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = procs.ChildEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	p := &driverProc{cmd: cmd, stdout: &bytes.Buffer{}}
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("stdin: %w", err)
	}
	cmd.Stdout = p.stdout
	if p.stderr, err = cmd.StderrPipe(); err != nil {
		return nil, fmt.Errorf("stderr: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", args[0], err)
	}
	return p, nil
}

// kill stops the process group and reaps it.
func (p *driverProc) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	_ = p.cmd.Wait()
}

// standbyArg is the Launcher's option for a standby JVM.
const standbyArg = "--standby"

// standby holds an agent's standby JVM: at most one, for the command
// prefix (java, class path, Launcher) of the agent's shards.
type standby struct {
	prefix []string // nil: no standby (disabled)

	mu    sync.Mutex
	proc  *driverProc
	timer *time.Timer // the pending fill after a shard
	done  bool        // stopped: no more fills
}

// fill starts a standby JVM unless one is there.
func (s *standby) fill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prefix == nil || s.proc != nil || s.done {
		return
	}
	if p, err := startDriver(append(slices.Clone(s.prefix), standbyArg)); err == nil {
		s.proc = p
	}
}

// fillWhenIdle fills the standby after standbyIdle unless a shard takes
// it first (take cancels the fill).
func (s *standby) fillWhenIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prefix == nil || s.done {
		return
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	s.timer = time.AfterFunc(standbyIdle, s.fill)
}

// take returns a driver running args: the standby JVM, handed args on its
// stdin (one line, NUL-separated), when args run our Launcher with the
// standby's prefix and it accepts them; else a new process. It says which.
func (s *standby) take(args []string) (*driverProc, bool, error) {
	s.mu.Lock()
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p != nil {
		if rest, ok := s.arguments(args); ok {
			if _, err := io.WriteString(p.stdin, rest+"\n"); err == nil {
				return p, true, nil
			}
		}
		p.kill() // dead, or args it cannot take: a new process instead
	}
	p, err := startDriver(args)
	return p, false, err
}

// arguments encodes what follows the prefix in args for the standby, or
// says it cannot (another prefix, or an argument with a NUL or a newline).
func (s *standby) arguments(args []string) (string, bool) {
	if s.prefix == nil || len(args) <= len(s.prefix) || !slices.Equal(args[:len(s.prefix)], s.prefix) {
		return "", false
	}
	rest := args[len(s.prefix):]
	for _, a := range rest {
		if strings.ContainsAny(a, "\x00\n\r") {
			return "", false
		}
	}
	return strings.Join(rest, "\x00"), true
}

// stop kills the standby JVM and prevents new ones.
func (s *standby) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	if s.timer != nil {
		s.timer.Stop()
	}
	if s.proc != nil {
		s.proc.kill()
		s.proc = nil
	}
}
