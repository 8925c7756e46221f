package main

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/benchbase"
	"github.com/benchq/benchq/internal/procs"
)

// consoleTail is how many lines of Benchbase's console a failed final
// quotes.
const consoleTail = 20

// findBenchbase resolves the agent's Benchbase installation: home (the
// -benchbase flag, by default $BENCHQ_BENCHBASE_HOME) is the directory of
// benchbase.jar or the jar itself, JAVA_HOME picks the JVM. Nil without
// home: TPC-C shards then run on the embedded engine. A home that names no
// jar is an error rather than a silent switch of engines.
func findBenchbase(home string, getenv func(string) string) (*benchbase.Install, error) {
	if home == "" {
		return nil, nil
	}
	in, err := benchbase.FindInstall(func(k string) string {
		if k == benchbase.EnvHome {
			return home
		}
		return getenv(k)
	})
	if err != nil {
		return nil, err
	}
	return &in, nil
}

// logTPCCEngine says at start-up which engine runs this agent's TPC-C
// shards.
func logTPCCEngine(log *slog.Logger, in *benchbase.Install) {
	if in == nil {
		log.Info("tpc-c engine: embedded (internal/tpcc); set " + benchbase.EnvHome + " to run Benchbase")
		return
	}
	log.Info("tpc-c engine: benchbase", "jar", in.Jar, "java", in.Java)
}

// runBenchbaseJar executes a shard of engine "benchbase" with the real
// Benchbase (a.cfg.Benchbase). Benchbase cannot connect ahead of the start
// and wait for it, so the shard is READY at once and Benchbase starts at
// GO's instant: its JVM start-up is part of the shard's start skew. It
// returns an error only when ctx ends (the agent is stopping): then
// Benchbase is killed, nothing is published and the job is redelivered.
func (a *Agent) runBenchbaseJar(ctx context.Context, job contracts.ShardJob) (*contracts.Final, error) {
	final := newFinal(job, a.cfg.Name, job.TPCC.Terminals, job.TPCC.Target)
	fail := func(format string, args ...any) (*contracts.Final, error) {
		return failed(final, format, args...), nil
	}
	outDir, err := os.MkdirTemp("", "benchq-benchbase-")
	if err != nil {
		return nil, fmt.Errorf("benchbase output dir: %w", err) // transient: redelivered
	}
	defer os.RemoveAll(outDir)
	cmd, err := benchbase.NewCommand(*a.cfg.Benchbase, job.Kind, job.Endpoint, *job.TPCC, outDir)
	if err != nil {
		return fail("benchbase: %v", err)
	}

	// 1. READY at once, 2. wait for GO, then for its instant.
	br, err := a.bus.JoinBarrier(job, a.cfg.Name, a.instance)
	if err != nil {
		return nil, err
	}
	defer br.Close()
	startAt, err := br.Ready(ctx)
	if err != nil {
		return barrierFailed(ctx, final, err)
	}
	final.GoDelayMS = br.GoDelayMS()
	select {
	case <-time.After(time.Until(startAt)):
	case <-br.Aborted():
		return fail("%s", abortedBecause(br.Reason()))
	case <-ctx.Done():
		return nil, ctx.Err()
	}

	// 3. Start Benchbase: the configuration (it holds the password) first,
	// its console into the output directory.
	if err := os.WriteFile(cmd.ConfigPath, cmd.Config, 0o600); err != nil {
		return fail("benchbase config: %v", err)
	}
	consolePath := filepath.Join(cmd.OutDir, benchbase.ConsoleFile)
	console, err := os.OpenFile(consolePath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fail("benchbase console: %v", err)
	}
	proc := exec.Command(cmd.Args[0], cmd.Args[1:]...)
	proc.Dir = cmd.Dir
	proc.Env = procs.ChildEnv() // none of the agent's keys
	proc.Stdout, proc.Stderr = console, console
	// The JVM dies with the agent and gets its own process group, as YCSB's.
	proc.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	start := time.Now()
	final.StartedAt = start.UTC()
	if err := proc.Start(); err != nil {
		_ = console.Close()
		return fail("start %s: %v", cmd.Args[0], err)
	}
	a.log.Info("benchbase started", "code", job.Code, "phase", job.Phase, "shard", job.Shard, "cmd", cmd.Args, "dir", cmd.Dir)
	kill := func() { _ = syscall.Kill(-proc.Process.Pid, syscall.SIGKILL) }
	live := a.track(job, proc.Process.Pid)
	defer live.end()
	exited := make(chan error, 1)
	go func() { exited <- proc.Wait() }()

	// 4. Run until Benchbase exits; a phase.failed for this phase and
	// attempt stops it.
	aborted, stopping, waitErr := supervise(ctx, exited, br, kill)
	_ = console.Close()
	if stopping {
		return nil, ctx.Err()
	}
	final.EndedAt = time.Now().UTC()
	final.TS = final.EndedAt
	tail := readTail(consolePath, consoleTail)
	switch {
	case aborted != "":
		final.Status, final.Error = contracts.StatusFailed, abortedBecause(aborted)
		final.Stdout = tail
		return final, nil
	case waitErr != nil:
		final.Status, final.Error = contracts.StatusFailed, fmt.Sprintf("benchbase failed (%v): %s", waitErr, oneLine(tail))
		final.Stdout = tail
		return final, nil
	}

	// 5. Read what Benchbase wrote.
	if job.Kind == contracts.KindLoad {
		f, err := os.Open(consolePath)
		if err != nil {
			return fail("benchbase console: %v", err)
		}
		load, err := benchbase.ReadLoad(f, start)
		_ = f.Close()
		if err != nil {
			final.Stdout = tail
			return fail("unreadable benchbase output: %v: %s", err, oneLine(tail))
		}
		load.FillFinal(final)
		final.Stdout = fmt.Sprintf("benchbase: loaded %g warehouses with %d loader threads in %s", load.ScaleFactor, load.Terminals, load.Elapsed)
	} else {
		// NewCommand runs Benchbase with -s DefaultWindowS.
		res, err := benchbase.ReadDir(cmd.OutDir, benchbase.DefaultWindowS)
		if err != nil {
			final.Stdout = tail
			return fail("unreadable benchbase output: %v: %s", err, oneLine(tail))
		}
		res.FillFinal(final)
		final.Stdout = fmt.Sprintf("benchbase: %d requests in %s, throughput %.2f/s, goodput %.2f/s", res.MeasuredRequests, res.Elapsed, res.Throughput, res.Goodput)
	}
	final.Status = contracts.StatusOK
	return final, nil
}

// readTail is the last n non-blank lines of a file, newline-separated.
func readTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no console: " + err.Error() + ")"
	}
	defer f.Close() //nolint:errcheck // read only
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var lines []string
	for sc.Scan() {
		if l := strings.TrimRight(sc.Text(), " \t\r"); strings.TrimSpace(l) != "" {
			lines = append(lines, l)
			if len(lines) > n {
				lines = lines[1:]
			}
		}
	}
	if err := sc.Err(); err != nil {
		lines = append(lines, "(console unreadable: "+err.Error()+")")
	}
	if len(lines) == 0 {
		return "(no output)"
	}
	return strings.Join(lines, "\n")
}

// oneLine joins a console tail for an error message, as tailBuffer does.
func oneLine(tail string) string { return strings.ReplaceAll(tail, "\n", " | ") }
