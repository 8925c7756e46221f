package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benchq/benchq/contracts"
)

// Requests waiting when the scheduler starts are taken as one batch
// (requests.go). Within it each request sees those before it: the SUT the
// first one deploys counts against the second's -ms, a code the batch took
// is refused, two requests of the same second get two codes, and a stop
// finds the experiment planned before it in the batch.
func TestSchedulerPlansABatchOfRequests(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.request("r1", experimentRequest("b1", `,"max_suts":1`))
	w.request("r2", experimentRequest("b2", `,"max_suts":1`))
	w.request("r3", experimentRequest("b1", ``))
	noCode := `{"schema_version":1,"dbms":["Redis"],"sf":0.001,"max_suts":0}`
	w.request("r4", noCode)
	w.request("r5", noCode)
	w.publish(contracts.SubjStop, &contracts.Stop{Envelope: contracts.NewEnvelope("b2", "b2.stop", time.Now()), Reason: "test"})
	// A state the scheduler cannot read at start: its code is in doubt, and
	// a request for it is answered from the bucket before anything is
	// published (not planned, deployed, then refused by the write).
	kv, err := w.b.JS.KeyValue(w.ctx, contracts.KVExperiments)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(w.ctx, "y1", []byte(`not a state`)); err != nil {
		t.Fatal(err)
	}
	w.request("r7", experimentRequest("y1", ``))
	w.start()

	var deploy contracts.Deploy
	if subj := w.job(w.deploys, &deploy); subj != contracts.SubjDeploy || deploy.Code != "b1" {
		t.Fatalf("first job on %s: %+v", subj, deploy)
	}
	var rej contracts.Rejected
	w.events.wait(t, "benchq.exp.b1.rejected", &rej, nil)
	if rej.RequestID != "request-3" || len(rej.Errors) != 1 || !strings.Contains(rej.Errors[0].Message, "already exists") {
		t.Errorf("b1 requested again: %+v", rej)
	}
	w.waitState("b2", func(st State) bool { return st.Status == contracts.ExperimentCancelled })
	// The derived codes' two experiments deploy (-ms 0: no limit); b2 never did.
	for range 2 {
		if subj := w.job(w.deploys, &deploy); subj != contracts.SubjDeploy || deploy.Code == "b2" {
			t.Errorf("job on %s: %s, %s (b2 was queued behind b1, -ms 1)", subj, deploy.Code, deploy.Configuration)
		}
	}
	var rejY contracts.Rejected
	w.events.wait(t, "benchq.exp.y1.rejected", &rejY, nil)
	if rejY.RequestID != "request-7" || !strings.Contains(rejY.Reason+fmt.Sprint(rejY.Errors), "already exists") {
		t.Errorf("y1 (unreadable state): %+v", rejY)
	}
	if n := w.events.count("benchq.exp.y1.planned")["benchq.exp.y1.planned"]; n != 0 {
		t.Errorf("y1 planned %d times over a state the scheduler could not read", n)
	}
	if _, err := w.tryJob(w.deploys, &deploy, 300*time.Millisecond); err == nil {
		t.Errorf("one more job: %s, %s", deploy.Code, deploy.Configuration)
	}
	if e, err := kv.Get(w.ctx, "y1"); err != nil || string(e.Value()) != "not a state" {
		t.Errorf("y1's unreadable state was written over: %v", err)
	}
	if st := w.state("b1"); st.RequestID != "request-1" {
		t.Errorf("b1 holds request %s, want request-1", st.RequestID)
	}
	var planned contracts.Planned
	codes := map[string]bool{}
	w.events.wait(t, "benchq.exp.*.planned", &planned, func() bool {
		if !strings.HasPrefix(planned.Code, "b") {
			codes[planned.Code] = true
		}
		return len(codes) == 2
	})
	for code := range codes {
		if !codePattern.MatchString(code) {
			t.Errorf("derived code %q", code)
		}
	}

	// A code another writer stored after the scheduler read the bucket: the
	// write of the state is refused, and the redelivered request rejected.
	rev, err := kv.Create(w.ctx, "x1", []byte(`{"code":"x1","request_id":"elsewhere","status":"running"}`))
	if err != nil {
		t.Fatal(err)
	}
	w.request("r6", experimentRequest("x1", ``))
	w.events.wait(t, "benchq.exp.x1.rejected", &rej, nil)
	if e, err := kv.Get(w.ctx, "x1"); err != nil || !strings.Contains(string(e.Value()), "elsewhere") || e.Revision() != rev {
		t.Errorf("x1 was written over: %v", err)
	}
}
