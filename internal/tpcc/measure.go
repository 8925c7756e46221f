package tpcc

import (
	"fmt"
	"sync"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/benchbase"
)

const nTypes = len(benchbase.TxTypes)

// maxErrorMessages bounds the distinct error messages a result keeps.
const maxErrorMessages = 10

type typeStats struct {
	latency, intended *benchbase.Recorder // the whole window
	ok, failed        int64
	aborted           int64               // user aborts: NewOrder's intended rollbacks
	iv                *benchbase.Recorder // since the last interval
	ivFailed          int64
}

// recorder collects the measured requests of all terminals of a shard.
type recorder struct {
	mu          sync.Mutex
	rated       bool // a rate is set: also record latency from the intended start
	types       [nTypes]typeStats
	all         *benchbase.Recorder
	first, last time.Time
	errs        []string
	seen        map[string]bool
	ivFrom      time.Time // start of the current interval
	ivCount     int64
	recordErr   error
}

func newRecorder(rated bool, start time.Time) *recorder {
	r := &recorder{rated: rated, all: benchbase.NewRecorder(), seen: map[string]bool{}, ivFrom: start}
	for i := range r.types {
		r.types[i] = typeStats{latency: benchbase.NewRecorder(), intended: benchbase.NewRecorder(), iv: benchbase.NewRecorder()}
	}
	return r
}

func micros(d time.Duration) int64 { return int64(d / time.Microsecond) }

// record adds one measured request of type typ that was due at due, ran
// from begin to end, and failed with err (nil: success), or was aborted on
// purpose by the transaction (TPC-C's NewOrder rollbacks).
func (r *recorder) record(typ int, due, begin, end time.Time, err error, aborted bool) {
	us := micros(end.Sub(begin))
	r.mu.Lock()
	defer r.mu.Unlock()
	t := &r.types[typ]
	r.keep(t.latency.Record(us), r.all.Record(us), t.iv.Record(us))
	if r.rated {
		r.keep(t.intended.Record(micros(end.Sub(due))))
	}
	r.ivCount++
	if err != nil {
		t.failed++
		t.ivFailed++
		if msg := err.Error(); !r.seen[msg] && len(r.errs) < maxErrorMessages {
			r.seen[msg] = true
			r.errs = append(r.errs, benchbase.TxTypes[typ]+": "+truncate(msg, 300))
		}
	} else if aborted {
		t.aborted++
	} else {
		t.ok++
	}
	if r.first.IsZero() || begin.Before(r.first) {
		r.first = begin
	}
	if end.After(r.last) {
		r.last = end
	}
}

// keep remembers the first error of recording a latency (a latency beyond
// 2^31 µs, 35 minutes: not expected).
func (r *recorder) keep(errs ...error) {
	for _, err := range errs {
		if err != nil && r.recordErr == nil {
			r.recordErr = err
		}
	}
}

// interval reports, at at, the requests measured since the previous
// interval, per type: Count, Errors (when any), Avg, Min, Max, 50, 95 and
// 99 (µs).
func (r *recorder) interval(at, start time.Time) contracts.Interval {
	r.mu.Lock()
	defer r.mu.Unlock()
	iv := contracts.Interval{
		At: at.UTC(), ElapsedS: int64(at.Sub(start).Round(time.Second) / time.Second),
		Operations: r.all.Count(), PerOp: map[string]map[string]float64{},
	}
	if since := at.Sub(r.ivFrom); since > 0 {
		iv.OpsPerSec = float64(r.ivCount) / since.Seconds()
	}
	r.ivFrom = at
	for i := range r.types {
		t := &r.types[i]
		if l := t.iv.Latency(); l != nil {
			m := map[string]float64{
				"Count": float64(t.iv.Count()), "Avg": l.AvgUS, "Min": l.MinUS, "Max": l.MaxUS,
				"50": l.P50US, "95": l.P95US, "99": l.P99US,
			}
			if t.ivFailed > 0 {
				m["Errors"] = float64(t.ivFailed)
			}
			iv.PerOp[benchbase.TxTypes[i]] = m
		}
		t.iv, t.ivFailed = benchbase.NewRecorder(), 0
	}
	r.ivCount = 0
	if len(iv.PerOp) == 0 {
		iv.PerOp = nil
	}
	return iv
}

// fill sets the measured figures of res for a window of length window.
func (r *recorder) fill(res *benchbase.Result, window time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.recordErr != nil {
		return r.recordErr
	}
	var ok int64
	for i := range r.types {
		t := &r.types[i]
		tx := benchbase.Transaction{
			Name: benchbase.TxTypes[i], Requests: t.latency.Count(), Latency: t.latency.Latency(),
			Outcomes: map[string]int64{benchbase.CodeOK: t.ok},
		}
		if t.failed > 0 {
			tx.Outcomes[benchbase.CodeError] = t.failed
		}
		if t.aborted > 0 {
			tx.Outcomes[benchbase.CodeAborted] = t.aborted
		}
		var err error
		if tx.Histogram, err = t.latency.Encode(); err != nil {
			return fmt.Errorf("%s histogram: %w", tx.Name, err)
		}
		if r.rated {
			if tx.IntendedHistogram, err = t.intended.Encode(); err != nil {
				return fmt.Errorf("%s intended histogram: %w", tx.Name, err)
			}
		}
		ok += t.ok
		res.Transactions = append(res.Transactions, tx)
	}
	res.MeasuredRequests, res.Successes = r.all.Count(), ok
	if window > 0 {
		res.Throughput = float64(res.MeasuredRequests) / window.Seconds()
		res.Goodput = float64(ok) / window.Seconds()
	}
	if l := r.all.Latency(); l != nil {
		res.Latency = *l
	}
	var err error
	if res.Histogram, err = r.all.Encode(); err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	if !r.first.IsZero() {
		first, last := r.first.UTC(), r.last.UTC()
		res.FirstOpAt, res.LastOpAt = &first, &last
	}
	res.ErrorMessages = append([]string(nil), r.errs...)
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
