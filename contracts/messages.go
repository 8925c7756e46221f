package contracts

import (
	"encoding/json"
	"time"
)

// Envelope is embedded in every message.
type Envelope struct {
	SchemaVersion int       `json:"schema_version"`
	ID            string    `json:"id"`
	Code          string    `json:"code"`
	TS            time.Time `json:"ts"`
}

// NewEnvelope stamps a message for experiment code with a deterministic id.
// Deterministic ids make re-publishing after a crash a no-op (JetStream
// de-duplicates on Nats-Msg-Id).
func NewEnvelope(code, id string, now time.Time) Envelope {
	return Envelope{SchemaVersion: SchemaVersion, ID: id, Code: code, TS: now.UTC()}
}

// Head returns the envelope; every message type has it.
func (e Envelope) Head() Envelope { return e }

// Message is implemented by every message type.
type Message interface{ Head() Envelope }

// Timeouts bound every wait of an experiment; zero means the default.
type Timeouts struct {
	SUTReadyS int `json:"sut_ready_s,omitempty"`
	BarrierS  int `json:"barrier_s,omitempty"`
	ShardS    int `json:"shard_s,omitempty"`
}

// Request is the public API: what the user wants measured.
// Pointers and empty slices mean "not given": the scheduler applies defaults.
type Request struct {
	SchemaVersion       int        `json:"schema_version"`
	ID                  string     `json:"id,omitempty"`
	Code                string     `json:"code,omitempty"`
	TS                  *time.Time `json:"ts,omitempty"`
	Benchmark           string     `json:"benchmark,omitempty"`
	DBMS                []string   `json:"dbms"`
	SF                  float64    `json:"sf,omitempty"`
	Operations          float64    `json:"operations,omitempty"`
	Workload            string     `json:"workload,omitempty"`
	InsertOrder         string     `json:"insert_order,omitempty"`
	TargetBase          *int       `json:"target_base,omitempty"`
	LoadingFactors      []float64  `json:"loading_factors,omitempty"`
	BenchmarkingFactors []float64  `json:"benchmarking_factors,omitempty"`
	LoadingPods         []int      `json:"loading_pods,omitempty"`
	LoadingThreads      []int      `json:"loading_threads,omitempty"`
	BenchmarkingPods    []int      `json:"benchmarking_pods,omitempty"`
	BenchmarkingThreads []int      `json:"benchmarking_threads,omitempty"`
	Clients             []int      `json:"clients,omitempty"`
	Repetitions         int        `json:"repetitions,omitempty"`
	// MaxSUTs bounds the SUTs alive at once across all running
	// experiments (-ms); nil is the default (1), 0 is no limit (bexhoma's
	// -ms 0). MaxSUTsExperiment bounds this experiment's alone (-mse; 0: no
	// bound of its own).
	MaxSUTs           *int  `json:"max_suts,omitempty"`
	MaxSUTsExperiment int   `json:"max_suts_experiment,omitempty"`
	StatusInterval    int   `json:"status_interval,omitempty"`
	BatchSize         int   `json:"batch_size,omitempty"`
	TestResults       *bool `json:"test_results,omitempty"`
	// ErrorShareLimit is the share of failed operations (percent) above
	// which a phase is marked and its result test fails (-max-errors).
	ErrorShareLimit *float64  `json:"error_share_limit,omitempty"`
	Timeouts        *Timeouts `json:"timeouts,omitempty"`

	// What to do: run (default: load and benchmark), load (load only, then
	// tear down), start (deploy the SUTs and keep them until benchq stop).
	Action string `json:"action,omitempty"`
	// SUT shape and placement (Kubernetes backend; the local backend
	// records them and says what it ignores).
	Monitoring     *Monitoring `json:"monitoring,omitempty"`
	Resources      *Resources  `json:"resources,omitempty"`
	Storage        *Storage    `json:"storage,omitempty"`
	Nodes          *Nodes      `json:"nodes,omitempty"`
	Workers        int         `json:"workers,omitempty"`
	WorkerReplicas int         `json:"worker_replicas,omitempty"`
	// WorkersList (-nw 1,2,3) is a loop over workers instead of Workers:
	// one configuration per number, named with -nw<N>, and the summary's
	// scaling table compares them (docs/tsdb.md).
	WorkersList []int `json:"workers_list,omitempty"`
	// CostPerHour is the price of one SUT node for an hour (-cost-per-hour,
	// any currency): the scaling table sets each configuration's cost
	// beside its throughput, as the DalmatinerDB seed priced its machines.
	CostPerHour float64 `json:"cost_per_hour,omitempty"`
	// The connection-pool loop (-xnpp, -xnpi, -xnpo), for DBMSs with a pool.
	PoolPods     []int `json:"pool_pods,omitempty"`
	PoolInbound  []int `json:"pool_inbound,omitempty"`
	PoolOutbound []int `json:"pool_outbound,omitempty"`
	// Benchbase: benchmarking duration (-xsd, given in minutes on the CLI)
	// and a new connection per transaction (-xconn).
	DurationS     int  `json:"duration_s,omitempty"`
	NewConnection bool `json:"new_connection,omitempty"`
	// TSDB is the metrics workload's settings (benchmark tsdb,
	// docs/tsdb.md); its duration is DurationS.
	TSDB *TSDB `json:"tsdb,omitempty"`
	// Saturation asks for a saturation search instead of the benchmarking
	// grid (-xsat, docs/saturation.md): starting from the first
	// benchmarking variant, raise the offered load step by step on the same
	// loaded SUT until a step fails, bisect to the knee, then hold it.
	Saturation *Saturation `json:"saturation,omitempty"`
	// Thresholds are pass/fail bounds on the figures of every benchmarking
	// phase (-threshold, k6's idea): each is a result test of the summary.
	Thresholds []Threshold `json:"thresholds,omitempty"`
	// Notes are what the client did not apply and why, one sentence each,
	// e.g. the CLI's "-rnn ignored: the local backend runs on one machine";
	// the summary's Workload section lists them.
	Notes []string `json:"notes,omitempty"`
}

