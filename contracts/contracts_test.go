package contracts

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The same example files are checked by the Python reporter's
// tests/test_contracts.py: both languages must accept the valid ones and
// reject the invalid ones.
func TestExamples(t *testing.T) {
	for _, verdict := range []string{"valid", "invalid"} {
		files, _ := filepath.Glob(filepath.Join("examples", verdict, "*.json"))
		if len(files) == 0 {
			t.Fatalf("no %s examples", verdict)
		}
		for _, f := range files {
			schema := strings.SplitN(filepath.Base(f), "--", 2)[0]
			t.Run(verdict+"/"+filepath.Base(f), func(t *testing.T) {
				raw, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				err = Validate(schema, raw)
				if verdict == "valid" && err != nil {
					t.Errorf("rejected: %v", err)
				}
				if verdict == "invalid" {
					if err == nil {
						t.Error("accepted")
					} else if !errors.Is(err, ErrInvalid) {
						t.Errorf("error %v does not wrap ErrInvalid", err)
					}
				}
			})
		}
	}
}

// Every schema file has examples of both verdicts: neither language can
// drift unnoticed, and every schema is shown to reject something. A file
// per reason: examples/invalid/<schema>--<what is wrong>.json.
func TestEverySchemaHasExamples(t *testing.T) {
	schemas, _ := filepath.Glob(filepath.Join("schemas", "*.schema.json"))
	if len(schemas) == 0 {
		t.Fatal("no schemas")
	}
	for _, f := range schemas {
		s := strings.TrimSuffix(filepath.Base(f), ".schema.json")
		for _, verdict := range []string{"valid", "invalid"} {
			if ex, _ := filepath.Glob(filepath.Join("examples", verdict, s+"--*.json")); len(ex) == 0 {
				t.Errorf("schema %s has no %s example (examples/%s/%s--<description>.json)", s, verdict, verdict, s)
			}
		}
	}
}

func TestFieldErrorsNameTheField(t *testing.T) {
	cases := map[string]struct{ raw, field, contains string }{
		"unknown field": {`{"schema_version":1,"dbms":["Redis"],"nlp":[2]}`, "nlp", "allowed fields: "},
		"workload":      {`{"schema_version":1,"dbms":["Redis"],"workload":"g"}`, "workload", `"a", "b", "c", "d", "e", "f"`},
		"pods":          {`{"schema_version":1,"dbms":["Redis"],"loading_pods":[2,0]}`, "loading_pods[1]", "minimum"},
		"dbms missing":  {`{"schema_version":1}`, "dbms", "required"},
		"not json":      {`{"schema_version":`, "(message)", "not valid JSON"},
		// Quoted back escaped: the message is printed on a terminal.
		"escape sequence": {`{"schema_version":1,"dbms":["Redis"],"notes":["\u001b[31mred"]}`, "notes[0]", `'\x1b[31mred' holds a control character`},
		"right-to-left":   {`{"schema_version":1,"dbms":["Redis"],"notes":["bidi\u202egnp.exe"]}`, "notes[0]", `'bidi\u202egnp.exe' holds a control character`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			err := Validate(SchemaRequest, []byte(c.raw))
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("want *ValidationError, got %v", err)
			}
			if len(ve.Errors) != 1 || ve.Errors[0].Field != c.field || !strings.Contains(ve.Errors[0].Message, c.contains) || strings.ContainsRune(ve.Errors[0].Message, 0x1b) {
				t.Errorf("got %+v; want field %q with %q", ve.Errors, c.field, c.contains)
			}
		})
	}
	// A schema that extends the envelope (unevaluatedProperties: false)
	// names an unknown field as such too, not as "false schema".
	err := Validate(SchemaFinal, []byte(`{"schema_version":1,"id":"1774020403.x","code":"1774020403","ts":"2026-11-27T10:00:00Z","configuration":"c-1","phase":"c-1-0","kind":"load","shard":1,"attempt":1,"agent":"a","status":"ok","started_at":"2026-11-27T10:00:00Z","ended_at":"2026-11-27T10:00:01Z","from_a_newer_agent":1}`))
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Errors) != 1 || ve.Errors[0].Field != "from_a_newer_agent" || !strings.Contains(ve.Errors[0].Message, "unknown field; allowed fields: ") || !strings.Contains(ve.Errors[0].Message, "driver_cpu") {
		t.Errorf("final with an unknown field: %v", err)
	}
}

