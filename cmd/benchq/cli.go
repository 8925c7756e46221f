package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
)

// Exit codes.
const (
	ExitOK       = 0
	ExitFailed   = 1 // the experiment failed or was rejected; the stack failed
	ExitUsage    = 2 // unknown or malformed flag or command
	ExitNotReady = 3 // the stack is not running
)

// State is the process state a command sees, injected so commands run
// in-process in tests.
type State struct {
	Env    func(string) string
	Stdout io.Writer
	Stderr io.Writer
}

func (s *State) env(key, def string) string {
	if v := s.Env(key); v != "" {
		return v
	}
	return def
}

// home is the directory of the embedded stack's state (binaries, data, logs).
func (s *State) home() string {
	h := s.env("BENCHQ_HOME", ".benchq")
	abs, err := filepath.Abs(h)
	if err != nil {
		return h
	}
	return abs
}

func (s *State) errorf(format string, args ...any) {
	fmt.Fprintf(s.Stderr, "benchq: "+format+"\n", args...)
}

const usage = `usage: benchq <command> [flags]

commands:
  up                      start the embedded stack (NATS, results DB, services, agents)
  down                    stop everything the stack started
  ycsb [flags] ACTION     a YCSB experiment; ACTION is run (load and benchmark,
                          follow it, print its summary), load, start (deploy the
                          SUTs and keep them) or summary (-e CODE)
  benchbase [flags] ACTION  the same for TPC-C (Benchbase's workload)
  status                  components, agents, volumes and running experiments
  stop [-e CODE]          cancel one experiment (or every running one)
  summary -e CODE         print the summary of an experiment again
  restart SERVICE         stop and start one service of the stack
  help                    this text

Run 'benchq ycsb -h' for the experiment flags (bexhoma's names).
Exit codes: 0 ok, 1 failed/rejected/cancelled, 2 usage error, 3 stack not running.
`

// Main runs one command and returns the exit code.
func Main(ctx context.Context, args []string, st *State) int {
	if len(args) == 0 {
		fmt.Fprint(st.Stderr, usage)
		return ExitUsage
	}
	switch args[0] {
	case "up":
		return cmdUp(ctx, st)
	case "down":
		return cmdDown(ctx, st)
	case "ycsb", "benchbase":
		return cmdExperiment(ctx, args[0], args[1:], st)
	case "status":
		return cmdStatus(ctx, args[1:], st)
	case "stop":
		return cmdStop(ctx, args[1:], st)
	case "restart":
		return cmdRestart(ctx, args[1:], st)
	case "summary":
		return cmdSummary(ctx, args[1:], st)
	case "help", "-h", "--help":
		fmt.Fprint(st.Stdout, usage)
		return ExitOK
	}
	st.errorf("unknown command %q (commands: up, down, ycsb, benchbase, status, stop, summary, restart, help)", args[0])
	return ExitUsage
}
