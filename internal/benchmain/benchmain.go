// Package benchmain is the main of benchq's bench programs (cmd/bench-*):
// flags, a check of their values, a measurement that prints figures, and
// the exit codes they share: 0 measured, 1 could not measure, 2 bad flags.
// The measurement stops on SIGINT or SIGTERM.
package benchmain

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Program is one bench program.
type Program struct {
	Name string
	// Flags defines the program's flags on fs.
	Flags func(fs *flag.FlagSet)
	// Check names what is wrong with the flags' values, or returns nil.
	Check func() error
	// Measure prints the figures to out.
	Measure func(ctx context.Context, out io.Writer) error
}

// Main runs p on the command line and exits.
func (p Program) Main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := p.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Run runs p on args and returns its exit code.
func (p Program) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(p.Name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	p.Flags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := p.Check(); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", p.Name, err)
		return 2
	}
	if err := p.Measure(ctx, stdout); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", p.Name, err)
		return 1
	}
	return 0
}