// Threshold is one bound on a figure of each benchmarking phase, e.g.
// p99<5ms: Figure p99, Op <, Value 5000 (µs). Latency (p50, p95, p99,
// p99.9, avg, max; µs) is judged per operation from the merged histograms
// of the phase's shards (every counted operation, or Operation only);
// throughput and goodput (ops/s, the common window; with OfTarget Value is
// a multiple of the phase's target); error_share (percent).
type Threshold struct {
	Text      string  `json:"text"` // as the user wrote it
	Figure    string  `json:"figure"`
	Operation string  `json:"operation,omitempty"`
	Op        string  `json:"op"`
	Value     float64 `json:"value"`
	OfTarget  bool    `json:"of_target,omitempty"`
}

// Saturation is the saturation search's settings (-xsat…); the plan's
// settings carry them with every default resolved.
type Saturation struct {
	// StepFactor multiplies the offered load from one passing step to the
	// next while no step has failed (-xsatf).
	StepFactor float64 `json:"step_factor,omitempty"`
	// StepS is each step's length; WarmupS its first seconds, not judged.
	StepS   int `json:"step_s,omitempty"`
	WarmupS int `json:"warmup_s,omitempty"`
	// MinAchieved is the share (percent) of the offered load a step's
	// goodput must reach over its steady part.
	MinAchieved float64 `json:"min_achieved,omitempty"`
	// MaxP99MS bounds a step's p99 latency (ms; 0 = no bound; -xsatp99).
	MaxP99MS float64 `json:"max_p99_ms,omitempty"`
	// Precision (percent) ends the bisection: the first failing offered
	// load is at most this much above the last passing one (-xsatprec).
	Precision float64 `json:"precision,omitempty"`
	// MaxSteps bounds the search; MaxShards the shards it may add when the
	// drivers, not the SUT, were the limit.
	MaxSteps  int `json:"max_steps,omitempty"`
	MaxShards int `json:"max_shards,omitempty"`
	// HoldS runs the knee this long after the search (-xsh, minutes on the
	// CLI; 0 = no hold); MaxCV (percent) is the per-second coefficient of
	// variation under which the hold is stable.
	HoldS int     `json:"hold_s,omitempty"`
	MaxCV float64 `json:"max_cv,omitempty"`
	// Quantum: the offered load moves in whole multiples of it (benchmark
	// tsdb: one agent's points per second, set by the plan; 0: 1).
	Quantum int `json:"quantum,omitempty"`
}

// Actions of a request.
const (
	ActionRun   = "run"
	ActionLoad  = "load"
	ActionStart = "start"
)

// Monitoring switches (-m, -mc, -ma).
type Monitoring struct {
	SUT         bool `json:"sut,omitempty"`
	Cluster     bool `json:"cluster,omitempty"`
	Application bool `json:"application,omitempty"`
}

// Resources of the SUT in Kubernetes quantity syntax (-rc, -rr, -lr).
type Resources struct {
	RequestCPU    string `json:"request_cpu,omitempty"`
	RequestMemory string `json:"request_memory,omitempty"`
	LimitMemory   string `json:"limit_memory,omitempty"`
	LimitCPU      string `json:"limit_cpu,omitempty"`
}

// Storage of the SUT's data (-rst, -rss, -rsr). Without a class the size is
// an ephemeral-storage request.
type Storage struct {
	Class  string `json:"class,omitempty"`
	Size   string `json:"size,omitempty"`
	Remove bool   `json:"remove,omitempty"`
}

// Nodes pins components to nodes (-rnn, -rnl, -rnb).
type Nodes struct {
	SUT          string `json:"sut,omitempty"`
	Loading      string `json:"loading,omitempty"`
	Benchmarking string `json:"benchmarking,omitempty"`
}

