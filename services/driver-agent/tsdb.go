package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/metricsload"
	"github.com/benchq/benchq/internal/prom"
	"github.com/benchq/benchq/internal/ycsb"
)

// Operations of a metrics generator's final and intervals (engine tsdb,
// docs/tsdb.md). WRITE counts the points the SUT took (carbon: the socket;
// remote write: a 2xx answer), WRITE-FAILED those whose write failed, as
// YCSB's <OP>-FAILED (so goodput and the error share count them as
// failures). QUERY is the read the first generator sends every second
// while it writes: a range query over the last minute of one of its
// series, its latency in the histogram, ERROR for an error or a timeout;
// it is not an operation of the phase's throughput (names.json,
// not_operations).
const (
	opWrite       = "WRITE"
	opWriteFailed = "WRITE-FAILED"
	opQuery       = "QUERY"
)

// handleTSDB runs a metrics generator's shard (engine tsdb) and publishes
// its final.
func (a *Agent) handleTSDB(ctx context.Context, job contracts.ShardJob, entry catalog.Entry, log *slog.Logger) error {
	t := job.TSDB
	log.Info("metrics generator starting", "protocol", t.Protocol, "agents", t.Agents, "metrics", t.Metrics, "prefix", t.Prefix, "duration_s", t.DurationS)
	return a.runShard(ctx, job, log, func(ctx context.Context) (*contracts.Final, error) { return a.runTSDB(ctx, job, entry) })
}

// tsdbTarget is where a generator of job writes: carbon's host:port or
// the remote-write URL, from the catalog and the SUT's endpoint.
func tsdbTarget(job contracts.ShardJob, entry catalog.Entry) (string, error) {
	ep := job.Endpoint
	switch job.TSDB.Protocol {
	case contracts.ProtocolCarbon:
		port := ep.Ports[entry.TSDB.CarbonPort]
		if port == 0 {
			return "", fmt.Errorf("%s's endpoint has no %q port for carbon's plaintext protocol", job.DBMS, entry.TSDB.CarbonPort)
		}
		return net.JoinHostPort(ep.Host, strconv.Itoa(port)), nil
	case contracts.ProtocolRemoteWrite:
		if entry.TSDB.RemoteWritePath == "" {
			return "", fmt.Errorf("%s has no remote-write receiver", job.DBMS)
		}
		return apiBase(ep, "") + entry.TSDB.RemoteWritePath, nil
	}
	return "", fmt.Errorf("protocol %q: use carbon or remote-write", job.TSDB.Protocol)
}

// apiBase is the base URL of a time-series database's HTTP API: its
// endpoint's port (remote write, queries, /metrics), or the endpoint's port
// of role when the catalog names one (Graphite's graphite-web and counts).
// A role the endpoint lacks gives port 0: every request fails, and its
// reading is missing.
func apiBase(ep contracts.Endpoint, role string) string {
	port := ep.Port
	if role != "" {
		port = ep.Ports[role]
	}
	return "http://" + net.JoinHostPort(ep.Host, strconv.Itoa(port))
}

