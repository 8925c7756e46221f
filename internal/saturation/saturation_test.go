package saturation

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/ycsb"
)

var t0 = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)

// shard is a final of a shard that ran rate ops/s for seconds (status
// lines every second), except the seconds in stalls, with every latency
// latencyUS (service and intended alike) and failed of its operations
// failed.
func shard(t *testing.T, n, threads int, rate float64, seconds int, stalls map[int]bool, latencyUS int64, failed int64) *contracts.Final {
	t.Helper()
	first, last := t0, t0.Add(time.Duration(seconds)*time.Second)
	f := &contracts.Final{Shard: n, Status: contracts.StatusOK, Threads: threads, FirstOpAt: &first, LastOpAt: &last, StartedAt: first, EndedAt: last}
	var ops float64
	for s := 1; s <= seconds; s++ {
		if !stalls[s] {
			ops += rate
		}
		f.Progress = append(f.Progress, contracts.Progress{At: t0.Add(time.Duration(s) * time.Second), Operations: int64(ops)})
	}
	h := hdrhistogram.New(1, 60_000_000, 3)
	_ = h.RecordValues(latencyUS, int64(ops))
	enc, err := ycsb.EncodeHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	f.Operations = []contracts.OpResult{
		{Name: "READ", Count: int64(ops) - failed, Histogram: enc},
		{Name: "Intended-READ", Count: int64(ops), Histogram: enc},
	}
	if failed > 0 {
		f.Operations = append(f.Operations, contracts.OpResult{Name: "READ-FAILED", Count: failed})
	}
	return f
}

var set = WithDefaults(contracts.Saturation{StepS: 20})

func TestEvaluateAPassingStep(t *testing.T) {
	finals := []*contracts.Final{shard(t, 1, 8, 500, 20, nil, 200, 0), shard(t, 2, 8, 500, 20, nil, 200, 0)}
	st := Evaluate(set, 1, contracts.RoleStep, 1, 1000, finals)
	if st.Verdict != contracts.VerdictPass {
		t.Fatalf("verdict %s (%s)", st.Verdict, st.Why)
	}
	if st.Seconds != 17 || math.Abs(st.Achieved-1000) > 0.5 || st.CV > 0.1 || st.WorstSecond < 999 {
		t.Errorf("steady %d s (want 20 - 3 warm-up), achieved %.1f, CV %.2f, worst %.1f", st.Seconds, st.Achieved, st.CV, st.WorstSecond)
	}
	if st.Shards != 2 || st.Threads != 16 || st.P99MS == nil || math.Abs(*st.P99MS-0.2) > 0.01 {
		t.Errorf("shards %d threads %d p99 %v", st.Shards, st.Threads, st.P99MS)
	}
	// 1000 ops/s × 0.2 ms in flight over 16 threads.
	if math.Abs(st.Busy-1.25) > 0.05 {
		t.Errorf("busy %.2f %%, want 1.25", st.Busy)
	}
}

func TestEvaluateFailures(t *testing.T) {
	for name, c := range map[string]struct {
		finals  []*contracts.Final
		offered int
		set     contracts.Saturation
		verdict string
		why     string
	}{
		"below the offered load": {[]*contracts.Final{shard(t, 1, 64, 800, 20, nil, 2000, 0)}, 1000, set,
			contracts.VerdictFail, "goodput 800 ops/s < 95 % of the offered 1000"},
		"p99 over the bound": {[]*contracts.Final{shard(t, 1, 64, 1000, 20, nil, 30_000, 0)}, 1000, func() contracts.Saturation { s := set; s.MaxP99MS = 10; return s }(),
			contracts.VerdictFail, "p99 30.0 ms > 10.0 ms"},
		// 2 % of 20,000 operations failed: the goodput misses the load too.
		"errors": {[]*contracts.Final{shard(t, 1, 64, 1000, 20, nil, 200, 400)}, 1000, set,
			contracts.VerdictFail, "2.00 % of the operations failed (> 1 %)"},
		// One thread, 1 ms per operation: always busy at 1000 ops/s.
		"the drivers' threads": {[]*contracts.Final{shard(t, 1, 1, 1000, 20, nil, 1000, 0)}, 2000, set,
			contracts.VerdictDriverLimited, "busy 100 %"},
		"a failed shard": {[]*contracts.Final{shard(t, 1, 8, 1000, 20, nil, 200, 0), {Shard: 2, Status: contracts.StatusFailed}}, 1000, set,
			contracts.VerdictFail, "shard 2 failed"},
		"too short": {[]*contracts.Final{shard(t, 1, 8, 1000, 3, nil, 200, 0)}, 1000, set,
			contracts.VerdictFail, "no steady second"},
	} {
		st := Evaluate(c.set, 1, contracts.RoleStep, 1, c.offered, c.finals)
		if st.Verdict != c.verdict || !strings.Contains(st.Why, c.why) {
			t.Errorf("%s: %s (%s), want %s (%s)", name, st.Verdict, st.Why, c.verdict, c.why)
		}
	}
}

