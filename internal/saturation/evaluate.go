package saturation

// Judging one step: its steady window, what it achieved second by second,
// its errors and merged latencies, and the verdict.

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/ycsb"
)

// busyPhrase begins what a driver-limited step's Why adds to the reasons
// it failed (Retried takes it off again).
const busyPhrase = "; the drivers' threads were busy"

// busyLimit is the share of thread time (percent) above which a failing
// step's drivers may have been the limit: its threads were hardly ever
// idle, so more of them might have offered more.
const busyLimit = 90

// Evaluate judges one step (or the hold) of offered load from its shards'
// finals: goodput over the steady window against the offered load, p99
// against the bound, the error share against errorLimit (percent), and for
// the hold the per-second stability.
func Evaluate(set contracts.Saturation, errorLimit float64, role string, step, offered int, finals []*contracts.Final) contracts.SaturationStep {
	st, failedShards := begin(role, step, offered, finals, "shard")
	fail := func(why string) contracts.SaturationStep { return failStep(st, why) }
	if failedShards != "" {
		return fail(failedShards)
	}
	from, to, ok := steadyWindow(finals, time.Duration(set.WarmupS)*time.Second)
	if !ok {
		return fail("no steady second: the shards' common window is shorter than the warm-up (" + fmt.Sprint(set.WarmupS) + " s) plus 1 s")
	}
	st.SteadyFrom, st.SteadyTo = &from, &to
	seconds := perSecond(finals, from, to)
	st.Seconds = len(seconds)
	sum := 0.0
	for _, v := range seconds {
		sum += v
	}
	st.Achieved = sum / float64(len(seconds))
	st.CV, st.WorstSecond = variation(seconds)
	ops, failed := counts(finals)
	if ops > 0 {
		st.ErrorShare = 100 * float64(failed) / float64(ops)
	}
	st.Goodput = st.Achieved * (1 - st.ErrorShare/100)
	h, service := merged(finals)
	if h != nil {
		p95, p99 := ms(ycsb.ValueAtPercentile(h, 95)), ms(ycsb.ValueAtPercentile(h, 99))
		st.P95MS, st.P99MS = &p95, &p99
	}
	if service != nil && service.TotalCount() > 0 && st.Threads > 0 {
		// Little's law over the step: operations in flight on average =
		// throughput × mean service time; over the threads, their busy share.
		st.Busy = 100 * st.Achieved * service.Mean() / 1e6 / float64(st.Threads)
	}
	var why []string
	if need := set.MinAchieved / 100 * float64(offered); st.Goodput < need {
		why = append(why, fmt.Sprintf("goodput %.0f ops/s < %.0f %% of the offered %d", st.Goodput, set.MinAchieved, offered))
	}
	if set.MaxP99MS > 0 && st.P99MS != nil && *st.P99MS > set.MaxP99MS {
		why = append(why, fmt.Sprintf("p99 %.1f ms > %.1f ms", *st.P99MS, set.MaxP99MS))
	}
	if st.ErrorShare > errorLimit {
		why = append(why, fmt.Sprintf("%.2f %% of the operations failed (> %g %%)", st.ErrorShare, errorLimit))
	}
	if role == contracts.RoleHold && st.CV > set.MaxCV {
		why = append(why, fmt.Sprintf("per-second throughput varies by %.1f %% (CV > %g %%)", st.CV, set.MaxCV))
	}
	switch {
	case len(why) == 0 && role == contracts.RoleHold:
		st.Verdict, st.Why = contracts.VerdictStable, fmt.Sprintf("goodput %.0f ops/s for %d s, CV %.1f %%, worst second %.0f ops/s", st.Goodput, st.Seconds, st.CV, st.WorstSecond)
	case len(why) == 0:
		st.Verdict, st.Why = contracts.VerdictPass, fmt.Sprintf("goodput %.0f ops/s ≥ %.0f %% of %d", st.Goodput, set.MinAchieved, offered)
		if st.Goodput > 1.05*float64(offered) {
			st.Why += "; above the offered load: the drivers caught up on a backlog from the warm-up"
		}
	case role == contracts.RoleHold:
		st.Verdict, st.Why = contracts.VerdictUnstable, strings.Join(why, "; ")
	case st.Goodput < set.MinAchieved/100*float64(offered) && st.Busy >= busyLimit && st.ErrorShare <= errorLimit:
		st.Verdict = contracts.VerdictDriverLimited
		st.Why = strings.Join(why, "; ") + fmt.Sprintf(busyPhrase+" %.0f %% of the time: more of them may offer more", st.Busy)
	default:
		st.Verdict, st.Why = contracts.VerdictFail, strings.Join(why, "; ")
	}
	return st
}

