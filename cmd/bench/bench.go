package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/benchq/benchq/internal/numfmt"
)

// Config is what the bench runs, and with which binaries.
type Config struct {
	Bin            string // driver-agent and nats-server (make bootstrap: .benchq/bin)
	Java           string
	YCSBLib        string // YCSB core, our bindings and their jars
	Workloads      string // workloada..workloadf
	Workload       string // YCSB workload letter
	Records        int64  // loaded once, not measured
	Operations     int64  // per run
	Threads        int
	StatusInterval int // seconds between YCSB status lines (-xli)
	Runs           int // per way, at least
	// MaxRuns and Resolve: after Runs rounds, rounds are added until the
	// 95 % interval of the mean round-by-round overhead is within
	// ±Resolve % (0: no rounds added), MaxRuns rounds ran, or another
	// round would not fit before the deadline.
	MaxRuns    int
	Resolve    float64
	Limit      float64
	RunTimeout time.Duration // one run, JVM start to final
	Keep       bool          // keep the work directory (logs) after the bench
}

func (c Config) agentBin() string { return filepath.Join(c.Bin, "driver-agent") }
func (c Config) natsBin() string  { return filepath.Join(c.Bin, "nats-server") }

func (c Config) validate() error {
	var errs []error
	bad := func(cond bool, field, msg string) {
		if cond {
			errs = append(errs, fmt.Errorf("-%s: %s", field, msg))
		}
	}
	bad(c.Runs < 1, "runs", "at least 1")
	bad(c.Resolve < 0, "resolve", "not negative (0: no rounds beyond -runs)")
	bad(c.Operations < 1, "operations", "at least 1")
	bad(c.Records < 1, "records", "at least 1")
	bad(c.Threads < 1, "threads", "at least 1")
	bad(c.StatusInterval < 1, "status-interval", "at least 1 second")
	bad(len(c.Workload) != 1 || !strings.Contains("abcdef", c.Workload), "workload", "one of a b c d e f")
	for _, bin := range []string{c.agentBin(), c.natsBin()} {
		if _, err := os.Stat(bin); err != nil {
			errs = append(errs, fmt.Errorf("%s missing (make bootstrap builds it): %w", bin, err))
		}
	}
	if _, err := os.Stat(filepath.Join(c.Workloads, "workload"+c.Workload)); err != nil {
		errs = append(errs, fmt.Errorf("-workloads: %w", err))
	}
	return errors.Join(errs...)
}

// Run measures cfg.Runs rounds (a run each way), then adds rounds while
// moreRounds says so, and prints the figures on out. The figures never
// make it fail: only a run that cannot be measured does.
func Run(ctx context.Context, cfg Config, out io.Writer, log *slog.Logger) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	began, load0 := time.Now(), loadAverage()
	writeEnvironment(out, describeEnvironment(ctx, cfg))
	dir, err := os.MkdirTemp("", "benchq-bench-")
	if err != nil {
		return err
	}
	if cfg.Keep {
		log.Info("keeping the logs", "dir", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	st, err := startStack(ctx, cfg, dir, log)
	if err != nil {
		return err
	}
	defer st.close(log)
	sh, err := planShards(cfg, st.redis.Port)
	if err != nil {
		return err
	}
	base := fmt.Sprintf("bench-%d", time.Now().Unix())

	// Loading goes through an agent too: it is not measured, but it warms
	// the page cache, the JVM's class data and the whole agent path.
	log.Info("loading", "records", cfg.Records, "redis", st.redis.Addr())
	load, err := st.runAgent(ctx, cfg, sh.job(base+"-load", sh.load, time.Now()), "agent-load", false)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	fmt.Fprintln(out)
	writeWorkload(out, cfg, st.redis.Addr())
	fmt.Fprintf(out, "loaded    %s records through the agent in %.1f s (not measured)\n", numfmt.Thousands(load.m.Ops), load.m.Wall.Seconds())
	writeRowHeader(out)

	var (
		ms      []measurement
		jvmCmd  []string
		perWay  = map[way]int{}
		stopped string
		last    time.Duration
	)
	for round := 1; ; round++ {
		if round > cfg.Runs {
			more, why := moreRounds(pairedOverheads(ms), cfg.Resolve, round-1, max(cfg.MaxRuns, cfg.Runs), timeLeft(ctx), last)
			if !more {
				stopped = why
				break
			}
		}
		roundBegan := time.Now()
		for _, w := range pairOf(round) {
			perWay[w]++
			name := fmt.Sprintf("%s-%d", w.short(), perWay[w]) // names its logs
			log.Debug("run", "round", round, "way", w.String())
			var m measurement
			switch w {
			case agent:
				r, err := st.runAgent(ctx, cfg, sh.job(fmt.Sprintf("%s-%d-%s", base, round, w.short()), sh.run, time.Now()), name, jvmCmd == nil)
				if err != nil {
					return err
				}
				if jvmCmd == nil {
					jvmCmd = r.cmd
				}
				m = r.m
			case bare:
				if m, err = st.runBare(ctx, cfg, jvmCmd, name); err != nil {
					return err
				}
			}
			m.Round = round
			ms = append(ms, m)
			writeRow(out, m)
		}
		last = time.Since(roundBegan)
	}
	writeSummary(out, ms, cfg.Limit, cfg.Resolve, stopped)
	fmt.Fprintln(out)
	fmt.Fprintf(out, "load      1-minute load average %.2f at the start, %.2f at the end, on %d cores; the bench took %s\n",
		load0, loadAverage(), runtime.NumCPU(), time.Since(began).Round(time.Second))
	if bareCmd, err := bareCommand(jvmCmd, "<tmp>"); err == nil {
		fmt.Fprintln(out)
		fmt.Fprintf(out, "(a) ran: %s\n", strings.Join(bareCmd, " "))
	}
	return nil
}

// timeLeft is the time until ctx's deadline (a day without one).
func timeLeft(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d)
	}
	return 24 * time.Hour
}

// ended says why a run's wait stopped: the bench was interrupted or ran
// past its deadline (ctx), or the run took longer than its own bound.
func ended(ctx context.Context, what string, bound time.Duration) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return errors.New("the bench's deadline (-deadline) passed")
	case ctx.Err() != nil:
		return errors.New("interrupted")
	}
	return fmt.Errorf("%s within %s (-run-timeout)", what, bound)
}
