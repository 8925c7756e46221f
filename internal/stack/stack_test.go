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
