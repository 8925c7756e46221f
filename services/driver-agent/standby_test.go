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
// the line it reads from stdin when it is a standby, on stdout.
func standInJava(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "java")
	script := "#!/bin/sh\necho \"args: $*\"\ncase \"$*\" in *--standby) printf 'job: '; head -n 1 | tr '\\000' '|';; esac\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
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
	java := standInJava(t)
	lib := filepath.Join(t.TempDir(), "lib")
	if err := os.Mkdir(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &standby{java: java, lib: lib}
	defer s.stop()
	job := append(launcher(java, lib), "-t", "-p", "a=b c")

	s.fill()
	p, fromStandby, err := s.take(job)
	if err != nil || !fromStandby {
		t.Fatalf("take: standby %v, err %v", fromStandby, err)
	}
	if out := output(t, p); !strings.Contains(out, "--standby") || !strings.Contains(out, "job: -t|-p|a=b c") {
		t.Errorf("the standby did not get the job's arguments: %q", out)
	}

	// Taken: the next job starts its own process until the standby is filled.
	p, fromStandby, err = s.take(job)
	if err != nil || fromStandby {
		t.Fatalf("second take: standby %v, err %v", fromStandby, err)
	}
	if out := output(t, p); strings.Contains(out, "--standby") || !strings.Contains(out, "a=b c") {
		t.Errorf("a fresh process without the job's arguments: %q", out)
	}

	// A line break cannot go through the standby's one line.
	s.fill()
	if p, fromStandby, err = s.take(append(launcher(java, lib), "-p", "x=1\n2")); err != nil || fromStandby {
		t.Fatalf("argument with a newline: standby %v, err %v", fromStandby, err)
	}
	output(t, p)

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
