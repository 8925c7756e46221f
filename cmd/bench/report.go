package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/benchq/benchq/internal/numfmt"
)

// writeEnvironment prints the machine and the versions.
func writeEnvironment(w io.Writer, e environment) {
	fmt.Fprintln(w, "benchq driver efficiency: CPU per million YCSB operations, bare YCSB vs a shard through the driver agent")
	fmt.Fprintln(w)
	cpus := fmt.Sprintf("%d cores", e.Cores)
	if e.CPUList != "" {
		cpus += " (cpus " + e.CPUList + ")"
	}
	fmt.Fprintf(w, "machine   %s, %s, %.1f GiB RAM, Linux %s\n", orUnknown(e.CPU), cpus, float64(e.RAM)/(1<<30), orUnknown(e.Kernel))
	fmt.Fprintf(w, "versions  Go %s, Java %s, YCSB core %s (Jedis %s, benchq-ycsb %s), Redis %s, nats-server %s, benchq %s\n",
		e.Go, e.Java, e.YCSB, e.Jedis, e.Bindings, e.Redis, e.NATS, e.Commit)
	for _, m := range e.Missing {
		fmt.Fprintf(w, "          (unknown: %s)\n", m)
	}
}

// writeWorkload prints what is measured and how.
func writeWorkload(w io.Writer, cfg Config, redisAddr string) {
	fmt.Fprintf(w, "workload  YCSB %s on Redis %s (loopback): %s records, %s operations, %d threads, unthrottled, status every %d s\n",
		strings.ToUpper(cfg.Workload), redisAddr, numfmt.Thousands(cfg.Records), numfmt.Thousands(cfg.Operations), cfg.Threads, cfg.StatusInterval)
	if cfg.Resolve > 0 && cfg.MaxRuns > cfg.Runs {
		fmt.Fprintf(w, "runs      %d rounds of a run each way, then more (up to %d) until the 95 %% interval of the mean overhead is within ±%g %%;\n", cfg.Runs, cfg.MaxRuns, cfg.Resolve)
	} else {
		fmt.Fprintf(w, "runs      %d rounds of a run each way;\n", cfg.Runs)
	}
	fmt.Fprintln(w, "          interleaved b a a b b a ...; CPU = user + system of the reaped process (wait4)")
	fmt.Fprintln(w, "  (a) bare   the java command the agent builds for the shard, with site.ycsb.Client as main class (no barrier); CPU = the JVM")
	fmt.Fprintln(w, "  (b) agent  a driver-agent process: job from JetStream, READY/GO barrier (the bench answers GO), intervals, final; CPU = agent + its JVM")
}

const (
	rowFormat  = "%6s  %-9s  %10s  %7s  %7s  %10s  %9s  |  %7s  %7s  %7s  %7s  %7s\n"
	rowDivider = "------  ---------  ----------  -------  -------  ----------  ---------  |  -------  -------  -------  -------  -------\n"
)

// writeRowHeader prints the column heads of the run table.
func writeRowHeader(w io.Writer) {
	fmt.Fprintln(w)
	fmt.Fprintf(w, rowFormat, "round", "way", "operations", "wall s", "CPU s", "CPU s/M op", "ops/s", "JVM s", "agent s", "start s", "NATS s", "Redis s")
	fmt.Fprint(w, rowDivider)
}

// writeRow prints one run as it finishes.
func writeRow(w io.Writer, m measurement) {
	agentCol, startCol := "-", "-"
	if m.Way == agent {
		agentCol, startCol = secs(m.AgentSelf().Seconds()), secs(m.AgentStart.Seconds())
	}
	fmt.Fprintf(w, rowFormat, strconv.Itoa(m.Round), m.Way, numfmt.Thousands(m.Ops), secs(m.Wall.Seconds()), secs(m.CPU.Seconds()),
		fixed(m.CPUPerMillion()), numfmt.Thousands(int64(math.Round(m.Throughput))),
		secs(m.JVM.Seconds()), agentCol, startCol, secs(m.NATS.Seconds()), secs(m.Redis.Seconds()))
}

