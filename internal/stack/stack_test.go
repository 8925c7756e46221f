package stack

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchq/benchq/internal/localdb"
)

// A store that exited on a taken port: started again on other ports when
// benchq picked the port, the variable named when the user set it; any
// other failure passes through.
func TestPortTaken(t *testing.T) {
	exited := fmt.Errorf("nats-server (pid 1) exited: bind (%w)", localdb.ErrAddrInUse)
	env := map[string]string{}
	st := &State{Env: func(k string) string { return env[k] }}

	if err := portTaken(st, exited, NATSProc); !errors.Is(err, ErrPortTaken) {
		t.Errorf("a picked port: %v, want ErrPortTaken", err)
	}
	env["BENCHQ_NATS_PORT"] = "4222"
	if err := portTaken(st, exited, NATSProc); errors.Is(err, ErrPortTaken) || !strings.Contains(err.Error(), "BENCHQ_NATS_PORT=4222 is taken") {
		t.Errorf("a port the user set: %v, want it named and no restart", err)
	}
	other := errors.New("initdb failed")
	if err := portTaken(st, other, NATSProc); err != other {
		t.Errorf("another failure: %v, want it as it was", err)
	}
}

// A port variable is a port, or unset (or 0) for a free one: anything else
// is refused naming the variable, before anything starts.
func TestFixedPort(t *testing.T) {
	env := map[string]string{}
	st := &State{Env: func(k string) string { return env[k] }}
	for v, want := range map[string]int{"": 0, "0": 0, "4222": 4222, "65535": 65535} {
		env["BENCHQ_NATS_PORT"] = v
		if p, err := fixedPort(st, "BENCHQ_NATS_PORT"); err != nil || p != want {
			t.Errorf("%q: %d, %v; want %d", v, p, err, want)
		}
	}
	for _, v := range []string{"-1", "65536", "http", "4222 "} {
		env["BENCHQ_NATS_PORT"] = v
		if _, err := fixedPort(st, "BENCHQ_NATS_PORT"); err == nil || !strings.Contains(err.Error(), "BENCHQ_NATS_PORT") {
			t.Errorf("%q: %v, want a refusal naming the variable", v, err)
		}
	}
	env["BENCHQ_NATS_PORT"] = "0"
	exited := fmt.Errorf("nats-server (pid 1) exited: bind (%w)", localdb.ErrAddrInUse)
	if err := portTaken(st, exited, NATSProc); !errors.Is(err, ErrPortTaken) {
		t.Errorf("0 (a free port) taken: %v, want ErrPortTaken (start again elsewhere)", err)
	}
}

// The programs: BENCHQ_BIN, else the home's bin when the bootstrap built
// into it, else beside the running benchq (here: the test binary's
// directory, which holds no nats-server, so the home's bin, to be named).
func TestBinDir(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"BENCHQ_HOME": home}
	st := &State{Env: func(k string) string { return env[k] }}
	bin := filepath.Join(home, "bin")
	if got := binDir(st); got != bin {
		t.Errorf("nothing built: %q, want the home's bin %q", got, bin)
	}
	exe, _ := os.Executable()
	if err := os.WriteFile(filepath.Join(filepath.Dir(exe), NATSProc), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := binDir(st); got != filepath.Dir(exe) {
		t.Errorf("programs beside benchq only: %q, want %q", got, filepath.Dir(exe))
	}
	_ = os.Remove(filepath.Join(filepath.Dir(exe), NATSProc))
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, NATSProc), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := binDir(st); got != bin {
		t.Errorf("built into the home: %q, want %q", got, bin)
	}
	env["BENCHQ_BIN"] = "/opt/benchq/bin"
	if got := binDir(st); got != "/opt/benchq/bin" {
		t.Errorf("BENCHQ_BIN set: %q", got)
	}
}

// A home benchq creates can be passed through by others (the results
// database runs as postgres under root); one that exists keeps its mode.
func TestMakeHome(t *testing.T) {
	home := filepath.Join(t.TempDir(), "a", "home")
	if err := makeHome(home); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(home); err != nil || fi.Mode().Perm() != 0o711 {
		t.Fatalf("created: %v, %v; want mode 711", fi.Mode().Perm(), err)
	}
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := makeHome(home); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(home); fi.Mode().Perm() != 0o700 {
		t.Errorf("an existing home's mode changed to %v", fi.Mode().Perm())
	}
}

// benchq down stops what experiments left running under the home's suts/,
// by their pid files at whatever depth the DBMS keeps them: a Redis's
// data/redis.pid was missed, and its server outlived the stack.
func TestDownStopsLeftoverSUTsAtAnyDepth(t *testing.T) {
	home := t.TempDir()
	st := &State{Env: func(k string) string {
		if k == "BENCHQ_HOME" {
			return home
		}
		return ""
	}}
	var cmds []*exec.Cmd
	for _, dir := range []string{"c1/Redis-1/data", "c1/PostgreSQL-1/pg", "c2/RedisCluster-1/node-1"} {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		cmds = append(cmds, cmd)
		d := filepath.Join(home, "suts", dir)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		name := "redis.pid"
		if strings.HasSuffix(dir, "/pg") {
			name = "postmaster.pid"
		}
		if err := os.WriteFile(filepath.Join(d, name), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	exited := make(chan error, len(cmds))
	for _, c := range cmds {
		go func() { exited <- c.Wait() }()
	}
	stopLeftoverSUTs(t.Context(), st)
	for range cmds {
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			t.Fatal("a SUT process outlived benchq down's stop of leftover SUTs")
		}
	}
	if _, err := os.Stat(filepath.Join(home, "suts")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("suts/ is still there: %v", err)
	}
}
