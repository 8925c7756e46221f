package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/procs"
)

// A driver's JVM takes about 0.3 s to start and load YCSB's classes on two
// busy cores, and it did so between a phase's shard job and its READY. An
// agent keeps standby JVMs instead (io.benchq.ycsb.Launcher --standby):
// started, their classes loaded and initialised ahead of any job, each is
// handed a job's arguments on stdin (job to READY: about 35 ms instead of
// 320).
//
// They are only started while the stack is quiet: no experiment running and
// no job on this agent, for standbyIdle (keepStandby). A JVM starting while
// an experiment runs could overlap the measured operations of one of its
// phases, on this host or on another agent's; between experiments nothing
// is measured, and an idle JVM costs no CPU. So the agent keeps several
// (DefaultStandbys, -standbys), one for each phase of an experiment it may
// run, and each runs one job: every phase gets a JVM as fresh as the
// first's. When a job ends well the JVM says DONE instead of exiting
// (Launcher), and the agent kills it, which takes no shutdown work; with
// -reuse-jvm it is kept for the next job instead, warm (docs/adr/0018).
// Agents bound to one phase (driver Jobs) keep none: their job is waiting
// when they start.
const standbyIdle = time.Second

// driverProc is a started driver process and its pipes.
type driverProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *jobOutput
	stderr io.ReadCloser

	// A standby's: its command line before standbyArg, the lib dir it
	// loads its classes from, and the jobs it was handed.
	prefix []string
	libID  os.FileInfo
	jobs   int
}

// doneLine is what a standby JVM prints after a job, on stdout after YCSB's
// summary and then on stderr, instead of exiting (io.benchq.ycsb.Launcher).
const doneLine = "BENCHQ DONE"

// jobOutput is a driver's stdout for one job: YCSB's summary and, from a
// standby JVM, the DONE line that ends it (the process stays).
type jobOutput struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan struct{} // closed when the DONE line arrived
}

func newJobOutput() *jobOutput { return &jobOutput{done: make(chan struct{})} }

func (o *jobOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	if b := o.buf.Bytes(); bytes.Equal(b, []byte(doneLine+"\n")) || bytes.HasSuffix(b, []byte("\n"+doneLine+"\n")) {
		select {
		case <-o.done:
		default:
			close(o.done)
		}
	}
	return len(p), nil
}

// String is the job's output so far, without the DONE line.
func (o *jobOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.buf.String()
	if t, ok := strings.CutSuffix(s, doneLine+"\n"); ok && (t == "" || strings.HasSuffix(t, "\n")) {
		return t
	}
	return s
}

// Done is closed once the job's DONE line is in.
func (o *jobOutput) Done() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.done
}

// reset empties the output for the process's next job.
func (o *jobOutput) reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Reset()
	o.done = make(chan struct{})
}

// startDriver starts args as a driver process: none of the agent's keys in
// its environment, killed with the agent (no orphaned load generators), in
// a process group of its own so it can be stopped as a whole.
func startDriver(args []string) (*driverProc, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = procs.ChildEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	p := &driverProc{cmd: cmd, stdout: newJobOutput()}
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("stdin: %w", err)
	}
	cmd.Stdout = p.stdout
	if p.stderr, err = cmd.StderrPipe(); err != nil {
		return nil, fmt.Errorf("stderr: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", args[0], err)
	}
	return p, nil
}

// kill stops the process group and reaps it.
func (p *driverProc) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	_ = p.cmd.Wait()
}

// standbyArg is the Launcher's option for a standby JVM.
const standbyArg = "--standby"

// DefaultStandbys is how many standby JVMs an agent keeps ready (about
// 70 MiB each, no CPU while idle): with the stack's two agents, one for
// each of the 8 phases of a 4-configuration grid of one-shard phases
// (bexhoma's -xnpp 1,2 -xnpo 4,16), whose last 4 phases started a JVM each
// when the agents kept 2 (grid 5.7-6.7 % outside its operations; 4.6-5.3 %
// with 4: docs/bench.md).
const DefaultStandbys = 4

// standby holds an agent's standby JVMs: up to size, each running the
// Launcher of the YCSB lib dir lib with java, started while the stack is
// quiet and each used for one job — unless reuse is set: then a JVM that
// ended its job well comes back for the next (warm: see docs/adr/0018).
type standby struct {
	java, lib string // "": no standby (disabled)
	size      int
	reuse     bool

	starts prometheus.Counter // of the processes started; nil: not counted

	mu    sync.Mutex
	procs []*driverProc // ready, the next to take first
	done  bool          // stopped: no more fills
}

// startDriver starts args (see startDriver) and counts it.
func (s *standby) startDriver(args []string) (*driverProc, error) {
	p, err := startDriver(args)
	if err == nil && s.starts != nil {
		s.starts.Inc()
	}
	return p, err
}

// fill starts standby JVMs until there are size.
func (s *standby) fill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lib == "" || s.done {
		return
	}
	id, err := os.Stat(s.lib)
	if err != nil {
		return
	}
	prefix := launcher(s.java, s.lib)
	for len(s.procs) < s.size {
		p, err := s.startStandby(prefix, id)
		if err != nil {
			return
		}
		s.procs = append(s.procs, p)
	}
}