// Pool is one point of the connection-pool loop: pods with inbound and
// outbound connection limits in total.
type Pool struct {
	Pods     int `json:"pods"`
	Inbound  int `json:"inbound"`
	Outbound int `json:"outbound"`
}

// InboundPerPod is a pool pod's share of the inbound connections: the
// clients it takes (-xnpi over -xnpp, rounded up).
func (p Pool) InboundPerPod() int { return perPod(p.Inbound, p.Pods) }

// OutboundPerPod is a pool pod's share of the outbound connections (its
// server connections: -xnpo over -xnpp, rounded up).
func (p Pool) OutboundPerPod() int { return perPod(p.Outbound, p.Pods) }

// MaxClientConn is a pool pod's PgBouncer max_client_conn: its share of the
// inbound connections and one more for the admin console, which the pod's
// metrics exporter keeps open and PgBouncer counts as a client.
func (p Pool) MaxClientConn() int { return p.InboundPerPod() + 1 }

func perPod(total, pods int) int {
	if pods < 1 {
		return total
	}
	return (total + pods - 1) / pods
}

// PoolAddress is which of n pool addresses connection i (from 0) of shard
// (from 1) of a phase takes, where each shard opens threads connections:
// the phase's connections taken round-robin, ((shard-1)*threads + i) mod n.
// benchq's clients connect so (the YCSB JDBC binding's JdbcClient.spread,
// the TPC-C engine), and the plan checks each pool pod's share so.
func PoolAddress(shard, threads, i, n int) int {
	if n < 2 {
		return 0
	}
	return (max(shard-1, 0)*max(threads, 1) + i) % n
}

// ShardPoolAddresses is the pool address (of n) of each client connection
// a shard (from 1) of threads holds at once: one per thread, spread by
// PoolAddress, and for a TPC-C loading shard (loadProgress) one more, its
// progress query's, on thread 0's address. The TPC-C engine connects so
// (internal/tpcc) and the plan counts each pool pod's clients so
// (plan.CheckPoolInbound).
func ShardPoolAddresses(shard, threads, n int, loadProgress bool) []int {
	out := make([]int, 0, threads+1)
	for i := range threads {
		out = append(out, PoolAddress(shard, threads, i, n))
	}
	if loadProgress && threads > 0 {
		out = append(out, out[0])
	}
	return out
}

// SUTSpec is the shape of one configuration's SUT, computed by the plan.
type SUTSpec struct {
	Workers        int         `json:"workers,omitempty"`
	WorkerReplicas int         `json:"worker_replicas,omitempty"`
	Pool           *Pool       `json:"pool,omitempty"`
	Resources      *Resources  `json:"resources,omitempty"`
	Storage        *Storage    `json:"storage,omitempty"`
	Node           string      `json:"node,omitempty"`
	Monitoring     *Monitoring `json:"monitoring,omitempty"`
	// UseCase names the data set, e.g. "ycsb-0.1": with Storage it names the
	// volume that is reused across experiments.
	UseCase string `json:"use_case,omitempty"`
}

// WantsVolume reports whether the SUT asks for a persistent volume (-rst:
// a storage class; a size alone is ephemeral storage).
func (s SUTSpec) WantsVolume() bool { return s.Storage != nil && s.Storage.Class != "" }

// Stop asks the scheduler to cancel an experiment (benchq stop).
type Stop struct {
	Envelope
	Reason string `json:"reason,omitempty"`
}

// FieldError names one invalid field of a request and what is allowed.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Rejected answers a request that cannot be run.
type Rejected struct {
	Envelope
	RequestID string       `json:"request_id"`
	Reason    string       `json:"reason"`
	Errors    []FieldError `json:"errors"`
}

// Planned publishes the expanded plan before anything starts.
type Planned struct {
	Envelope
	Request json.RawMessage `json:"request"`
	Plan    json.RawMessage `json:"plan"`
}

// Deploy asks the deployer to provision one SUT configuration.
type Deploy struct {
	Envelope
	Configuration string   `json:"configuration"`
	DBMS          string   `json:"dbms"`
	Benchmark     string   `json:"benchmark"`
	TimeoutS      int      `json:"timeout_s,omitempty"`
	SUT           *SUTSpec `json:"sut,omitempty"`
}

// Teardown asks the deployer to remove one SUT configuration.
type Teardown struct {
	Envelope
	Configuration string        `json:"configuration"`
	DBMS          string        `json:"dbms"`
	Reason        string        `json:"reason,omitempty"`
	Loaded        *VolumeLoaded `json:"loaded,omitempty"`
}

// VolumeLoaded tells the deployer, with the teardown, that the
// configuration's loading phase filled its persistent volume: the backend
// records it so later experiments skip loading.
type VolumeLoaded struct {
	Volume       string    `json:"volume"` // from sut.ready volume.name
	LoadingTimeS float64   `json:"loading_time_s"`
	At           time.Time `json:"at"`
	By           string    `json:"by"` // the experiment code
}

