package main

import (
	"encoding/json"
	"testing"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/plan"
)

// The follower's lines, event by event, as the CLI prints them.
func TestDescribe(t *testing.T) {
	p, err := plan.Expand("17", contracts.Request{SchemaVersion: 1, DBMS: []string{"Redis", "PostgreSQL"}, SF: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	planned, _ := json.Marshal(map[string]any{"plan": p})
	cases := []struct {
		topic                  contracts.Topic
		data                   string
		line, end, rejectedWhy string
	}{
		{contracts.TopicPlanned, string(planned), "planned: 2 configuration(s), 4 phase(s)", "", ""},
		{contracts.TopicRejected, `{"reason":"dbms: unknown"}`, "", "", "dbms: unknown"}, // said once, as the error
		{contracts.TopicSUTReady, `{"configuration":"c-1","dbms":"Redis","endpoint":{"host":"h","port":1},"ready_after_ms":1500}`, "sut ready: c-1 (Redis on h:1, 1.5s)", "", ""},
		{contracts.TopicPhaseStarted, `{"phase":"c-1-0","kind":"load","shards":2}`, "phase started: c-1-0 (load, 2 shards)", "", ""},
		{contracts.TopicPhaseStarted, `{"phase":"c-1-1","kind":"run","shards":1}`, "phase started: c-1-1 (run, 1 shard)", "", ""},
		{contracts.TopicPhaseDone, `{"phase":"c-1-0","started_at":"2026-11-21T10:00:00Z","ended_at":"2026-11-21T10:00:02.5Z"}`, "phase done: c-1-0 (2.5s)", "", ""},
		{contracts.TopicPhaseSkipped, `{"phase":"c-1-0","reason":"persisted"}`, "phase skipped: c-1-0: persisted", "", ""},
		{contracts.TopicPhaseFailed, `{"phase":"c-1-0","reason":"lost"}`, "phase FAILED: c-1-0: lost", "", ""},
		{contracts.TopicExperimentFailed, `{"status":"failed","reason":"x"}`, "experiment failed: x", "failed", ""},
		// A driver's stack trace: its first line (the summary has it whole).
		{contracts.TopicPhaseFailed, `{"phase":"c-1-0","reason":"driver exited: FATAL: no more connections\n\tat a.b(C.java:1)\n\tat d"}`,
			"phase FAILED: c-1-0: driver exited: FATAL: no more connections … (in full in the summary, under Failures and re-runs)", "", ""},
		{contracts.TopicExperimentDone, `{"status":"done"}`, "experiment done", "done", ""},
		{contracts.TopicBarrierGo, `{}`, "", "", ""},
	}
	for _, c := range cases {
		subj, err := contracts.ParseSubject(c.topic.For("17"))
		if err != nil {
			t.Fatal(err)
		}
		line, end, rejected := describe(subj, []byte(c.data))
		if line != c.line || end != c.end || rejected != c.rejectedWhy {
			t.Errorf("%s: %q %q %q, want %q %q %q", c.topic, line, end, rejected, c.line, c.end, c.rejectedWhy)
		}
	}
}
