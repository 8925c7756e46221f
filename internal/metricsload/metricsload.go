// Package metricsload is benchq's metrics-ingest workload, for benchmarks of
// time-series databases: haggar's model (github.com/gorsuch/haggar, which
// the DalmatinerDB benchmark ran), written anew. Agents agents each hold
// Metrics metrics; agent i starts i×SpawnInterval plus a random part of
// Jitter after the start and then writes one point of each of its metrics
// every FlushInterval, until Duration has passed or the context ends.
//
// Two protocols: carbon's plaintext protocol ("path value timestamp\n"
// over TCP; each agent keeps its connection, as haggar's
// -cache_connections does) and Prometheus remote write 1.0 (a snappy
// compressed protobuf WriteRequest over HTTP, one request per agent flush).
//
// Names: carbon paths are <prefix>.agent<i>.metric<j>, remote-write series
// are <prefix>{agent="<i>",metric="<j>"} (a Prometheus name cannot hold
// the dots of a path). Values are the agent's flush count, so each series
// grows by one a flush.
//
// Sent counts the points a write delivered: carbon's once the socket took
// them, remote write's once the receiver answered 2xx. What the SUT stored
// is for its own counters to say: the difference is its backlog or its
// losses.
package metricsload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Protocols.
const (
	Carbon      = "carbon"
	RemoteWrite = "remote-write"
)

// Config is one generator: haggar's flags, and where to send.
type Config struct {
	Protocol string // Carbon or RemoteWrite
	// Target is host:port for carbon, the receiver's URL for remote write
	// (Prometheus: http://host:port/api/v1/write).
	Target        string
	Agents        int           // haggar -agents
	Metrics       int           // haggar -metrics: per agent
	FlushInterval time.Duration // haggar -flush-interval
	Jitter        time.Duration // haggar -jitter: the most an agent's start is delayed at random
	SpawnInterval time.Duration // haggar -spawn-interval: between agents' starts (0: together)
	Prefix        string        // haggar -prefix
	Duration      time.Duration // how long to generate (0: until the context ends)
	Flushes       int           // each agent stops after this many flushes (0: no limit)
	// Observe, if set, is called after each flush an agent wrote (or
	// failed to) with its points delivered and failed and how long the
	// write took; agents call it concurrently.
	Observe func(delivered, failed int, took time.Duration)
	Seed    uint64 // of the jitter
}

// Check names what is wrong with c, or returns nil.
func (c Config) Check() error {
	var errs []error
	if c.Protocol != Carbon && c.Protocol != RemoteWrite {
		errs = append(errs, fmt.Errorf("protocol %q: use %s or %s", c.Protocol, Carbon, RemoteWrite))
	}
	if c.Target == "" {
		errs = append(errs, errors.New("no target: carbon's host:port or the remote-write URL"))
	}
	if c.Agents < 1 || c.Metrics < 1 {
		errs = append(errs, fmt.Errorf("agents %d, metrics %d: each must be at least 1", c.Agents, c.Metrics))
	}
	if c.FlushInterval <= 0 {
		errs = append(errs, fmt.Errorf("flush interval %s: must be positive (haggar's -flush-interval, e.g. 1s)", c.FlushInterval))
	}
	if c.Jitter < 0 || c.SpawnInterval < 0 || c.Duration < 0 || c.Flushes < 0 {
		errs = append(errs, errors.New("jitter, spawn interval and duration may not be negative"))
	}
	if c.Prefix == "" {
		errs = append(errs, errors.New("no prefix (haggar's -prefix, e.g. haggar1)"))
	}
	return errors.Join(errs...)
}

// SeriesName is the PromQL selector of metric j of agent i of a generator
// with prefix, as the protocol names it (see the package comment).
func SeriesName(protocol, prefix string, agent, metric int) string {
	if protocol == RemoteWrite {
		return fmt.Sprintf(`%s{agent="%d",metric="%d"}`, prefix, agent, metric)
	}
	return fmt.Sprintf("%s.agent%d.metric%d", prefix, agent, metric)
}

// Second is what one second of the run sent.
type Second struct {
	At     time.Time // its start
	Sent   int64     // points delivered
	Failed int64     // points whose write failed
}

