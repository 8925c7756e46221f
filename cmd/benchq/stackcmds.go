package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/natsauth"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/stack"
)

// cmdRestart stops (if alive) and starts again one component of the stack,
// on its port and its data (stack.Restart).
func cmdRestart(ctx context.Context, args []string, st *State) int {
	if len(args) != 1 {
		st.Errorf("usage: benchq restart <component> (%s, %s, collector, scheduler, deployer, driver-agent-N, %s)", stack.NATSProc, stack.DBProc, stack.PromProc)
		return ExitUsage
	}
	s, err := stack.Load(st)
	if s == nil {
		st.Errorf("%v", err)
		return ExitNotReady
	}
	if err := s.Restart(ctx, st, args[0]); errors.Is(err, stack.ErrNoComponent) {
		names := make([]string, len(s.Procs))
		for i, p := range s.Procs {
			names[i] = p.Name
		}
		st.Errorf("no component %q in the stack; its components: %s", args[0], strings.Join(names, ", "))
		return ExitUsage
	} else if err != nil {
		st.Errorf("restart %s: %v", args[0], err)
		return ExitFailed
	}
	if err := stayedUp(ctx, s, args[0]); err != nil {
		st.Errorf("restart %s: %v", args[0], err)
		return ExitFailed
	}
	fmt.Fprintf(st.Stdout, "%s restarted\n", args[0])
	return ExitOK
}

// settleTime is how long a restarted component must stay up before restart
// says it is: a service refusing its configuration (a token file others may
// read, a missing variable) exits within it, its reason in its log.
const settleTime = 2 * time.Second

