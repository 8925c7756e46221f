package contracts

import (
	"fmt"
	"strconv"
	"strings"
)

// Topic is one kind of subject: where a message type is published. Its
// value is the subject's key in names.json.
type Topic string

// Topics, one per subject of names.json.
const (
	TopicRequest             Topic = "request"
	TopicStop                Topic = "stop"
	TopicRejected            Topic = "rejected"
	TopicPlanned             Topic = "planned"
	TopicDeploy              Topic = "deploy"
	TopicTeardown            Topic = "teardown"
	TopicSUTReady            Topic = "sut_ready"
	TopicSUTFailed           Topic = "sut_failed"
	TopicSUTRemoved          Topic = "sut_removed"
	TopicSUTEdge             Topic = "sut_edge"
	TopicShard               Topic = "shard"
	TopicDrivers             Topic = "drivers"
	TopicBarrierReady        Topic = "barrier_ready"
	TopicBarrierGo           Topic = "barrier_go"
	TopicInterval            Topic = "interval"
	TopicFinal               Topic = "final"
	TopicPhaseStarted        Topic = "phase_started"
	TopicPhaseDone           Topic = "phase_done"
	TopicPhaseFailed         Topic = "phase_failed"
	TopicPhaseSkipped        Topic = "phase_skipped"
	TopicDriverEnded         Topic = "driver_ended"
	TopicDriverLost          Topic = "driver_lost"
	TopicShardEnded          Topic = "shard_ended"
	TopicExperimentDone      Topic = "experiment_done"
	TopicExperimentFailed    Topic = "experiment_failed"
	TopicExperimentCancelled Topic = "experiment_cancelled"
)

// topic is what a topic carries: its subject template, the schema of its
// messages and an empty message to decode into (nil: not an envelope
// message, i.e. the request).
type topic struct {
	tmpl, schema string
	msg          func() Message
	tokens       []string
}

var topics = map[Topic]*topic{
	TopicRequest:             {tmpl: SubjRequest, schema: SchemaRequest},
	TopicStop:                {tmpl: SubjStop, schema: SchemaStop, msg: func() Message { return &Stop{} }},
	TopicRejected:            {tmpl: SubjRejected, schema: SchemaRejected, msg: func() Message { return &Rejected{} }},
	TopicPlanned:             {tmpl: SubjPlanned, schema: SchemaPlanned, msg: func() Message { return &Planned{} }},
	TopicDeploy:              {tmpl: SubjDeploy, schema: SchemaDeploy, msg: func() Message { return &Deploy{} }},
	TopicTeardown:            {tmpl: SubjTeardown, schema: SchemaTeardown, msg: func() Message { return &Teardown{} }},
	TopicSUTReady:            {tmpl: SubjSUTReady, schema: SchemaSUTReady, msg: func() Message { return &SUTReady{} }},
	TopicSUTFailed:           {tmpl: SubjSUTFailed, schema: SchemaSUTFailed, msg: func() Message { return &SUTFailed{} }},
	TopicSUTRemoved:          {tmpl: SubjSUTRemoved, schema: SchemaSUTRemoved, msg: func() Message { return &SUTRemoved{} }},
	TopicSUTEdge:             {tmpl: SubjSUTEdge, schema: SchemaSUTEdge, msg: func() Message { return &SUTEdge{} }},
	TopicShard:               {tmpl: SubjShard, schema: SchemaShardJob, msg: func() Message { return &ShardJob{} }},
	TopicDrivers:             {tmpl: SubjDrivers, schema: SchemaDrivers, msg: func() Message { return &Drivers{} }},
	TopicBarrierReady:        {tmpl: SubjBarrierReady, schema: SchemaBarrierReady, msg: func() Message { return &BarrierReady{} }},
	TopicBarrierGo:           {tmpl: SubjBarrierGo, schema: SchemaBarrierGo, msg: func() Message { return &BarrierGo{} }},
	TopicInterval:            {tmpl: SubjInterval, schema: SchemaInterval, msg: func() Message { return &Interval{} }},
	TopicFinal:               {tmpl: SubjFinal, schema: SchemaFinal, msg: func() Message { return &Final{} }},
	TopicPhaseStarted:        {tmpl: SubjPhaseStarted, schema: SchemaPhase, msg: func() Message { return &PhaseEvent{} }},
	TopicPhaseDone:           {tmpl: SubjPhaseDone, schema: SchemaPhase, msg: func() Message { return &PhaseEvent{} }},
	TopicPhaseFailed:         {tmpl: SubjPhaseFailed, schema: SchemaPhase, msg: func() Message { return &PhaseEvent{} }},
	TopicPhaseSkipped:        {tmpl: SubjPhaseSkipped, schema: SchemaPhase, msg: func() Message { return &PhaseEvent{} }},
	TopicDriverEnded:         {tmpl: SubjDriverEnded, schema: SchemaDriverEnded, msg: func() Message { return &DriverEnded{} }},
	TopicDriverLost:          {tmpl: SubjDriverLost, schema: SchemaDriverLost, msg: func() Message { return &DriverLost{} }},
	TopicShardEnded:          {tmpl: SubjShardEnded, schema: SchemaFinal, msg: func() Message { return &Final{} }},
	TopicExperimentDone:      {tmpl: SubjExperimentDone, schema: SchemaExperimentEnd, msg: func() Message { return &ExperimentEnd{} }},
	TopicExperimentFailed:    {tmpl: SubjExperimentFailed, schema: SchemaExperimentEnd, msg: func() Message { return &ExperimentEnd{} }},
	TopicExperimentCancelled: {tmpl: SubjExperimentCancelled, schema: SchemaExperimentEnd, msg: func() Message { return &ExperimentEnd{} }},
}

