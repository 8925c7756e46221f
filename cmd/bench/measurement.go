package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// way is how a run drives YCSB.
type way int

const (
	bare  way = iota // (a) the bare YCSB command line
	agent            // (b) a shard through a driver-agent process
)

func (w way) String() string {
	if w == agent {
		return "(b) agent"
	}
	return "(a) bare"
}

func (w way) short() string {
	if w == agent {
		return "agent"
	}
	return "bare"
}

// schedule interleaves rounds runs of each way as ABBA pairs starting with
// the agent — b a, a b, b a, ... — so that a slow drift of the machine
// (warming up, a neighbour) weighs on both ways alike. The agent comes
// first because its first run shows the bench the java command it builds.
func schedule(rounds int) []way {
	var out []way
	for r := 1; r <= rounds; r++ {
		out = append(out, pairOf(r)...)
	}
	return out
}

// pairOf is the two runs of round (from 1) in schedule's order.
func pairOf(round int) []way {
	if round%2 == 1 {
		return []way{agent, bare}
	}
	return []way{bare, agent}
}

// measurement is one run.
type measurement struct {
	Round int
	Way   way
	Ops   int64         // operations YCSB executed (its summary)
	Wall  time.Duration // (a) JVM start to exit; (b) job published to final received
	// CPU is user + system time from the kernel's accounting of the reaped
	// process (wait4): (a) the JVM; (b) the agent process, start-up to exit,
	// which includes its JVM (the agent reaped it).
	CPU time.Duration
	// JVM is the JVM's part of CPU: (a) all of it; (b) the agent's reaped
	// children when the final arrived (/proc, 10 ms ticks).
	JVM time.Duration
	// JVMSystem is the system (kernel) part of JVM: on loopback most of a
	// YCSB client's CPU is socket system calls.
	JVMSystem time.Duration
	// AgentStart is the agent's own CPU until it was ready for jobs ((b)).
	AgentStart time.Duration
	NATS       time.Duration // nats-server's CPU during the run
	Redis      time.Duration // redis-server's CPU during the run
	Throughput float64       // YCSB's [OVERALL] Throughput(ops/sec)
}

// CPUPerMillion is CPU seconds per million operations.
func (m measurement) CPUPerMillion() float64 {
	if m.Ops == 0 {
		return math.NaN()
	}
	return m.CPU.Seconds() / float64(m.Ops) * 1e6
}

// AgentSelf is the agent process's own CPU ((b); 0 for (a)).
func (m measurement) AgentSelf() time.Duration {
	if m.Way != agent {
		return 0
	}
	return m.CPU - m.JVM
}

// stats are the medians of one way's runs.
type stats struct {
	Runs                                  int
	Ops                                   float64
	Wall, CPU, PerMillion, Throughput     float64
	JVM, JVMSystem, AgentSelf, AgentStart float64
	NATS, Redis                           float64
	MinPerMillion, MaxPerMillion, Spread  float64 // Spread: (max-min)/median of PerMillion, in %
}

func summarize(ms []measurement, w way) stats {
	var s stats
	col := func(f func(measurement) float64) []float64 {
		var v []float64
		for _, m := range ms {
			if m.Way == w {
				v = append(v, f(m))
			}
		}
		return v
	}
	per := col(measurement.CPUPerMillion)
	s.Runs = len(per)
	if s.Runs == 0 {
		return s
	}
	secs := func(f func(measurement) time.Duration) float64 {
		return median(col(func(m measurement) float64 { return f(m).Seconds() }))
	}
	s.Ops = median(col(func(m measurement) float64 { return float64(m.Ops) }))
	s.Wall = secs(func(m measurement) time.Duration { return m.Wall })
	s.CPU = secs(func(m measurement) time.Duration { return m.CPU })
	s.PerMillion = median(per)
	s.Throughput = median(col(func(m measurement) float64 { return m.Throughput }))
	s.JVM = secs(func(m measurement) time.Duration { return m.JVM })
	s.JVMSystem = secs(func(m measurement) time.Duration { return m.JVMSystem })
	s.AgentSelf = secs(measurement.AgentSelf)
	s.AgentStart = secs(func(m measurement) time.Duration { return m.AgentStart })
	s.NATS = secs(func(m measurement) time.Duration { return m.NATS })
	s.Redis = secs(func(m measurement) time.Duration { return m.Redis })
	s.MinPerMillion, s.MaxPerMillion = slices.Min(per), slices.Max(per)
	s.Spread = (s.MaxPerMillion - s.MinPerMillion) / s.PerMillion * 100
	return s
}

