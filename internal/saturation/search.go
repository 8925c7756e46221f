package saturation

// The search: what follows the steps judged so far, and the knee.

import (
	"fmt"
	"math"
	"strings"

	"github.com/benchq/benchq/contracts"
)

// Move is the next phase of a search: a step, or the hold of the knee.
type Move struct {
	Role            string // contracts.RoleStep or RoleHold
	Offered, Shards int
	Why             string // what the search does, in words
}

// Next decides what follows steps (the last one just judged, the hold
// included): the next move, or nil when the search is over, with the knee.
func Next(set contracts.Saturation, steps []contracts.SaturationStep) (*Move, *contracts.Knee) {
	if len(steps) == 0 {
		return nil, nil
	}
	last := steps[len(steps)-1]
	good, bad := bracket(set, steps)
	shards, n := bestShards(steps), 0
	for _, st := range steps {
		if st.Role == contracts.RoleStep {
			n++
		}
	}
	knee := func(note string) *contracts.Knee { return kneeOf(steps, good, bad, note) }
	q := max(1, set.Quantum)
	whole := func(load float64) int { return int(math.Floor(load/float64(q))) * q } // a whole multiple of the quantum, rounded down
	if last.Role == contracts.RoleHold {
		if good < 0 || bad < 0 || gap(steps[good].Offered, steps[bad].Offered) > set.Precision {
			return nil, knee(fmt.Sprintf("a lower bound: the search did not bracket the knee within %g %%", set.Precision))
		}
		return nil, knee("")
	}
	if last.Verdict == contracts.VerdictDriverLimited && last.Shards*2 <= set.MaxShards && !inVain(steps) {
		return &Move{Role: contracts.RoleStep, Offered: last.Offered, Shards: last.Shards * 2,
			Why: fmt.Sprintf("the drivers may have been the limit: %d ops/s again with %d shards", last.Offered, last.Shards*2)}, nil
	}
	// hold ends the search: the hold of the knee, else the knee (note
	// says when it is only a bound).
	hold := func(why, note string) (*Move, *contracts.Knee) {
		if set.HoldS > 0 && good >= 0 {
			return &Move{Role: contracts.RoleHold, Offered: steps[good].Offered, Shards: steps[good].Shards,
				Why: why + fmt.Sprintf("; holding %d ops/s for %d s", steps[good].Offered, set.HoldS)}, nil
		}
		return nil, knee(note)
	}
	switch {
	case good >= 0 && bad >= 0 && gap(steps[good].Offered, steps[bad].Offered) <= set.Precision:
		return hold(fmt.Sprintf("knee found: %d ops/s passed, %d failed (%.1f %% apart, precision %g %%)",
			steps[good].Offered, steps[bad].Offered, gap(steps[good].Offered, steps[bad].Offered), set.Precision), "")
	case n >= set.MaxSteps:
		why := fmt.Sprintf("the search stopped after %d steps (max_steps) before reaching %g %% precision", n, set.Precision)
		if good < 0 {
			return nil, knee(why + "; no load passed" + latencyHint(set, steps))
		}
		return hold(why, why+": the knee is a lower bound")
	case bad < 0:
		next := max(whole(float64(steps[good].Offered)*set.StepFactor), steps[good].Offered+q)
		return &Move{Role: contracts.RoleStep, Offered: next, Shards: shards,
			Why: fmt.Sprintf("%d ops/s passed: × %g → %d ops/s", steps[good].Offered, set.StepFactor, next)}, nil
	case good < 0:
		next := whole(float64(steps[bad].Offered) / set.StepFactor)
		if next < q || next >= steps[bad].Offered {
			return nil, knee(fmt.Sprintf("no load passed, not even %d ops/s", steps[bad].Offered) + latencyHint(set, steps))
		}
		return &Move{Role: contracts.RoleStep, Offered: next, Shards: shards,
			Why: fmt.Sprintf("%d ops/s failed and none passed yet: ÷ %g → %d ops/s", steps[bad].Offered, set.StepFactor, next)}, nil
	}
	next := whole(float64(steps[good].Offered+steps[bad].Offered) / 2)
	if next <= steps[good].Offered {
		return hold(fmt.Sprintf("knee found: %d ops/s passed, %d failed (no whole load between)", steps[good].Offered, steps[bad].Offered), "")
	}
	return &Move{Role: contracts.RoleStep, Offered: next, Shards: shards,
		Why: fmt.Sprintf("bisect between %d (passed) and %d ops/s (failed) → %d ops/s", steps[good].Offered, steps[bad].Offered, next)}, nil
}

