package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchq/benchq/internal/stack"
)

// A stack whose stack.json is unreadable still runs its processes: up
// refuses to start another over them (two nats-servers on one store
// corrupt it), naming them and the fix, and down stops them by their pid
// files (it said "stack is not running" and left them).
func TestUpAndDownFindAStacksProcessesWithoutItsFile(t *testing.T) {
	home := t.TempDir()
	natsPid, exited := processWithPidFile(t, filepath.Join(home, "nats-server.pid"))
	// Prometheus keeps its pid file in its own directory (down left it
	// running).
	_, promExited := processWithPidFile(t, filepath.Join(home, "prometheus", "prometheus.pid"))
	if err := os.WriteFile(filepath.Join(home, "stack.json"), []byte("{garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		env := func(k string) string {
			if k == "BENCHQ_HOME" {
				return home
			}
			return ""
		}
		code := Main(t.Context(), args, &State{Env: env, Stdout: &out, Stderr: &errb})
		return code, out.String(), errb.String()
	}
	code, _, stderr := run("up")
	if code != ExitFailed || !strings.Contains(stderr, "nats-server (pid "+strconv.Itoa(natsPid)+")") || !strings.Contains(stderr, "benchq down") {
		t.Errorf("up over a running stack without its file: exit %d, %q", code, stderr)
	}
	code, stdout, stderr := run("down")
	if code != ExitOK || !strings.Contains(stdout, "stopping the processes found by their pid files") {
		t.Errorf("down: exit %d, %q %q", code, stdout, stderr)
	}
	for _, c := range []chan struct{}{exited, promExited} {
		select {
		case <-c:
		case <-time.After(15 * time.Second):
			t.Fatal("down left a stack's process running")
		}
	}
	if code, stdout, _ := run("down"); code != ExitOK || !strings.Contains(stdout, "stack is not running") {
		t.Errorf("down again: exit %d, %q", code, stdout)
	}
}

// processWithPidFile starts a process that lives a minute, as a stack's
// would, and writes its pid to file; exited closes when it ends.
func processWithPidFile(t *testing.T, file string) (pid int, exited chan struct{}) {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	exited = make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid, exited
}

// summary names a collector that is not running at once (it waited 30 s
// for it, then said "no experiment"), and waits for one that runs.
func TestDeadProcNamesAStoppedComponent(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	s := &stack.Stack{Procs: []stack.Proc{{Name: "collector", Pid: gone.Process.Pid}, {Name: "scheduler", Pid: os.Getpid()}}}
	if got := deadProc(s, "collector"); !strings.Contains(got, "the collector (pid "+strconv.Itoa(gone.Process.Pid)+") is not running") {
		t.Errorf("deadProc(collector) = %q", got)
	}
	if got := deadProc(s, "scheduler"); got != "" {
		t.Errorf("deadProc(scheduler), alive = %q", got)
	}
	if got := deadProc(s, "deployer"); got != "" {
		t.Errorf("deadProc(deployer), none in the stack = %q", got)
	}
}