// Endpoint tells drivers how to reach a SUT.
type Endpoint struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Database string `json:"database,omitempty"`
	User     string `json:"user,omitempty"`
	// Password never travels in a message (the schema refuses one): a
	// driver agent fills it in before it connects: the SUT's own,
	// derived from the stack's key or given to it (startup.SUTAuth).
	Password string `json:"-"`
	JDBCURL  string `json:"jdbc_url,omitempty"`
	// Ports are the SUT's other listeners by role, e.g. a time-series
	// database's "carbon" (plaintext protocol) beside Port (its HTTP API).
	Ports map[string]int `json:"ports,omitempty"`
}

// SUTReady reports a provisioned, probed SUT.
type SUTReady struct {
	Envelope
	Configuration string   `json:"configuration"`
	DBMS          string   `json:"dbms"`
	Endpoint      Endpoint `json:"endpoint"`
	// Backend is where the SUT runs (BackendLocal, BackendKubernetes): on
	// the local backend a phase's shards share the stack's agent pool.
	Backend string `json:"backend,omitempty"`
	// Volume is the SUT's persistent volume, when it has one.
	Volume *VolumeState `json:"volume,omitempty"`
	// Info holds facts for the summary's Connections section only (version,
	// host facts): nothing decides on them.
	Info         map[string]any `json:"info,omitempty"`
	ReadyAfterMS int64          `json:"ready_after_ms,omitempty"`
}

// VolumeState is a SUT's persistent volume as the deployer found it. Loaded
// means an earlier experiment's loading phase filled it with this data set,
// so the scheduler skips loading (bexhoma's "Database is persisted to disk").
type VolumeState struct {
	Name   string `json:"name"`
	New    bool   `json:"new,omitempty"` // created by this deploy
	Loaded bool   `json:"loaded"`
	// When, by which experiment and in how long it was loaded (Loaded only).
	LoadedAt     *time.Time `json:"loaded_at,omitempty"`
	LoadedBy     string     `json:"loaded_by,omitempty"`
	LoadingTimeS float64    `json:"loading_time_s,omitempty"`
}

// Backends of the deployer.
const (
	BackendLocal      = "local"
	BackendKubernetes = "kubernetes"
)

// SUTFailed reports a SUT that could not be provisioned, or (Running) one
// that was ready and died: its running phase fails at once.
type SUTFailed struct {
	Envelope
	Configuration string `json:"configuration"`
	DBMS          string `json:"dbms,omitempty"`
	Reason        string `json:"reason"`
	Running       bool   `json:"running,omitempty"`
}

// SUTRemoved reports a torn-down SUT.
type SUTRemoved struct {
	Envelope
	Configuration string `json:"configuration"`
	DBMS          string `json:"dbms,omitempty"`
	// Died says how the SUT had died when its teardown came (a process
	// gone, a pod restarted): a phase that failed on its symptoms (a driver
	// that could not connect) before the deployer's watch saw it is then
	// named with its cause too.
	Died string `json:"died,omitempty"`
}

// SUTEdge is what the deployer read of a SUT at one edge of a phase (the
// local backend): the CPU counters of its process trees, the values
// container_cpu_usage_seconds_total has on the deployer's /metrics, summed
// per component as the catalog's query sums them; and each exporter's
// application metrics, evaluated as the catalog's query evaluates them on
// that exporter's series. The collector adds the reads to the Prometheus
// series it pulls, so that a phase's figures are not estimated from
// scrapes around its edges, nor missing when Prometheus had not scraped a
// new exporter yet (docs/monitoring.md).
type SUTEdge struct {
	Envelope
	Configuration string `json:"configuration"`
	Phase         string `json:"phase"`
	Attempt       int    `json:"attempt"`
	Edge          string `json:"edge"` // EdgeStart or EdgeEnd
	// Reads are in time order: at the start, reads just before the
	// phase's start instant and one just after; at the end, reads just
	// after the end instant (the collector estimates the value at the end
	// from them).
	Reads []EdgeRead `json:"reads"`
}

// EdgeRead is one read of a SUT: CPU, its exporters, or both.
type EdgeRead struct {
	At time.Time `json:"at"`
	// CPU is each component's (sut, pool) CPU seconds counter.
	CPU       map[string]float64 `json:"cpu,omitempty"`
	Exporters []ExporterRead     `json:"exporters,omitempty"`
}

// ExporterRead is one exporter's application metrics at a read.
type ExporterRead struct {
	// Instance is the exporter's host:port, as Prometheus labels its target.
	Instance  string `json:"instance"`
	Component string `json:"component"` // sut or pool
	// Values are by catalog metric key: the metric's series narrowed by
	// its matchers and combined by its aggregate, unscaled.
	Values map[string]float64 `json:"values"`
}

// A phase's edges (SUTEdge.Edge).
const (
	EdgeStart = "start"
	EdgeEnd   = "end"
)