// The steps' p99 comes from the shards' merged histograms: one slow shard
// of two sets it, where averaging the shards' p99 would halve it.
func TestEvaluateMergesHistograms(t *testing.T) {
	finals := []*contracts.Final{shard(t, 1, 8, 500, 20, nil, 100, 0), shard(t, 2, 8, 500, 20, nil, 10_000, 0)}
	st := Evaluate(set, 1, contracts.RoleStep, 1, 1000, finals)
	if st.P99MS == nil || math.Abs(*st.P99MS-10) > 0.05 {
		t.Errorf("p99 %v ms, want 10 (the merged histograms'), not 5.05 (the mean of the shards')", st.P99MS)
	}
	// A histogram that does not decode makes the figure missing.
	finals[1].Operations[1].Histogram = "HISTFAAAAbroken"
	if st := Evaluate(set, 1, contracts.RoleStep, 1, 1000, finals); st.P99MS != nil {
		t.Errorf("p99 %v from half the values, want missing", *st.P99MS)
	}
	// So does a shard that shipped no histogram of operations it ran (its
	// log did not add up), and a thread's end (Intended-CLEANUP) is no
	// operation's latency.
	finals[1].Operations[1].Histogram = ""
	if st := Evaluate(set, 1, contracts.RoleStep, 1, 1000, finals); st.P99MS != nil {
		t.Errorf("p99 %v without a shard's histogram, want missing", *st.P99MS)
	}
	finals[1] = shard(t, 2, 8, 500, 20, nil, 100, 0)
	slow := hdrhistogram.New(1, 60_000_000, 3)
	_ = slow.RecordValues(5_000_000, 400) // 2 % of the values: enough to move a p99
	enc, _ := ycsb.EncodeHistogram(slow)
	finals[1].Operations = append(finals[1].Operations, contracts.OpResult{Name: "Intended-CLEANUP", Count: 400, Histogram: enc})
	if st := Evaluate(set, 1, contracts.RoleStep, 1, 1000, finals); st.P99MS == nil {
		t.Error("p99 missing with every histogram shipped")
	} else if *st.P99MS > 1 {
		t.Errorf("p99 %v ms with the threads' 5 s ends beside 0.1 ms operations, want 0.1", *st.P99MS)
	}
}

// The hold is judged on its seconds: a stall of two seconds in twenty
// makes it unstable and is its worst second.
func TestEvaluateHold(t *testing.T) {
	steady := Evaluate(set, 1, contracts.RoleHold, 5, 1000, []*contracts.Final{shard(t, 1, 8, 1000, 20, nil, 200, 0)})
	if steady.Verdict != contracts.VerdictStable {
		t.Errorf("steady hold: %s (%s)", steady.Verdict, steady.Why)
	}
	stalled := Evaluate(set, 1, contracts.RoleHold, 5, 800, []*contracts.Final{shard(t, 1, 8, 1000, 20, map[int]bool{10: true, 11: true}, 200, 0)})
	if stalled.Verdict != contracts.VerdictUnstable || !strings.Contains(stalled.Why, "CV") || stalled.WorstSecond > 1 || stalled.CV < 30 {
		t.Errorf("stalled hold: %s (%s), CV %.1f, worst %.0f", stalled.Verdict, stalled.Why, stalled.CV, stalled.WorstSecond)
	}
}

// search runs Next against a SUT that sustains capacity ops/s and whose
// drivers need one shard per perShard ops/s, from start ops/s on one shard.
func search(t *testing.T, s contracts.Saturation, start, capacity, perShard int) ([]contracts.SaturationStep, *contracts.Knee) {
	t.Helper()
	steps := []contracts.SaturationStep{}
	move := &Move{Role: contracts.RoleStep, Offered: start, Shards: 1}
	for len(steps) < 40 && move != nil {
		st := contracts.SaturationStep{Step: len(steps) + 1, Role: move.Role, Offered: move.Offered, Shards: move.Shards, Verdict: contracts.VerdictPass,
			Goodput: float64(min(move.Offered, capacity))}
		if perShard > 0 {
			st.Goodput = min(st.Goodput, float64(move.Shards*perShard))
		}
		switch {
		case move.Role == contracts.RoleHold:
			st.Verdict = contracts.VerdictStable
		case perShard > 0 && move.Offered > move.Shards*perShard:
			st.Verdict = contracts.VerdictDriverLimited
		case move.Offered > capacity:
			st.Verdict = contracts.VerdictFail
		}
		steps = append(steps, st)
		var knee *contracts.Knee
		move, knee = Next(s, steps)
		if move == nil {
			return steps, knee
		}
	}
	t.Fatalf("no end after %d steps", len(steps))
	return nil, nil
}

