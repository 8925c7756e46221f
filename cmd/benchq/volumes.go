package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/stack"
)

// benchq volumes [rm NAME]: the persistent volumes of the embedded stack
// (-rst keeps a SUT's data in $BENCHQ_HOME/volumes/NAME; docs/volumes.md).

func cmdVolumes(ctx context.Context, args []string, st *State) int {
	switch {
	case len(args) == 0:
		return listVolumes(ctx, st)
	case len(args) == 2 && args[0] == "rm":
		return removeVolume(ctx, args[1], st)
	}
	st.Errorf("usage: benchq volumes [rm NAME]")
	return ExitUsage
}

func listVolumes(ctx context.Context, st *State) int {
	b, rc := connectStack(st)
	if b == nil {
		return rc
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	fmt.Fprint(st.Stdout, grid(volumeColumns, volumeTable(ctx, b.JS, st.Home())))
	return ExitOK
}

// volumeClaims maps each volume a SUT of the embedded stack uses to the
// experiment and configuration using it: a SUT's configuration directory
// claims its volume (services/deployer/local's volume file) until its
// teardown.
func volumeClaims(home string) map[string]volumeUser {
	users := map[string]volumeUser{}
	claims, _ := filepath.Glob(filepath.Join(home, "suts", "*", "*", "volume"))
	for _, c := range claims {
		if b, err := os.ReadFile(c); err == nil {
			users[string(b)] = volumeUser{code: filepath.Base(filepath.Dir(filepath.Dir(c))), configuration: filepath.Base(filepath.Dir(c))}
		}
	}
	return users
}

// volumeUser is the SUT that uses a volume.
type volumeUser struct{ code, configuration string }

func (u volumeUser) String() string { return u.code + " (" + u.configuration + ")" }

// connectStack connects to the running stack's NATS; when it cannot, it
// says why and returns nil with the exit code.
func connectStack(st *State) (*bus.Bus, int) {
	s, rc := loadStack(st)
	if s == nil {
		return nil, rc
	}
	return dial(st, s)
}

// removeVolume deletes a volume of the embedded stack, unless a SUT uses it.
// The stack need not run; when it does, its volumes record forgets it too.
func removeVolume(ctx context.Context, name string, st *State) int {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
		st.Errorf("volumes rm: %q is not a volume name (benchq volumes lists them)", name)
		return ExitUsage
	}
	home := st.Home()
	dir := filepath.Join(home, "volumes", name)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		st.Errorf("volumes rm: no volume %s in %s (benchq volumes lists them)", name, filepath.Join(home, "volumes"))
		return ExitFailed
	}
	if u, ok := volumeClaims(home)[name]; ok {
		st.Errorf("volumes rm: %s is in use by experiment %s (configuration %s): wait for it to end, or benchq stop -e %s",
			name, u.code, u.configuration, u.code)
		return ExitFailed
	}
	if err := os.RemoveAll(dir); err != nil {
		st.Errorf("volumes rm: %v", err)
		return ExitFailed
	}
	if s, _ := stack.Load(st); s != nil {
		if b, err := s.Dial(); err == nil {
			defer b.Close()
			if kv, err := b.JS.KeyValue(ctx, contracts.KVVolumes); err == nil {
				_ = kv.Delete(ctx, name)
			}
		}
	}
	fmt.Fprintf(st.Stdout, "volume %s removed\n", name)
	return ExitOK
}