// pairedOverheads are, per round holding both ways, the agent's CPU s per
// million operations over the bare one's, minus one, in %.
func pairedOverheads(ms []measurement) []float64 {
	byRound := map[int][2]*measurement{}
	var rounds []int
	for i := range ms {
		m := &ms[i]
		p, seen := byRound[m.Round]
		if !seen {
			rounds = append(rounds, m.Round)
		}
		p[m.Way] = m
		byRound[m.Round] = p
	}
	var out []float64
	for _, r := range rounds {
		p := byRound[r]
		if p[bare] != nil && p[agent] != nil {
			out = append(out, overhead(p[agent].CPUPerMillion(), p[bare].CPUPerMillion()))
		}
	}
	return out
}

// medianBounds are the lowest and highest of n paired overheads and the
// confidence that the median of the overheads they sample lies between
// them: the chance that n independent pairs do not all fall on one side of
// it, 1 - 2 * 0.5^n (a sign test; no assumption about the distribution).
func medianBounds(p []float64) (lo, hi, confidence float64) {
	if len(p) == 0 {
		return math.NaN(), math.NaN(), 0
	}
	return slices.Min(p), slices.Max(p), 1 - 2*math.Pow(0.5, float64(len(p)))
}

// t975Table is Student's t, two-sided 95 % (t(0.975, df)) for df = 1..30,
// as the reporter's (summary/repetitions.py T975).
var t975Table = [...]float64{
	12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
}

// t975 is t(0.975, df): the table to 30, then the Cornish-Fisher expansion
// in 1/df around the normal's quantile (Abramowitz & Stegun 26.7.5; within
// 0.001 of the exact value from df 31), as the reporter's t975.
func t975(df int) float64 {
	if df <= len(t975Table) {
		return t975Table[df-1]
	}
	const z = 1.959964
	v := float64(df)
	return z + (z*z*z+z)/(4*v) +
		(5*math.Pow(z, 5)+16*z*z*z+3*z)/(96*v*v) +
		(3*math.Pow(z, 7)+19*math.Pow(z, 5)+17*z*z*z-15*z)/(384*v*v*v)
}

// meanInterval is the mean of p and the half-width of its 95 % interval
// (Student's t: t(0.975, n-1) · s / √n, s the sample standard deviation);
// the half-width is +Inf for fewer than two values.
func meanInterval(p []float64) (mean, half float64) {
	n := len(p)
	if n == 0 {
		return math.NaN(), math.Inf(1)
	}
	for _, v := range p {
		mean += v
	}
	mean /= float64(n)
	if n < 2 {
		return mean, math.Inf(1)
	}
	var ss float64
	for _, v := range p {
		ss += (v - mean) * (v - mean)
	}
	return mean, t975(n-1) * math.Sqrt(ss/float64(n-1)) / math.Sqrt(float64(n))
}

// moreRounds decides whether to run another round after rounds of them,
// given their round-by-round overheads p: while the 95 % interval of their
// mean is wider than ±resolve (in %), another round fits in the time left
// (twice the last round's time) and max rounds are not reached. why says
// what ended the rounds, for the report.
func moreRounds(p []float64, resolve float64, rounds, maxRounds int, left, last time.Duration) (more bool, why string) {
	_, half := meanInterval(p)
	switch {
	case resolve <= 0:
		return false, "-resolve 0: the -runs rounds only"
	case half <= resolve:
		return false, fmt.Sprintf("resolved to ±%g %% after %d rounds", resolve, rounds)
	case rounds >= maxRounds:
		return false, fmt.Sprintf("not resolved to ±%g %%: -max-runs %d reached", resolve, maxRounds)
	case left < 2*last:
		return false, fmt.Sprintf("not resolved to ±%g %%: another round would not fit in the time left (-deadline)", resolve)
	}
	return true, ""
}

// overhead is b over a minus one, in %.
func overhead(b, a float64) float64 { return (b/a - 1) * 100 }

// median of v (the mean of the middle two for an even count); NaN if empty.
func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
