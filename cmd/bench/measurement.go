package main

import (
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
	for r := range rounds {
		if r%2 == 0 {
			out = append(out, agent, bare)
		} else {
			out = append(out, bare, agent)
		}
	}
	return out
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
