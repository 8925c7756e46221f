// Package contracts is the one place where benchq's message contracts live:
// subjects, stream and KV names, message types and their JSON schemas.
// The same definitions are read by the Python reporter (names.json, schemas/);
// names_test.go proves the Go constants equal names.json.
package contracts

import "strings"

// SchemaVersion is carried by every message.
const SchemaVersion = 1

// Streams and KV buckets.
const (
	StreamRequests = "BENCHQ_REQUESTS"
	StreamEvents   = "BENCHQ_EVENTS"
	StreamJobs     = "BENCHQ_JOBS"
	StreamResults  = "BENCHQ_RESULTS"

	KVExperiments = "benchq_experiments"
	KVVolumes     = "benchq_volumes"
	KVAgents      = "benchq_agents"
)

// Subjects. Templates with {code}, {phase} and {shard} are filled by Subject.
const (
	SubjRequest      = "benchq.experiments.request"
	SubjStop         = "benchq.experiments.stop"
	SubjRejected     = "benchq.exp.{code}.rejected"
	SubjPlanned      = "benchq.exp.{code}.planned"
	SubjDeploy       = "benchq.jobs.deploy"
	SubjTeardown     = "benchq.jobs.teardown"
	SubjSUTReady     = "benchq.exp.{code}.sut.ready"
	SubjSUTFailed    = "benchq.exp.{code}.sut.failed"
	SubjSUTRemoved   = "benchq.exp.{code}.sut.removed"
	SubjShard        = "benchq.jobs.shard"
	SubjDrivers      = "benchq.jobs.drivers"
	SubjBarrierReady = "benchq.exp.{code}.barrier.ready"
	SubjBarrierGo    = "benchq.exp.{code}.barrier.go"
	SubjInterval     = "benchq.results.{code}.{phase}.{shard}.interval"
	SubjFinal        = "benchq.results.{code}.{phase}.{shard}.final"
	SubjPhaseStarted = "benchq.exp.{code}.phase.started"
	SubjPhaseDone    = "benchq.exp.{code}.phase.done"
	SubjPhaseFailed  = "benchq.exp.{code}.phase.failed"
	SubjPhaseSkipped = "benchq.exp.{code}.phase.skipped"
	SubjDriverEnded  = "benchq.exp.{code}.driver.ended"
	SubjDriverLost   = "benchq.exp.{code}.driver.lost"
	// SubjShardEnded is a shard's final that the scheduler publishes on the
	// shard's behalf (its driver never reported): a subject only the
	// scheduler may publish on, where agents' finals are signed (sign.go).
	SubjShardEnded = "benchq.exp.{code}.shard.ended"
	// SubjSUTEdge carries what the deployer read of a SUT at one edge of
	// a phase (SUTEdge).
	SubjSUTEdge = "benchq.exp.{code}.sut.edge"
	// SubjDriverPods is a core NATS request (in no stream): PodsQuery.
	SubjDriverPods          = "benchq.deployer.pods"
	SubjExperimentDone      = "benchq.exp.{code}.done"
	SubjExperimentFailed    = "benchq.exp.{code}.failed"
	SubjExperimentCancelled = "benchq.exp.{code}.cancelled"
)

// Stream subject sets.
var (
	StreamRequestsSubjects = []string{SubjRequest, SubjStop}
	StreamEventsSubjects   = []string{"benchq.exp.>"}
	StreamJobsSubjects     = []string{"benchq.jobs.>"}
	StreamResultsSubjects  = []string{"benchq.results.>"}
)

// StreamSubjects are the subjects stream declares (nil for a name that is
// not one of benchq's four streams). A consumer of a stream filters on them
// (bus.Consume), because a stream can hold messages under other subjects:
// a push consumer of another stream, which any role that may read that
// stream can create, delivers to whatever deliver subject its creator
// names, publish permissions or not (nats-server#8274), and a stream
// listening on that subject stores the message under its original subject
// ("$KV.benchq_agents.x"). Filtered out, such a message never reaches a
// service (docs/security.md).
func StreamSubjects(stream string) []string {
	switch stream {
	case StreamRequests:
		return StreamRequestsSubjects
	case StreamEvents:
		return StreamEventsSubjects
	case StreamJobs:
		return StreamJobsSubjects
	case StreamResults:
		return StreamResultsSubjects
	}
	return nil
}

// Subject fills a subject template. Missing values become "*" so the
// result doubles as a subscription filter: Subject(SubjFinal, "", "", "")
// is "benchq.results.*.*.*.final".
func Subject(tmpl, code, phase, shard string) string {
	r := strings.NewReplacer("{code}", orWildcard(code), "{phase}", orWildcard(phase), "{shard}", orWildcard(shard))
	return r.Replace(tmpl)
}

func orWildcard(s string) string {
	if s == "" {
		return "*"
	}
	return s
}
