package procs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/benchq/benchq/internal/atomicfile"
)

// Spec describes a process to start.
type Spec struct {
	Name string   // for errors and logs
	Path string   // binary: a path, or a name looked up in PATH
	Args []string // arguments after the binary
	Dir  string   // working directory ("" = the caller's)
	Env  []string // appended to the environment (ChildEnv, or all of os.Environ() with InheritEnv)
	// InheritEnv passes this process's whole environment (benchq's own
	// services, which read their keys from it). Without it a child gets
	// ChildEnv: SUTs, exporters, Prometheus and drivers see no key, seed,
	// token or password of the stack.
	InheritEnv bool
	User       string // if non-empty and we are root: run as this OS user (setuid/setgid, supplementary groups cleared)
	LogFile    string // stdout+stderr appended here (created; chowned to User if set); "" = discarded
	PidFile    string // pid written here after start (optional)
}

// Start starts the process detached in its own session (Setsid), so that it
// survives its starter and can be stopped as a process group; it returns the
// pid. A goroutine waits for the child so that it never lingers as a zombie
// while this process lives.
func Start(spec Spec) (int, error) {
	// Background: the process must outlive any request that started it.
	cmd, logf, err := command(context.Background(), spec)
	if err != nil {
		return 0, err
	}
	if logf != nil {
		defer logf.Close() //nolint:errcheck // the child holds its own descriptor
	}
	cmd.SysProcAttr.Setsid = true
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	pid := cmd.Process.Pid
	go func() {
		_ = cmd.Wait()
		exits.Store(pid, describeExit(cmd.ProcessState))
	}()
	if spec.PidFile != "" {
		if err := writePidFile(spec.PidFile, pid); err != nil {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			return 0, fmt.Errorf("start %s: %w", spec.Name, err)
		}
	}
	return pid, nil
}

// exits holds how each process Start started has ended (pid → "killed by
// signal 9", "exit status 1"): its starter learns it from the wait, which
// nobody else can do. A pid is reused only after it was reaped, so a stale
// entry could describe an older process of the same pid; ExitStatus is
// asked about processes seen dead, right after.
var exits sync.Map

// ExitStatus says how a process this one started (Start) ended; false when
// it did not start it, or the process has not been reaped yet.
func ExitStatus(pid int) (string, bool) {
	v, ok := exits.Load(pid)
	if !ok {
		return "", false
	}
	return v.(string), true
}

func describeExit(ps *os.ProcessState) string {
	if ps == nil {
		return "ended"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("killed by signal %d (%v)", int(ws.Signal()), ws.Signal())
	}
	return ps.String() // "exit status 1"
}

// command builds the exec.Cmd for spec (not started) and opens its log file.
func command(ctx context.Context, spec Spec) (*exec.Cmd, *os.File, error) {
	if spec.Name == "" {
		spec.Name = filepath.Base(spec.Path)
	}
	cmd := exec.CommandContext(ctx, spec.Path, spec.Args...)
	cmd.Dir = spec.Dir
	if spec.InheritEnv {
		cmd.Env = append(os.Environ(), spec.Env...)
	} else {
		cmd.Env = ChildEnv(spec.Env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	var cred *syscall.Credential
	if spec.User != "" && os.Geteuid() == 0 {
		u, err := LookupUser(spec.User)
		if err != nil {
			return nil, nil, fmt.Errorf("start %s: %w", spec.Name, err)
		}
		cred = &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{}}
		cmd.SysProcAttr.Credential = cred
		if !hasEnv(spec.Env, "HOME") {
			cmd.Env = append(cmd.Env, "HOME="+u.Home, "USER="+spec.User, "LOGNAME="+spec.User)
		}
	}
	var logf *os.File
	if spec.LogFile != "" {
		f, err := os.OpenFile(spec.LogFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600) // logs may name paths and hosts: the owner's
		if err != nil {
			return nil, nil, fmt.Errorf("start %s: open log: %w", spec.Name, err)
		}
		if cred != nil {
			if err := f.Chown(int(cred.Uid), int(cred.Gid)); err != nil {
				_ = f.Close() // the chown error is the one to report
				return nil, nil, fmt.Errorf("start %s: chown log: %w", spec.Name, err)
			}
		}
		// Where this start's output begins (LogTail reads from here).
		if _, err := fmt.Fprintf(f, "%s%s: %s\n", StartMarker, time.Now().UTC().Format(time.RFC3339Nano), spec.Name); err != nil {
			_ = f.Close()
			return nil, nil, fmt.Errorf("start %s: write log: %w", spec.Name, err)
		}
		cmd.Stdout, cmd.Stderr = f, f
		logf = f
	}
	return cmd, logf, nil
}

// hasEnv reports whether env (KEY=value entries) sets key.
func hasEnv(env []string, key string) bool {
	return slices.IndexFunc(env, func(kv string) bool { return strings.HasPrefix(kv, key+"=") }) >= 0
}

// WithEnv is env (KEY=value entries) with key set to value: replaced, or
// added.
func WithEnv(env []string, key, value string) []string {
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, key+"=") })
	return append(out, key+"="+value)
}

func writePidFile(path string, pid int) error {
	return atomicfile.Write(path, []byte(strconv.Itoa(pid)+"\n"), 0o644)
}

// childEnvNames are the variables of this process a child that is not one
// of benchq's services gets (besides LC_*): what programs need to find
// their binaries, libraries, home, cache (internal/cachedir), locale and
// temporary directory, and JAVA_TOOL_OPTIONS, the JVM's own way to take
// options (heap, GC, JIT) for the drivers' JVMs (YCSB, Benchbase) from the
// agent's environment.
var childEnvNames = []string{"PATH", "HOME", "XDG_CACHE_HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "JAVA_HOME", "LD_LIBRARY_PATH", "JAVA_TOOL_OPTIONS"}

// ChildEnv is the environment of a child that is not one of benchq's
// services: the allow-listed variables of this process, then extra. The
// stack's keys, seeds, tokens and passwords (BENCHQ_*, *_NKEY, ...) are
// never in it.
func ChildEnv(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(childEnvNames, name) || strings.HasPrefix(name, "LC_") {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}