// writeSummary prints the medians, the overhead and the verdict; stopped
// says why no more rounds ran.
func writeSummary(w io.Writer, ms []measurement, limit, resolve float64, stopped string) {
	a, b := summarize(ms, bare), summarize(ms, agent)
	fmt.Fprint(w, rowDivider)
	for _, s := range []struct {
		way way
		st  stats
	}{{bare, a}, {agent, b}} {
		agentCol, startCol := "-", "-"
		if s.way == agent {
			agentCol, startCol = secs(s.st.AgentSelf), secs(s.st.AgentStart)
		}
		fmt.Fprintf(w, rowFormat, "median", s.way, numfmt.Thousands(int64(math.Round(s.st.Ops))), secs(s.st.Wall), secs(s.st.CPU),
			fixed(s.st.PerMillion), numfmt.Thousands(int64(math.Round(s.st.Throughput))),
			secs(s.st.JVM), agentCol, startCol, secs(s.st.NATS), secs(s.st.Redis))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "columns: CPU s = (a) the JVM, (b) the agent process and its JVM; JVM s = the JVM alone ((b): the agent's reaped child, 10 ms ticks);")
	fmt.Fprintln(w, "         agent s = the agent's own Go process, start-up to exit; start s = its part until ready for jobs (connect, streams, consumer);")
	fmt.Fprintln(w, "         NATS s, Redis s = the servers' CPU during the run (not in CPU s); ops/s = YCSB's own [OVERALL] Throughput")
	fmt.Fprintln(w)
	if a.Runs == 0 || b.Runs == 0 {
		fmt.Fprintln(w, "no overhead: a way has no finished run")
		return
	}
	ov := overhead(b.PerMillion, a.PerMillion)
	fmt.Fprintf(w, "overhead of the agent: %+.1f %% CPU s per million operations (median (b) %.2f vs median (a) %.2f; limit %g %%)\n",
		ov, b.PerMillion, a.PerMillion, limit)
	p := pairedOverheads(ms)
	lo, hi, conf := medianBounds(p)
	if len(p) > 0 {
		fmt.Fprintf(w, "  round by round (b)/(a): median %+.1f %%, from %+.1f %% to %+.1f %% over %d rounds\n", median(p), lo, hi, len(p))
	}
	mean, half := meanInterval(p)
	if len(p) > 1 {
		fmt.Fprintf(w, "  their mean: %+.1f %% ± %.1f %% (95 %% interval, Student's t, %d rounds; goal: narrower than ±%g %%): %s\n",
			mean, half, len(p), resolve, stopped)
	}
	fmt.Fprintf(w, "  run-to-run spread of CPU s/M op: (a) %.1f %%, (b) %.1f %% (max-min over the median)\n", a.Spread, b.Spread)
	fmt.Fprintf(w, "  the agent process alone: %.2f CPU s per shard = %+.1f %% of (a)'s CPU (wait4 minus its JVM, ±0.02 s: no YCSB noise in it; the rest of the difference is the JVM's)\n",
		b.AgentSelf, b.AgentSelf/a.CPU*100)
	fmt.Fprintf(w, "  where (b)'s extra %+.2f CPU s per run goes (medians): its JVM %+.2f s against (a)'s (system time %+.2f s), the agent process %.2f s (%.2f s of it start-up)\n",
		b.CPU-a.CPU, b.JVM-a.JVM, b.JVMSystem-a.JVMSystem, b.AgentSelf, b.AgentStart)
	fmt.Fprintln(w)
	switch {
	case ov <= limit:
		fmt.Fprintf(w, "WITHIN THE LIMIT: the agent's overhead %+.1f %% is within %g %%.\n", ov, limit)
	default:
		bar := strings.Repeat("!", 78)
		fmt.Fprintln(w, bar)
		fmt.Fprintf(w, "!!! OVER THE LIMIT: the agent's overhead %+.1f %% exceeds %g %% (-limit; docs/bench.md)\n", ov, limit)
		fmt.Fprintln(w, bar)
	}
	if len(p) > 1 {
		fmt.Fprintf(w, "interval: the mean round-by-round overhead lies in %+.1f %% .. %+.1f %% with 95 %% confidence: %s\n",
			mean-half, mean+half, decided(mean-half, mean+half, limit))
		fmt.Fprintf(w, "confidence: the median round-by-round overhead lies between %+.1f %% and %+.1f %% with %.0f %% confidence (sign test, %d rounds;\n  it assumes rounds that do not influence each other, which other load on the machine breaks): %s\n",
			lo, hi, conf*100, len(p), decided(lo, hi, limit))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "what (b) does that (a) does not:")
	fmt.Fprintln(w, "  agent (Go): starts, connects to NATS, declares streams and its consumer, heartbeats every 5 s; pulls the ShardJob; publishes")
	fmt.Fprintln(w, "    barrier.ready and waits for barrier.go; reads every stderr line of the JVM (READY, FIRST_OP/LAST_OP, status lines) and")
	fmt.Fprintln(w, "    publishes one interval per status line; at the end reads and merges YCSB's HdrHistogram logs, one per operation, and")
	fmt.Fprintln(w, "    publishes them with YCSB's stdout in the final.")
	fmt.Fprintln(w, "  JVM (io.benchq.ycsb.Launcher, which runs YCSB core's client threads): a probe (the binding's init() and cleanup(): one extra")
	fmt.Fprintln(w, "    Redis connection), preloading about 600 YCSB/HdrHistogram/htrace classes, the workload set up and the client threads")
	fmt.Fprintln(w, "    connected before READY; after GO they sleep until the common start instant (no CPU; RunTime starts at the instant).")
	fmt.Fprintln(w, "  Both write the same HdrHistogram logs and status lines (the same command line).")
}

// decided says what the range of round-by-round overheads tells about the
// limit.
func decided(lo, hi, limit float64) string {
	switch {
	case hi <= limit:
		return fmt.Sprintf("all of it within %g %%.", limit)
	case lo > limit:
		return fmt.Sprintf("all of it over %g %%.", limit)
	}
	return fmt.Sprintf("the range straddles %g %%, so this run cannot tell; repeat with more rounds (BENCH=\"-max-runs 80\"), longer runs (-operations) or on a quieter machine.", limit)
}

func secs(s float64) string { return fixed(s) }

func fixed(f float64) string {
	if math.IsNaN(f) {
		return "-"
	}
	return strconv.FormatFloat(f, 'f', 2, 64)
}
