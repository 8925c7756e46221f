package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FakeDriverAgent runs script (sh) as a process that looks like a driver
// agent named name to procs.IsDriverAgent: its command is driver-agent (a
// link to sh) and its arguments say -name name. It returns the pid once the
// process has exec'd; the test's end kills it.
func FakeDriverAgent(t testing.TB, name, script string) int {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("skipping: no sh")
	}
	link := filepath.Join(t.TempDir(), "driver-agent")
	if err := os.Symlink(sh, link); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(link, "-c", script, "driver-agent", "-name", name)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Until it has exec'd, the child is a copy of the test binary.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/comm"); strings.TrimSpace(string(comm)) == "driver-agent" {
			break
		}
	}
	return cmd.Process.Pid
}

// Reap kills pid, a child of this test, and waits for it to be gone (not a
// zombie that still looks alive).
func Reap(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
		_, _ = p.Wait()
	}
}