// YCSBShard is the per-shard YCSB parameter set, computed by the scheduler.
type YCSBShard struct {
	Workload       string `json:"workload"`
	Threads        int    `json:"threads"`
	Target         int    `json:"target,omitempty"`
	RecordCount    int64  `json:"recordcount"`
	InsertStart    int64  `json:"insertstart"`
	InsertCount    int64  `json:"insertcount"`
	OperationCount int64  `json:"operationcount"`
	InsertOrder    string `json:"insert_order,omitempty"`
	StatusInterval int    `json:"status_interval,omitempty"`
	BatchSize      int    `json:"batch_size,omitempty"`
	// MaxExecutionS stops the shard after this many seconds (YCSB's
	// maxexecutiontime); 0 = run all operations.
	MaxExecutionS int `json:"max_execution_s,omitempty"`
}

// Phase kinds.
const (
	KindLoad = "load"
	KindRun  = "run"
)

// ShardJob asks a driver agent to run one shard of a phase.
type ShardJob struct {
	Envelope
	Configuration string   `json:"configuration"`
	Phase         string   `json:"phase"`
	Kind          string   `json:"kind"`
	Shard         int      `json:"shard"`
	Shards        int      `json:"shards"`
	Attempt       int      `json:"attempt"`
	Engine        string   `json:"engine"`
	DBMS          string   `json:"dbms"`
	Endpoint      Endpoint `json:"endpoint"`
	TimeoutS      int      `json:"timeout_s,omitempty"`
	Node          string   `json:"node,omitempty"` // pin the driver (-rnl, -rnb)
	// StartBy is the phase attempt's barrier deadline: an agent that gets
	// the job later (a redelivery after its first agent died) drops it.
	StartBy *time.Time `json:"start_by,omitempty"`
	YCSB    *YCSBShard `json:"ycsb,omitempty"` // engine ycsb
	TPCC    *TPCCShard `json:"tpcc,omitempty"` // engine benchbase (TPC-C)
	TSDB    *TSDBShard `json:"tsdb,omitempty"` // engine tsdb (metrics ingest)
}

// Metrics-workload protocols (TSDB.Protocol).
const (
	ProtocolCarbon      = "carbon"       // carbon's plaintext protocol over TCP
	ProtocolRemoteWrite = "remote-write" // Prometheus remote write 1.0 over HTTP
)

// TSDB is the metrics workload's settings (benchmark tsdb, docs/tsdb.md):
// haggar's flags. A phase's agents are its threads (-nlt, -nbt), split over
// its shards (-nlp, -nbp), the generators.
type TSDB struct {
	Protocol        string `json:"protocol,omitempty"`          // ProtocolCarbon (default) or ProtocolRemoteWrite
	Metrics         int    `json:"metrics,omitempty"`           // per agent (haggar -metrics)
	FlushIntervalMS int    `json:"flush_interval_ms,omitempty"` // haggar -flush-interval
	JitterMS        *int   `json:"jitter_ms,omitempty"`         // haggar -jitter: each agent's random start delay (nil: the default, 0: none)
	SpawnIntervalMS *int   `json:"spawn_interval_ms,omitempty"` // haggar -spawn-interval: between agents' starts (nil: the default)
	Prefix          string `json:"prefix,omitempty"`            // generator g's series are <prefix><g>.agent<i>.metric<j>
}

// TSDBShard is one generator (a shard of engine tsdb): Agents agents of
// Metrics series each under Prefix, a point of each series every flush
// interval for DurationS. A loading shard writes one point of each series
// (DurationS 0): the series exist before the benchmarking phases.
type TSDBShard struct {
	Protocol        string `json:"protocol"`
	Agents          int    `json:"agents"`
	Metrics         int    `json:"metrics"`
	FlushIntervalMS int    `json:"flush_interval_ms"`
	JitterMS        int    `json:"jitter_ms"`
	SpawnIntervalMS int    `json:"spawn_interval_ms"`
	Prefix          string `json:"prefix"`
	DurationS       int    `json:"duration_s,omitempty"`
	StatusInterval  int    `json:"status_interval,omitempty"`
}

// TPCCShard is the per-shard TPC-C parameter set. Loading creates and fills
// all warehouses; benchmarking runs the terminals for DurationS.
type TPCCShard struct {
	Warehouses     int  `json:"warehouses"`
	Terminals      int  `json:"terminals"`
	Target         int  `json:"target,omitempty"` // transactions/s of this shard; 0 = unthrottled
	DurationS      int  `json:"duration_s,omitempty"`
	NewConnection  bool `json:"new_connection,omitempty"`
	StatusInterval int  `json:"status_interval,omitempty"`
}

// BarrierReady: a shard is prepared and waits for GO.
type BarrierReady struct {
	Envelope
	Phase   string `json:"phase"`
	Shard   int    `json:"shard"`
	Attempt int    `json:"attempt"`
	Agent   string `json:"agent"`
	// Instance names the agent's run (a new value each time it starts; its
	// heartbeats carry it too): an agent restarted under the same name has
	// lost the shard, although it beats again.
	Instance string `json:"instance,omitempty"`
}

