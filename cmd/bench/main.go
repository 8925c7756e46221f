// Command bench measures the CPU a YCSB shard costs when it runs through
// benchq's driver agent, against the bare YCSB command line, on a Redis it
// starts itself (docs/bench.md). It prints figures and
// never fails on them. Exit codes: 0 measured (whatever the figures), 1 it
// could not measure (a binary missing, a run failed, the deadline), 2 bad
// flags.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/benchq/benchq/internal/cachedir"
	"github.com/benchq/benchq/internal/startup"
)

func main() {
	home := startup.Env("BENCHQ_HOME", ".benchq")
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	var cfg Config
	fs.StringVar(&cfg.Bin, "bin", filepath.Join(home, "bin"), "directory with driver-agent and nats-server (make bootstrap)")
	fs.StringVar(&cfg.Java, "java", startup.Env("BENCHQ_JAVA", "java"), "java binary")
	fs.StringVar(&cfg.YCSBLib, "ycsb-lib", cachedir.YCSBLib(), "YCSB jars (scripts/build-ycsb.sh; env BENCHQ_YCSB_LIB)")
	fs.StringVar(&cfg.Workloads, "workloads", cachedir.YCSBWorkloads(), "YCSB workload files (installed by scripts/build-ycsb.sh; env BENCHQ_YCSB_WORKLOADS)")
	fs.StringVar(&cfg.Workload, "workload", "a", "YCSB workload (a-f)")
	fs.Int64Var(&cfg.Records, "records", 100_000, "records loaded once (not measured)")
	fs.Int64Var(&cfg.Operations, "operations", 500_000, "operations per run")
	fs.IntVar(&cfg.Threads, "threads", 8, "YCSB client threads")
	fs.IntVar(&cfg.StatusInterval, "status-interval", 1, "seconds between YCSB status lines (each becomes an interval message)")
	fs.IntVar(&cfg.Runs, "runs", 5, "rounds (a run each way) at least")
	fs.IntVar(&cfg.MaxRuns, "max-runs", 40, "rounds at most, while the interval is wider than -resolve")
	fs.Float64Var(&cfg.Resolve, "resolve", 2, "add rounds until the 95 % interval of the mean round-by-round overhead is within ± this many % (0: -runs only)")
	fs.Float64Var(&cfg.Limit, "limit", 2, "the agent's allowed overhead, in %")
	fs.DurationVar(&cfg.RunTimeout, "run-timeout", 3*time.Minute, "bound on one run")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the work directory (Redis, NATS and agent logs, YCSB stderr)")
	deadline := fs.Duration("deadline", 30*time.Minute, "bound on the whole bench (no round is begun that would not end before it)")
	_ = fs.Parse(os.Args[1:])
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "bench: unexpected argument %q\n", fs.Arg(0))
		os.Exit(2)
	}
	for _, p := range []*string{&cfg.Bin, &cfg.YCSBLib, &cfg.Workloads} {
		if abs, err := filepath.Abs(*p); err == nil {
			*p = abs
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *deadline)
	defer cancel()
	if err := Run(ctx, cfg, os.Stdout, startup.Logger("bench")); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		cancel()
		stop()
		os.Exit(1)
	}
}
