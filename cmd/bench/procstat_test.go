package main

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	t.Parallel()
	// A JVM-like name with a space and a parenthesis; utime 1234, stime 56,
	// cutime 700, cstime 8 ticks.
	line := "4242 (java (x) y) S 4200 4242 4200 0 -1 4194304 100 0 0 0 1234 56 700 8 20 0 30 0 123 456 789\n"
	got, err := parseProcStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := procStat{PPid: 4200, User: 12340 * time.Millisecond, System: 560 * time.Millisecond, ChildUser: 7 * time.Second, ChildSystem: 80 * time.Millisecond}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got.Self() != 12900*time.Millisecond || got.Children() != 7080*time.Millisecond {
		t.Errorf("Self %s, Children %s", got.Self(), got.Children())
	}
	for _, bad := range []string{"garbage", "1 (x) S 1 2 3", "1 (x) S one 1 1 0 -1 0 0 0 0 0 1 1 1 1"} {
		if _, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestReadProcStatAndChildren(t *testing.T) {
	t.Parallel()
	self, err := readProcStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if self.PPid != os.Getppid() {
		t.Errorf("ppid %d, want %d", self.PPid, os.Getppid())
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("sleep: ", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	kids, err := childrenOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(kids, cmd.Process.Pid) {
		t.Errorf("children %v lack the sleep %d", kids, cmd.Process.Pid)
	}
	args, err := readCmdline(cmd.Process.Pid)
	if err != nil || !slices.Equal(args, []string{"sleep", "30"}) {
		t.Errorf("cmdline %q, %v", args, err)
	}
}