// latencyHint says, when every step kept up with its load and failed only
// on the p99 bound, what that bound measures: the whole step from the
// intended start, its start included (docs/saturation.md).
func latencyHint(set contracts.Saturation, steps []contracts.SaturationStep) string {
	n := 0
	for _, st := range steps {
		if st.Role != contracts.RoleStep {
			continue
		}
		if st.Verdict == contracts.VerdictPass || set.MaxP99MS <= 0 || st.P99MS == nil || *st.P99MS <= set.MaxP99MS ||
			st.Goodput < set.MinAchieved/100*float64(st.Offered) || st.ErrorShare > 0 {
			return ""
		}
		n++
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (every step kept up and failed only on p99 ≤ %g ms, which covers the whole step from the intended start, "+
		"its first operations included: longer steps, -xsats, or a higher -xsatp99)", set.MaxP99MS)
}

// Result is the knee of steps so far, for a search that ends early (a
// step's phase failed): note says why it is only a bound.
func Result(set contracts.Saturation, steps []contracts.SaturationStep, note string) *contracts.Knee {
	good, bad := bracket(set, steps)
	return kneeOf(steps, good, bad, note)
}

// bracket finds the steps (indexes, -1 for none) of the highest passing
// offered load and of the lowest failing one above it. A failure below a
// passing load is noise the search steps over; a driver-limited step counts
// as a failure once no more shards may be added.
func bracket(set contracts.Saturation, steps []contracts.SaturationStep) (good, bad int) {
	good, bad = -1, -1
	for k, st := range steps {
		if st.Role == contracts.RoleStep && st.Verdict == contracts.VerdictPass && (good < 0 || st.Offered > steps[good].Offered) {
			good = k
		}
	}
	for k, st := range steps {
		if st.Role == contracts.RoleStep && failed(set, steps, k) && (good < 0 || st.Offered > steps[good].Offered) && (bad < 0 || st.Offered < steps[bad].Offered) {
			bad = k
		}
	}
	return good, bad
}

// failed reports whether step k failed for the SUT: judged so, or driver
// limited where more shards may not or did not help.
func failed(set contracts.Saturation, steps []contracts.SaturationStep, k int) bool {
	st := steps[k]
	return st.Verdict == contracts.VerdictFail ||
		st.Verdict == contracts.VerdictDriverLimited && (st.Shards*2 > set.MaxShards || inVain(steps))
}

// Retried judges the last of steps again in the light of the others: a
// driver-limited step that was the retry of a load on more shards and
// reached no more than fewer shards did (futile) is a failure — the drivers
// were not the limit, the SUT was, or the machine they share with it. The
// search reads it so already (failed); this makes its verdict say so.
func Retried(steps []contracts.SaturationStep) {
	k := len(steps) - 1
	if k < 0 || steps[k].Verdict != contracts.VerdictDriverLimited || !futile(steps, k) {
		return
	}
	st, e := &steps[k], steps[fewer(steps, k)]
	why, _, _ := strings.Cut(st.Why, busyPhrase)
	why += fmt.Sprintf("; %d shards reached %.0f ops/s, %d reached %.0f: the drivers were not the limit", st.Shards, st.Goodput, e.Shards, e.Goodput)
	st.Verdict, st.Why = contracts.VerdictFail, why
}

// inVain reports whether adding shards was ever futile in this search:
// then no later step adds any.
func inVain(steps []contracts.SaturationStep) bool {
	for k := range steps {
		if futile(steps, k) {
			return true
		}
	}
	return false
}

// futile reports whether step k added shards in vain: an earlier step of
// the same offered load on fewer shards reached as much goodput (within 5 %).
// Then the drivers were not the limit — the SUT was, or the machine they
// share with it.
func futile(steps []contracts.SaturationStep, k int) bool { return fewer(steps, k) >= 0 }

// fewer is the earlier step that makes step k futile: the same offered
// load on fewer shards with as much goodput (within 5 %); -1 if none.
func fewer(steps []contracts.SaturationStep, k int) int {
	st := steps[k]
	for i, e := range steps[:k] {
		if e.Role == contracts.RoleStep && e.Offered == st.Offered && e.Shards < st.Shards && st.Goodput <= e.Goodput*1.05 {
			return i
		}
	}
	return -1
}

// bestShards is the shard count of the step that reached the highest
// goodput (the fewest shards on a tie): what later steps run on.
func bestShards(steps []contracts.SaturationStep) int {
	best := -1
	for k, st := range steps {
		if st.Role != contracts.RoleStep {
			continue
		}
		if best < 0 || st.Goodput > steps[best].Goodput || st.Goodput == steps[best].Goodput && st.Shards < steps[best].Shards {
			best = k
		}
	}
	if best < 0 {
		return 1
	}
	return steps[best].Shards
}

func kneeOf(steps []contracts.SaturationStep, good, bad int, note string) *contracts.Knee {
	k := &contracts.Knee{Note: note}
	if good >= 0 {
		k.Offered, k.Goodput, k.P99MS, k.Step = steps[good].Offered, steps[good].Goodput, steps[good].P99MS, steps[good].Step
		k.Sustained = math.Min(k.Goodput, float64(k.Offered))
	}
	if bad >= 0 {
		k.FirstBad = steps[bad].Offered
	}
	return k
}

// gap is how far (percent) bad lies above good.
func gap(good, bad int) float64 { return 100 * float64(bad-good) / float64(good) }
