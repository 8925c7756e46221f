package benchbase

import (
	"maps"
	"math"
	"time"

	"github.com/benchq/benchq/contracts"
)

// TxTypes are TPC-C's five transactions in Benchbase's order (its
// transaction type ids 1–5), and TxWeights their share of requests in
// percent (Benchbase's and the TPC-C specification's default mix).
var (
	TxTypes   = [...]string{"NewOrder", "Payment", "OrderStatus", "Delivery", "StockLevel"}
	TxWeights = [...]int{45, 43, 4, 4, 4}
)

// Outcome codes: the return codes of a transaction type's operation.
// They are Benchbase's transaction statuses, success spelled as YCSB's OK.
const (
	CodeOK             = "OK"              // Completed Transactions
	CodeAborted        = "USER_ABORTED"    // Aborted Transactions (TPC-C's 1 % NewOrder rollbacks)
	CodeRetry          = "RETRY"           // Rejected Transactions (Server Retry): serialization failures, per attempt
	CodeRetryDifferent = "RETRY_DIFFERENT" // Rejected Transactions (Retry Different)
	CodeError          = "ERROR"           // Unexpected SQL Errors
	CodeUnknown        = "UNKNOWN"         // Unknown Status Transactions
)

// ErrorCodes are the outcomes counted as errors (the summary's num_errors,
// the phase_figures view's failed; Python: summary.benchbase.ERROR_CODES):
// aborted and retried requests are neither errors nor successes.
var ErrorCodes = []string{CodeError, CodeUnknown}

// All is the operation that holds the latency distribution of all requests
// together (summary.json's "Latency Distribution") and the success count
// Goodput divides. It is not a sixth transaction type: never add its count
// to the types'.
const All = "ALL"

// IntendedPrefix names the latency of a type measured from the request's
// intended start under a rate limit (as YCSB's "Intended-<OP>"): it includes
// the time a request waited behind a late one, which coordinated omission
// hides.
const IntendedPrefix = "Intended-"

// Latency is a latency distribution in microseconds, with Benchbase's
// statistics (and p99.9 where a histogram gives it).
type Latency struct {
	AvgUS  float64 `json:"avg_us"`
	MinUS  float64 `json:"min_us"`
	P25US  float64 `json:"p25_us"`
	P50US  float64 `json:"p50_us"`
	P75US  float64 `json:"p75_us"`
	P90US  float64 `json:"p90_us"`
	P95US  float64 `json:"p95_us"`
	P99US  float64 `json:"p99_us"`
	P999US float64 `json:"p999_us,omitempty"`
	MaxUS  float64 `json:"max_us"`
}

// Window is one row of results.csv (a window of -s seconds) or samples.csv
// (one second): requests started in it and their latency.
type Window struct {
	TimeS      float64 `json:"time_s"` // window start, seconds from the measurement's start
	Requests   int64   `json:"requests"`
	Throughput float64 `json:"throughput"` // requests/s
	Latency    Latency `json:"latency"`
}

// Transaction is what is known of one transaction type.
type Transaction struct {
	Name string `json:"name"`
	// Requests measured (latency samples), whatever their outcome; 0 when
	// no per-type file said.
	Requests int64 `json:"requests"`
	// Outcomes counts outcomes by code (CodeOK …), as Benchbase's console
	// log or the engine reported them; nil when unknown.
	Outcomes map[string]int64 `json:"outcomes,omitempty"`
	// Latency of the type's requests over the whole run; nil when only
	// per-window figures are known.
	Latency *Latency `json:"latency,omitempty"`
	// Histogram of the type's latencies (µs; V2 compressed, base64), and of
	// the latencies from the intended start under a rate limit.
	Histogram         string `json:"histogram,omitempty"`
	IntendedHistogram string `json:"intended_histogram,omitempty"`
	// Windows are the rows of results.<Name>.csv.
	Windows []Window `json:"windows,omitempty"`
}

