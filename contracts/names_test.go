package contracts

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// names.json's sections beyond subjects, streams and KV (TestNamesMatchJSON)
// must say what the Go constants say.
func TestNamesSectionsMatchJSON(t *testing.T) {
	var n struct {
		Subjects map[string]string `json:"subjects"`
		Statuses struct {
			Result     map[string]string `json:"result"`
			Phase      map[string]string `json:"phase"`
			Experiment map[string]string `json:"experiment"`
		} `json:"statuses"`
		Kinds    map[string]string `json:"kinds"`
		Actions  map[string]string `json:"actions"`
		Backends map[string]string `json:"backends"`
		Durables map[string]string `json:"durables"`
		Requests map[string]string `json:"requests"`
	}
	if err := json.Unmarshal(Names(), &n); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"statuses": map[string]map[string]string{
			"result":     {"ok": StatusOK, "failed": StatusFailed, "simulated": StatusSimulated},
			"phase":      {"started": PhaseStarted, "done": PhaseDone, "failed": PhaseFailed, "skipped": PhaseSkipped},
			"experiment": {"running": ExperimentRunning, "done": ExperimentDone, "failed": ExperimentFailed, "cancelled": ExperimentCancelled},
		},
		"kinds":    map[string]string{"load": KindLoad, "run": KindRun},
		"actions":  map[string]string{"run": ActionRun, "load": ActionLoad, "start": ActionStart},
		"backends": map[string]string{"local": BackendLocal, "kubernetes": BackendKubernetes},
		"durables": map[string]string{
			"scheduler_requests": DurableSchedulerRequests, "scheduler_events": DurableSchedulerEvents, "scheduler_results": DurableSchedulerResults,
			"deployer": DurableDeployer, "deployer_drivers": DurableDeployerDrivers,
			"collector_events": DurableCollectorEvents, "collector_results": DurableCollectorResults, "agents": DurableAgents,
		},
	}
	if want := map[string]string{"comment": n.Requests["comment"], "driver_pods": SubjDriverPods}; !reflect.DeepEqual(n.Requests, want) {
		t.Errorf("requests differ:\njson %v\ngo   %v", n.Requests, want)
	}
	statuses := map[string]map[string]string{"result": n.Statuses.Result, "phase": n.Statuses.Phase, "experiment": n.Statuses.Experiment}
	got := map[string]any{"statuses": statuses, "kinds": n.Kinds, "actions": n.Actions, "backends": n.Backends, "durables": n.Durables}
	for k := range want {
		if !reflect.DeepEqual(got[k], want[k]) {
			t.Errorf("%s differ:\njson %v\ngo   %v", k, got[k], want[k])
		}
	}
	// Every subject of names.json is a Topic with that template, and no
	// Topic lacks one.
	if len(n.Subjects) != len(topics) {
		t.Errorf("names.json has %d subjects, Go %d topics", len(n.Subjects), len(topics))
	}
	for key, tmpl := range n.Subjects {
		if got := Topic(key).Template(); got != tmpl {
			t.Errorf("topic %s: template %q, names.json %q", key, got, tmpl)
		}
	}
}

// The ids on the wire are today's, byte for byte: JetStream de-duplicates
// on them, across versions too.
func TestIDs(t *testing.T) {
	now := time.Unix(1774020403, 123456789)
	cases := map[string]struct{ got, want string }{
		"request":      {RequestID("17", "a1b2"), "17.request.a1b2"},
		"request seq":  {RequestIDFallback(42), "request-42"},
		"rejected":     {RejectedID("17.request"), "17.request.rejected"},
		"planned":      {PlannedID("17"), "17.planned"},
		"deploy":       {DeployID("17", "Redis-8-2-16384-1"), "17.Redis-8-2-16384-1.deploy"},
		"teardown":     {TeardownID("17", "Redis-8-2-16384-1"), "17.Redis-8-2-16384-1.teardown"},
		"sut ready":    {SUTReadyID("17.c-1.deploy"), "17.c-1.deploy.ready"},
		"sut failed":   {SUTFailedID("17.c-1.deploy"), "17.c-1.deploy.failed"},
		"sut removed":  {SUTRemovedID("17.c-1.teardown"), "17.c-1.teardown.removed"},
		"shard job":    {ShardJobID("17", "c-1-0", 2, 1), "17.c-1-0.2.a1.job"},
		"requeued":     {RequeuedID("17.c-1-0.2.a1.job", 9), "17.c-1-0.2.a1.job.requeued.9"},
		"drivers":      {DriversID("17", "c-1-1", 2), "17.c-1-1.a2.drivers"},
		"driver ended": {DriverEndedID("17", "c-1-1", 2), "17.c-1-1.a2.driver.ended"},
		"ready":        {ReadyID("17", "c-1-0", 2, 1), "17.c-1-0.2.a1.ready"},
		"go":           {GoID("17", "c-1-0", 1), "17.c-1-0.a1.go"},
		"interval":     {IntervalID("17", "c-1-0", 2, 1, 30), "17.c-1-0.2.a1.i30"},
		"final":        {FinalID("17", "c-1-0", 2, 1), "17.c-1-0.2.a1.final"},
		"phase done":   {PhaseEventID("17", "c-1-0", 1, PhaseDone), "17.c-1-0.a1.done"},
		"phase failed": {PhaseEventID("17", "c-1-1", 2, PhaseFailed), "17.c-1-1.a2.failed"},
		"skipped":      {SkippedID("17", "c-1-0"), "17.c-1-0.skipped"},
		"end":          {ExperimentEndID("17"), "17.end"},
		"stop":         {StopID("17", now), "17.stop.1774020403123456789"},
	}
	for name, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", name, c.got, c.want)
		}
	}
}

