package benchbase

import (
	"fmt"
	"math"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/benchq/benchq/internal/ycsb"
)

// Recorder accumulates latencies in microseconds: count, sum, minimum and
// maximum exactly, percentiles in an HdrHistogram of YCSB's range and
// precision (1 µs … 2^31 µs, 3 significant digits), so histograms of YCSB
// and TPC-C shards merge and decode alike (internal/ycsb, the reporter's
// latency.py). Not safe for concurrent use.
type Recorder struct {
	h        *hdrhistogram.Histogram
	sum      float64
	min, max int64
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{h: ycsb.NewHistogram()} }

// Record adds one latency; values below 1 µs count as 1 µs.
func (r *Recorder) Record(us int64) error {
	us = max(us, 1)
	if err := r.h.RecordValue(us); err != nil {
		return fmt.Errorf("record latency %d µs: %w", us, err)
	}
	if r.h.TotalCount() == 1 || us < r.min {
		r.min = us
	}
	r.max = max(r.max, us)
	r.sum += float64(us)
	return nil
}

// Merge adds every latency of o.
func (r *Recorder) Merge(o *Recorder) error {
	if o.Count() == 0 {
		return nil
	}
	if r.Count() == 0 || o.min < r.min {
		r.min = o.min
	}
	if err := ycsb.Merge(r.h, o.h); err != nil {
		return err
	}
	r.max = max(r.max, o.max)
	r.sum += o.sum
	return nil
}

// Count is the number of latencies recorded.
func (r *Recorder) Count() int64 { return r.h.TotalCount() }

// Latency returns the distribution's statistics: mean, minimum and maximum
// exact, percentiles as HdrHistogram's Java code (and so YCSB) computes them
// (nearest rank, to 3 significant digits). Nil when nothing was recorded.
func (r *Recorder) Latency() *Latency {
	n := r.Count()
	if n == 0 {
		return nil
	}
	p := func(q float64) float64 { return float64(ycsb.ValueAtPercentile(r.h, q)) }
	return &Latency{
		AvgUS: r.sum / float64(n), MinUS: float64(r.min), MaxUS: float64(r.max),
		P25US: p(25), P50US: p(50), P75US: p(75), P90US: p(90), P95US: p(95), P99US: p(99), P999US: p(99.9),
	}
}

// Encode returns the histogram in the V2 compressed encoding, base64 (what
// OpResult.Histogram holds).
func (r *Recorder) Encode() (string, error) { return ycsb.EncodeHistogram(r.h) }

// DecodeRecorder rebuilds a Recorder from an encoded histogram. The mean,
// minimum and maximum are then the histogram's (to its precision).
func DecodeRecorder(s string) (*Recorder, error) {
	h, err := ycsb.DecodeHistogram(s)
	if err != nil {
		return nil, err
	}
	r := NewRecorder()
	if err := ycsb.Merge(r.h, h); err != nil {
		return nil, err
	}
	if n := r.Count(); n > 0 {
		r.sum = h.Mean() * float64(n)
		r.min, r.max = h.Min(), h.Max()
		if r.min == 0 {
			r.min = 1
		}
	}
	return r, nil
}

// msToUS turns a latency Benchbase printed in milliseconds (3 decimals: whole
// microseconds) back into microseconds.
func msToUS(ms float64) float64 { return math.Round(ms * 1000) }