// BarrierGo: every shard of the phase is READY; all start at StartAt.
// Agents and Instances (index: shard - 1) say who holds each shard: the
// agent run whose READY the scheduler took. Only that run's signed
// intervals and final count for the shard (contracts/sign.go).
type BarrierGo struct {
	Envelope
	Phase     string    `json:"phase"`
	Attempt   int       `json:"attempt"`
	StartAt   time.Time `json:"start_at"`
	Agents    []string  `json:"agents,omitempty"`
	Instances []string  `json:"instances,omitempty"`
}

// Interval is one streamed status line of a shard.
type Interval struct {
	Envelope
	Phase      string                        `json:"phase"`
	Shard      int                           `json:"shard"`
	Attempt    int                           `json:"attempt"`
	At         time.Time                     `json:"at"`
	ElapsedS   int64                         `json:"elapsed_s"`
	Operations int64                         `json:"operations"`
	OpsPerSec  float64                       `json:"ops_per_sec"`
	PerOp      map[string]map[string]float64 `json:"per_op,omitempty"`
}

// OpResult is one operation type's line block of a tool summary. YCSB's
// "Intended-<OP>" blocks (measurement.interval=both) are operations of their
// own: latency measured from the intended start time, which a target rate
// sets.
type OpResult struct {
	Name        string           `json:"name"`
	Count       int64            `json:"count"`
	AvgUS       float64          `json:"avg_us,omitempty"`
	MinUS       float64          `json:"min_us,omitempty"`
	MaxUS       float64          `json:"max_us,omitempty"`
	P50US       float64          `json:"p50_us,omitempty"`
	P95US       float64          `json:"p95_us,omitempty"`
	P99US       float64          `json:"p99_us,omitempty"`
	P999US      float64          `json:"p999_us,omitempty"`
	ReturnCodes map[string]int64 `json:"return_codes,omitempty"`
	// Histogram holds every latency of the operation (µs): an HdrHistogram
	// in the V2 compressed encoding, base64. Histograms of several shards
	// merge into exact percentiles of the phase.
	Histogram string `json:"histogram,omitempty"`
}

// Result statuses.
const (
	StatusOK     = "ok"
	StatusFailed = "failed"
	// StatusSimulated: the shard's driver pod "ran" on a simulated node
	// (kwok) that runs no container, so nothing was measured. The scheduler
	// publishes this final on the shard's behalf (docs/kubernetes.md).
	StatusSimulated = "simulated"
)

// Final is the final result of one shard.
type Final struct {
	Envelope
	Configuration string    `json:"configuration"`
	Phase         string    `json:"phase"`
	Kind          string    `json:"kind"`
	Shard         int       `json:"shard"`
	Attempt       int       `json:"attempt"`
	Agent         string    `json:"agent"`
	Status        string    `json:"status"`
	Error         string    `json:"error,omitempty"`
	StartedAt     time.Time `json:"started_at"`
	EndedAt       time.Time `json:"ended_at"`
	// The driver's measured window: the start of its first operation and
	// the end of its last one (absent when no operation ran).
	FirstOpAt *time.Time `json:"first_op_at,omitempty"`
	LastOpAt  *time.Time `json:"last_op_at,omitempty"`
	// GoDelayMS is how long GO took to reach the agent: from its envelope's
	// ts to its arrival, in ms (absent when no GO came). The scheduler sets
	// the next phases' start instants from it (GoLead); across machines it
	// includes their clocks' offset.
	GoDelayMS  *float64   `json:"go_delay_ms,omitempty"`
	Threads    int        `json:"threads,omitempty"`
	Target     int        `json:"target,omitempty"`
	RuntimeMS  float64    `json:"runtime_ms,omitempty"`
	Throughput float64    `json:"throughput,omitempty"`
	Operations []OpResult `json:"operations,omitempty"`
	// Progress is the shard's status lines: operations done so far, at
	// each interval (-xli); what a saturation step is judged on, second by
	// second (internal/saturation).
	Progress []Progress `json:"progress,omitempty"`
	// Ingest is what the time-series database said it stored while the
	// phase ran (engine tsdb; the phase's first generator reads it).
	Ingest *Ingest `json:"ingest,omitempty"`
	// DriverCPU is the agent's reads of the shard's driver process tree's
	// CPU counter (the series it exports, container_cpu_usage_seconds_total)
	// at the phase's start instant and right after the driver's last
	// operation: the collector adds them to the scraped series, so that a
	// loader's or benchmarker's CPU seconds are exact at the edges (the
	// scrapes come only every second). Absent without metrics.
	DriverCPU []CPURead `json:"driver_cpu,omitempty"`
	// DriverJob is which job of its driver process the shard was (YCSB): 1
	// for a JVM's first, more when the JVM stayed after earlier jobs of the
	// agent (they share loaded classes and compiled code, not measurements,
	// GC counts or connections). Absent for drivers inside the agent.
	DriverJob int `json:"driver_job,omitempty"`
	// JobAt is when the agent began the shard's job, taken from the queue:
	// with the phase's READYs and its start, where a phase switch's time
	// went (scripts/timeline.sql).
	JobAt *time.Time `json:"job_at,omitempty"`
	// DriverStandby says whether the job was handed to a JVM the agent
	// kept ready (true: a standby, or with -reuse-jvm the last job's) or
	// to one started for it (false: a cold start, about half a second
	// more to READY). Absent for drivers inside the agent.
	DriverStandby *bool  `json:"driver_standby,omitempty"`
	Stdout        string `json:"stdout,omitempty"`
}

