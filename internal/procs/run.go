package procs

import (
	"bytes"
	"context"
	"fmt"
)

// Run runs spec to completion (same User handling as Start, not detached,
// killed when ctx ends) and returns its combined output. Spec.PidFile is
// ignored; with LogFile set the output goes there instead. The error carries
// the last lines of the output, which is where tools such as initdb explain
// themselves.
func Run(ctx context.Context, spec Spec) ([]byte, error) {
	cmd, logf, err := command(ctx, spec)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if logf != nil {
		defer logf.Close() //nolint:errcheck // the child wrote through its own descriptor
	} else {
		cmd.Stdout, cmd.Stderr = &out, &out
	}
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
		return out.Bytes(), fmt.Errorf("run %s: %w%s", nameOf(spec), err, tailSuffix(lastLines(out.String(), 5)))
	}
	return out.Bytes(), nil
}

func nameOf(spec Spec) string {
	if spec.Name != "" {
		return spec.Name
	}
	return spec.Path
}
