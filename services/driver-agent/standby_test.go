package main

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	s = &standby{java: java, lib: lib}
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
	if s.proc != nil {
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

// A standby that finished a job well (it said DONE) is put back and runs the
// next job in the same process, its output starting afresh.
func TestAStandbyStaysForTheNextJob(t *testing.T) {
	s, java, lib := newStandby(t)
	s.fill()
	p, fromStandby, err := s.take(append(launcher(java, lib), "-load"))
	if err != nil || !fromStandby {
		t.Fatalf("take: standby %v, err %v", fromStandby, err)
	}
	select {
	case <-p.stdout.Done():
	case <-time.After(10 * time.Second):
		p.kill()
		t.Fatal("no DONE from the standby")
	}
	if out := p.stdout.String(); !strings.HasSuffix(out, "job: -load\n") {
		t.Errorf("the first job's output, without its DONE line: %q", out)
	}
	s.give(p)
	q, fromStandby, err := s.take(append(launcher(java, lib), "-t"))
	if err != nil || !fromStandby || q != p {
		t.Fatalf("take after give: the same process %v, standby %v, err %v", q == p, fromStandby, err)
	}
	if out := output(t, q); out != "job: -t\n" {
		t.Errorf("the second job's output: %q, want its own line only", out)
	}

	// A process that is not a standby (started with its arguments) is not kept.
	fresh, _, err := s.take(append(launcher(java, lib), "-p", "x=1\n2"))
	if err != nil {
		t.Fatal(err)
	}
	output(t, fresh)
	s.give(fresh)
	if s.proc != nil {
		t.Error("a process started with its job was kept as the standby")
	}
}
