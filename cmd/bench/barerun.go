package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/ycsb"
)

// runBare runs the bare YCSB command line (bareCommand of the agent's) and
// takes the JVM's CPU from wait4. Like the agent, it keeps stdout (YCSB's
// summary) in memory; stderr (status lines) goes to a file.
func (s *stack) runBare(ctx context.Context, cfg Config, agentCmd []string, name string) (measurement, error) {
	hdrDir, err := os.MkdirTemp(s.dir, name+"-hdr-")
	if err != nil {
		return measurement{}, fmt.Errorf("histogram dir: %w", err)
	}
	defer os.RemoveAll(hdrDir)
	argv, err := bareCommand(agentCmd, hdrDir)
	if err != nil {
		return measurement{}, err
	}
	logPath := filepath.Join(s.dir, name+".stderr")
	logf, err := os.Create(logPath)
	if err != nil {
		return measurement{}, fmt.Errorf("ycsb stderr: %w", err)
	}
	defer logf.Close() //nolint:errcheck // the JVM holds its own descriptor; we only read the log back
	var stdout bytes.Buffer

	nats0, redis0 := cpuOf(s.nats.Pid()), cpuOf(s.redis.Pid)
	start := time.Now()
	jvm, err := startChild("java", argv, nil, &stdout, logf)
	if err != nil {
		return measurement{}, err
	}
	defer func() { _ = jvm.Stop(5 * time.Second) }()
	runCtx, cancel := context.WithTimeout(ctx, cfg.RunTimeout)
	defer cancel()
	select {
	case <-jvm.Done():
	case <-runCtx.Done():
		return measurement{}, fmt.Errorf("%s: %w", name, ended(ctx, "YCSB did not finish", cfg.RunTimeout))
	}
	wall := time.Since(start)
	nats1, redis1 := cpuOf(s.nats.Pid()), cpuOf(s.redis.Pid)
	if err := jvm.Err(); err != nil {
		return measurement{}, fmt.Errorf("%s: YCSB failed (%v): %s", name, err, procs.LogTail(logPath, 3))
	}
	sum, err := ycsb.ParseSummary(&stdout)
	if err != nil {
		return measurement{}, fmt.Errorf("%s: %w", name, err)
	}
	user, system := jvm.CPU()
	return measurement{
		Way: bare, Ops: sum.Operations(), Wall: wall, CPU: user + system, JVM: user + system, JVMSystem: system,
		NATS: nats1 - nats0, Redis: redis1 - redis0, Throughput: sum.Throughput,
	}, nil
}
