package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/benchq/benchq/internal/stack"
)

// up starts the stack again when a port picked for it was taken (twice at
// most, stopping each failed start), and not for any other failure. A real
// taken pick cannot be provoked on demand, so start is a stand-in here.
func TestUpStartsAgainOnTakenPorts(t *testing.T) {
	taken := fmt.Errorf("%w: nats-server exited: address already in use", stack.ErrPortTaken)
	for _, c := range []struct {
		name          string
		errs          []error // what each start returns, in turn
		starts, stops int
		ok            bool
	}{
		{"taken once", []error{taken, nil}, 2, 1, true},
		{"taken every time", []error{taken, taken, taken, nil}, 3, 2, false},
		{"another failure", []error{errors.New("no nats-server"), nil}, 1, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var errb bytes.Buffer
			st := &State{Env: func(string) string { return "" }, Stdout: &bytes.Buffer{}, Stderr: &errb}
			starts, stops := 0, 0
			_, err := startAgainOnTakenPorts(st,
				func() (*stack.Stack, error) { starts++; return &stack.Stack{}, c.errs[starts-1] },
				func(*stack.Stack) { stops++ })
			if starts != c.starts || stops != c.stops || (err == nil) != c.ok {
				t.Errorf("%d starts, %d stops, err %v; want %d, %d, ok %v", starts, stops, err, c.starts, c.stops, c.ok)
			}
			if n := strings.Count(errb.String(), "starting the stack again on other ports"); n != c.stops {
				t.Errorf("said %d times that it starts again, want %d:\n%s", n, c.stops, errb.String())
			}
		})
	}
}