// Result is a whole run's.
type Result struct {
	Sent, Failed int64
	Seconds      []Second
	// Errors holds the first write errors (at most 10), for the log.
	Errors []string
}

// writer is one agent's connection to the target.
type writer interface {
	// write delivers one flush: value v for each metric, at t. It returns
	// how many points were delivered, also when it fails part way.
	write(ctx context.Context, t time.Time, v int64) (int, error)
	close()
}

// Run generates until cfg.Duration has passed or ctx ends, calling
// onSecond (if not nil) after each second with what it sent.
func Run(ctx context.Context, cfg Config, onSecond func(Second)) (Result, error) {
	if err := cfg.Check(); err != nil {
		return Result{}, err
	}
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	var (
		sent, failed atomic.Int64
		mu           sync.Mutex
		res          Result
	)
	fail := func(n int, err error) {
		failed.Add(int64(n))
		mu.Lock()
		if len(res.Errors) < 10 {
			res.Errors = append(res.Errors, err.Error())
		}
		mu.Unlock()
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6d657472696373))
	start := time.Now()
	var wg sync.WaitGroup
	for i := range cfg.Agents {
		delay := time.Duration(i) * cfg.SpawnInterval
		if cfg.Jitter > 0 {
			delay += time.Duration(rng.Int64N(int64(cfg.Jitter)))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			agent(ctx, cfg, i+1, start.Add(delay), &sent, fail)
		}()
	}

	// The seconds, counted from the start.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lastSent, lastFailed int64
	at := start
	second := func(now time.Time) {
		s := Second{At: at, Sent: sent.Load() - lastSent, Failed: failed.Load() - lastFailed}
		lastSent, lastFailed, at = lastSent+s.Sent, lastFailed+s.Failed, now
		res.Seconds = append(res.Seconds, s)
		if onSecond != nil {
			onSecond(s)
		}
	}
	for {
		select {
		case now := <-tick.C:
			second(now)
		case <-done:
			second(time.Now())
			mu.Lock()
			defer mu.Unlock()
			res.Sent, res.Failed = sent.Load(), failed.Load()
			return res, nil
		}
	}
}

// agent is one of haggar's agents: it waits for its start, then flushes
// every FlushInterval until ctx ends.
func agent(ctx context.Context, cfg Config, id int, startAt time.Time, sent *atomic.Int64, fail func(int, error)) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(time.Until(startAt)):
	}
	var w writer
	defer func() {
		if w != nil {
			w.close()
		}
	}()
	t := time.NewTicker(cfg.FlushInterval)
	defer t.Stop()
	for flush := int64(1); ; flush++ {
		if w == nil {
			var err error
			if w, err = dial(ctx, cfg, id); err != nil {
				if ctx.Err() == nil {
					fail(cfg.Metrics, err)
				}
				w = nil
			}
		}
		if w != nil {
			// A flush begun is finished and counted, even past the end:
			// the SUT may store it, and sent must not fall short of that.
			began := time.Now()
			n, err := w.write(context.WithoutCancel(ctx), began, flush)
			if cfg.Observe != nil {
				cfg.Observe(n, cfg.Metrics-n, time.Since(began))
			}
			sent.Add(int64(n))
			if err != nil {
				fail(cfg.Metrics-n, err)
				w.close()
				w = nil // a new connection at the next flush
			}
		}
		if cfg.Flushes > 0 && flush >= int64(cfg.Flushes) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case tick := <-t.C:
			// A tick due at or after the end is not a flush, even when
			// this goroutine wakes to it before it sees the end (select
			// picks at random among ready cases): a busy machine would
			// otherwise add a flush to some runs.
			if deadline, ok := ctx.Deadline(); ok && !tick.Before(deadline) {
				return
			}
		}
	}
}

func dial(ctx context.Context, cfg Config, id int) (writer, error) {
	if cfg.Protocol == Carbon {
		return dialCarbon(ctx, cfg.Target, cfg.Prefix, id, cfg.Metrics)
	}
	return newRemoteWriter(cfg.Target, cfg.Prefix, id, cfg.Metrics), nil
}
