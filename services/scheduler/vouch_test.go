package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchq/benchq/contracts"
)

// startFakeAgent runs script under the command name driver-agent (a link
// to sh) with -name name among its arguments, as a driver agent's process
// looks to the voucher.
func startFakeAgent(t *testing.T, name, script string) int {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
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
		if comm, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "comm")); strings.TrimSpace(string(comm)) == "driver-agent" {
			break
		}
	}
	return cmd.Process.Pid
}

// A late agent whose process works (a busy loop) is vouched for from the
// second look on; one that sleeps, one on another host, one whose pid
// is not a driver agent of that name, and one that died are not.
func TestVoucherVouchesForLateAgentsThatWork(t *testing.T) {
	busy := startFakeAgent(t, "a1", "while :; do :; done")
	idle := startFakeAgent(t, "a2", "sleep 60")
	v := newVoucher()
	at := time.Now()
	late := at.Add(-contracts.AgentLiveness - time.Second)
	beats := map[string]contracts.Heartbeat{
		"a1":     {At: late, Host: v.host, Pid: busy},
		"a2":     {At: late, Host: v.host, Pid: idle},
		"a3":     {At: late, Host: v.host + "-elsewhere", Pid: busy},
		"a4":     {At: late, Host: v.host, Pid: os.Getpid()},
		"misfit": {At: late, Host: v.host, Pid: busy}, // a1's process, not named misfit
		"fresh":  {At: at, Host: v.host, Pid: busy},
	}
	if got := v.vouch(beats, at); len(got) != 0 {
		t.Errorf("first look: %v, want none (nothing to compare yet)", got)
	}
	time.Sleep(300 * time.Millisecond)
	got := v.vouch(beats, at.Add(time.Second))
	if len(got) != 1 || !got["a1"] {
		t.Errorf("second look: %v, want only a1", got)
	}
	if err := kill(busy); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if got := v.vouch(beats, at.Add(2*time.Second)); len(got) != 0 {
		t.Errorf("after a1 died: %v, want none", got)
	}
}

func kill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
