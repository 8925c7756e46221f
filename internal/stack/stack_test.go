package stack

import (
	"errors"
	"fmt"
	"strings"
	"testing"

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
