package saturation

// Judging a step of metrics generators (benchmark tsdb, docs/tsdb.md), the
// DalmatinerDB benchmark's way: a load is sustained when the generators
// delivered it and the database stored what they sent, second by second,
// by its own count, so that its backlog did not grow.

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/benchq/benchq/contracts"
)

// IngestShare is the share (percent) of the points sent that the database
// must store as they come: a step fails when its backlog (sent − stored)
// grows by more than 100 − IngestShare percent of the rate sent, and
// significantly so, or when it stored less than IngestShare percent of
// what was sent over the steady window, beyond two seconds of points. A database's counter moves in bursts (VictoriaMetrics
// counts a connection's rows a block at a time: up to a second of them),
// so the backlog is judged by its trend over every reading of the steady
// window (a least-squares slope), not by two readings; a slope within
// three of its standard errors of zero is noise, not growth.
const IngestShare = 99.0

// EvaluateIngest judges one step (or the hold) of offered points per
// second from its generators' finals: what they sent over the steady
// window against the offered load (set.MinAchieved), and what the database
// stored in that window (the first generator's Ingest readings) against
// what was sent (IngestShare). Achieved is the points sent per second,
// Goodput the points stored per second; CV and worst second are of the
// stored points per second.
func EvaluateIngest(set contracts.Saturation, errorLimit float64, role string, step, offered int, finals []*contracts.Final) contracts.SaturationStep {
	st, failedShards := begin(role, step, offered, finals, "generator")
	fail := func(why string) contracts.SaturationStep { return failStep(st, why) }
	var ingest *contracts.Ingest
	for _, f := range finals {
		if f.Ingest != nil {
			ingest = f.Ingest
		}
	}
	switch {
	case failedShards != "":
		return fail(failedShards)
	case ingest == nil || len(ingest.Readings) < 2:
		return fail("the database's count of stored points was not read: nothing to judge its ingest by")
	}
	from, to, ok := steadyWindow(finals, time.Duration(set.WarmupS)*time.Second)
	if !ok {
		return fail("no steady second: the generators' common window is shorter than the warm-up (" + fmt.Sprint(set.WarmupS) + " s) plus 1 s")
	}
	st.SteadyFrom, st.SteadyTo = &from, &to
	readings := ingest.Readings
	if first, last := readings[0].At, readings[len(readings)-1].At; from.Before(first) || to.After(last) {
		return fail(fmt.Sprintf("the database's counter was read from %s to %s, not over the whole steady window", first.Format(time.RFC3339), last.Format(time.RFC3339)))
	}
	sentPerSecond := perSecond(finals, from, to)
	var stored []float64
	for t := from; t.Before(to); t = t.Add(time.Second) {
		stored = append(stored, counterAt(readings, t.Add(time.Second))-counterAt(readings, t))
	}
	st.Seconds = len(sentPerSecond)
	st.Achieved = sum(sentPerSecond) / float64(st.Seconds)
	st.Goodput = sum(stored) / float64(st.Seconds)
	st.CV, st.WorstSecond = variation(stored)
	ops, failed := writes(finals)
	if ops > 0 {
		st.ErrorShare = 100 * float64(failed) / float64(ops)
	}
	var why []string
	if need := set.MinAchieved / 100 * float64(offered); st.Achieved < need {
		why = append(why, fmt.Sprintf("the generators sent %.0f points/s < %.0f %% of the offered %d", st.Achieved, set.MinAchieved, offered))
	}
	growth, se, n := backlogTrend(finals, readings, from, to)
	trendGrew := n >= 3 && growth > max((100-IngestShare)/100*st.Achieved, 3*se)
	if trendGrew {
		why = append(why, fmt.Sprintf("the database's backlog grew by %.0f ± %.0f points/s (> %.0f: %g %% of the %.0f sent, or 3 standard errors); it stored %.0f points/s of them",
			growth, se, max((100-IngestShare)/100*st.Achieved, 3*se), 100-IngestShare, st.Achieved, st.Goodput))
	}
	// The trend forgives a counter that stalls and jumps (its standard
	// error grows with the jumps), so the window's total is held to
	// IngestShare as well, less two seconds of points: a counter that
	// moves a second at a time, read once a second, may stand up to two
	// seconds further behind at one edge of the window than at the other
	// (VictoriaMetrics, on a busy machine, stood 107 points behind at 100
	// points/s over a 6 s step). Carbon's counts, overloaded, stood still
	// for seconds and passed steps storing 57 % of what was sent.
	deficit := (st.Achieved - st.Goodput) * float64(st.Seconds)
	if allowed := (100-IngestShare)/100*st.Achieved*float64(st.Seconds) + 2*st.Achieved; !trendGrew && deficit > allowed {
		why = append(why, fmt.Sprintf("the database stored %.0f points/s of the %.0f sent over the steady window (%.1f %%): %.0f points short, more than two seconds of them and %g %%",
			st.Goodput, st.Achieved, 100*st.Goodput/st.Achieved, deficit, 100-IngestShare))
	}

	if st.ErrorShare > errorLimit {
		why = append(why, fmt.Sprintf("%.2f %% of the points failed (> %g %%)", st.ErrorShare, errorLimit))
	}
	if role == contracts.RoleHold && st.CV > set.MaxCV {
		why = append(why, fmt.Sprintf("points stored per second vary by %.1f %% (CV > %g %%)", st.CV, set.MaxCV))
	}
	switch {
	case len(why) == 0 && role == contracts.RoleHold:
		st.Verdict, st.Why = contracts.VerdictStable, fmt.Sprintf("stored %.0f points/s for %d s, CV %.1f %%, worst second %.0f", st.Goodput, st.Seconds, st.CV, st.WorstSecond)
	case len(why) == 0:
		st.Verdict, st.Why = contracts.VerdictPass, fmt.Sprintf("sent %.0f points/s ≥ %.0f %% of %d, stored %.0f points/s", st.Achieved, set.MinAchieved, offered, st.Goodput)
	case role == contracts.RoleHold:
		st.Verdict, st.Why = contracts.VerdictUnstable, strings.Join(why, "; ")
	default:
		st.Verdict, st.Why = contracts.VerdictFail, strings.Join(why, "; ")
	}
	return st
}

