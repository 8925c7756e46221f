package procs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// Stop sends SIGTERM to pid's process group (to pid alone when it does not
// lead one), waits up to grace for it to exit, then sends SIGKILL to the
// group and waits for it to disappear. It returns nil if the process is
// already gone.
func Stop(ctx context.Context, pid int, grace time.Duration) error {
	return stop(ctx, pid, syscall.SIGTERM, true, grace)
}

// Signal is Stop for servers that coordinate their own children and whose
// graceful shutdown is a particular signal (postgres: SIGINT is "fast"
// shutdown): sig goes to pid alone, SIGKILL after grace to its whole group.
func Signal(ctx context.Context, pid int, sig syscall.Signal, grace time.Duration) error {
	return stop(ctx, pid, sig, false, grace)
}

func stop(ctx context.Context, pid int, sig syscall.Signal, group bool, grace time.Duration) error {
	if pid <= 1 || pid == os.Getpid() {
		return fmt.Errorf("stop pid %d: not a process benchq started; refusing to signal it", pid)
	}
	if !Alive(pid) {
		return nil
	}
	var err error
	if group {
		err = kill(pid, sig)
	} else if err = syscall.Kill(pid, sig); errors.Is(err, syscall.ESRCH) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("stop pid %d: %w", pid, err)
	}
	gone := func(context.Context) error {
		if Alive(pid) {
			return fmt.Errorf("pid %d still running", pid)
		}
		return nil
	}
	// Most servers are gone a few milliseconds after the signal: look often
	// at first, so that a teardown stopping several (a SUT, its exporters,
	// a pool) does not take 20 ms for each.
	for range 10 {
		time.Sleep(2 * time.Millisecond)
		if !Alive(pid) {
			return nil
		}
	}
	graceCtx, cancel := context.WithTimeout(ctx, grace)
	err = WaitFor(graceCtx, fmt.Sprintf("pid %d to exit after %s", pid, sig), 20*time.Millisecond, gone)
	cancel()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("stop pid %d: %w", pid, ctx.Err())
	}
	if err := kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("stop pid %d: %w", pid, err)
	}
	// SIGKILL cannot be ignored; bound the wait anyway so that a process
	// stuck in uninterruptible sleep does not hang the caller forever.
	killCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := WaitFor(killCtx, fmt.Sprintf("pid %d to exit after SIGKILL", pid), 20*time.Millisecond, gone); err != nil {
		return fmt.Errorf("stop pid %d: %w", pid, err)
	}
	return nil
}

// kill signals pid's process group when pid leads one, else pid itself.
// ESRCH (already gone) is not an error.
func kill(pid int, sig syscall.Signal) error {
	target := pid
	// Never a group of ours, nor init's (-1 would be every process).
	if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid && pgid > 1 && pgid != syscall.Getpgrp() {
		target = -pid
	}
	err := syscall.Kill(target, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