// startStandby starts a standby JVM: prefix (the Launcher of the lib dir
// id) with standbyArg.
func (s *standby) startStandby(prefix []string, id os.FileInfo) (*driverProc, error) {
	p, err := s.startDriver(append(slices.Clone(prefix), standbyArg))
	if err == nil {
		p.prefix, p.libID = prefix, id
	}
	return p, err
}

// hand gives a standby its job's arguments (encoded by arguments).
func (p *driverProc) hand(rest string) error {
	if _, err := io.WriteString(p.stdin, rest+"\n"); err != nil {
		return err
	}
	p.jobs++
	return nil
}

// take returns a driver running args: a standby JVM, handed args on its
// stdin (one line, NUL-separated), when args run our Launcher with the
// standby's prefix, the lib dir is still the one it loaded (a rebuild,
// scripts/build-ycsb.sh, replaces the dir: the standby would run the old
// classes) and it accepts them; else a new process. It says which.
func (s *standby) take(args []string) (*driverProc, bool, error) {
	for {
		s.mu.Lock()
		if len(s.procs) == 0 {
			s.mu.Unlock()
			break
		}
		p := s.procs[0]
		s.procs = s.procs[1:]
		s.mu.Unlock()
		id, err := os.Stat(s.lib)
		if rest, ok := arguments(p.prefix, args); ok && err == nil && os.SameFile(id, p.libID) {
			if p.hand(rest) == nil {
				return p, true, nil
			}
		}
		p.kill() // dead, or args it cannot take: the next, or a new process
	}
	p, err := s.start(args)
	return p, false, err
}

// start starts a new driver running args. When args run our Launcher, it
// starts as a standby handed args at once (so that with reuse it can stay
// for later jobs); else (no standby wanted, or args a standby cannot take)
// as given.
func (s *standby) start(args []string) (*driverProc, error) {
	if s.lib != "" {
		prefix := launcher(s.java, s.lib)
		id, err := os.Stat(s.lib)
		if rest, ok := arguments(prefix, args); ok && err == nil {
			p, err := s.startStandby(prefix, id)
			if err != nil {
				return nil, err
			}
			if err := p.hand(rest); err != nil {
				p.kill()
				return nil, fmt.Errorf("hand the job to the driver: %w", err)
			}
			return p, nil
		}
	}
	return s.startDriver(args)
}

// arguments encodes what follows prefix in args for a standby, or says it
// cannot (another prefix, or an argument with a NUL or a line break).
func arguments(prefix, args []string) (string, bool) {
	if len(args) <= len(prefix) || !slices.Equal(args[:len(prefix)], prefix) {
		return "", false
	}
	rest := args[len(prefix):]
	for _, a := range rest {
		if strings.ContainsAny(a, "\x00\n\r") {
			return "", false
		}
	}
	return strings.Join(rest, "\x00"), true
}

// jobDone is the end of a standby JVM's job that ended well (it said DONE and
// waits for the next): with reuse it is taken next (unless the pool is
// full or stopped), else it is killed — in the background, so the final
// does not wait for it. A killed JVM does no shutdown work; its job's
// output is complete.
func (s *standby) jobDone(p *driverProc) {
	s.mu.Lock()
	keep := s.reuse && s.lib != "" && len(s.procs) < s.size && !s.done && p.prefix != nil
	if keep {
		p.stdout.reset()
		s.procs = append([]*driverProc{p}, s.procs...)
	}
	s.mu.Unlock()
	if !keep {
		go p.kill()
	}
}

// stop kills the standby JVMs and prevents new ones.
func (s *standby) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	for _, p := range s.procs {
		p.kill()
	}
	s.procs = nil
}

// keepStandby fills the standby whenever the stack is quiet (see
// standbyIdle): it watches the experiments KV bucket for running
// experiments, and this agent's job in flight. It returns when ctx ends or
// the watch fails (no more standbys then: each job starts its JVM).
func (a *Agent) keepStandby(ctx context.Context) {
	kv, err := a.bus.JS.KeyValue(ctx, contracts.KVExperiments)
	if err == nil {
		var w jetstream.KeyWatcher
		if w, err = kv.WatchAll(ctx); err == nil {
			defer func() { _ = w.Stop() }()
			a.keepStandbyWith(ctx, w.Updates())
			return
		}
	}
	a.log.Warn("no standby JVM: cannot watch the experiments", "err", err)
}

func (a *Agent) keepStandbyWith(ctx context.Context, updates <-chan jetstream.KeyValueEntry) {
	running := map[string]bool{}
	synced := false
	quiet := time.Now() // since when nothing ran
	tick := time.NewTicker(standbyIdle / 4)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-updates:
			switch {
			case !ok:
				a.log.Warn("no standby JVM any more: the watch of the experiments ended")
				return
			case e == nil: // the bucket's current entries are in
				synced = true
				continue
			}
			var st struct {
				Status string `json:"status"`
			}
			if e.Operation() == jetstream.KeyValuePut && json.Unmarshal(e.Value(), &st) == nil && st.Status == contracts.ExperimentRunning {
				running[e.Key()] = true
			} else {
				delete(running, e.Key())
			}
		case <-tick.C:
		}
		if busy, _ := a.busy.Load().(string); busy != "" || len(running) > 0 {
			quiet = time.Now()
			continue
		}
		// Right away once synced at start-up (nothing ran yet), else after
		// standbyIdle of quiet.
		if synced && (time.Since(quiet) >= standbyIdle || a.lim.ended.Load() == 0) {
			a.standby.fill()
		}
	}
}