// CPURead is one read of a CPU counter: its value (CPU seconds) at At.
type CPURead struct {
	At      time.Time `json:"at"`
	Seconds float64   `json:"seconds"`
}

// Ingest is a time-series database's own count of the points it stored,
// around one phase of metrics generators (engine tsdb, docs/tsdb.md): its
// counter (the catalog's tsdb.ingested for the protocol) read from its
// /metrics by the phase's first generator before its READY (no generator
// writes before GO), every second while the
// generators ran, and after they ended until the counter stopped growing
// (the backlog drained) or the drain's limit passed. A reading that failed
// is absent, never 0.
type Ingest struct {
	Counter  string          `json:"counter"` // the selector read, e.g. vm_rows_inserted_total{type="graphite"}
	Readings []IngestReading `json:"readings"`
	EndedAt  time.Time       `json:"ended_at"` // the generators stopped: later readings are the drain
	Drained  bool            `json:"drained"`  // the counter stopped growing within the drain's limit
}

// IngestReading is one reading of the counter.
type IngestReading struct {
	At    time.Time `json:"at"`
	Total float64   `json:"total"`
}

// Progress is one status line of a shard: operations done since its start.
type Progress struct {
	At         time.Time `json:"at"`
	Operations int64     `json:"operations"`
}

// Drivers asks the deployer to start the driver agents of one phase
// attempt where its backend runs them itself (Kubernetes: a Job with one
// agent pod per shard, docs/kubernetes.md). The scheduler sends it together
// with the phase's shard jobs; a backend whose agents are long-running
// processes (local) acks it and does nothing.
type Drivers struct {
	Envelope
	Configuration string `json:"configuration"`
	DBMS          string `json:"dbms"`
	Phase         string `json:"phase"`
	Kind          string `json:"kind"`
	Attempt       int    `json:"attempt"`
	Shards        int    `json:"shards"`
	Node          string `json:"node,omitempty"` // pin the agents (-rnl, -rnb)
}

// DriverJob names a phase attempt's driver Job (Kubernetes backend): what
// driver.ended and driver.lost report on.
type DriverJob struct {
	Configuration string `json:"configuration"`
	Phase         string `json:"phase"`
	Kind          string `json:"kind"`
	Attempt       int    `json:"attempt"`
	Job           string `json:"job"`
}