// stayedUp waits settleTime and fails if the component's process exited,
// quoting the last lines of its log.
func stayedUp(ctx context.Context, s *stack.Stack, name string) error {
	i := slices.IndexFunc(s.Procs, func(p stack.Proc) bool { return p.Name == name })
	if i < 0 {
		return nil
	}
	p := s.Procs[i]
	for end := time.Now().Add(settleTime); time.Now().Before(end); {
		if !procs.Alive(p.Pid) {
			return fmt.Errorf("it started and exited at once (pid %d): %s (log %s)", p.Pid, procs.LogTail(p.Log, 3), p.Log)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

func cmdUp(ctx context.Context, _ []string, st *State) int {
	if s, err := stack.Load(st); err == nil {
		fmt.Fprintf(st.Stdout, "stack already up: nats %s, results db %s\n", s.NATSURL, s.DBURL)
		return ExitOK
	} else if s != nil {
		stack.Stop(ctx, st, s) // a half-dead stack: clean it before starting anew
	} else if strays := stack.Strays(st); len(strays) > 0 {
		st.Errorf("up: a stack's processes run in %s but its stack.json is missing or unreadable: %s. Starting another over them would share their NATS store and corrupt it; stop them with: benchq down (it finds them by their pid files), then benchq up",
			st.Home(), procList(strays))
		return ExitFailed
	}
	s, err := startAgainOnTakenPorts(st,
		func() (*stack.Stack, error) { return stack.Start(ctx, st) },
		func(s *stack.Stack) { stack.Stop(ctx, st, s) })
	if err != nil {
		st.Errorf("up: %v", err)
		if s != nil {
			stack.Stop(ctx, st, s)
		}
		return ExitFailed
	}
	fmt.Fprintf(st.Stdout, "stack up: nats %s, results db %s, logs %s\n", s.NATSURL, s.DBURL, filepath.Join(st.Home(), "logs"))
	if b, err := s.Dial(); err == nil {
		// Experiments the last stack left "running" (its down could not
		// cancel them): their SUTs went with it, and they hold SUT slots.
		if codes := runningCodes(ctx, b); len(codes) > 0 {
			st.Errorf("note: experiments still running from before this start: %s; one whose SUT went with the last stack holds its SUT slot until benchq stop -e CODE ends it", strings.Join(codes, ", "))
		}
		b.Close()
	}
	if s.PrometheusURL != "" {
		fmt.Fprintf(st.Stdout, "prometheus %s (data %s)\n", s.PrometheusURL, stack.PromDir(st))
		if err := s.WaitScraped(ctx); err != nil {
			st.Errorf("warning: %v; the first phases may lack samples", err)
		}
	} else {
		fmt.Fprintf(st.Stdout, "monitoring is off: %s\n", s.MonitoringOff)
	}
	return ExitOK
}

// startAgainOnTakenPorts starts the stack and, when a port picked for it
// was taken by another process before its server bound it
// (stack.ErrPortTaken: nats-server's), stops what started and starts it
// again on newly picked ports, twice at most.
func startAgainOnTakenPorts(st *State, start func() (*stack.Stack, error), stop func(*stack.Stack)) (*stack.Stack, error) {
	s, err := start()
	for try := 1; try <= 2 && errors.Is(err, stack.ErrPortTaken); try++ {
		st.Errorf("up: %v; starting the stack again on other ports", err)
		if s != nil {
			stop(s)
		}
		s, err = start()
	}
	return s, err
}

func cmdDown(ctx context.Context, _ []string, st *State) int {
	s, _ := stack.Load(st) // a half-dead stack is still stopped
	if s != nil {
		stopInFlight(ctx, st, s)
	}
	if s == nil {
		strays := stack.Strays(st)
		if len(strays) == 0 {
			fmt.Fprintln(st.Stdout, "stack is not running")
			return ExitOK
		}
		// stack.json is gone or unreadable: its processes, found by
		// their pid files, are stopped all the same; without the file
		// there is no NATS to cancel the experiments through.
		fmt.Fprintf(st.Stdout, "stack.json is missing or unreadable; stopping the processes found by their pid files: %s\n", procList(strays))
		st.Errorf("warning: the experiments in flight, if any, could not be cancelled: they stay \"running\" after the next benchq up, holding their SUT slots (benchq up names them; benchq stop ends them)")
		s = &stack.Stack{Procs: strays}
	}
	stack.Stop(ctx, st, s)
	fmt.Fprintln(st.Stdout, "stack down")
	return ExitOK
}

// stopInFlight cancels the experiments in flight before the stack stops
// (benchq stop): their SUTs go with the stack, and an experiment left
// "running" in its state after the next up held its SUT slots (-ms) for a
// SUT that was gone. Cancelled, each keeps what it measured and says why.
func stopInFlight(ctx context.Context, st *State, s *stack.Stack) {
	if deadProc(s, stack.NATSProc) != "" {
		st.Errorf("warning: nats-server is not running, so the experiments in flight, if any, cannot be cancelled: they stay \"running\" after the next benchq up (benchq stop ends them there)")
		return
	}
	b, err := s.Dial()
	if err != nil {
		return
	}
	defer b.Close()
	codes := runningCodes(ctx, b)
	if len(codes) == 0 {
		return
	}
	// A stop needs the scheduler that acts on it: a dead one is started
	// again first (on its state in NATS, as benchq restart does).
	if dead := deadProc(s, stack.SchedulerProc); dead != "" {
		fmt.Fprintf(st.Stdout, "%s: starting it again to cancel the experiments in flight\n", dead)
		if err := s.Restart(ctx, st, stack.SchedulerProc); err != nil {
			st.Errorf("warning: the scheduler could not be started again (%v), so the experiments in flight cannot be cancelled: %s stay \"running\" after the next benchq up, holding their SUT slots; end them there with benchq stop",
				err, strings.Join(codes, ", "))
			return
		}
	}
	fmt.Fprintf(st.Stdout, "stopping the experiments in flight first (their SUTs go with the stack): %s\n", strings.Join(codes, ", "))
	stopExperiments(ctx, st, b, codes, "the stack was stopped (benchq down)", time.Minute)
}

// runningCodes are the codes of the experiments the scheduler's state
// says are running (none when it cannot be read).
func runningCodes(ctx context.Context, b *bus.Bus) []string {
	running, err := runningExperiments(ctx, b.JS)
	if err != nil {
		return nil
	}
	codes := make([]string, len(running))
	for i, x := range running {
		codes[i] = x.Code
	}
	return codes
}

// dial connects benchq to the stack's NATS. A key file benchq cannot use
// (others may read it, it is no seed) is benchq's own matter, exit 1 naming
// the file; any other failure is a stack that is not running, exit 3.
func dial(st *State, s *stack.Stack) (*bus.Bus, int) {
	b, err := s.Dial()
	switch {
	case errors.Is(err, natsauth.ErrSeed):
		st.Errorf("connect to %s: %v", s.NATSURL, err)
		return nil, ExitFailed
	case err != nil:
		st.Errorf("connect to %s: %v (is the stack up? benchq up)", s.NATSURL, err)
		return nil, ExitNotReady
	}
	return b, ExitOK
}

// procList names processes as "nats-server (pid 12), scheduler (pid 13)".
func procList(ps []stack.Proc) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprintf("%s (pid %d)", p.Name, p.Pid)
	}
	return strings.Join(parts, ", ")
}
