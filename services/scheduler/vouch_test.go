package main

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

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
	if got := v.vouch(t.Context(), byRun(beats), at); len(got) != 0 {
		t.Errorf("first look: %v, want none (nothing to compare yet)", got)
	}
	time.Sleep(300 * time.Millisecond)
	got := v.vouch(t.Context(), byRun(beats), at.Add(time.Second))
	if len(got) != 1 || !got["run-a1"] {
		t.Errorf("second look: %v, want only a1", got)
	}
	testenv.Reap(busy)
	time.Sleep(100 * time.Millisecond)
	if got := v.vouch(t.Context(), byRun(beats), at.Add(2*time.Second)); len(got) != 0 {
		t.Errorf("after a1 died: %v, want none", got)
	}
}

// On Kubernetes an agent is named after its pod and runs on a host of that
// name: late, it is vouched for while the deployer says its pod is Running.
// Without an answer (no deployer watching pods) the heartbeats decide.
func TestVoucherAsksTheDeployerForPods(t *testing.T) {
	nc, err := nats.Connect(testenv.NATS(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	v := newVoucher()
	v.podsRunning = askDeployer(nc)
	at := time.Now()
	late := at.Add(-contracts.AgentLiveness - time.Second)
	beats := map[string]contracts.Heartbeat{
		"bq-x-run-1-abcde": {At: late, Host: "bq-x-run-1-abcde"},
		"bq-x-run-1-fghij": {At: late, Host: "bq-x-run-1-fghij"},
		"bq-x-run-1-klmno": {At: at, Host: "bq-x-run-1-klmno"},
	}
	if got := v.vouch(t.Context(), byRun(beats), at); len(got) != 0 {
		t.Errorf("no deployer answers: %v, want none", got)
	}
	asked := make(chan []string, 4)
	sub, err := nc.Subscribe(contracts.SubjDriverPods, func(m *nats.Msg) {
		var q contracts.PodsQuery
		_ = json.Unmarshal(m.Data, &q)
		slices.Sort(q.Pods)
		asked <- q.Pods
		a, _ := json.Marshal(contracts.PodsAnswer{Running: []string{"bq-x-run-1-abcde", "bq-x-run-1-klmno"}})
		_ = m.Respond(a)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	got := v.vouch(t.Context(), byRun(beats), at)
	if len(got) != 1 || !got["run-bq-x-run-1-abcde"] {
		t.Errorf("vouched %v, want only bq-x-run-1-abcde (Running and late)", got)
	}
	if q := <-asked; strings.Join(q, " ") != "bq-x-run-1-abcde bq-x-run-1-fghij" {
		t.Errorf("asked for %v, want the two late ones", q)
	}
}

// A run whose process on this host is no longer a driver agent of its name,
// while a newer run beats under that name, is gone: restarted. The newest
// run, a run whose process still runs, and a run on another host are not.
func TestVoucherSeesRestartedRunsGone(t *testing.T) {
	alive := testenv.FakeDriverAgent(t, "a1", "sleep 60")
	dead := testenv.FakeDriverAgent(t, "a1", "sleep 60")
	testenv.Reap(dead)
	v := newVoucher()
	at := time.Now()
	runs := map[string]contracts.Heartbeat{
		"old":       {Name: "a1", Instance: "old", At: at.Add(-2 * time.Second), Host: v.host, Pid: dead},
		"new":       {Name: "a1", Instance: "new", At: at, Host: v.host, Pid: alive},
		"beside":    {Name: "a1", Instance: "beside", At: at.Add(-time.Second), Host: v.host, Pid: alive},
		"elsewhere": {Name: "a1", Instance: "elsewhere", At: at.Add(-time.Second), Host: v.host + "-elsewhere", Pid: dead},
		"only":      {Name: "a2", Instance: "only", At: at.Add(-time.Minute), Host: v.host, Pid: dead},
	}
	if got := v.gone(runs); len(got) != 1 || !got["old"] {
		t.Errorf("gone %v, want only the old run of a1", got)
	}
}