// runTSDB runs the generator inside the agent (internal/metricsload). It
// checks the SUT takes connections before READY, starts at GO, streams a
// status line per interval and returns the final; an error only when ctx
// ends (the agent is stopping: the job is redelivered).
func (a *Agent) runTSDB(ctx context.Context, job contracts.ShardJob, entry catalog.Entry) (*contracts.Final, error) {
	t := job.TSDB
	sh, err := a.joinInProcess(job, t.Agents, 0)
	if err != nil {
		return nil, err
	}
	defer sh.leave()
	final, br, live, fail := sh.final, sh.br, sh.live, sh.fail

	// 1. Prepare: the SUT answers where the generator writes.
	target, err := tsdbTarget(job, entry)
	if err != nil {
		return fail("%v", err)
	}
	if err := reachable(ctx, job, br.Timeout); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return fail("prepare: %v", err)
	}
	cfg := metricsload.Config{
		Protocol: t.Protocol, Target: target, Agents: t.Agents, Metrics: t.Metrics,
		FlushInterval: time.Duration(t.FlushIntervalMS) * time.Millisecond, Jitter: time.Duration(t.JitterMS) * time.Millisecond,
		SpawnInterval: time.Duration(t.SpawnIntervalMS) * time.Millisecond, Prefix: t.Prefix,
		Duration: time.Duration(t.DurationS) * time.Second, Seed: uint64(job.Shard),
	}
	if job.Kind == contracts.KindLoad {
		cfg.Flushes = 1 // a point of each series: they exist before benchmarking
	}
	status := newTSDBStatus(t.StatusInterval)
	cfg.Observe = status.flushed
	if err := cfg.Check(); err != nil {
		return fail("%v", err)
	}

	// The database's count before any generator of the phase writes: they
	// all start at GO, and GO waits for this READY (a baseline read at GO
	// could already hold another generator's first flush).
	var ingest *ingestReader
	if job.Shard == 1 {
		ingest = newIngestReader(job, entry)
		ingest.read(ctx)
	}

	// 2. Barrier: READY, wait for GO, start at the common instant.
	startAt, runCtx, stopRun, err := atGo(ctx, br, final, live)
	if err != nil {
		return barrierFailed(ctx, final, err)
	}
	defer stopRun()
	waitUntil(runCtx, startAt)

	// 3. Generate; the first generator also reads the SUT's own count of
	// stored points every second, and the first benchmarking one queries
	// it.
	final.StartedAt = time.Now().UTC()
	first := final.StartedAt
	final.FirstOpAt = &first
	var probeWG sync.WaitGroup
	probeCtx, stopProbe := context.WithCancel(runCtx)
	if ingest != nil {
		probeWG.Add(1)
		go func() {
			defer probeWG.Done()
			ingest.every(probeCtx, time.Second)
		}()
	}
	if job.Kind == contracts.KindRun && job.Shard == 1 && entry.TSDB.QueryPath != "" {
		probe := metricsload.Probe{URL: apiBase(job.Endpoint, entry.TSDB.QueryPort), Path: entry.TSDB.QueryPath,
			Query: metricsload.SeriesName(t.Protocol, t.Prefix, 1, 1), API: entry.TSDB.QueryAPI}
		probeWG.Add(1)
		go func() {
			defer probeWG.Done()
			probe.Run(probeCtx, status.reading)
		}()
	}
	var res metricsload.Result
	var runErr error
	if runErr = runCtx.Err(); runErr == nil {
		res, runErr = metricsload.Run(runCtx, cfg, func(s metricsload.Second) {
			if iv, ok := status.second(s); ok {
				a.publishInterval(ctx, job, live, iv)
			}
		})
	}
	// The generators' window ends here; the drain that follows is the
	// database's, not theirs (it would dilute the rate sent).
	generated := time.Now().UTC()
	live.cpuNow()
	final.DriverCPU = live.cpuReads()
	stopProbe()
	probeWG.Wait()
	if ingest != nil {
		final.Ingest = ingest.drain(runCtx, generated)
	}
	final.EndedAt = time.Now().UTC()
	final.TS = final.EndedAt
	final.LastOpAt = &generated
	final.Operations = status.operations(res)
	final.Progress = status.progress
	final.RuntimeMS = float64(generated.Sub(final.StartedAt).Milliseconds())
	if final.RuntimeMS > 0 {
		final.Throughput = float64(res.Sent) / (final.RuntimeMS / 1000)
	}
	final.Stdout = fmt.Sprintf("metrics generator %s: %d agents × %d metrics over %s to %s: %d points sent, %d failed, %d queries",
		t.Prefix, t.Agents, t.Metrics, t.Protocol, target, res.Sent, res.Failed, status.queries)
	for _, e := range res.Errors {
		final.Stdout += "\nerror: " + e
	}
	if runErr == nil && res.Sent == 0 {
		runErr = fmt.Errorf("no point was written: %v", res.Errors)
	}
	return settled(ctx, runCtx, runErr, final)
}

// Draining: after the generators stop, the SUT's counter is read every
// drainEvery until it has not grown for the catalog's drain_quiet_s
// (default defaultDrainQuiet), or drainLimit passed.
const (
	drainEvery = 250 * time.Millisecond
	drainLimit = 30 * time.Second
	// defaultDrainQuiet is two of the embedded stack's 1 s scrapes: the
	// phase (and then the SUT) ends only after Prometheus has scraped the
	// settled count, so the application metrics pulled from it end where
	// the summary's stored points do. With one second, a scrape that came
	// late missed the last flush (1,100 of 1,200 points, e2e, 2026-11-27).
	defaultDrainQuiet = 2
)

