package procs

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// WaitFor calls probe at once and then every `every` until it returns nil or
// ctx ends. The error names what was awaited, how long, and the last probe
// error; it wraps both ctx's error and the last probe error. A probe that
// returns an error made with Permanent ends the wait at once (the process
// being probed has exited: waiting longer cannot help).
func WaitFor(ctx context.Context, what string, every time.Duration, probe func(context.Context) error) error {
	start := time.Now()
	t := time.NewTicker(every)
	defer t.Stop()
	var last error
	for {
		last = probe(ctx)
		if last == nil {
			return nil
		}
		var p *permanent
		if errors.As(last, &p) {
			return fmt.Errorf("waiting for %s: gave up after %s: %w", what, since(start), p.err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w after %s; last error: %w", what, ctx.Err(), since(start), last)
		case <-t.C:
		}
	}
}

func since(t time.Time) time.Duration {
	d := time.Since(t)
	if d > time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// Permanent marks a probe error after which WaitFor stops waiting.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanent{err}
}

type permanent struct{ err error }

func (p *permanent) Error() string { return p.err.Error() }
func (p *permanent) Unwrap() error { return p.err }