func TestSearchFindsTheKnee(t *testing.T) {
	for _, c := range []struct{ start, capacity int }{{500, 3700}, {1000, 1000}, {1000, 999}, {8000, 3000}, {1000, 12_345}} {
		steps, knee := search(t, set, c.start, c.capacity, 0)
		if knee == nil || knee.Offered > c.capacity || float64(knee.Offered) < float64(c.capacity)/(1+set.Precision/100) || knee.Note != "" {
			t.Errorf("capacity %d from %d: knee %+v after %d steps", c.capacity, c.start, knee, len(steps))
			continue
		}
		if knee.FirstBad <= c.capacity || gap(knee.Offered, knee.FirstBad) > set.Precision {
			t.Errorf("capacity %d: bracketed by %d and %d", c.capacity, knee.Offered, knee.FirstBad)
		}
		t.Logf("capacity %d from %d: knee %d in %d steps", c.capacity, c.start, knee.Offered, len(steps))
	}
}

// Drivers that need a shard per 1500 ops/s: the search adds shards rather
// than report their limit as the SUT's.
func TestSearchAddsShardsWhenTheDriversAreTheLimit(t *testing.T) {
	steps, knee := search(t, set, 1000, 5000, 1500)
	if knee == nil || knee.Offered > 5000 || knee.Offered < 4760 {
		t.Fatalf("knee %+v, want within 5 %% under 5000", knee)
	}
	added := 0
	for _, st := range steps {
		if st.Verdict == contracts.VerdictDriverLimited {
			added++
		}
	}
	if last := steps[len(steps)-1]; added == 0 || last.Shards < 4 {
		t.Errorf("%d driver-limited steps, last on %d shards", added, last.Shards)
	}
	// With at most 2 shards the drivers cap the search: a bound, named.
	capped := set
	capped.MaxShards = 2
	_, knee = search(t, capped, 1000, 5000, 1500)
	if knee == nil || knee.Offered > 3000 {
		t.Errorf("capped at 2 shards: knee %+v, want at most their 3000", knee)
	}
}

// Drivers that share the machine with the SUT: more shards only take CPU
// from it. The search stops adding shards once they did not help, and
// bisects on the shards that did best.
func TestSearchStopsAddingShardsInVain(t *testing.T) {
	steps := []contracts.SaturationStep{}
	move := &Move{Role: contracts.RoleStep, Offered: 1000, Shards: 1}
	var knee *contracts.Knee
	for len(steps) < 40 && move != nil {
		// 9000 ops/s on one shard, 10 % less per doubling of shards.
		capacity := 9000 * math.Pow(0.9, math.Log2(float64(move.Shards)))
		st := contracts.SaturationStep{Step: len(steps) + 1, Role: move.Role, Offered: move.Offered, Shards: move.Shards,
			Goodput: math.Min(float64(move.Offered), capacity), Verdict: contracts.VerdictPass}
		if float64(move.Offered) > capacity {
			st.Verdict = contracts.VerdictDriverLimited // busy threads, as a saturated SUT makes them
			st.Why = "goodput too low" + busyPhrase + " 97 % of the time: more of them may offer more"
		}
		steps = append(steps, st)
		Retried(steps) // as the scheduler does
		move, knee = Next(set, steps)
	}
	retries := 0
	for _, st := range steps {
		if st.Shards > 1 {
			retries++
			// The retry showed the drivers were not the limit: its verdict says so.
			if st.Verdict != contracts.VerdictFail || st.Why != "goodput too low; 2 shards reached 8100 ops/s, 1 reached 9000: the drivers were not the limit" {
				t.Errorf("the futile retry: %s, %q", st.Verdict, st.Why)
			}
		}
	}
	if retries != 1 || knee == nil || knee.Offered > 9000 || knee.Offered < 8570 {
		t.Errorf("%d steps on more shards (want the one that showed they do not help), knee %+v", retries, knee)
	}
}

func TestSearchHoldsAndStops(t *testing.T) {
	held := set
	held.HoldS = 60
	steps, knee := search(t, held, 500, 3700, 0)
	if last := steps[len(steps)-1]; last.Role != contracts.RoleHold || last.Offered != knee.Offered {
		t.Errorf("last step %+v, want the hold of the knee %d", last, knee.Offered)
	}
	few := set
	few.MaxSteps = 3
	steps, knee = search(t, few, 500, 3700, 0)
	if len(steps) != 3 || knee.Offered != 2000 || !strings.Contains(knee.Note, "max_steps") {
		t.Errorf("max 3 steps: %d steps, knee %+v", len(steps), knee)
	}
	_, knee = search(t, set, 500, 0, 0)
	if knee.Offered != 0 || !strings.Contains(knee.Note, "no load passed") {
		t.Errorf("nothing passes: knee %+v", knee)
	}
}