// Messages built by Go code validate against their schemas.
func TestGoMessagesValidate(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	env := NewEnvelope("1774020403", "1774020403.x", now)
	ep := Endpoint{Host: "127.0.0.1", Port: 6379}
	msgs := map[string]any{
		SchemaDeploy: &Deploy{Envelope: env, Configuration: "PgBouncer-8-2-16384-4-128-64-1", DBMS: "PgBouncer", Benchmark: "ycsb", SUT: &SUTSpec{
			Workers: 3, Pool: &Pool{Pods: 4, Inbound: 128, Outbound: 64}, Resources: &Resources{RequestCPU: "4", RequestMemory: "16Gi", LimitMemory: "64Gi"},
			Storage: &Storage{Class: "shared", Size: "50Gi", Remove: true}, Node: "cl-worker11", Monitoring: &Monitoring{SUT: true}, UseCase: "ycsb-0.1"}},
		SchemaStop:               &Stop{Envelope: env, Reason: "enough"},
		SchemaSUTReady:           &SUTReady{Envelope: env, Configuration: "Redis-8-2-16384-1", DBMS: "Redis", Endpoint: ep, Info: map[string]any{"Cores": 2}},
		SchemaShardJob:           &ShardJob{Envelope: env, Configuration: "c-1", Phase: "c-1-0", Kind: KindLoad, Shard: 1, Shards: 1, Attempt: 1, Engine: "ycsb", DBMS: "Redis", Endpoint: ep, StartBy: &now, Node: "n1", YCSB: &YCSBShard{Workload: "a", Threads: 1, RecordCount: 10, InsertCount: 10, OperationCount: 10}},
		SchemaShardJob + "-tpcc": &ShardJob{Envelope: env, Configuration: "c-1", Phase: "c-1-1", Kind: KindRun, Shard: 1, Shards: 2, Attempt: 1, Engine: "benchbase", DBMS: "PostgreSQL", Endpoint: ep, TPCC: &TPCCShard{Warehouses: 2, Terminals: 4, Target: 512, DurationS: 60, NewConnection: true}},
		SchemaBarrierGo:          &BarrierGo{Envelope: env, Phase: "c-1-0", Attempt: 1, StartAt: now},
		SchemaFinal:              &Final{Envelope: env, Configuration: "c-1", Phase: "c-1-0", Kind: KindLoad, Shard: 1, Attempt: 1, Agent: "a", Status: StatusOK, StartedAt: now, EndedAt: now, Operations: []OpResult{{Name: "INSERT", Count: 10, ReturnCodes: map[string]int64{"OK": 10}}}, DriverCPU: []CPURead{{At: now, Seconds: 1.5}, {At: now.Add(time.Second), Seconds: 2.25}}},
		SchemaPhase:              &PhaseEvent{Envelope: env, Configuration: "c-1", Phase: "c-1-0", Kind: KindLoad, Status: PhaseDone, Attempt: 1, StartedAt: &now, EndedAt: &now},
		SchemaExperimentEnd:      &ExperimentEnd{Envelope: env, Status: ExperimentDone},
		SchemaFinal + "-simulated": &Final{Envelope: env, Configuration: "c-1", Phase: "c-1-0", Kind: KindLoad, Shard: 2, Attempt: 1, Agent: "bq-1-c-1-0",
			Status: StatusSimulated, Error: "simulated on kwok", StartedAt: now, EndedAt: now},
		SchemaDrivers: &Drivers{Envelope: env, Configuration: "c-1", DBMS: "Redis", Phase: "c-1-1", Kind: KindRun, Attempt: 1, Shards: 2, Node: "n1"},
		SchemaDriverEnded: &DriverEnded{Envelope: env, DriverJob: DriverJob{Configuration: "c-1", Phase: "c-1-1", Kind: KindRun, Attempt: 1, Job: "bq-1-c-1-1"},
			Shards: 2, Succeeded: 2, Simulated: true, Nodes: []string{"kwok-node-0"}, StartedAt: &now, EndedAt: &now, Reason: "Complete"},
		SchemaDriverLost: &DriverLost{Envelope: env, DriverJob: DriverJob{Configuration: "c-1", Phase: "c-1-1", Kind: KindRun, Attempt: 1, Job: "bq-1-c-1-1"},
			Pod: "bq-1-c-1-1-x7k2p", Node: "n1", Reason: "deleted"},
	}
	for name, m := range msgs {
		schema, _, _ := strings.Cut(name, "-")
		raw, _ := json.Marshal(m)
		if err := Validate(schema, raw); err != nil {
			t.Errorf("%s: %v\n%s", schema, err, raw)
		}
	}
}

