package main

import (
	"os"
	"testing"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/testenv"
)

// A job redelivered while the agent that took it still runs on this host
// (it only missed its touches of the job) is not run a second time: the
// heartbeats name that agent, and its process is a live driver agent of
// that name. Once it died, or when the heartbeat names another job, this
// agent, another host or a process that is not it, the job is run here.
func TestAJobItsAgentStillRunsIsNotRunTwice(t *testing.T) {
	ctx := t.Context()
	b := testenv.Bus(t, ctx, testenv.NATS(t))
	var err error
	if b.Signer, err = contracts.NewSigner(); err != nil {
		t.Fatal(err)
	}
	a := &Agent{cfg: Config{Name: "agent-2"}, bus: b}
	host, _ := os.Hostname()

	// The holder: a process whose command is driver-agent, named agent-1.
	pid := testenv.FakeDriverAgent(t, "agent-1", "sleep 60")
	beat := func(name, busy, host string, pid int) {
		t.Helper()
		if err := b.PutHeartbeat(ctx, contracts.Heartbeat{Name: name, At: time.Now().UTC(), Busy: busy, Host: host, Pid: pid}); err != nil {
			t.Fatal(err)
		}
	}
	const job = "c.p.1.a1.job"
	beat("agent-1", job, host, pid)
	if got := a.holderOf(ctx, job); got != "agent-1" {
		t.Errorf("held by a live agent-1: %q", got)
	}
	for _, tc := range []struct {
		what             string
		name, busy, host string
	}{
		{"another job", "agent-1", "c.p.2.a1.job", host},
		{"another host", "agent-1", job, host + "-elsewhere"},
		{"itself", "agent-2", job, host},
		{"a process that is not that agent", "agent-3", job, host},
	} {
		beat("agent-1", "", host, pid)
		beat(tc.name, tc.busy, tc.host, pid)
		if got := a.holderOf(ctx, job); got != "" {
			t.Errorf("%s: held by %q, want nobody", tc.what, got)
		}
		beat(tc.name, "", tc.host, pid)
	}
	beat("agent-1", job, host, pid)
	testenv.Reap(pid)
	if got := a.holderOf(ctx, job); got != "" {
		t.Errorf("after agent-1 died: held by %q", got)
	}
}
