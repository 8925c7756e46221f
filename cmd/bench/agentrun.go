package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/procmetrics"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/ycsb"
)

// goLead is how far ahead of its GO the scheduler puts the common start
// instant of an experiment's first phase (services/scheduler: GoLead); the
// bench answers READY the same way.
const goLead = 150 * time.Millisecond

// agentReadyLine is what the agent logs once it serves jobs
// (services/driver-agent: "agent ready").
const agentReadyLine = `msg="agent ready"`

// agentRun is one shard through a driver-agent process of its own.
type agentRun struct {
	m     measurement
	final *contracts.Final
	cmd   []string // the JVM's command line, if asked for
}

// runAgent starts a driver agent, waits until it serves jobs, publishes the
// shard job, answers its READY with GO like the scheduler, and waits for the
// final; then it stops the agent with SIGTERM and takes its CPU from wait4,
// which includes the JVM the agent reaped. With wantCmd it reads the JVM's
// command line while the JVM waits for GO.
func (s *stack) runAgent(ctx context.Context, cfg Config, job contracts.ShardJob, name string, wantCmd bool) (res agentRun, err error) {
	logPath := filepath.Join(s.dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return res, fmt.Errorf("agent log: %w", err)
	}
	defer logf.Close() //nolint:errcheck // the agent holds its own descriptor; we only read the log back
	ready := newWatchWriter(logf, agentReadyLine)
	env := append(os.Environ(), "BENCHQ_LOG_LEVEL=info")
	ag, err := startChild("driver-agent", []string{cfg.agentBin(),
		"-nats", s.natsURL, "-name", name, "-java", cfg.Java, "-ycsb-lib", cfg.YCSBLib, "-workloads", cfg.Workloads,
		// The JVM starts with the job, so its command line is the job's,
		// which (a) repeats; a standby JVM would run the same code, started
		// before the job, and a new standby after it would add its start to
		// the agent's CPU.
		"-no-standby",
	}, env, logf, ready)
	if err != nil {
		return res, err
	}
	defer func() {
		if serr := ag.Stop(30 * time.Second); serr != nil && err == nil {
			err = serr
		}
	}()
	failed := func(format string, args ...any) (agentRun, error) {
		return res, fmt.Errorf("%s: %s (log %s: %s)", name, fmt.Sprintf(format, args...), logPath, procs.LogTail(logPath, 3))
	}

	runCtx, cancel := context.WithTimeout(ctx, cfg.RunTimeout)
	defer cancel()
	select {
	case <-ready.found:
	case <-ag.Done():
		return failed("exited before it was ready (%v)", ag.Err())
	case <-runCtx.Done():
		return failed("%v", ended(ctx, "not ready", cfg.RunTimeout))
	}
	agent0, err := procmetrics.ReadCPU(ag.Pid())
	if err != nil {
		return res, err
	}
	nats0, redis0 := cpuOf(s.nats.Pid()), cpuOf(s.redis.Pid)

	// Listen before publishing, so that neither READY nor the final can be missed.
	msgs := make(chan *nats.Msg, 64)
	unsubscribe, err := s.bus.Listen(msgs, contracts.TopicBarrierReady.For(job.Code), contracts.Subject(contracts.SubjFinal, job.Code, job.Phase, "*"))
	if err != nil {
		return res, err
	}
	defer unsubscribe()
	start := time.Now()
	if err := s.bus.Publish(runCtx, contracts.SubjShard, &job); err != nil {
		return res, err
	}
	for res.final == nil {
		select {
		case m := <-msgs:
			if p, err := contracts.ParseSubject(m.Subject); err == nil && p.Topic == contracts.TopicBarrierReady {
				if wantCmd {
					if res.cmd, err = jvmCommand(ag.Pid()); err != nil {
						return failed("%v", err)
					}
				}
				if err := s.answerReady(runCtx, job, m.Data); err != nil {
					return res, err
				}
				continue
			}
			var f contracts.Final
			if err := bus.Decode(contracts.SchemaFinal, m.Data, &f); err != nil {
				return res, fmt.Errorf("final of %s: %w", job.Phase, err)
			}
			res.final = &f
		case <-ag.Done():
			return failed("exited during the shard (%v)", ag.Err())
		case <-runCtx.Done():
			return failed("%v", ended(ctx, "no final", cfg.RunTimeout))
		}
	}
	wall := time.Since(start)
	// The JVM has been reaped (the agent waits for it before it publishes
	// the final), so its CPU is in the agent's children's times by now.
	agent1, err := procmetrics.ReadCPU(ag.Pid())
	if err != nil {
		return res, err
	}
	nats1, redis1 := cpuOf(s.nats.Pid()), cpuOf(s.redis.Pid)
	// The agent acks its job after it published the final. A SIGTERM in
	// between cancels that (the job is handed back and would go to the next
	// agent), so stop it only once the job left the queue.
	if err := s.waitJobAcked(runCtx); err != nil {
		return failed("%v", err)
	}
	if err := ag.Stop(30 * time.Second); err != nil {
		return res, err
	}
	if res.final.Status != contracts.StatusOK {
		return res, fmt.Errorf("%s: shard %s failed: %s", name, job.Phase, res.final.Error)
	}
	sum, err := ycsb.ParseSummary(strings.NewReader(res.final.Stdout))
	if err != nil {
		return res, fmt.Errorf("%s: %w", name, err)
	}
	user, system := ag.CPU()
	res.m = measurement{
		Way: agent, Ops: sum.Operations(), Wall: wall, CPU: user + system,
		JVM: agent1.Children() - agent0.Children(), JVMSystem: agent1.ChildSystem - agent0.ChildSystem, AgentStart: agent0.Self(),
		NATS: nats1 - nats0, Redis: redis1 - redis0, Throughput: sum.Throughput,
	}
	return res, nil
}

