package contracts

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// Message ids. They are deterministic — the same message always gets the
// same id — because JetStream de-duplicates on them (Nats-Msg-Id) and the
// collector stores each id once: a service that re-publishes after a crash,
// or publishes on another's behalf (the scheduler's final for a shard whose
// driver never reported), must build exactly the id the first publisher did.
// Every id is built here and nowhere else.

// RequestID is the id the CLI gives one submission of experiment code's
// request. The nonce (RandomSuffix, drawn once per submission and kept for
// its retries) tells submissions apart: the same code submitted again is a
// new request, which the scheduler refuses as a code taken, not a
// redelivery of the first that JetStream or the scheduler would drop.
func RequestID(code, nonce string) string { return code + ".request." + nonce }

// RequestIDFallback names a request that came without an id by its stream
// sequence.
func RequestIDFallback(seq uint64) string { return fmt.Sprintf("request-%d", seq) }

// RejectedID answers request requestID.
func RejectedID(requestID string) string { return requestID + ".rejected" }

// PlannedID is the plan of experiment code.
func PlannedID(code string) string { return code + ".planned" }

// DeployID asks for configuration's SUT.
func DeployID(code, configuration string) string { return code + "." + configuration + ".deploy" }

// TeardownID asks to remove configuration's SUT.
func TeardownID(code, configuration string) string { return code + "." + configuration + ".teardown" }

// DeployIDAt and TeardownIDAt are DeployID and TeardownID of the SUT's
// generation: 0 is its first deployment (the ids above), n its n-th
// deployment after that, for a loading phase run again on a new SUT
// (ConfigState.Generation). Each generation's messages are new to
// JetStream's de-duplication and to the collector.
func DeployIDAt(code, configuration string, generation int) string {
	return withGeneration(DeployID(code, configuration), generation)
}

// TeardownIDAt: see DeployIDAt.
func TeardownIDAt(code, configuration string, generation int) string {
	return withGeneration(TeardownID(code, configuration), generation)
}

func withGeneration(id string, generation int) string {
	if generation == 0 {
		return id
	}
	return fmt.Sprintf("%s.g%d", id, generation+1)
}

// SUTReadyID answers deploy job deployID.
func SUTReadyID(deployID string) string { return deployID + ".ready" }

// SUTFailedID answers deploy job deployID.
func SUTFailedID(deployID string) string { return deployID + ".failed" }

// SUTRemovedID answers teardown job teardownID.
func SUTRemovedID(teardownID string) string { return teardownID + ".removed" }

// ShardJobID is shard shard of phase's attempt.
func ShardJobID(code, phase string, shard, attempt int) string {
	return fmt.Sprintf("%s.%s.%d.a%d.job", code, phase, shard, attempt)
}

// RequeuedID is a shard job handed back to the queue by an agent that got it
// as stream message seq.
func RequeuedID(jobID string, seq uint64) string { return fmt.Sprintf("%s.requeued.%d", jobID, seq) }

// DriversID asks for the driver agents of phase's attempt.
func DriversID(code, phase string, attempt int) string {
	return fmt.Sprintf("%s.%s.a%d.drivers", code, phase, attempt)
}

// DriverEndedID reports the end of the driver Job of phase's attempt.
func DriverEndedID(code, phase string, attempt int) string {
	return fmt.Sprintf("%s.%s.a%d.driver.ended", code, phase, attempt)
}

// DriverLostID reports that pod, a driver pod of phase's attempt, was
// deleted or failed before it completed.
func DriverLostID(code, phase string, attempt int, pod string) string {
	return fmt.Sprintf("%s.%s.a%d.%s.lost", code, phase, attempt, pod)
}

// SUTEdgeID is the deployer's reads of a SUT at edge (EdgeStart, EdgeEnd)
// of phase's attempt.
func SUTEdgeID(code, phase string, attempt int, edge string) string {
	return fmt.Sprintf("%s.%s.a%d.edge.%s", code, phase, attempt, edge)
}

// ReadyID is shard shard's READY at phase's barrier.
func ReadyID(code, phase string, shard, attempt int) string {
	return fmt.Sprintf("%s.%s.%d.a%d.ready", code, phase, shard, attempt)
}

// GoID is the GO of phase's attempt.
func GoID(code, phase string, attempt int) string {
	return fmt.Sprintf("%s.%s.a%d.go", code, phase, attempt)
}

// IntervalID is shard shard's status interval at elapsedS seconds.
func IntervalID(code, phase string, shard, attempt int, elapsedS int64) string {
	return fmt.Sprintf("%s.%s.%d.a%d.i%d", code, phase, shard, attempt, elapsedS)
}

// FinalID is shard shard's final result; the agent and the scheduler (on
// the shard's behalf) both publish it.
func FinalID(code, phase string, shard, attempt int) string {
	return fmt.Sprintf("%s.%s.%d.a%d.final", code, phase, shard, attempt)
}

// PhaseEventID is phase's attempt reaching status (PhaseStarted, PhaseDone,
// PhaseFailed).
func PhaseEventID(code, phase string, attempt int, status string) string {
	return fmt.Sprintf("%s.%s.a%d.%s", code, phase, attempt, status)
}

// SkippedID says a loading phase was skipped (it has no attempt).
func SkippedID(code, phase string) string { return fmt.Sprintf("%s.%s.%s", code, phase, PhaseSkipped) }

// ExperimentEndID is the end of experiment code, whatever its status.
func ExperimentEndID(code string) string { return code + ".end" }

// StopID is a benchq stop of code: every stop is a new message.
func StopID(code string, now time.Time) string {
	return fmt.Sprintf("%s.stop.%d", code, now.UnixNano())
}

// CodePattern is what an experiment code may be (the request schema's
// pattern): it becomes a token of every subject and message id of the
// experiment.
var CodePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// Code is the one rule for the experiment codes benchq makes (a user may
// choose her own with -e): unix seconds at t, as bexhoma's codes are, then
// "-" and suffix when suffix is not empty. The CLI and the scheduler use no
// suffix, so a code reads as bexhoma's; the scheduler adds the request's
// stream sequence when that second's code is taken, and the HTTP intake,
// which takes a thousand requests a second, adds RandomSuffix.
func Code(t time.Time, suffix string) string {
	if suffix == "" {
		return strconv.FormatInt(t.Unix(), 10)
	}
	return strconv.FormatInt(t.Unix(), 10) + "-" + suffix
}

// RandomSuffix is 48 random bits in hex, for Code: a thousand codes a
// second for a day draw the same one with a chance of about 1 in 10,000.
func RandomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
