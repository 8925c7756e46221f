package contracts_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchq/benchq/contracts"
)

// FuzzDecodeSubject feeds every consumer's decoder arbitrary subjects and
// payloads: what it accepts must encode again into a message its schema
// accepts, so that a service can pass it on. (What it refuses, the bus
// refuses as permanent: internal/bus's TestDecodeFailuresArePermanent.)
func FuzzDecodeSubject(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("examples", "*", "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no contract examples: %v", err)
	}
	subjects := subjectsBySchema()
	for _, name := range files {
		raw, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		schema, _, _ := strings.Cut(filepath.Base(name), "--")
		for _, subject := range subjects[schema] {
			f.Add(subject, raw)
		}
	}
	f.Add("benchq.exp.x.final", []byte(`{}`))
	f.Fuzz(func(t *testing.T, subject string, data []byte) {
		msg, err := contracts.DecodeSubject(subject, data)
		if err != nil {
			return
		}
		schema, _, err := contracts.ForSubject(subject)
		if err != nil {
			t.Fatalf("decoded a message on %s, a subject ForSubject refuses: %v", subject, err)
		}
		again, err := json.Marshal(msg)
		if err != nil {
			t.Fatalf("decoded message does not encode: %v", err)
		}
		if err := contracts.Validate(schema, again); err != nil {
			t.Fatalf("%q on %s decodes, but encodes again into %s, which the %s schema refuses: %v", data, subject, again, schema, err)
		}
	})
}

// subjectsBySchema gives each schema the subjects of its topics, with a
// code, phase and shard filled in.
func subjectsBySchema() map[string][]string {
	topics := []contracts.Topic{contracts.TopicRequest, contracts.TopicStop, contracts.TopicRejected, contracts.TopicPlanned,
		contracts.TopicDeploy, contracts.TopicTeardown, contracts.TopicSUTReady, contracts.TopicSUTFailed, contracts.TopicSUTRemoved,
		contracts.TopicShard, contracts.TopicDrivers, contracts.TopicBarrierReady, contracts.TopicBarrierGo, contracts.TopicInterval,
		contracts.TopicFinal, contracts.TopicPhaseStarted, contracts.TopicPhaseDone, contracts.TopicPhaseFailed,
		contracts.TopicPhaseSkipped, contracts.TopicDriverEnded, contracts.TopicExperimentDone,
		contracts.TopicExperimentFailed, contracts.TopicExperimentCancelled}
	out := map[string][]string{}
	for _, tp := range topics {
		out[tp.Schema()] = append(out[tp.Schema()], contracts.Subject(tp.Template(), "1774020403", "Redis-8-2-16384-1-1", "1"))
	}
	return out
}