func init() {
	for _, t := range topics {
		t.tokens = strings.Split(t.tmpl, ".")
	}
}

// Template is the topic's subject template ({code}, {phase}, {shard}).
func (t Topic) Template() string { return topics[t].tmpl }

// Schema names the schema of the messages published on the topic.
func (t Topic) Schema() string { return topics[t].schema }

// For is the topic's subject for experiment code; for a result topic
// (interval, final) it matches every phase and shard. Subjects without a
// code (deploy, shard, …) ignore it.
func (t Topic) For(code string) string { return Subject(t.Template(), code, "", "") }

// All matches the topic's subjects of every experiment: a consumer filter.
func (t Topic) All() string { return Subject(t.Template(), "", "", "") }

// FinalSubject is where shard shard of phase publishes its final result.
func FinalSubject(code, phase string, shard int) string {
	return Subject(SubjFinal, code, phase, strconv.Itoa(shard))
}

// IntervalSubject is where shard shard of phase streams its intervals.
func IntervalSubject(code, phase string, shard int) string {
	return Subject(SubjInterval, code, phase, strconv.Itoa(shard))
}

// ExperimentEvents matches every event of experiment code (BENCHQ_EVENTS).
func ExperimentEvents(code string) string { return "benchq.exp." + code + ".>" }

// PhaseTopic is the topic of a phase event with status (PhaseStarted, …).
func PhaseTopic(status string) Topic {
	return map[string]Topic{PhaseStarted: TopicPhaseStarted, PhaseDone: TopicPhaseDone, PhaseFailed: TopicPhaseFailed, PhaseSkipped: TopicPhaseSkipped}[status]
}

// EndTopic is the topic of an experiment's end with status (ExperimentDone, …).
func EndTopic(status string) Topic {
	return map[string]Topic{ExperimentDone: TopicExperimentDone, ExperimentFailed: TopicExperimentFailed, ExperimentCancelled: TopicExperimentCancelled}[status]
}

// ParsedSubject is what a subject says: its topic and the values of the
// template's placeholders (Shard 0 where the topic has none).
type ParsedSubject struct {
	Topic Topic
	Code  string
	Phase string
	Shard int
}

// IsPhase reports a phase event (started, done, failed or skipped).
func (p ParsedSubject) IsPhase() bool {
	return topics[p.Topic] != nil && topics[p.Topic].schema == SchemaPhase
}

// IsEnd reports an experiment's end (done, failed or cancelled).
func (p ParsedSubject) IsEnd() bool {
	return topics[p.Topic] != nil && topics[p.Topic].schema == SchemaExperimentEnd
}

// ParseSubject tells which topic subject belongs to, and its code, phase and
// shard. Codes, phases and shards are single NATS tokens (no dots), so a
// subject matches at most one template.
func ParseSubject(subject string) (ParsedSubject, error) {
	tokens := strings.Split(subject, ".")
	for name, t := range topics {
		if p, ok := t.match(tokens); ok {
			p.Topic = name
			return p, nil
		}
	}
	return ParsedSubject{}, fmt.Errorf("no message type for subject %s", subject)
}

func (t *topic) match(tokens []string) (ParsedSubject, bool) {
	var p ParsedSubject
	if len(tokens) != len(t.tokens) {
		return p, false
	}
	for i, want := range t.tokens {
		got := tokens[i]
		switch want {
		case "{code}":
			p.Code = got
		case "{phase}":
			p.Phase = got
		case "{shard}":
			n, err := strconv.Atoi(got)
			if err != nil {
				return p, false
			}
			p.Shard = n
		default:
			if got != want {
				return p, false
			}
			continue
		}
		if got == "" {
			return p, false
		}
	}
	return p, true
}

// ForSubject returns the schema and an empty message of the type published
// on subject, so consumers decode by subject in one way.
func ForSubject(subject string) (schema string, msg Message, err error) {
	p, err := ParseSubject(subject)
	if err != nil {
		return "", nil, err
	}
	t := topics[p.Topic]
	if t.msg == nil {
		return "", nil, fmt.Errorf("no message type for subject %s", subject)
	}
	return t.schema, t.msg(), nil
}
