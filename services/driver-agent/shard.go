package main

import (
	"bufio"

	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"

	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"

	"github.com/benchq/benchq/internal/ycsb"
)

// readyLine is what our Launcher prints on stderr once the SUT answered and
// YCSB's client threads are connected; it then waits for "GO" on stdin.
const readyLine = "BENCHQ READY"

// The Launcher's window markers on stderr (io.benchq.ycsb.OpWindow), each
// followed by an ISO-8601 instant: the first operation's start and, at exit,
// the last operation's end.
const (
	firstOpMarker = "BENCHQ FIRST_OP "
	lastOpMarker  = "BENCHQ LAST_OP "
)

// shardRun is one execution of a shard job.
type shardRun struct {
	a      *Agent
	job    contracts.ShardJob
	args   []string
	hdrDir string // where YCSB writes its histogram logs (see ycsbCommand)
	log    *slog.Logger
	// Written by readStderr, read after the driver exited or said DONE.
	firstOp, lastOp time.Time
	progress        []contracts.Progress // the status lines, for the final
	done            bool                 // a standby said DONE: it waits for its next job
	live            *liveShard
}

// run executes the shard and returns its final result. It only returns an
// error when ctx ends (the agent is stopping): then nothing is published and
// the job is redelivered.
func (r *shardRun) run(ctx context.Context) (*contracts.Final, error) {
	job := r.job
	final := newFinal(job, r.a.cfg.Name, job.YCSB.Threads, job.YCSB.Target)
	fail := func(format string, args ...any) (*contracts.Final, error) {
		return failed(final, format, args...), nil
	}

	br, err := r.a.bus.JoinBarrier(job, r.a.cfg.Name, r.a.instance)
	if err != nil {
		return nil, err
	}
	defer br.Close()

	p, standby, err := r.a.standby.take(r.args)
	if err != nil {
		return fail("%v", err)
	}
	r.log.Debug("driver started", "standby", standby, "jobs", p.jobs, "pid", p.cmd.Process.Pid)
	final.DriverStandby = &standby
	cmd, stdin, stdout, stderr := p.cmd, p.stdin, p.stdout, p.stderr
	kill := func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	r.live = r.a.track(job, cmd.Process.Pid)
	defer r.live.end()

	ready := make(chan struct{})
	tail := &tailBuffer{max: 20}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.readStderr(ctx, stderr, ready, tail)
	}()
	exited := make(chan error, 1)
	go func() {
		wg.Wait()
		if r.done { // the JVM stays: its job ended when stdout has its DONE too
			select {
			case <-stdout.Done():
				exited <- nil
				return
			case <-time.After(doneWait):
				r.done = false
				kill()
			}
		}
		exited <- cmd.Wait()
	}()

	// 1. Prepare: wait for the driver's READY.
	select {
	case <-ready:
	case err := <-exited:
		return fail("driver exited before READY (%v): %s", err, tail.String())
	case <-time.After(br.Timeout):
		kill()
		return fail("driver not READY within %s: %s", br.Timeout, tail.String())
	case <-ctx.Done():
		kill()
		return nil, ctx.Err()
	}

	// 2. Barrier: READY, wait for GO, then start at the common instant.
	startAt, err := br.Ready(ctx)
	if err != nil {
		kill()
		return barrierFailed(ctx, final, err)
	}
	// The driver is set up and its threads connected (io.benchq.ycsb.Run):
	// GO with the instant goes to it at once, and every shard's first
	// operation starts at that instant.
	final.GoDelayMS = br.GoDelayMS()
	final.StartedAt = time.Now().UTC()
	r.live.cpuBefore(ctx, startAt)
	if _, err := io.WriteString(stdin, "GO "+startAt.UTC().Format(time.RFC3339Nano)+"\n"); err != nil {
		return fail("send GO: %v", err)
	}
	if p.prefix == nil {
		_ = stdin.Close() // a standby's stdin stays open for its next job
	}

	// 3. Run until the driver exits, or the phase fails elsewhere (another
	// shard died, a timeout, benchq stop): then stop the driver and report
	// the shard as aborted; what it printed so far is kept in stdout.
	aborted, stopping, waitErr := supervise(ctx, exited, br, kill)
	if stopping {
		return nil, ctx.Err()
	}
	final.EndedAt = time.Now().UTC()
	final.TS = final.EndedAt
	final.Stdout = stdout.String()
	sum, perr := ycsb.ParseSummary(strings.NewReader(final.Stdout))
	switch {
	case aborted != "":
		final.Status, final.Error = contracts.StatusFailed, abortedBecause(aborted)
	case waitErr != nil:
		final.Status, final.Error = contracts.StatusFailed, fmt.Sprintf("driver failed (%v): %s", waitErr, tail.String())
	case perr != nil:
		final.Status, final.Error = contracts.StatusFailed, fmt.Sprintf("unreadable driver output: %v", perr)
	default:
		final.Status = contracts.StatusOK
	}
	if perr == nil {
		final.RuntimeMS, final.Throughput, final.Operations = sum.RunTimeMS, sum.Throughput, sum.Ops
		r.attachHistograms(final.Operations)
	}
	if !r.firstOp.IsZero() {
		t := r.firstOp.UTC()
		final.FirstOpAt = &t
	}
	if !r.lastOp.IsZero() {
		t := r.lastOp.UTC()
		final.LastOpAt = &t
	}
	final.Progress = r.progress
	final.DriverCPU = r.live.cpuReads()
	final.DriverJob = max(1, p.jobs)
	if r.done && final.Status == contracts.StatusOK {
		r.a.standby.jobDone(p)
	} else if r.done {
		go p.kill()
	}
	return final, nil
}

