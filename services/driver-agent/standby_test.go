package main

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// standInJava writes a stand-in for the JVM: it prints its arguments, and
// when it is a standby each line it reads from stdin, on stdout.
func standInJava(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "java")
	// A standby loops as the Launcher does: a job per line, each ended by DONE.
	script := "#!/bin/sh\necho \"args: $*\"\ncase \"$*\" in *--standby)\n" +
		"  while job=$(head -n 1 | tr '\\000' '|'); [ -n \"$job\" ]; do\n" +
		"    echo \"job: $job\"; echo \"BENCHQ DONE\"; echo \"BENCHQ DONE\" >&2\n" +
		"  done;;\nesac\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// newStandby is a standby slot for the stand-in JVM and an empty lib dir,
// stopped when t ends.
func newStandby(t *testing.T) (s *standby, java, lib string) {
	t.Helper()
	java = standInJava(t)
	lib = filepath.Join(t.TempDir(), "lib")
	if err := os.Mkdir(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	s = &standby{java: java, lib: lib, size: 1}
	t.Cleanup(s.stop)
	return s, java, lib
}

func output(t *testing.T, p *driverProc) string {
	t.Helper()
	_ = p.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.kill()
		t.Fatal("the driver did not exit")
	}
	return p.stdout.String()
}

func TestStandbyTakesTheJobOrStepsAside(t *testing.T) {
	s, java, lib := newStandby(t)
	job := append(launcher(java, lib), "-t", "-p", "a=b c")

	s.fill()
	p, fromStandby, err := s.take(job)
	if err != nil || !fromStandby {
		t.Fatalf("take: standby %v, err %v", fromStandby, err)
	}
	if out := output(t, p); !strings.Contains(out, "--standby") || !strings.Contains(out, "job: -t|-p|a=b c") {
		t.Errorf("the standby did not get the job's arguments: %q", out)
	}

	// Taken: the next job starts a process of its own until the standby is
	// filled, a standby handed the job at once (so it can stay for later
	// jobs).
	p, fromStandby, err = s.take(job)
	if err != nil || fromStandby {
		t.Fatalf("second take: standby %v, err %v", fromStandby, err)
	}
	if out := output(t, p); !strings.Contains(out, "--standby") || !strings.Contains(out, "job: -t|-p|a=b c") {
		t.Errorf("a new process without the job's arguments: %q", out)
	}

	// A line break cannot go through the standby's one line: the job's
	// process is started with its arguments.
	s.fill()
	newline := append(launcher(java, lib), "-p", "x=1\n2")
	if p, fromStandby, err = s.take(newline); err != nil || fromStandby {
		t.Fatalf("argument with a newline: standby %v, err %v", fromStandby, err)
	}
	if out := output(t, p); strings.Contains(out, "--standby") || !strings.Contains(out, "x=1\n2") {
		t.Errorf("argument with a newline: %q", out)
	}

	// A rebuild replaces the lib dir: the standby loaded the old classes.
	s.fill()
	if err := os.Rename(lib, lib+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	if p, fromStandby, err = s.take(job); err != nil || fromStandby {
		t.Fatalf("after a rebuild: standby %v, err %v", fromStandby, err)
	}
	output(t, p)

	// Stopped: no standby is filled any more.
	s.stop()
	s.fill()
	if len(s.procs) != 0 {
		t.Error("a standby filled after stop")
	}
}

// An agent removes what killed agents left in the temporary directory (the
// SUT's password among it), and nothing of a live agent's.
func TestStaleShardDirsOfKilledAgentsAreRemoved(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	left, err := os.MkdirTemp("", shardDirPrefix(dead.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(left, "sut.properties"), []byte("db.passwd=x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	live, err := os.MkdirTemp("", shardDirPrefix(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	removeStaleShardDirs(slog.New(slog.DiscardHandler))
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("the killed agent's directory is still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live agent's directory was removed: %v", err)
	}
}

// Standby JVMs run one job each: one that ended its job well (it said DONE)
// is killed, and the next job takes the next standby; with reuse it is put
// back and runs the next job, its output starting afresh.
func TestAStandbyRunsOneJobUnlessReused(t *testing.T) {
	s, java, lib := newStandby(t)
	s.size = 2
	s.fill()
	if len(s.procs) != 2 {
		t.Fatalf("%d standbys filled, want 2", len(s.procs))
	}
	jobDone := func(args ...string) *driverProc {
		t.Helper()
		p, fromStandby, err := s.take(append(launcher(java, lib), args...))
		if err != nil || !fromStandby {
			t.Fatalf("take %v: standby %v, err %v", args, fromStandby, err)
		}
		select {
		case <-p.stdout.Done():
		case <-time.After(10 * time.Second):
			p.kill()
			t.Fatal("no DONE from the standby")
		}
		if out := p.stdout.String(); !strings.HasSuffix(out, "job: "+strings.Join(args, "|")+"\n") {
			t.Errorf("the job's output, without its DONE line: %q", out)
		}
		s.jobDone(p)
		return p
	}
	first := jobDone("-load")
	if len(s.procs) != 1 {
		t.Errorf("%d standbys after a job without reuse, want the 1 left", len(s.procs))
	}
	for deadline := time.Now().Add(10 * time.Second); syscall.Kill(first.cmd.Process.Pid, 0) == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the JVM that ended its job still runs")
		}
	}

	s.reuse = true
	second := jobDone("-t")
	if second == first || len(s.procs) != 1 || s.procs[0] != second {
		t.Fatalf("with reuse, the JVM that ended its job well is not the next standby")
	}
	q, fromStandby, err := s.take(append(launcher(java, lib), "-t", "-p", "x"))
	if err != nil || !fromStandby || q != second {
		t.Fatalf("take after reuse: the same process %v, standby %v, err %v", q == second, fromStandby, err)
	}
	if out := output(t, q); out != "job: -t|-p|x\n" {
		t.Errorf("the reused JVM's output: %q, want its new job's line only", out)
	}

	// A process started with its arguments (no standby can take them) is
	// never kept.
	fresh, _, err := s.take(append(launcher(java, lib), "-p", "x=1\n2"))
	if err != nil {
		t.Fatal(err)
	}
	output(t, fresh)
	s.jobDone(fresh)
	if len(s.procs) != 0 {
		t.Error("a process started with its arguments was kept as a standby")
	}
}
