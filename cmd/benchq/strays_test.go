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
	nats := exec.Command("sleep", "60")
	if err := nats.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nats.Process.Kill() })
	exited := make(chan struct{})
	go func() { _ = nats.Wait(); close(exited) }()
	if err := os.WriteFile(filepath.Join(home, "nats-server.pid"), []byte(strconv.Itoa(nats.Process.Pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Prometheus keeps its pid file in its own directory (down left it
	// running).
	prom := exec.Command("sleep", "60")
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = prom.Process.Kill() })
	promExited := make(chan struct{})
	go func() { _ = prom.Wait(); close(promExited) }()
	if err := os.MkdirAll(filepath.Join(home, "prometheus"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "prometheus", "prometheus.pid"), []byte(strconv.Itoa(prom.Process.Pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
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
	if code != ExitFailed || !strings.Contains(stderr, "nats-server (pid "+strconv.Itoa(nats.Process.Pid)+")") || !strings.Contains(stderr, "benchq down") {
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
