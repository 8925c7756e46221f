package stack

import (
	"fmt"
	"io"
	"path/filepath"
)

// State is what a command gets of its process: the environment and the
// standard streams, injected so that commands run in-process in tests.
type State struct {
	Env    func(string) string
	Stdout io.Writer
	Stderr io.Writer
}

// Var is the environment variable key, or def when it is unset or empty.
func (s *State) Var(key, def string) string {
	if v := s.Env(key); v != "" {
		return v
	}
	return def
}

// Home is the directory of the embedded stack's state (binaries, data,
// logs): $BENCHQ_HOME, default .benchq, made absolute.
func (s *State) Home() string {
	h := s.Var("BENCHQ_HOME", ".benchq")
	abs, err := filepath.Abs(h)
	if err != nil {
		return h
	}
	return abs
}

// Errorf prints one line on stderr, prefixed "benchq: ".
func (s *State) Errorf(format string, args ...any) {
	fmt.Fprintf(s.Stderr, "benchq: "+format+"\n", args...)
}