// Result is one TPC-C benchmarking shard's result.
type Result struct {
	Benchmark     string  `json:"benchmark"` // "tpcc"
	DBMSType      string  `json:"dbms_type,omitempty"`
	DBMSVersion   string  `json:"dbms_version,omitempty"`
	Isolation     string  `json:"isolation,omitempty"`
	ScaleFactor   float64 `json:"scale_factor"` // warehouses
	Terminals     int     `json:"terminals"`
	Rate          int     `json:"rate,omitempty"` // target requests/s; 0 = unlimited
	NewConnection bool    `json:"new_connection,omitempty"`
	FinalState    string  `json:"final_state,omitempty"`
	// Start of the benchmark (summary.json's "Start timestamp"; the
	// engine's measurement start) and the measured window's length.
	Start   time.Time     `json:"start"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Start of the first measured request and end of the last one, when
	// known (raw.csv, the engine).
	FirstOpAt *time.Time `json:"first_op_at,omitempty"`
	LastOpAt  *time.Time `json:"last_op_at,omitempty"`

	MeasuredRequests int64   `json:"measured_requests"`
	Successes        int64   `json:"successes"`  // Goodput's numerator
	Throughput       float64 `json:"throughput"` // requests/s
	Goodput          float64 `json:"goodput"`    // successful requests/s
	Latency          Latency `json:"latency"`    // of all measured requests
	Histogram        string  `json:"histogram,omitempty"`

	Transactions []Transaction `json:"transactions,omitempty"` // in TxTypes order
	Windows      []Window      `json:"windows,omitempty"`      // results.csv
	Samples      []Window      `json:"samples,omitempty"`      // samples.csv
	// ErrorMessages are the first distinct errors of failed requests (engine).
	ErrorMessages []string `json:"error_messages,omitempty"`
}

// Operations are the result as a Final's operations: one per transaction
// type (count = its requests, return codes = its outcomes, latency and
// histogram), "Intended-<Type>" where a rate limit gave intended latencies,
// and All (count = measured requests, return codes: OK = successes plus the
// types' other outcomes).
func (r Result) Operations() []contracts.OpResult {
	ops := make([]contracts.OpResult, 0, 2*len(r.Transactions)+1)
	all := map[string]int64{CodeOK: r.Successes}
	for _, t := range r.Transactions {
		op := contracts.OpResult{Name: t.Name, Count: t.Requests, ReturnCodes: nonZero(t.Outcomes), Histogram: t.Histogram}
		setLatency(&op, t.Latency)
		ops = append(ops, op)
		for code, n := range t.Outcomes {
			if code != CodeOK {
				all[code] += n
			}
		}
	}
	for _, t := range r.Transactions {
		if t.IntendedHistogram == "" {
			continue
		}
		op := contracts.OpResult{Name: IntendedPrefix + t.Name, Count: t.Requests, Histogram: t.IntendedHistogram}
		if rec, err := DecodeRecorder(t.IntendedHistogram); err == nil {
			setLatency(&op, rec.Latency())
		}
		ops = append(ops, op)
	}
	op := contracts.OpResult{Name: All, Count: r.MeasuredRequests, ReturnCodes: nonZero(all), Histogram: r.Histogram}
	lat := r.Latency
	setLatency(&op, &lat)
	return append(ops, op)
}

// FillFinal sets the measurement fields of a benchmarking shard's Final:
// threads (terminals), target (rate), runtime (the measured window),
// throughput (requests/s), operations and the first/last operation times.
// Goodput is the All operation's OK count over the runtime.
func (r Result) FillFinal(f *contracts.Final) {
	f.Threads = r.Terminals
	f.Target = r.Rate
	f.RuntimeMS = float64(r.Elapsed) / float64(time.Millisecond)
	f.Throughput = r.Throughput
	f.Operations = r.Operations()
	f.FirstOpAt, f.LastOpAt = utc(r.FirstOpAt), utc(r.LastOpAt)
}

// TPCCTables are TPC-C's nine tables, in the specification's order.
var TPCCTables = [...]string{"warehouse", "district", "customer", "history", "new_order", "orders", "order_line", "item", "stock"}

// Load is the result of a TPC-C loading shard.
type Load struct {
	ScaleFactor float64       `json:"scale_factor"` // warehouses
	Terminals   int           `json:"terminals"`    // loader threads
	Start       time.Time     `json:"start"`
	Elapsed     time.Duration `json:"elapsed_ns"` // bexhoma's time_load
	// Rows per table after loading, when counted (the engine).
	Rows map[string]int64 `json:"rows,omitempty"`
}

// FillFinal sets the measurement fields of a loading shard's Final:
// threads (loader threads), runtime (the loading time), throughput (rows/s
// when the rows were counted) and one operation per table, its count the
// table's rows.
func (l Load) FillFinal(f *contracts.Final) {
	f.Threads = l.Terminals
	f.RuntimeMS = float64(l.Elapsed) / float64(time.Millisecond)
	var rows int64
	f.Operations = nil
	for _, t := range TPCCTables {
		if n, ok := l.Rows[t]; ok {
			rows += n
			f.Operations = append(f.Operations, contracts.OpResult{Name: t, Count: n, ReturnCodes: map[string]int64{CodeOK: n}})
		}
	}
	if rows > 0 && l.Elapsed > 0 {
		f.Throughput = float64(rows) / l.Elapsed.Seconds()
	}
}

func setLatency(op *contracts.OpResult, l *Latency) {
	if l == nil {
		return
	}
	op.AvgUS, op.MinUS, op.MaxUS = l.AvgUS, l.MinUS, l.MaxUS
	op.P50US, op.P95US, op.P99US, op.P999US = l.P50US, l.P95US, l.P99US, l.P999US
}

func nonZero(m map[string]int64) map[string]int64 {
	out := maps.Clone(m)
	maps.DeleteFunc(out, func(_ string, n int64) bool { return n == 0 })
	if len(out) == 0 {
		return nil
	}
	return out
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// perSecond is n over d, 0 for an empty window.
func perSecond(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// roundCount is a count recovered from a rate that Benchbase computed from it.
func roundCount(x float64) int64 { return int64(math.Round(x)) }