// ingestReader reads a time-series database's own counter of stored points
// from its /metrics page (prom.ReadSet).
type ingestReader struct {
	url      string
	counter  catalog.Counter
	quiet    time.Duration
	readings []contracts.IngestReading
}

// newIngestReader reads the catalog's counter of the job's protocol from
// the /metrics of the SUT's HTTP port, or of the endpoint's port the
// catalog's metrics_port names (Graphite's, served by the deployer).
func newIngestReader(job contracts.ShardJob, entry catalog.Entry) *ingestReader {
	quiet := time.Duration(cmp.Or(entry.TSDB.DrainQuietS, defaultDrainQuiet)) * time.Second
	return &ingestReader{url: apiBase(job.Endpoint, entry.TSDB.MetricsPort) + "/metrics", counter: entry.TSDB.Ingested[job.TSDB.Protocol], quiet: quiet}
}

// every reads each interval until ctx ends (a slow page delays only its
// own reading, not the generators' seconds).
func (r *ingestReader) every(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.read(ctx)
		}
	}
}

// read takes one reading; a failed one is left out. A page that answered
// without the counter reads 0: a counter with labels has no sample until
// its first point (Prometheus' samples appended by type).
func (r *ingestReader) read(ctx context.Context) (float64, bool) {
	at := time.Now().UTC()
	v, err := prom.ReadSet(ctx, r.url, r.counter.Set("ingested"), 2*time.Second)
	if err != nil {
		return 0, false
	}
	total := v["ingested"]
	if total < 0 || math.IsNaN(total) || math.IsInf(total, 0) {
		// Not a count (the contract refuses it, and would drop the
		// whole final): a reading that failed.
		return 0, false
	}
	r.readings = append(r.readings, contracts.IngestReading{At: at, Total: total})
	return total, true
}

// drain reads, from when the generators ended, until the counter stops
// growing (the SUT's backlog is stored) or drainLimit passes, and returns
// every reading.
func (r *ingestReader) drain(ctx context.Context, ended time.Time) *contracts.Ingest {
	in := &contracts.Ingest{Counter: r.counter.String(), EndedAt: ended}
	deadline := in.EndedAt.Add(drainLimit)
	// Drained takes a reading that succeeded quiet after the last change
	// and shows the same count: failed readings in between prove nothing
	// (the counter may have grown while the page did not answer).
	last, lastChange := -1.0, time.Now()
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if v, ok := r.read(ctx); ok {
			if v != last {
				last, lastChange = v, time.Now()
			} else if time.Since(lastChange) >= r.quiet {
				in.Drained = true
				break
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(drainEvery):
		}
	}
	in.Readings = r.readings
	return in
}

// reachable checks, within timeout, that the SUT accepts a connection on
// the generator's port.
func reachable(ctx context.Context, job contracts.ShardJob, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var addrs []string
	for _, p := range job.Endpoint.Ports {
		addrs = append(addrs, net.JoinHostPort(job.Endpoint.Host, strconv.Itoa(p)))
	}
	addrs = append(addrs, net.JoinHostPort(job.Endpoint.Host, strconv.Itoa(job.Endpoint.Port)))
	var d net.Dialer
	for _, addr := range addrs {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		_ = c.Close()
	}
	return nil
}

// tsdbStatus folds a generator's seconds and its probe's readings into
// the shard's status lines (one per status interval) and its operations.
type tsdbStatus struct {
	every            int64 // seconds per status line
	elapsed          int64
	sent, failed     int64 // since the start
	lineSent         int64 // in the current line
	lineFailed       int64
	progress         []contracts.Progress
	mu               sync.Mutex // the probe's goroutine writes the rest
	queries, qErrors int64
	lineQueries      int64
	lineLatency      time.Duration
	lineMax          time.Duration
	latencies        *hdrhistogram.Histogram // µs, of the queries
	writes           *hdrhistogram.Histogram // µs, per point delivered: its flush's write
	failedWrites     *hdrhistogram.Histogram // µs, per point failed
}

func newTSDBStatus(every int) *tsdbStatus {
	h := func() *hdrhistogram.Histogram { return hdrhistogram.New(1, 3_600_000_000, 3) }
	return &tsdbStatus{every: int64(max(1, every)), latencies: h(), writes: h(), failedWrites: h()}
}