func ExampleNext() {
	steps := []contracts.SaturationStep{
		{Step: 1, Role: contracts.RoleStep, Offered: 1000, Shards: 1, Verdict: contracts.VerdictPass},
		{Step: 2, Role: contracts.RoleStep, Offered: 2000, Shards: 1, Verdict: contracts.VerdictFail},
	}
	move, _ := Next(set, steps)
	fmt.Println(move.Why)
	// Output: bisect between 1000 (passed) and 2000 ops/s (failed) → 1500 ops/s
}

// Drivers behind after the warm-up catch up during the steady window: the
// step passes, says so, and the knee's figure is never above the load
// offered.
func TestCatchingUpIsNotCapacity(t *testing.T) {
	st := Evaluate(set, 1, contracts.RoleStep, 1, 1000, []*contracts.Final{shard(t, 1, 8, 1200, 20, nil, 200, 0)})
	if st.Verdict != contracts.VerdictPass || !strings.Contains(st.Why, "caught up") {
		t.Errorf("%s (%s)", st.Verdict, st.Why)
	}
	k := Result(set, []contracts.SaturationStep{st}, "")
	if k.Goodput < 1199 || k.Sustained != 1000 {
		t.Errorf("knee goodput %.0f, sustained %.0f; want 1200 and 1000", k.Goodput, k.Sustained)
	}
}

// A search whose every step kept up and failed only on its p99 bound says
// what that bound measures; one that fell short of its load does not.
func TestNoLoadPassedOnTheLatencyBoundSaysWhy(t *testing.T) {
	bounded := set
	bounded.MaxP99MS, bounded.MaxSteps = 10, 2
	p99 := 47.8
	steps := []contracts.SaturationStep{
		{Step: 1, Role: contracts.RoleStep, Offered: 1000, Shards: 1, Goodput: 1000, P99MS: &p99, Verdict: contracts.VerdictFail},
		{Step: 2, Role: contracts.RoleStep, Offered: 500, Shards: 1, Goodput: 500, P99MS: &p99, Verdict: contracts.VerdictFail},
	}
	move, knee := Next(bounded, steps)
	if move != nil || knee == nil || !strings.Contains(knee.Note, "no load passed (every step kept up and failed only on p99 ≤ 10 ms") {
		t.Errorf("move %+v, knee %+v", move, knee)
	}
	steps[1].Goodput = 300 // fell short of its load: the bound is not the only reason
	if _, knee := Next(bounded, steps); knee == nil || strings.Contains(knee.Note, "failed only on p99") {
		t.Errorf("a step below its load: knee %+v", knee)
	}
}

// A retry is futile against the step of fewer shards that reached as much:
// the verdict names that one, not merely the first of the same load.
func TestRetriedNamesTheStepItMatched(t *testing.T) {
	limited := func(shards int, goodput float64) contracts.SaturationStep {
		return contracts.SaturationStep{Role: contracts.RoleStep, Offered: 10000, Shards: shards, Goodput: goodput,
			Verdict: contracts.VerdictDriverLimited, Why: "goodput too low" + busyPhrase + " 99 % of the time"}
	}
	steps := []contracts.SaturationStep{limited(1, 5000), limited(2, 8000)}
	Retried(steps)
	if steps[1].Verdict != contracts.VerdictDriverLimited {
		t.Fatalf("2 shards that reached more than 1 did: %s (%s), want driver-limited", steps[1].Verdict, steps[1].Why)
	}
	steps = append(steps, limited(4, 8100))
	Retried(steps)
	if want := "goodput too low; 4 shards reached 8100 ops/s, 2 reached 8000: the drivers were not the limit"; steps[2].Verdict != contracts.VerdictFail || steps[2].Why != want {
		t.Errorf("%s (%s), want fail (%s)", steps[2].Verdict, steps[2].Why, want)
	}
}

// Workload F against a SUT that is down: 50 reads and 50 read-modify-writes,
// all failed, are 100 operations, and no more than 100 failed (the RMWs'
// reads and updates are 150 failed blocks' operations).
func TestCountsAReadModifyWriteOnce(t *testing.T) {
	f := &contracts.Final{Operations: []contracts.OpResult{
		{Name: "READ-FAILED", Count: 100}, {Name: "UPDATE-FAILED", Count: 50}, {Name: "READ-MODIFY-WRITE", Count: 50},
		{Name: "Intended-READ-MODIFY-WRITE", Count: 50}, {Name: "CLEANUP", Count: 8},
	}}
	if ops, failed := counts([]*contracts.Final{f}); ops != 100 || failed != 100 {
		t.Errorf("%d operations, %d failed; want 100 and 100", ops, failed)
	}
}
