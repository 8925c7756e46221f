package contracts

import (
	"fmt"
	"strings"
)

// ForSubject returns the schema and an empty message of the type published
// on subject, so consumers decode by subject in one way.
func ForSubject(subject string) (schema string, msg Message, err error) {
	switch {
	case subject == SubjDeploy:
		return SchemaDeploy, &Deploy{}, nil
	case subject == SubjTeardown:
		return SchemaTeardown, &Teardown{}, nil
	case subject == SubjStop:
		return SchemaStop, &Stop{}, nil
	case subject == SubjShard:
		return SchemaShardJob, &ShardJob{}, nil
	case subject == SubjDrivers:
		return SchemaDrivers, &Drivers{}, nil
	case strings.HasSuffix(subject, ".driver.ended"):
		return SchemaDriverEnded, &DriverEnded{}, nil
	case strings.HasSuffix(subject, ".planned"):
		return SchemaPlanned, &Planned{}, nil
	case strings.HasSuffix(subject, ".rejected"):
		return SchemaRejected, &Rejected{}, nil
	case strings.HasSuffix(subject, ".sut.ready"):
		return SchemaSUTReady, &SUTReady{}, nil
	case strings.HasSuffix(subject, ".sut.failed"):
		return SchemaSUTFailed, &SUTFailed{}, nil
	case strings.HasSuffix(subject, ".sut.removed"):
		return SchemaSUTRemoved, &SUTRemoved{}, nil
	case strings.HasSuffix(subject, ".barrier.ready"):
		return SchemaBarrierReady, &BarrierReady{}, nil
	case strings.HasSuffix(subject, ".barrier.go"):
		return SchemaBarrierGo, &BarrierGo{}, nil
	case strings.Contains(subject, ".phase."):
		return SchemaPhase, &PhaseEvent{}, nil
	case strings.HasPrefix(subject, "benchq.results.") && strings.HasSuffix(subject, ".interval"):
		return SchemaInterval, &Interval{}, nil
	case strings.HasPrefix(subject, "benchq.results.") && strings.HasSuffix(subject, ".final"):
		return SchemaFinal, &Final{}, nil
	case strings.HasSuffix(subject, ".done"), strings.HasSuffix(subject, ".failed"), strings.HasSuffix(subject, ".cancelled"):
		return SchemaExperimentEnd, &ExperimentEnd{}, nil
	}
	return "", nil, fmt.Errorf("no message type for subject %s", subject)
}
