package main

import (
	"os"
	"testing"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/testenv"
)

// A late agent whose process works (a busy loop) is vouched for from the
// second look on; one that sleeps, one on another host, one whose pid
// is not a driver agent of that name, and one that died are not.
func TestVoucherVouchesForLateAgentsThatWork(t *testing.T) {
	busy := testenv.FakeDriverAgent(t, "a1", "while :; do :; done")
	idle := testenv.FakeDriverAgent(t, "a2", "sleep 60")
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
	testenv.Reap(busy)
	time.Sleep(100 * time.Millisecond)
	if got := v.vouch(beats, at.Add(2*time.Second)); len(got) != 0 {
		t.Errorf("after a1 died: %v, want none", got)
	}
}
