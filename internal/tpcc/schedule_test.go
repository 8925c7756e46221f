package tpcc

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/benchq/benchq/internal/benchbase"
)

func TestScheduleSpreadsTheRateOverTheWindow(t *testing.T) {
	start := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	s := &schedule{start: start, end: start.Add(2 * time.Second), rate: 3}
	var dues []time.Duration
	for {
		due, ok := s.take(start.Add(time.Hour)) // late terminals still get the slots in order
		if !ok {
			break
		}
		dues = append(dues, due.Sub(start))
	}
	want := []time.Duration{0, 333333333, 666666666, time.Second, 1333333333, 1666666666}
	if len(dues) != len(want) {
		t.Fatalf("dues %v, want %v", dues, want)
	}
	for i := range want {
		if dues[i] != want[i] {
			t.Errorf("slot %d due at %v, want %v", i, dues[i], want[i])
		}
	}
}

func TestScheduleHandsEachSlotOnce(t *testing.T) {
	start := time.Now()
	s := &schedule{start: start, end: start.Add(10 * time.Second), rate: 1000}
	seen := make(chan time.Time, 20000)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				due, ok := s.take(start)
				if !ok {
					return
				}
				seen <- due
			}
		}()
	}
	wg.Wait()
	close(seen)
	distinct := map[time.Time]bool{}
	for d := range seen {
		distinct[d] = true
	}
	if len(distinct) != 10000 {
		t.Errorf("%d distinct slots, want 10000", len(distinct))
	}
}

func TestUnthrottledScheduleEndsWithTheWindow(t *testing.T) {
	start := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	s := &schedule{start: start, end: start.Add(time.Second)}
	if due, ok := s.take(start.Add(999 * time.Millisecond)); !ok || !due.Equal(start.Add(999*time.Millisecond)) {
		t.Errorf("inside the window: %v %v", due, ok)
	}
	if _, ok := s.take(start.Add(time.Second)); ok {
		t.Error("at the window's end: still running")
	}
}

func TestPickFollowsTheMix(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 200000
	var counts [nTypes]int
	for range n {
		counts[pick(r)]++
	}
	for i, w := range benchbase.TxWeights {
		share := 100 * float64(counts[i]) / n
		if math.Abs(share-float64(w)) > 0.5 {
			t.Errorf("%s: %.2f %%, want %d %%", benchbase.TxTypes[i], share, w)
		}
	}
}
