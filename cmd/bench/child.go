package main

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"
)

// child is a process the bench started and stops: in its own process group
// (a Ctrl-C reaches the bench, which stops it), killed by the kernel should
// the bench die (Pdeathsig), and reaped with wait4, whose rusage is exact:
// the child's own CPU plus that of every child it reaped itself.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed once reaped
	err  error         // Wait's error, valid after done
}

// startChild starts argv with stdin empty and the outputs given.
func startChild(name string, argv []string, env []string, stdout, stderr io.Writer) (*child, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// A grandchild holding our pipes must not keep Wait from returning.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

func (c *child) Pid() int { return c.cmd.Process.Pid }

// Done is closed once the process exited and was reaped.
func (c *child) Done() <-chan struct{} { return c.done }

// Err is how the process ended (nil: exit status 0); valid after Done.
func (c *child) Err() error { return c.err }

// CPU is the user and the system time of the reaped process and its
// reaped children (wait4's rusage); valid after Done.
func (c *child) CPU() (user, system time.Duration) {
	st := c.cmd.ProcessState
	if st == nil {
		return 0, 0
	}
	return st.UserTime(), st.SystemTime()
}

// Stop sends SIGTERM to the process group, SIGKILL after grace, and waits
// until the process is reaped. Stopping a process that already exited is a
// no-op.
func (c *child) Stop(grace time.Duration) error {
	select {
	case <-c.done:
		return nil
	default:
	}
	_ = syscall.Kill(-c.Pid(), syscall.SIGTERM)
	select {
	case <-c.done:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-c.Pid(), syscall.SIGKILL)
	select {
	case <-c.done:
		return fmt.Errorf("%s (pid %d) ignored SIGTERM for %s: killed", c.name, c.Pid(), grace)
	case <-time.After(10 * time.Second):
		return errors.New(c.name + " did not exit after SIGKILL")
	}
}