// begin starts the record of a step: its shape, and the shards (noun:
// shard, generator) that did not end ok ("" when all did).
func begin(role string, step, offered int, finals []*contracts.Final, noun string) (contracts.SaturationStep, string) {
	st := contracts.SaturationStep{Step: step, Role: role, Offered: offered, Shards: len(finals)}
	var failed []string
	for _, f := range finals {
		st.Threads += f.Threads
		if f.Status != contracts.StatusOK {
			failed = append(failed, fmt.Sprintf("%s %d %s", noun, f.Shard, f.Status))
		}
	}
	return st, strings.Join(failed, ", ")
}

// failStep judges st failed for why; a hold that fails is unstable.
func failStep(st contracts.SaturationStep, why string) contracts.SaturationStep {
	st.Verdict, st.Why = contracts.VerdictFail, why
	if st.Role == contracts.RoleHold {
		st.Verdict = contracts.VerdictUnstable
	}
	return st
}

func ms(us int64) float64 { return float64(us) / 1000 }

// window is a shard's measured window: first to last operation when the
// driver reports them, else its process window.
func window(f *contracts.Final) (time.Time, time.Time) {
	if f.FirstOpAt != nil && f.LastOpAt != nil {
		return *f.FirstOpAt, *f.LastOpAt
	}
	return f.StartedAt, f.EndedAt
}

// steadyWindow is the part of the shards' common window after the
// warm-up, in whole seconds.
func steadyWindow(finals []*contracts.Final, warmup time.Duration) (from, to time.Time, ok bool) {
	for i, f := range finals {
		s, e := window(f)
		if i == 0 || s.After(from) {
			from = s
		}
		if i == 0 || e.Before(to) {
			to = e
		}
	}
	from = from.Add(warmup)
	n := int(to.Sub(from) / time.Second)
	if len(finals) == 0 || n < 1 {
		return from, to, false
	}
	return from, from.Add(time.Duration(n) * time.Second), true
}

// curve is a shard's operations done over time: 0 at its first operation,
// its status lines, its total at its last operation; linear in between.
type curve []contracts.Progress

func curveOf(f *contracts.Final) curve {
	start, end := window(f)
	pts := curve{{At: start, Operations: 0}}
	for _, p := range f.Progress {
		if p.At.After(start) && p.At.Before(end) {
			pts = append(pts, p)
		}
	}
	total, _ := counts([]*contracts.Final{f})
	pts = append(pts, contracts.Progress{At: end, Operations: total})
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].At.Before(pts[j].At) })
	return pts
}

// at is the operations done by time t.
func (c curve) at(t time.Time) float64 {
	if !t.After(c[0].At) {
		return 0
	}
	k := sort.Search(len(c), func(i int) bool { return !c[i].At.Before(t) }) // first point at or after t
	if k == len(c) {
		return float64(c[len(c)-1].Operations)
	}
	a, b := c[k-1], c[k]
	span := b.At.Sub(a.At).Seconds()
	if span <= 0 {
		return float64(b.Operations)
	}
	return float64(a.Operations) + float64(b.Operations-a.Operations)*t.Sub(a.At).Seconds()/span
}

