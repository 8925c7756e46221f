package localdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/benchq/benchq/internal/procs"
)

// What the Start* functions share: each server is started, probed until it
// answers and stopped the same way, whatever the server.

// startInDir finds the server's binary (or binary directory) with binary
// and runs start with it on dir made absolute, naming the server and its
// directory in the error.
func startInDir[T any](name, dir string, binary func() (string, error), start func(dir, bin string) (T, error)) (T, error) {
	var zero T
	bin, err := binary()
	if err != nil {
		return zero, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return zero, fmt.Errorf("start %s: %w", name, err)
	}
	s, err := start(abs, bin)
	if err != nil {
		return zero, fmt.Errorf("start %s in %s: %w", name, abs, err)
	}
	return s, nil
}

// listen calls start with port, or with a free port when port is 0. A free
// port can be taken by another process before the server binds it, so when
// picked (this call picked a port the server listens on) and the server
// found its port in use, start runs again on another (OnFreePort). A port
// the caller chose is not ours to replace.
func listen(port int, picked bool, start func(port int) error) error {
	pick := func() (int, error) {
		if port != 0 {
			return port, nil
		}
		return procs.FreePort()
	}
	if !picked {
		p, err := pick()
		if err != nil {
			return err
		}
		return start(p)
	}
	return OnFreePort(pick, start)
}

// OnFreePort runs start on a port from pick (procs.FreePort, which hands out
// a port that was free a moment ago) and, when the server found that port
// taken meanwhile (start's error wraps ErrAddrInUse), again on the next one
// pick gives: three attempts in all. start must leave nothing running when
// it fails.
func OnFreePort(pick func() (int, error), start func(port int) error) error {
	for attempt := 1; ; attempt++ {
		p, err := pick()
		if err != nil {
			return err
		}
		err = start(p)
		if err == nil || attempt == 3 || !errors.Is(err, ErrAddrInUse) {
			return err
		}
	}
}

// stopFailedStart stops a server that did not become ready, even when ctx
// has ended: nothing of a failed start is left running.
func stopFailedStart(ctx context.Context, stop func(context.Context) error) {
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = stop(stopCtx)
}

// orDefault is timeout, or dflt when timeout is not positive.
func orDefault(timeout, dflt time.Duration) time.Duration {
	if timeout <= 0 {
		return dflt
	}
	return timeout
}

// probeEvery is how often a starting server of a SUT is probed: a refused
// connection costs well under a millisecond, and a coarser poll adds half
// its period to every deploy on average (PostgreSQL's was 100 ms).
const probeEvery = 10 * time.Millisecond

// waitReady polls probe every `every` until it passes, the process (name,
// pid) exits, which its log then explains, or timeout passes.
func waitReady(ctx context.Context, name string, pid int, logFile, what string, timeout, every time.Duration, probe func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := procs.WaitFor(ctx, what, every, func(ctx context.Context) error {
		if !procs.Alive(pid) {
			return procs.Permanent(Exited(name, pid, logFile))
		}
		return probe(ctx)
	})
	if err != nil {
		return fmt.Errorf("%w (log: %s)", err, logFile)
	}
	return nil
}

// selectOne runs SELECT 1 on a new connection to url, within 3s: a server
// that accepts and never answers must not stall the poll.
func selectOne(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var one int
	return conn.QueryRow(ctx, "SELECT 1").Scan(&one)
}

// daemon is a server that keeps its pid and log in files of its own
// directory, <file>.pid and <file>.log: redis-server and pgbouncer. (A
// PostgreSQL data directory has its postmaster.pid instead.)
type daemon struct {
	name string // the command: named in errors, and a live pid's comm starts with it
	dir  string
	file string
}

func (d daemon) pidFile() string { return filepath.Join(d.dir, d.file+".pid") }
func (d daemon) logFile() string { return filepath.Join(d.dir, d.file+".log") }

// live reports the pid in the pid file if it is alive and still d's
// command: a stale file's pid may have been reused by another program.
func (d daemon) live() (int, bool) {
	pid, err := procs.ReadPidFile(d.pidFile())
	if err != nil || !procs.Alive(pid) {
		return 0, false
	}
	if comm, _ := procs.Comm(pid); !strings.HasPrefix(comm, d.name) {
		return 0, false
	}
	return pid, true
}

// stop stops pid (SIGTERM; SIGKILL after 10s) and removes the pid file. A
// zero pid is the live one of the pid file; none is not an error.
func (d daemon) stop(ctx context.Context, pid int) error {
	if pid == 0 {
		var ok bool
		if pid, ok = d.live(); !ok {
			return nil
		}
	}
	if err := procs.Stop(ctx, pid, 10*time.Second); err != nil {
		return fmt.Errorf("stop %s in %s: %w", d.name, d.dir, err)
	}
	if err := os.Remove(d.pidFile()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("stop %s: %w", d.name, err)
	}
	return nil
}

// launch writes the daemon's configuration file conf and starts bin on it
// as osUser ("": ourselves); ready records the pid and waits until the
// daemon answers. A daemon that does not become ready is stopped.
func (d daemon) launch(ctx context.Context, bin, osUser, conf, content string, ready func(pid int) error) error {
	if err := os.WriteFile(conf, []byte(content), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(conf), err)
	}
	pid, err := procs.Start(procs.Spec{
		Name:    d.name,
		Path:    bin,
		Args:    []string{conf},
		Dir:     d.dir,
		User:    osUser,
		LogFile: d.logFile(),
		PidFile: d.pidFile(),
	})
	if err != nil {
		return err
	}
	if err := ready(pid); err != nil {
		stopFailedStart(ctx, func(ctx context.Context) error { return d.stop(ctx, pid) })
		return err
	}
	return nil
}
