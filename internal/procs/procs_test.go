package procs

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func startSleep(t *testing.T, spec Spec) int {
	t.Helper()
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("sleep not installed")
	}
	spec.Path, spec.Args = "sleep", []string{"60"}
	if spec.Name == "" {
		spec.Name = "sleep"
	}
	pid, err := Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	return pid
}

func TestStartAliveStop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "sleep.pid")
	pid := startSleep(t, Spec{LogFile: filepath.Join(dir, "sleep.log"), PidFile: pidFile})

	if !Alive(pid) {
		t.Fatalf("pid %d not alive after Start", pid)
	}
	got, err := ReadPidFile(pidFile)
	if err != nil || got != pid {
		t.Fatalf("ReadPidFile = %d, %v; want %d", got, err, pid)
	}
	if pgid, _ := syscall.Getpgid(pid); pgid != pid {
		t.Errorf("pgid = %d, want own group %d (Setsid)", pgid, pid)
	}
	if _, err := os.Stat(filepath.Join(dir, "sleep.log")); err != nil {
		t.Errorf("log file: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Stop(ctx, pid, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if Alive(pid) {
		t.Fatalf("pid %d alive after Stop (a zombie counts as gone: was it reaped?)", pid)
	}
	if err := Stop(ctx, pid, time.Second); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestStopEscalatesToSIGKILL(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("sh not installed")
	}
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	// The shell ignores SIGTERM and blocks in `wait` on its child, which inherits the ignore.
	pid, err := Start(Spec{Name: "stubborn", Path: "sh", Args: []string{"-c", "trap '' TERM; touch " + ready + "; sleep 60 & wait"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := WaitFor(ctx, "trap installed", 10*time.Millisecond, func(context.Context) error {
		_, err := os.Stat(ready)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := Stop(ctx, pid, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if Alive(pid) {
		t.Fatal("still alive after Stop")
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("Stop returned after %s: SIGTERM should have been ignored for the grace period", d)
	}
}

func TestStartAsUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch users")
	}
	u, err := LookupUser("nobody")
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "id.log")
	out, err := Run(context.Background(), Spec{Name: "id", Path: "id", User: "nobody"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "uid="+itoa(u.UID)) || strings.Contains(string(out), "groups=0") {
		t.Errorf("id as nobody = %q", out)
	}
	pid := startSleep(t, Spec{User: "nobody", LogFile: log})
	st, err := os.Stat("/proc/" + itoa(uint32(pid)))
	if err != nil {
		t.Fatal(err)
	}
	if uid := st.Sys().(*syscall.Stat_t).Uid; uid != u.UID {
		t.Errorf("process uid = %d, want %d", uid, u.UID)
	}
	lst, err := os.Stat(log)
	if err != nil {
		t.Fatal(err)
	}
	if uid := lst.Sys().(*syscall.Stat_t).Uid; uid != u.UID {
		t.Errorf("log owner = %d, want %d", uid, u.UID)
	}
}

func itoa(u uint32) string { return strconv.FormatUint(uint64(u), 10) }

func TestRunFailureCarriesOutput(t *testing.T) {
	t.Parallel()
	_, err := Run(context.Background(), Spec{Name: "failing", Path: "sh", Args: []string{"-c", "echo first; echo 'the reason' >&2; exit 3"}})
	if err == nil || !strings.Contains(err.Error(), "run failing: exit status 3") || !strings.Contains(err.Error(), "the reason") {
		t.Fatalf("err = %v", err)
	}
}

func TestWaitForSuccess(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	calls := 0
	err := WaitFor(ctx, "third call", time.Millisecond, func(context.Context) error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("err = %v, calls = %d", err, calls)
	}
}

func TestWaitForDeadline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	probeErr := errors.New("connection refused")
	err := WaitFor(ctx, "widget on 127.0.0.1:1", 5*time.Millisecond, func(context.Context) error { return probeErr })
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{"waiting for widget on 127.0.0.1:1", "context deadline exceeded", "last error: connection refused"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if !errors.Is(err, probeErr) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v should wrap both the probe error and the deadline", err)
	}
}

func TestWaitForPermanent(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exited := errors.New("process exited")
	start := time.Now()
	err := WaitFor(ctx, "server", time.Millisecond, func(context.Context) error { return Permanent(exited) })
	if !errors.Is(err, exited) || !strings.Contains(err.Error(), "waiting for server: gave up") {
		t.Fatalf("err = %v", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Error("a permanent error should end the wait at once")
	}
}

// FreePort never returns a port twice in a process. The kernel picks a
// listener's port at random among ~28,000, so 500 picks without the
// process's memory of them collide almost surely (birthday bound: 99 %).
func TestFreePortDistinct(t *testing.T) {
	t.Parallel()
	seen := map[int]bool{}
	for range 500 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if p <= 0 || p > 65535 {
			t.Fatalf("port %d out of range", p)
		}
		if seen[p] {
			t.Fatalf("port %d returned twice", p)
		}
		seen[p] = true
	}
}

func TestParseStatState(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]byte{
		"123 (sleep) S 1 123":          'S',
		"9 (weird) name)) Z 1 9 9":     'Z',
		"77 (redis-server *:6) R 1 77": 'R',
	} {
		got, err := parseStatState([]byte(in))
		if err != nil || got != want {
			t.Errorf("parseStatState(%q) = %c, %v; want %c", in, got, err, want)
		}
	}
	if _, err := parseStatState([]byte("garbage")); err == nil {
		t.Error("garbage parsed")
	}
}

func TestReadPidFileErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.pid")
	if err := os.WriteFile(bad, []byte("nope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPidFile(bad); err == nil {
		t.Error("bad pid file parsed")
	}
	if _, err := ReadPidFile(filepath.Join(dir, "missing.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing pid file: %v, want ErrNotExist", err)
	}
	pg := filepath.Join(dir, "postmaster.pid")
	if err := os.WriteFile(pg, []byte("4242\n/data\n1700000000\n5432\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if pid, err := ReadPidFile(pg); err != nil || pid != 4242 {
		t.Errorf("postmaster.pid: %d, %v", pid, err)
	}
}

func TestLogTail(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "x.log")
	if err := os.WriteFile(p, []byte("a\n\nb\nc\nd\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := LogTail(p, 2); got != "c | d" {
		t.Errorf("LogTail = %q", got)
	}
	if got := LogTail(p+".missing", 2); got != "" {
		t.Errorf("LogTail(missing) = %q", got)
	}
	// A log appended to by a second start: only that start's lines.
	again := "e: address already in use\n" + StartMarker + "2026-11-28T20:40:00Z: x\nf\n"
	if err := os.WriteFile(p, []byte("a\n"+StartMarker+"2026-11-28T20:39:00Z: x\n"+again), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := LogTail(p, 3); got != "f" {
		t.Errorf("LogTail after a second start = %q, want %q", got, "f")
	}
	if err := os.WriteFile(p, []byte("e\n"+StartMarker+"2026-11-28T20:40:00Z: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := LogTail(p, 3); got != "" {
		t.Errorf("LogTail of a start that wrote nothing = %q, want none", got)
	}
}

// The starter learns how its process ended: a SIGKILL, an exit status.
func TestExitStatus(t *testing.T) {
	killed, err := Start(Spec{Name: "sleep", Path: "sleep", Args: []string{"30"}})
	if err != nil {
		t.Fatal(err)
	}
	exited, err := Start(Spec{Name: "false", Path: "sh", Args: []string{"-c", "exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(killed, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	want := map[int]string{killed: "killed by signal 9 (killed)", exited: "exit status 3"}
	deadline := time.Now().Add(5 * time.Second)
	for pid, w := range want {
		for {
			got, ok := ExitStatus(pid)
			if ok {
				if got != w {
					t.Errorf("pid %d: %q, want %q", pid, got, w)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("pid %d: no exit status after 5 s", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if _, ok := ExitStatus(1); ok {
		t.Error("an exit status for a process this one did not start")
	}
}

// A child gets the allow-listed environment and what its spec adds: no key,
// seed or token of the stack (BENCHQ_NATS_NKEY here) unless it is one of
// benchq's services (InheritEnv). The drivers' JVMs take their options
// from JAVA_TOOL_OPTIONS.
func TestChildrenDoNotInheritTheStacksSecrets(t *testing.T) {
	t.Setenv("BENCHQ_NATS_NKEY", "SUAsecretseed")
	t.Setenv("LC_ALL", "C")
	t.Setenv("JAVA_TOOL_OPTIONS", "-Xmx1g")
	env := func(inherit bool) string {
		out, err := Run(t.Context(), Spec{Path: "env", Env: []string{"BENCHQ_SUT=1"}, InheritEnv: inherit})
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	child := env(false)
	if strings.Contains(child, "SUAsecretseed") || !strings.Contains(child, "BENCHQ_SUT=1") || !strings.Contains(child, "PATH=") || !strings.Contains(child, "LC_ALL=C") || !strings.Contains(child, "JAVA_TOOL_OPTIONS=-Xmx1g") {
		t.Errorf("a child's environment:\n%s", child)
	}
	if !strings.Contains(env(true), "BENCHQ_NATS_NKEY=SUAsecretseed") {
		t.Error("a service did not get the stack's environment")
	}
}

// A pid file holding 1 (or 0, or our own pid) signals nothing; a pid file
// older than the process it names (a recycled pid) is not that process's.
func TestPidFilesAreVerifiedBeforeASignal(t *testing.T) {
	dir := t.TempDir()
	for _, pid := range []string{"1", "0", "-1"} {
		f := filepath.Join(dir, "p"+pid)
		if err := os.WriteFile(f, []byte(pid+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadPidFileOf(f); err == nil {
			t.Errorf("pid file holding %s accepted", pid)
		}
	}
	if err := Stop(t.Context(), 1, time.Second); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("Stop(1) = %v", err)
	}
	if err := Stop(t.Context(), os.Getpid(), time.Second); err == nil {
		t.Error("Stop(own pid) accepted")
	}
	// A live process started after its pid file was written: recycled.
	old := filepath.Join(dir, "old.pid")
	pid, err := Start(Spec{Path: "sleep", Args: []string{"30"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Stop(context.Background(), pid, time.Second) })
	if err := os.WriteFile(old, []byte(strconv.Itoa(pid)), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadPidFileOf(old); err != nil || got != pid {
		t.Errorf("a fresh pid file: %d, %v", got, err)
	}
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPidFileOf(old); err == nil || !strings.Contains(err.Error(), "another process has the pid") {
		t.Errorf("a pid file older than its process: %v", err)
	}
}

func TestWithEnv(t *testing.T) {
	env := []string{"A=1", "AB=2", "B=3"}
	if got, want := WithEnv(env, "A", "9"), []string{"AB=2", "B=3", "A=9"}; !slices.Equal(got, want) {
		t.Errorf("replace: got %q, want %q (AB= is another variable)", got, want)
	}
	if got, want := WithEnv(env, "C", ""), []string{"A=1", "AB=2", "B=3", "C="}; !slices.Equal(got, want) {
		t.Errorf("add: got %q, want %q", got, want)
	}
	if !slices.Equal(env, []string{"A=1", "AB=2", "B=3"}) {
		t.Errorf("the caller's list changed: %q", env)
	}
	if !hasEnv(env, "AB") || hasEnv(env, "C") || hasEnv([]string{"AB=2"}, "A") {
		t.Error("hasEnv: AB set, C and A (a prefix of AB) not")
	}
}