// doneWait bounds the wait for a standby's stdout DONE line after its
// stderr one (both are written before it waits for its next job).
const doneWait = 5 * time.Second

// attachHistograms reads YCSB's histogram log of each operation and ships
// the merged histogram with it. An operation without a log (YCSB measured
// nothing under that name) or whose log does not add up to its count keeps
// no histogram: the reporter then says its percentiles are not merged.
func (r *shardRun) attachHistograms(ops []contracts.OpResult) {
	for i := range ops {
		op := &ops[i]
		if op.Count == 0 || strings.ContainsAny(op.Name, `/\`) {
			continue
		}
		h, err := readHistogramFile(filepath.Join(r.hdrDir, op.Name+".hdr"))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			r.a.log.Warn("histogram not shipped", "op", op.Name, "err", err)
			continue
		case h.TotalCount() != op.Count:
			r.a.log.Warn("histogram not shipped: its count differs from the summary's", "op", op.Name,
				"histogram", h.TotalCount(), "summary", op.Count)
			continue
		}
		if op.Histogram, err = ycsb.EncodeHistogram(h); err != nil {
			r.a.log.Warn("histogram not shipped", "op", op.Name, "err", err)
		}
	}
}

func readHistogramFile(path string) (*hdrhistogram.Histogram, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close() //nolint:errcheck // read only
	h, err := ycsb.ReadHistogramLog(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// parseMarker recognises the Launcher's window markers.
func parseMarker(line string) (marker string, at time.Time, ok bool) {
	for _, m := range []string{firstOpMarker, lastOpMarker} {
		if rest, found := strings.CutPrefix(strings.TrimSpace(line)+" ", m); found {
			t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(rest))
			if err != nil {
				return "", time.Time{}, false
			}
			return m, t, true
		}
	}
	return "", time.Time{}, false
}

// newFinal is a shard's final before it runs: who, what and its settings.
func newFinal(job contracts.ShardJob, agent string, threads, target int) *contracts.Final {
	return &contracts.Final{
		Envelope:      contracts.NewEnvelope(job.Code, contracts.FinalID(job.Code, job.Phase, job.Shard, job.Attempt), time.Now()),
		Configuration: job.Configuration, Phase: job.Phase, Kind: job.Kind, Shard: job.Shard, Attempt: job.Attempt,
		Agent: agent, Threads: threads, Target: target,
	}
}

// failed marks f failed now, with the reason.
func failed(f *contracts.Final, format string, args ...any) *contracts.Final {
	now := time.Now().UTC()
	f.Status, f.Error = contracts.StatusFailed, fmt.Sprintf(format, args...)
	if f.StartedAt.IsZero() {
		f.StartedAt = now
	}
	f.EndedAt, f.TS = now, now
	return f
}

// barrierFailed is a shard's outcome when its barrier did not open: a
// failed final when the phase was aborted or GO did not come in time; else
// (the agent stops, READY was not published) the error, and the job is not
// acked but redelivered.
func barrierFailed(ctx context.Context, final *contracts.Final, err error) (*contracts.Final, error) {
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if errors.Is(err, bus.ErrAborted) || errors.Is(err, bus.ErrNoGo) {
		return failed(final, "%v", err), nil
	}
	return nil, err
}

// atGo is an engine inside the agent (TPC-C, the metrics generator) at the
// barrier: READY, then GO's start instant, a context that ends when the
// phase attempt fails (stop it when the run ends), and the driver's CPU
// read at the instant. An error is barrierFailed's to judge.
func atGo(ctx context.Context, br *bus.Barrier, final *contracts.Final, live *liveShard) (time.Time, context.Context, context.CancelFunc, error) {
	startAt, err := br.Ready(ctx)
	if err != nil {
		return time.Time{}, nil, nil, err
	}
	final.GoDelayMS = br.GoDelayMS()
	runCtx, stop := br.Context(ctx)
	live.cpuBefore(runCtx, startAt)
	return startAt, runCtx, stop, nil
}

// settled is the outcome of an engine inside the agent that ran under
// runCtx (atGo) and returned runErr: failed when the phase attempt failed
// or the engine did; nothing when the agent is stopping (ctx ended), so the
// job is not acked but redelivered.
func settled(ctx, runCtx context.Context, runErr error, final *contracts.Final) (*contracts.Final, error) {
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case runCtx.Err() != nil:
		final.Status, final.Error = contracts.StatusFailed, abortedBecause(context.Cause(runCtx).Error())
	case runErr != nil:
		final.Status, final.Error = contracts.StatusFailed, runErr.Error()
	default:
		final.Status = contracts.StatusOK
	}
	return final, nil
}

// waitUntil waits for instant t (GO's start), or until ctx ends.
func waitUntil(ctx context.Context, t time.Time) {
	if d := time.Until(t); d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}
}

// abortedBecause is the error of a shard stopped by its phase's failure.
func abortedBecause(reason string) string { return "aborted: the phase failed: " + reason }

// supervise waits until a started driver process exits (its Wait result
// arrives on exited). The phase attempt failing kills the process: aborted
// is the reason. When ctx ends (the agent is stopping) it kills the
// process, waits for it and reports stopping.
func supervise(ctx context.Context, exited <-chan error, br *bus.Barrier, kill func()) (aborted string, stopping bool, waitErr error) {
	abort := br.Aborted()
	for {
		select {
		case err := <-exited:
			return aborted, false, err
		case <-abort:
			aborted, abort = br.Reason(), nil // nil: it fired
			kill()
		case <-ctx.Done():
			kill()
			<-exited //nolint:errcheck // killed by us: its exit status says nothing
			return aborted, true, nil
		}
	}
}

// readStderr signals READY and turns YCSB status lines into intervals.
func (r *shardRun) readStderr(ctx context.Context, stderr io.Reader, ready chan<- struct{}, tail *tailBuffer) {
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	signalled := false
	for sc.Scan() {
		line := sc.Text()
		if !signalled && strings.TrimSpace(line) == readyLine {
			signalled = true
			close(ready)
			continue
		}
		if signalled && strings.TrimSpace(line) == doneLine {
			r.done = true // nothing more of this job comes on stderr
			return
		}
		if m, at, ok := parseMarker(line); ok {
			switch {
			case m == firstOpMarker:
				r.firstOp = at
			case r.lastOp.IsZero():
				r.lastOp = at
				r.live.cpuNow() // the operations have just ended
			}
			continue
		}
		st, ok, err := ycsb.ParseStatusLine(line)
		if !ok || err != nil {
			tail.add(line)
			continue
		}
		r.progress = append(r.progress, contracts.Progress{At: st.At.UTC(), Operations: st.Operations})
		r.a.publishInterval(ctx, r.job, r.live, contracts.Interval{
			At: st.At.UTC(), ElapsedS: st.ElapsedS, Operations: st.Operations, OpsPerSec: st.OpsPerSec, PerOp: st.PerOp,
		})
	}
	if err := sc.Err(); err != nil {
		// A line longer than the scanner takes: read on, unparsed, so the
		// driver never blocks on a full pipe and a standby's DONE is seen.
		tail.add(fmt.Sprintf("(stderr: %v)", err))
		rd := bufio.NewReader(stderr)
		for {
			line, err := rd.ReadString('\n')
			if signalled && strings.TrimSpace(line) == doneLine {
				r.done = true
				return
			}
			if err != nil {
				return
			}
		}
	}
}

// tailBuffer keeps the last lines of the driver's stderr for error messages.
type tailBuffer struct {
	mu    sync.Mutex
	max   int
	lines []string
}

func (t *tailBuffer) add(l string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if strings.TrimSpace(l) == "" {
		return
	}
	t.lines = append(t.lines, l)
	if len(t.lines) > t.max {
		t.lines = t.lines[1:]
	}
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 0 {
		return "(no output)"
	}
	return strings.Join(t.lines, " | ")
}