// waitJobAcked waits until the agents' consumer has no job waiting and
// none delivered but unacknowledged.
func (s *stack) waitJobAcked(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return procs.WaitFor(ctx, "the agent to ack its shard job", 10*time.Millisecond, func(ctx context.Context) error {
		pending, unacked, err := s.bus.Unsettled(ctx, contracts.StreamJobs, contracts.DurableAgents)
		if err != nil {
			return err
		}
		if pending > 0 || unacked > 0 {
			return fmt.Errorf("%d jobs waiting, %d unacknowledged", pending, unacked)
		}
		return nil
	})
}

// answerReady publishes the GO for a READY, as the scheduler does.
func (s *stack) answerReady(ctx context.Context, job contracts.ShardJob, data []byte) error {
	var r contracts.BarrierReady
	if err := json.Unmarshal(data, &r); err != nil || r.Phase != job.Phase {
		return nil // not this shard's
	}
	return s.bus.PublishGo(ctx, job.Code, job.Phase, job.Attempt, time.Now().Add(goLead).UTC())
}

// jvmCommand reads the command line of the agent's only child, its JVM,
// which waits for GO while the agent's READY is out.
func jvmCommand(agentPid int) ([]string, error) {
	kids, err := procmetrics.ChildrenOf(agentPid)
	if err != nil {
		return nil, err
	}
	if len(kids) != 1 {
		return nil, fmt.Errorf("want one child process of the agent (its JVM), found %d", len(kids))
	}
	return procmetrics.Cmdline(kids[0])
}

// watchWriter passes a process's output on to w and closes found the first
// time a line contains needle.
type watchWriter struct {
	w      io.Writer
	needle []byte
	found  chan struct{}

	mu      sync.Mutex
	partial []byte // the unfinished last line, until found
	done    bool
}

func newWatchWriter(w io.Writer, needle string) *watchWriter {
	return &watchWriter{w: w, needle: []byte(needle), found: make(chan struct{})}
}

func (ww *watchWriter) Write(p []byte) (int, error) {
	ww.mu.Lock()
	if !ww.done {
		ww.partial = append(ww.partial, p...)
		for {
			i := bytes.IndexByte(ww.partial, '\n')
			if i < 0 {
				break
			}
			if bytes.Contains(ww.partial[:i], ww.needle) {
				ww.done, ww.partial = true, nil
				close(ww.found)
				break
			}
			ww.partial = ww.partial[i+1:]
		}
	}
	ww.mu.Unlock()
	return ww.w.Write(p)
}

// cpuOf is the own CPU time of a long-running server (NATS, Redis) now, 0
// when it cannot be read: these figures are context, not the measurement.
func cpuOf(pid int) time.Duration {
	c, err := procmetrics.ReadCPU(pid)
	if err != nil {
		return 0
	}
	return c.Self()
}