// DriverEnded reports that the driver agents' Job of a phase attempt ended
// (complete or failed). Simulated is true when its pods ran on simulated
// nodes (kwok) where no container runs: the shards never reported and never
// will.
type DriverEnded struct {
	Envelope
	DriverJob
	Shards    int        `json:"shards"`
	Succeeded int        `json:"succeeded"`
	Failed    int        `json:"failed"`
	Simulated bool       `json:"simulated"`
	Nodes     []string   `json:"nodes,omitempty"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	Reason    string     `json:"reason"`
}

// Stamp gives a driver.ended its envelope, from its code, phase and attempt:
// the deployer reports a Job again after a restart, and the same id lets
// JetStream drop the repeat.
func (d *DriverEnded) Stamp(now time.Time) {
	d.Envelope = NewEnvelope(d.Code, DriverEndedID(d.Code, d.Phase, d.Attempt), now)
}

// DriverLost reports that a driver pod of a phase attempt was deleted or
// failed before it completed (Kubernetes backend). Its agent is named after
// the pod, so the scheduler loses that agent's shard at once instead of
// waiting for its heartbeats to stop; on a simulated node (kwok), where no
// agent runs, the pod stands for a shard of its own.
type DriverLost struct {
	Envelope
	DriverJob
	Pod       string `json:"pod"`
	Node      string `json:"node,omitempty"`
	Simulated bool   `json:"simulated"`
	// Reason says how: "deleted", or "failed: <the pod's reason>".
	Reason string `json:"reason"`
}

// Stamp gives a driver.lost its envelope (DriverLostID): a pod seen lost
// twice, by a deployer that restarted, is one event.
func (d *DriverLost) Stamp(now time.Time) {
	d.Envelope = NewEnvelope(d.Code, DriverLostID(d.Code, d.Phase, d.Attempt, d.Pod), now)
}

// PodsQuery asks the deployer which of the named driver pods are Running
// (Kubernetes backend), as a core NATS request on SubjDriverPods, stored in
// no stream: the scheduler does not call an agent lost whose heartbeats
// are late while its pod still runs. PodsAnswer is the reply.
type PodsQuery struct {
	Pods []string `json:"pods"`
}

// PodsAnswer names the pods of a PodsQuery that are Running.
type PodsAnswer struct {
	Running []string `json:"running"`
}

// Phase statuses.
const (
	PhaseStarted = "started"
	PhaseDone    = "done"
	PhaseFailed  = "failed"
	// PhaseSkipped: a loading phase not run because the SUT's persistent
	// volume already holds the data set (reason says which volume).
	PhaseSkipped = "skipped"
)

// PhaseEvent reports a phase's state change.
type PhaseEvent struct {
	Envelope
	Configuration string     `json:"configuration"`
	Phase         string     `json:"phase"`
	Kind          string     `json:"kind"`
	Status        string     `json:"status"`
	Attempt       int        `json:"attempt"`
	Shards        int        `json:"shards,omitempty"`
	StartedAt     *time.Time `json:"started_at,omitempty"`
	EndedAt       *time.Time `json:"ended_at,omitempty"`
	Reason        string     `json:"reason,omitempty"`
	// Saturation is the judgement of a saturation step or hold (done and
	// failed events of such phases).
	Saturation *SaturationStep `json:"saturation,omitempty"`
}

// Saturation phase roles: a step of the search, or the hold of its knee.
const (
	RoleStep = "step"
	RoleHold = "hold"
)

// Saturation verdicts.
const (
	VerdictPass          = "pass"
	VerdictFail          = "fail"
	VerdictDriverLimited = "driver-limited"
	VerdictStable        = "stable"
	VerdictUnstable      = "unstable"
)

// SaturationStep is how the scheduler judged one step of a saturation
// search (internal/saturation), from the shards' finals: the figures, the
// verdict and why, and what the search did next.
type SaturationStep struct {
	Step    int    `json:"step"` // 1-based, the hold included
	Role    string `json:"role"` // RoleStep or RoleHold
	Offered int    `json:"offered"`
	Shards  int    `json:"shards"`
	Threads int    `json:"threads"` // over all shards
	// The steady window: after the warm-up, within every shard's window.
	SteadyFrom *time.Time `json:"steady_from,omitempty"`
	SteadyTo   *time.Time `json:"steady_to,omitempty"`
	Seconds    int        `json:"seconds"`
	// Achieved is all operations per second over the steady window, summed
	// over shards; Goodput the successful ones (ErrorShare percent failed).
	Achieved   float64 `json:"achieved"`
	Goodput    float64 `json:"goodput"`
	ErrorShare float64 `json:"error_share"`
	// Latency over the step (ms) from the shards' merged histograms: from
	// the intended start when the drivers report it (a target is set).
	P95MS *float64 `json:"p95_ms,omitempty"`
	P99MS *float64 `json:"p99_ms,omitempty"`
	// Per-second throughput of the steady window: coefficient of variation
	// (percent) and the worst second (ops/s).
	CV          float64 `json:"cv"`
	WorstSecond float64 `json:"worst_second"`
	// Busy is the share (percent) of the drivers' thread time spent in
	// operations (Little's law: throughput × mean latency / threads).
	Busy    float64 `json:"busy"`
	Verdict string  `json:"verdict"`
	Why     string  `json:"why"`
	Next    string  `json:"next"`
	// Knee is set on the step that ended the search.
	Knee *Knee `json:"knee,omitempty"`
}

// Knee is a saturation search's result: the highest offered load that
// passed, what it achieved, and how close the search got.
type Knee struct {
	Offered int     `json:"offered"`
	Goodput float64 `json:"goodput"`
	// Sustained is the knee's figure, the maximum sustainable throughput:
	// the step's goodput, but never above its offered load — a goodput
	// above it is the drivers catching up on a backlog from the warm-up,
	// not capacity the step showed.
	Sustained float64  `json:"sustained"`
	P99MS     *float64 `json:"p99_ms,omitempty"`
	Step      int      `json:"step"`
	FirstBad  int      `json:"first_bad,omitempty"` // lowest failing offered load (0: none)
	// Note says when the knee is only a bound (no step passed, or none
	// failed, or the steps ran out before the precision).
	Note string `json:"note,omitempty"`
}

// Experiment statuses: running until the end, then done, failed or
// cancelled (the experiment_end event).
const (
	ExperimentRunning   = "running"
	ExperimentDone      = "done"
	ExperimentFailed    = "failed"
	ExperimentCancelled = "cancelled"
)

// ExperimentEnd reports the end of an experiment.
type ExperimentEnd struct {
	Envelope
	Status    string     `json:"status"`
	Reason    string     `json:"reason,omitempty"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
}
