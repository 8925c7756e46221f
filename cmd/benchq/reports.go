package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/stack"
)

// The reporter's outputs as benchq commands: on the embedded stack nobody
// types a venv path or a database URL (the stack's state holds it).

// reportPath is where an experiment's HTML report goes by default.
func reportPath(st *State, code string) string {
	return filepath.Join(st.Home(), "reports", code+".html")
}

// loadStack is the running stack, or the exit code to return (and a line
// said) when there is none.
func loadStack(st *State) (*stack.Stack, int) {
	s, err := stack.Load(st)
	if s == nil {
		st.Errorf("%v", err)
		return nil, ExitNotReady
	}
	return s, ExitOK
}

// codeCommand parses the arguments of a command about one experiment (-e
// CODE, and the flags add defines; usage, if not nil, says what else is
// missing) and loads the stack; s is nil when the command must return rc
// at once (-h, a usage error, no stack).
func codeCommand(args []string, st *State, synopsis, about string, add func(*flag.FlagSet), usage func() string) (code string, s *stack.Stack, rc int) {
	fs := newFlagSet(synopsis, about)
	experimentFlag(fs, &code)
	add(fs)
	if rc, done := parseCodeArgs(fs, args, st, &code); done {
		return code, nil, rc
	}
	if usage != nil {
		if msg := usage(); msg != "" {
			st.Errorf("%s", msg)
			return code, nil, ExitUsage
		}
	}
	s, rc = loadStack(st)
	return code, s, rc
}

// cmdReport is `benchq report -e CODE [-o FILE] [-png DIR]`.
func cmdReport(ctx context.Context, args []string, st *State) int {
	var out, png string
	code, s, rc := codeCommand(args, st, "report -e CODE [-o FILE] [-png DIR]",
		"Write an experiment as one self-contained HTML page (its summary and plots; it opens without network)\nand print its path. Default FILE: $BENCHQ_HOME/reports/CODE.html.",
		func(fs *flag.FlagSet) {
			fs.StringVar(&out, "o", "", "the HTML file to write")
			fs.StringVar(&png, "png", "", "also write each plot as DIR/<plot>.png")
		}, nil)
	if s == nil {
		return rc
	}
	if out == "" {
		out = reportPath(st, code)
	}
	path, rc := writeReport(ctx, st, s, code, out, png)
	if rc == ExitOK {
		fmt.Fprintf(st.Stdout, "HTML report of %s (summary and plots; opens without network): %s\n", code, path)
	}
	return rc
}

// writeReport runs the reporter's report command; the reporter prints the
// files it wrote, the page first.
func writeReport(ctx context.Context, st *State, s *stack.Stack, code, out, png string) (string, int) {
	if dir := filepath.Dir(reportPath(st, code)); filepath.Dir(out) == dir {
		if err := privateDir(dir); err != nil {
			st.Errorf("report: %v", err)
			return "", ExitFailed
		}
	}
	args := []string{"report", "-e", code, "-o", out}
	if png != "" {
		args = append(args, "--png", png)
	}
	var written bytes.Buffer
	quiet := *st
	quiet.Stdout = &written
	if rc := runReporter(ctx, &quiet, s, args...); rc != ExitOK {
		return "", rc
	}
	path, _, _ := strings.Cut(written.String(), "\n")
	return path, ExitOK
}

// multiFlag is a repeatable string flag (-e A -e B).
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
func (m *multiFlag) repeats()           {}

// cmdCompare is `benchq compare -e A -e B ... [-format markdown|html]`.
func cmdCompare(ctx context.Context, args []string, st *State) int {
	fs := newFlagSet("compare -e A -e B ... [-format "+formatChoices("compare", "|")+"]",
		"The benchmarking phases of several experiments side by side, with ratios to the first (the baseline).")
	var codes multiFlag
	var format string
	fs.Var(&codes, "e", "an experiment; give two or more, the first is the baseline")
	fs.Var(&codes, "experiment", "alias of -e")
	fs.StringVar(&format, "format", contracts.OutputFormats("compare")[0], formatHelp("compare"))
	if rc, done := parseArgs(fs, args, st); done {
		return rc
	}
	if fs.NArg() > 0 || len(codes) < 2 {
		st.Errorf("compare: give two experiments or more: benchq compare -e A -e B")
		return ExitUsage
	}
	if msg := checkFormat("compare", format); msg != "" {
		st.Errorf("%s", msg)
		return ExitUsage
	}
	s, rc := loadStack(st)
	if s == nil {
		return rc
	}
	reporterArgs := []string{"compare", "--format", format}
	for _, c := range codes {
		reporterArgs = append(reporterArgs, "-e", c)
	}
	return runReporter(ctx, st, s, reporterArgs...)
}

// cmdExport is `benchq export -e CODE -o DIR [-format csv|parquet|...]`.
func cmdExport(ctx context.Context, args []string, st *State) int {
	var out, format string
	code, s, rc := codeCommand(args, st, "export -e CODE -o DIR [-format FORMAT]",
		"Write an experiment's DataFrames (docs/dataframes.md) to DIR, one file per frame, and a manifest;\nprint the files written.",
		func(fs *flag.FlagSet) {
			fs.StringVar(&out, "o", "", "the directory to write (required)")
			fs.StringVar(&format, "format", contracts.OutputFormats("export")[0], formatHelp("export"))
		}, func() string {
			if out == "" {
				return "export: where to? give -o DIR"
			}
			return checkFormat("export", format)
		})
	if s == nil {
		return rc
	}
	return runReporter(ctx, st, s, "export", "-e", code, "-o", out, "--format", format)
}

// cmdList is `benchq list`: every experiment with its status, duration,
// configurations and DBMS.
func cmdList(ctx context.Context, _ []string, st *State) int {
	s, rc := loadStack(st)
	if s == nil {
		return rc
	}
	return runReporter(ctx, st, s, "list")
}

// privateDir makes the home's reports directory, which holds the results
// database's figures that other local users may not read: 0700, and one
// made by an older benchq (0755) loses its bits for others. A group's bits,
// or a link to another directory, are the user's choice and stay.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o007 == 0 {
		return err
	}
	return os.Chmod(dir, fi.Mode().Perm()&^0o007)
}
