package tpcc

import (
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/benchq/benchq/internal/benchbase"
)

// schedule hands the terminals of a shard the start times of their
// requests within the measured window [start, end). With a rate, the k-th
// request of the shard is due at start + k/rate (Benchbase's regular
// arrivals), whichever terminal is free to take it; a request due in the
// past runs at once and is late by the difference. Without a rate, every
// request is due when a terminal asks.
type schedule struct {
	start, end time.Time
	rate       int64 // requests/s; 0 = unthrottled
	next       atomic.Int64
}

// take returns the next request's due time and whether it falls inside
// the window.
func (s *schedule) take(now time.Time) (time.Time, bool) {
	if s.rate <= 0 {
		return now, now.Before(s.end)
	}
	k := s.next.Add(1) - 1
	due := s.start.Add(time.Duration(k * int64(time.Second) / s.rate))
	return due, due.Before(s.end)
}

// cumulative holds the upper bounds of each type's share of [0, 100).
var cumulative = func() (c [len(benchbase.TxWeights)]int) {
	sum := 0
	for i, w := range benchbase.TxWeights {
		sum += w
		c[i] = sum
	}
	return c
}()

// pick draws a transaction type (an index into benchbase.TxTypes) with
// TPC-C's weights.
func pick(r *rand.Rand) int {
	x := r.IntN(cumulative[len(cumulative)-1])
	for i, c := range cumulative {
		if x < c {
			return i
		}
	}
	return len(cumulative) - 1
}