// names.json is what Python reads; the Go constants must say the same.
func TestNamesMatchJSON(t *testing.T) {
	var n struct {
		Streams map[string]struct {
			Name     string   `json:"name"`
			Subjects []string `json:"subjects"`
		} `json:"streams"`
		KV       map[string]string `json:"kv"`
		Subjects map[string]string `json:"subjects"`
	}
	if err := json.Unmarshal(Names(), &n); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"request": SubjRequest, "stop": SubjStop, "rejected": SubjRejected, "planned": SubjPlanned, "deploy": SubjDeploy, "teardown": SubjTeardown,
		"sut_ready": SubjSUTReady, "sut_failed": SubjSUTFailed, "sut_removed": SubjSUTRemoved, "shard": SubjShard, "drivers": SubjDrivers,
		"barrier_ready": SubjBarrierReady, "barrier_go": SubjBarrierGo, "interval": SubjInterval, "final": SubjFinal,
		"phase_started": SubjPhaseStarted, "phase_done": SubjPhaseDone, "phase_failed": SubjPhaseFailed, "phase_skipped": SubjPhaseSkipped,
		"driver_ended": SubjDriverEnded, "driver_lost": SubjDriverLost, "shard_ended": SubjShardEnded, "sut_edge": SubjSUTEdge,
		"experiment_done": SubjExperimentDone, "experiment_failed": SubjExperimentFailed, "experiment_cancelled": SubjExperimentCancelled,
	}
	if !reflect.DeepEqual(n.Subjects, want) {
		t.Errorf("subjects differ:\njson %v\ngo   %v", n.Subjects, want)
	}
	streams := map[string][2]any{
		"requests": {StreamRequests, StreamRequestsSubjects}, "events": {StreamEvents, StreamEventsSubjects},
		"jobs": {StreamJobs, StreamJobsSubjects}, "results": {StreamResults, StreamResultsSubjects},
	}
	for k, v := range streams {
		if n.Streams[k].Name != v[0] || !reflect.DeepEqual(n.Streams[k].Subjects, v[1]) {
			t.Errorf("stream %s: json %+v, go %v", k, n.Streams[k], v)
		}
	}
	kv := map[string]string{"experiments": KVExperiments, "volumes": KVVolumes, "agents": KVAgents}
	if !reflect.DeepEqual(n.KV, kv) {
		t.Errorf("kv: json %v, go %v", n.KV, kv)
	}
}

func TestSubject(t *testing.T) {
	if got := Subject(SubjFinal, "", "", ""); got != "benchq.results.*.*.*.final" {
		t.Errorf("filter: %s", got)
	}
	if got := Subject(SubjFinal, "17", "p-load", "2"); got != "benchq.results.17.p-load.2.final" {
		t.Errorf("filled: %s", got)
	}
}

func TestForSubject(t *testing.T) {
	cases := map[string]string{
		Subject(SubjFinal, "1", "p-load", "2"):     SchemaFinal,
		Subject(SubjInterval, "1", "p-load", "2"):  SchemaInterval,
		Subject(SubjPhaseFailed, "1", "", ""):      SchemaPhase,
		Subject(SubjExperimentFailed, "1", "", ""): SchemaExperimentEnd,
		Subject(SubjSUTFailed, "1", "", ""):        SchemaSUTFailed,
		Subject(SubjBarrierGo, "1", "", ""):        SchemaBarrierGo,
		SubjShard:                                  SchemaShardJob,
		SubjDrivers:                                SchemaDrivers,
		Subject(SubjDriverEnded, "1", "", ""):      SchemaDriverEnded,
	}
	for subj, want := range cases {
		if got, _, err := ForSubject(subj); err != nil || got != want {
			t.Errorf("%s: %s %v, want %s", subj, got, err, want)
		}
	}
	if _, _, err := ForSubject("benchq.exp.1.unheard.of"); err == nil {
		t.Error("unknown subject accepted")
	}
}

// A phase's connections spread round-robin over the pool, shard after
// shard; a TPC-C loading shard's progress connection goes to its first
// thread's address.
func TestShardPoolAddresses(t *testing.T) {
	for _, c := range []struct {
		shard, threads, n int
		progress          bool
		want              []int
	}{
		{1, 3, 2, false, []int{0, 1, 0}},
		{2, 3, 2, false, []int{1, 0, 1}}, // shard 2 goes on where shard 1 stopped
		{2, 3, 2, true, []int{1, 0, 1, 1}},
		{1, 4, 3, true, []int{0, 1, 2, 0, 0}},
		{3, 2, 1, true, []int{0, 0, 0}}, // one address: all on it
		{1, 0, 2, true, []int{}},
	} {
		if got := ShardPoolAddresses(c.shard, c.threads, c.n, c.progress); !reflect.DeepEqual(got, c.want) {
			t.Errorf("ShardPoolAddresses(%d, %d, %d, %v) = %v, want %v", c.shard, c.threads, c.n, c.progress, got, c.want)
		}
	}
}

// The YCSB binding (JdbcClient.spread, Java) cannot call PoolAddress: it
// reads the same table, which this test holds to PoolAddress, so that the
// two rules stay one (JdbcClientSpreadTest).
func TestPoolAddressTable(t *testing.T) {
	var want strings.Builder
	want.WriteString("# shard threads thread pool_size address: contracts.PoolAddress, read by the YCSB binding's JdbcClientSpreadTest\n")
	for shard := 1; shard <= 3; shard++ {
		for _, threads := range []int{1, 3, 8} {
			for _, n := range []int{2, 3} {
				for i := range threads {
					fmt.Fprintf(&want, "%d %d %d %d %d\n", shard, threads, i, n, PoolAddress(shard, threads, i, n))
				}
			}
		}
	}
	got, err := os.ReadFile("testdata/pool_addresses.txt")
	if err != nil || string(got) != want.String() {
		t.Errorf("testdata/pool_addresses.txt is not PoolAddress's table (%v); it should read:\n%s", err, want.String())
	}
}