// flushed records one agent's flush: each of its points took the write's
// time to reach the SUT (carbon: the socket; remote write: the answer), or
// to fail.
func (s *tsdbStatus) flushed(delivered, failed int, took time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	us := max(1, took.Microseconds())
	_ = s.writes.RecordValues(us, int64(delivered))
	_ = s.failedWrites.RecordValues(us, int64(failed))
}

// reading records one probe query.
func (s *tsdbStatus) reading(r metricsload.Reading) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queries++
	if r.Err != nil {
		s.qErrors++
		return
	}
	_ = s.latencies.RecordValue(max(1, r.Latency.Microseconds()))
	s.lineQueries++
	s.lineLatency += r.Latency
	s.lineMax = max(s.lineMax, r.Latency)
}

// second adds a second of the generator; every status interval it returns
// the status line.
func (s *tsdbStatus) second(sec metricsload.Second) (contracts.Interval, bool) {
	s.elapsed++
	s.sent += sec.Sent
	s.failed += sec.Failed
	s.lineSent += sec.Sent
	s.lineFailed += sec.Failed
	if s.elapsed%s.every != 0 {
		return contracts.Interval{}, false
	}
	now := sec.At.Add(time.Second).UTC()
	iv := contracts.Interval{At: now, ElapsedS: s.elapsed, Operations: s.sent, OpsPerSec: float64(s.lineSent) / float64(s.every),
		PerOp: map[string]map[string]float64{opWrite: {"Count": float64(s.lineSent), "Failed": float64(s.lineFailed)}}}
	s.mu.Lock()
	if s.lineQueries > 0 {
		iv.PerOp[opQuery] = map[string]float64{"Count": float64(s.lineQueries),
			"Avg": float64((s.lineLatency / time.Duration(s.lineQueries)).Microseconds()), "Max": float64(s.lineMax.Microseconds())}
	}
	s.lineQueries, s.lineLatency, s.lineMax = 0, 0, 0
	s.mu.Unlock()
	s.lineSent, s.lineFailed = 0, 0
	s.progress = append(s.progress, contracts.Progress{At: now, Operations: s.sent})
	return iv, true
}

// operations are the final's: the points written, and the queries with
// their merged latency histogram.
func (s *tsdbStatus) operations(res metricsload.Result) []contracts.OpResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	op := func(name string, count int64, code string, h *hdrhistogram.Histogram) contracts.OpResult {
		o := contracts.OpResult{Name: name, Count: count, ReturnCodes: map[string]int64{code: count}}
		latencies(&o, h)
		if h.TotalCount() == count && count > 0 {
			// A dial that failed has no write to time: then the histogram
			// falls short of the count, and is not shipped.
			o.Histogram, _ = ycsb.EncodeHistogram(h)
		}
		return o
	}
	out := []contracts.OpResult{op(opWrite, res.Sent, "OK", s.writes)}
	if res.Failed > 0 {
		out = append(out, op(opWriteFailed, res.Failed, "ERROR", s.failedWrites))
	}
	if s.queries == 0 {
		return out
	}
	h := s.latencies
	q := contracts.OpResult{Name: opQuery, Count: s.queries, ReturnCodes: map[string]int64{"OK": h.TotalCount()}}
	if s.qErrors > 0 {
		q.ReturnCodes["ERROR"] = s.qErrors
	}
	latencies(&q, h)
	if s.qErrors == 0 && h.TotalCount() > 0 {
		// The histogram holds the answered queries only: shipped when it
		// adds up to the operation's count.
		q.Histogram, _ = ycsb.EncodeHistogram(h)
	}
	return append(out, q)
}

// latencies fills op's figures from h (µs), as YCSB's summary gives them.
func latencies(op *contracts.OpResult, h *hdrhistogram.Histogram) {
	if h.TotalCount() == 0 {
		return
	}
	op.AvgUS, op.MinUS, op.MaxUS = h.Mean(), float64(h.Min()), float64(h.Max())
	op.P50US, op.P95US, op.P99US, op.P999US = float64(h.ValueAtQuantile(50)), float64(h.ValueAtQuantile(95)), float64(h.ValueAtQuantile(99)), float64(h.ValueAtQuantile(99.9))
}