// backlogTrend is the least-squares slope (points/s) of the database's
// backlog — points sent by then minus its counter — over its readings in
// [from, to], with the slope's standard error and the readings used.
func backlogTrend(finals []*contracts.Final, readings []contracts.IngestReading, from, to time.Time) (slope, se float64, n int) {
	curves := make([]curve, len(finals))
	for i, f := range finals {
		curves[i] = curveOf(f)
	}
	var xs, ys []float64
	for _, r := range readings {
		if r.At.Before(from) || r.At.After(to) {
			continue
		}
		sent := 0.0
		for _, c := range curves {
			sent += c.at(r.At)
		}
		xs, ys = append(xs, r.At.Sub(from).Seconds()), append(ys, sent-r.Total)
	}
	n = len(xs)
	if n < 3 {
		return 0, 0, n
	}
	mx, my := sum(xs)/float64(n), sum(ys)/float64(n)
	var sxx, sxy float64
	for i := range xs {
		sxx += (xs[i] - mx) * (xs[i] - mx)
		sxy += (xs[i] - mx) * (ys[i] - my)
	}
	if sxx == 0 {
		return 0, 0, n
	}
	slope = sxy / sxx
	var rss float64
	for i := range xs {
		d := ys[i] - my - slope*(xs[i]-mx)
		rss += d * d
	}
	return slope, math.Sqrt(rss / float64(n-2) / sxx), n
}

// counterAt is the database's counter at t, linear between its readings
// (readings in time order; t within them).
func counterAt(readings []contracts.IngestReading, t time.Time) float64 {
	k := sort.Search(len(readings), func(i int) bool { return !readings[i].At.Before(t) })
	switch {
	case k == 0:
		return readings[0].Total
	case k == len(readings):
		return readings[len(readings)-1].Total
	}
	a, b := readings[k-1], readings[k]
	span := b.At.Sub(a.At).Seconds()
	if span <= 0 {
		return b.Total
	}
	return a.Total + (b.Total-a.Total)*t.Sub(a.At).Seconds()/span
}

// writes are the generators' points: delivered and failed (WRITE,
// WRITE-FAILED).
func writes(finals []*contracts.Final) (ops, failed int64) {
	for _, f := range finals {
		for _, o := range f.Operations {
			switch o.Name {
			case "WRITE":
				ops += o.Count
			case "WRITE-FAILED":
				ops += o.Count
				failed += o.Count
			}
		}
	}
	return ops, failed
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}