// perSecond is the shards' summed operations in each second of [from, to):
// each shard's curve built once, each second's edge looked up once (a
// one-hour hold is 3,600 seconds of 3,600 status lines per shard).
func perSecond(finals []*contracts.Final, from, to time.Time) []float64 {
	curves := make([]curve, len(finals))
	for i, f := range finals {
		curves[i] = curveOf(f)
	}
	done := func(t time.Time) float64 {
		v := 0.0
		for _, c := range curves {
			v += c.at(t)
		}
		return v
	}
	var out []float64
	prev := done(from)
	for t := from; t.Before(to); t = t.Add(time.Second) {
		next := done(t.Add(time.Second))
		out = append(out, next-prev)
		prev = next
	}
	return out
}

// variation is the coefficient of variation (percent) of xs and its lowest
// value.
func variation(xs []float64) (cv, worst float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	mean, worst := 0.0, xs[0]
	for _, x := range xs {
		mean += x
		worst = math.Min(worst, x)
	}
	mean /= float64(len(xs))
	if mean == 0 {
		return 0, worst
	}
	v := 0.0
	for _, x := range xs {
		v += (x - mean) * (x - mean)
	}
	return 100 * math.Sqrt(v/float64(len(xs))) / mean, worst
}

// counts are the shards' executed and failed operations, as YCSB's
// throughput and status lines count them (contracts.OperationWeight); no
// more failed than executed (a read-modify-write whose read and update
// both failed is in two -FAILED blocks).
func counts(finals []*contracts.Final) (ops, failed int64) {
	for _, f := range finals {
		for _, o := range f.Operations {
			ops += contracts.OperationWeight(o.Name) * o.Count
			if contracts.CountsOperation(o.Name) && contracts.FailedOperation(o.Name) {
				failed += o.Count
			}
		}
	}
	return ops, min(failed, ops)
}

// histRange is the range of the histograms steps are merged into: 1 µs to
// one hour, 3 significant digits (YCSB's own range is narrower).
const histLowest, histHighest, histDigits = 1, 3_600_000_000, 3

// merged is the latency histogram of every operation of every shard, and
// the service-time histogram (from the operation's start) for Little's
// law. The first is from the intended start where the drivers report it
// (a target is set): what a client arriving on schedule waits, queueing
// included — the latency that grows at saturation. Either is nil when no
// shard shipped one, or one could not be decoded or merged whole: missing,
// never a figure made from part of the values.
func merged(finals []*contracts.Final) (latency, service *hdrhistogram.Histogram) {
	var intendedH *hdrhistogram.Histogram
	broken := map[**hdrhistogram.Histogram]bool{}
	add := func(into **hdrhistogram.Histogram, enc string) {
		h, err := ycsb.DecodeHistogram(enc)
		if *into == nil {
			*into = hdrhistogram.New(histLowest, histHighest, histDigits)
		}
		if err != nil || ycsb.Merge(*into, h) != nil {
			broken[into] = true
		}
	}
	intended := contracts.YCSBOperationRule().IntendedPrefix
	for _, f := range finals {
		for _, o := range f.Operations {
			into := &service
			if base, ok := strings.CutPrefix(o.Name, intended); ok {
				into = &intendedH
				o.Name = base // Intended-CLEANUP is a thread's end, not an operation
			}
			if contracts.FailedOperation(o.Name) || !contracts.CountsOperation(o.Name) {
				continue
			}
			if o.Histogram == "" {
				// A shard shipped no histogram of operations it ran (its
				// log did not add up): the rest would be part of the values.
				broken[into] = broken[into] || o.Count > 0
				continue
			}
			add(into, o.Histogram)
		}
	}
	if broken[&service] {
		service = nil
	}
	if broken[&intendedH] {
		return nil, service
	}
	if intendedH != nil {
		return intendedH, service
	}
	return service, service
}