func TestSubjects(t *testing.T) {
	cases := map[string]struct{ got, want string }{
		"phase done":  {TopicPhaseDone.For("17"), "benchq.exp.17.phase.done"},
		"fixed":       {TopicShard.For("17"), "benchq.jobs.shard"},
		"all":         {TopicSUTReady.All(), "benchq.exp.*.sut.ready"},
		"final":       {FinalSubject("17", "p-load", 2), "benchq.results.17.p-load.2.final"},
		"interval":    {IntervalSubject("17", "p-load", 2), "benchq.results.17.p-load.2.interval"},
		"intervals":   {TopicInterval.For("17"), "benchq.results.17.*.*.interval"},
		"events":      {ExperimentEvents("17"), "benchq.exp.17.>"},
		"phase topic": {PhaseTopic(PhaseSkipped).For("17"), "benchq.exp.17.phase.skipped"},
		"end topic":   {EndTopic(ExperimentCancelled).For("17"), "benchq.exp.17.cancelled"},
	}
	for name, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", name, c.got, c.want)
		}
	}
}

func TestParseSubject(t *testing.T) {
	cases := map[string]ParsedSubject{
		"benchq.experiments.request":          {Topic: TopicRequest},
		"benchq.jobs.teardown":                {Topic: TopicTeardown},
		"benchq.exp.17.planned":               {Topic: TopicPlanned, Code: "17"},
		"benchq.exp.17-3.phase.failed":        {Topic: TopicPhaseFailed, Code: "17-3"},
		"benchq.exp.done.done":                {Topic: TopicExperimentDone, Code: "done"},
		"benchq.exp.17.driver.ended":          {Topic: TopicDriverEnded, Code: "17"},
		"benchq.results.17.c-1-0.2.final":     {Topic: TopicFinal, Code: "17", Phase: "c-1-0", Shard: 2},
		"benchq.results.17.c-1-1.12.interval": {Topic: TopicInterval, Code: "17", Phase: "c-1-1", Shard: 12},
	}
	for subj, want := range cases {
		got, err := ParseSubject(subj)
		if err != nil || got != want {
			t.Errorf("%s: %+v %v, want %+v", subj, got, err, want)
		}
	}
	for _, bad := range []string{"benchq.exp.17.unheard.of", "benchq.results.17.p.x.final", "benchq.exp..planned", "benchq.jobs.shard.x", ""} {
		if p, err := ParseSubject(bad); err == nil {
			t.Errorf("%q parsed as %+v", bad, p)
		}
	}
	// Every topic's own subject parses back to it.
	for name := range topics {
		subj := Subject(name.Template(), "17", "p-load", "3")
		if p, err := ParseSubject(subj); err != nil || p.Topic != name {
			t.Errorf("%s (%s): %+v %v", name, subj, p, err)
		}
	}
	if p, _ := ParseSubject("benchq.exp.17.phase.skipped"); !p.IsPhase() || p.IsEnd() {
		t.Errorf("phase.skipped: IsPhase %v IsEnd %v", p.IsPhase(), p.IsEnd())
	}
	if p, _ := ParseSubject("benchq.exp.17.cancelled"); p.IsPhase() || !p.IsEnd() {
		t.Errorf("cancelled: IsPhase %v IsEnd %v", p.IsPhase(), p.IsEnd())
	}
}

func TestLiveAgents(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	beats := map[string]Heartbeat{"b": {Name: "b", At: now.Add(-AgentLiveness)}, "a": {Name: "a", At: now.Add(-time.Second)}, "gone": {Name: "gone", At: now.Add(-AgentLiveness - time.Millisecond)}}
	if got := LiveAgents(beats, now); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("live %v", got)
	}
	// By run: two live runs of one agent name it once; the newest run is
	// each name's.
	runs := map[string]Heartbeat{"U1": {Name: "a", Instance: "U1", At: now.Add(-2 * time.Second)}, "U2": {Name: "a", Instance: "U2", At: now.Add(-time.Second)},
		"U3": {Name: "b", Instance: "U3", At: now.Add(-time.Minute)}}
	if got := LiveAgents(runs, now); !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("live runs %v", got)
	}
	if got := NewestRuns(runs); len(got) != 2 || got["a"].Instance != "U2" || got["b"].Instance != "U3" {
		t.Errorf("newest runs %v", got)
	}
	if !(Heartbeat{At: now}).Live(now.Add(AgentLiveness)) || (Heartbeat{At: now}).Live(now.Add(AgentLiveness+1)) {
		t.Error("Heartbeat.Live disagrees with AgentLiveness")
	}
}

// Every output's formats are named, the default first, and the comment is
// not taken for an output.
func TestOutputFormats(t *testing.T) {
	for output, want := range map[string][]string{
		"summary": {"markdown", "json"}, "export": {"csv", "parquet"}, "compare": {"markdown", "html"}, "comment": nil, "report": nil,
	} {
		if got := OutputFormats(output); !reflect.DeepEqual(got, want) {
			t.Errorf("OutputFormats(%q) = %v, want %v", output, got, want)
		}
	}
}
