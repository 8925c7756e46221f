package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/stack"
	"github.com/benchq/benchq/internal/version"
)

// Exit codes.
const (
	ExitOK       = 0
	ExitFailed   = 1 // the experiment failed or was rejected; the stack failed
	ExitUsage    = 2 // unknown or malformed flag or command
	ExitNotReady = 3 // the stack is not running
)

// State is the process state a command sees, injected so commands run
// in-process in tests.
// State is what a command gets of its process (stack.State): the
// environment and the standard streams, injected for in-process tests.
type State = stack.State

const usage = `usage: benchq <command> [flags]

commands:
  up                      start the embedded stack (NATS, results DB, Prometheus,
                          services, agents); BENCHQ_SCRAPE_INTERVAL sets how often
                          Prometheus scrapes (default 1s)
  down                    stop everything the stack started
  ycsb [flags] ACTION     a YCSB experiment; ACTION is run (load and benchmark,
                          follow it, print its summary), load, start (deploy the
                          SUTs and keep them) or summary (-e CODE)
  benchbase [flags] ACTION  the same for TPC-C (Benchbase's workload)
  tsdb [flags] ACTION     the same for metrics ingest into a time-series database
                          (haggar's generators; docs/tsdb.md)
  status                  components, agents, volumes and running experiments
  stop [-e CODE]          cancel one experiment (or every running one)
  summary -e CODE         print the summary of an experiment again
  report -e CODE          write its HTML report (summary and plots) and print the path
  compare -e A -e B ...   benchmarking phases of several experiments side by side
  export -e CODE -o DIR   its DataFrames as CSV or Parquet files
  list                    every experiment: status, duration, configurations, DBMS
  dashboard -e CODE       the link to its Grafana dashboard ($BENCHQ_GRAFANA_URL;
                          -upload installs benchq's dashboards there first)
  restart COMPONENT       stop and start one component of the stack
  volumes [rm NAME]       the persistent volumes (-rst) and their loaded state;
                          rm removes one that no SUT uses
  credentials DIR         write the compose stack's credentials into DIR/.env
                          (once: benchq credentials deploy/compose)
  help                    this text
  version                 the benchq version this binary was built from (also --version)

Every command takes -h. Run 'benchq ycsb -h' for the experiment flags (bexhoma's names);
they may come before or after ACTION.
Exit codes: 0 ok, 1 failed/rejected/cancelled, 2 usage error, 3 stack not running.
`

// Main runs one command and returns the exit code.
func Main(ctx context.Context, args []string, st *State) int {
	if len(args) == 0 {
		fmt.Fprint(st.Stderr, usage)
		return ExitUsage
	}
	cmd, rest := args[0], args[1:]
	if u, ok := flagless[cmd]; ok {
		fs := newFlagSet(u.synopsis, u.about)
		if rc, done := parseArgs(fs, rest, st); done {
			return rc
		}
		rest = fs.Args()
		if len(rest) > 0 && cmd != "restart" && cmd != "volumes" && cmd != "credentials" { // they check their words
			st.Errorf("%s: unexpected %q (usage: benchq %s)", cmd, strings.Join(rest, " "), cmd)
			return ExitUsage
		}
	}
	if run, ok := commands[cmd]; ok {
		return run(ctx, rest, st)
	}
	switch cmd {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(st.Stdout, usage)
		return ExitOK
	case "version", "-version", "--version":
		fmt.Fprintf(st.Stdout, "benchq %s\n", version.String())
		return ExitOK
	}
	st.Errorf("unknown command %q (commands: up, down, ycsb, benchbase, tsdb, status, stop, summary, report, compare, export, list, dashboard, restart, volumes, credentials, help, version)", cmd)
	return ExitUsage
}

// commands runs each command but help and version by its name, with the
// words after it.
var commands = map[string]func(ctx context.Context, args []string, st *State) int{
	"up":   cmdUp,
	"down": cmdDown,
	"ycsb": func(ctx context.Context, args []string, st *State) int { return cmdExperiment(ctx, "ycsb", args, st) },
	"tsdb": func(ctx context.Context, args []string, st *State) int {
		return cmdExperiment(ctx, "tsdb", args, st)
	},
	"benchbase": func(ctx context.Context, args []string, st *State) int {
		return cmdExperiment(ctx, "benchbase", args, st)
	},
	"status":      cmdStatus,
	"stop":        cmdStop,
	"restart":     cmdRestart,
	"volumes":     cmdVolumes,
	"summary":     cmdSummaryArgs,
	"dashboard":   cmdDashboard,
	"credentials": cmdCredentials,
	"report":      cmdReport,
	"compare":     cmdCompare,
	"export":      cmdExport,
	"list":        cmdList,
}

// flagless are the commands without flags. Main parses their arguments so
// that -h, or a flag or word they do not take, stops them before they start,
// stop or connect to anything.
var flagless = map[string]struct{ synopsis, about string }{
	"up":          {"up", "Start the embedded stack (NATS, results DB, services, agents); its state is kept in\n$BENCHQ_HOME (default .benchq)."},
	"down":        {"down", "Stop everything the stack started: the experiments in flight (cancelled, what they measured\nkept), the services, every SUT left behind, the results DB and NATS."},
	"restart":     {"restart COMPONENT", "Stop (if alive) and start again one component of the stack: nats-server, results-db,\ncollector, scheduler, deployer, driver-agent-N or prometheus (on its port, with its data)."},
	"status":      {"status", "Print the components, agents, volumes and running experiments of the stack."},
	"list":        {"list", "List every experiment in the results database, newest first: code, status, when it was planned,\nits duration, its configurations and its DBMS."},
	"credentials": {"credentials DIR", "Write the compose stack's credentials into DIR/.env (mode 0600): an NKey per service role,\nthe results database's password, the HTTP intake's token, Grafana's admin password. Run it\nonce: benchq credentials deploy/compose (see docs/compose.md)."},
	"volumes":     {"volumes [rm NAME]", "List the persistent volumes (-rst keeps a SUT's data on one, reused by later experiments\nof the same DBMS, use case and scale factor); rm NAME removes one that no SUT uses."},
}

// newFlagSet is the flag set of a command whose usage is a synopsis and one
// paragraph, followed by its flags if it has any.
func newFlagSet(synopsis, about string) *flag.FlagSet {
	name, _, _ := strings.Cut(synopsis, " ")
	fs := flag.NewFlagSet("benchq "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: benchq %s\n\n%s\n", synopsis, about)
		flags := false
		fs.VisitAll(func(*flag.Flag) { flags = true })
		if flags {
			fmt.Fprint(fs.Output(), "\nflags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseArgs parses a command's arguments the way bexhoma's argparse does:
// flags may come before and after the positional words (`benchq ycsb run
// -dbms Redis`), and "--" ends the flags. The words are left in fs.Args(),
// as fs.Parse leaves them. done means the command must return code at once:
// after -h/--help (its usage on stdout, exit 0) or a usage error (one line on
// stderr naming the flag, exit 2); either way before anything has been done.
func parseArgs(fs *flag.FlagSet, args []string, st *State) (code int, done bool) {
	fs.SetOutput(io.Discard) // the flag package would print the whole usage on every error
	var words []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(st.Stdout)
			fs.Usage()
			return ExitOK, true
		}
		if err != nil {
			name := strings.TrimPrefix(fs.Name(), "benchq ")
			st.Errorf("%s: %s (see: benchq %s -h)", name, explainParseError(fs, err, args), name)
			return ExitUsage, true
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			words = append(words, rest...)
			break
		}
		words, args = append(words, rest[0]), rest[1:]
	}
	_ = fs.Parse(append([]string{"--"}, words...))
	return ExitOK, false
}

// badValueRE is the flag package's error for a value it could not parse.
var badValueRE = regexp.MustCompile(`^invalid value "(.*)" for flag -([^:]+): parse error$`)

// explainParseError names an unknown flag as the user typed it (--x, not
// the flag package's -x) and suggests the nearest flag there is; a value
// the flag package could not parse gets what the flag takes.
func explainParseError(fs *flag.FlagSet, err error, args []string) string {
	if m := badValueRE.FindStringSubmatch(err.Error()); m != nil {
		// The flag package says only "parse error": say what it takes.
		if f := fs.Lookup(m[2]); f != nil {
			if g, ok := f.Value.(flag.Getter); ok {
				want := ""
				switch g.Get().(type) {
				case int, int64, uint, uint64:
					want = "a whole number"
				case float64:
					want = "a number"
				case time.Duration:
					want = "a duration such as 500ms, 30s or 5m"
				}
				if want != "" {
					return fmt.Sprintf("invalid value \"%s\" for flag %s: want %s (%s)", m[1], typedFlag(m[2], args), want, f.Usage)
				}
			}
		}
	}
	unknown, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return err.Error()
	}
	typed := typedFlag(unknown, args)
	msg := "unknown flag " + typed
	if near := closest(fs, unknown); near != "" {
		// In the dashes typed: bexhoma's long names take two.
		dashes := "-"
		if strings.HasPrefix(typed, "--") && len(near) > 1 {
			dashes = "--"
		}
		msg += fmt.Sprintf(" (did you mean %s%s?)", dashes, near)
	}
	return msg
}

// typedFlag is flag name as the user typed it among args (-x or --x).
func typedFlag(name string, args []string) string {
	for _, t := range flagTokens(args) {
		if t.name == name {
			return t.dashes + name
		}
	}
	return "-" + name
}

// experimentFlag adds -e CODE (and its alias -experiment) to a command.
func experimentFlag(fs *flag.FlagSet, code *string) {
	v := oneCode{code}
	fs.Var(v, "e", "the experiment")
	fs.Var(v, "experiment", "alias of -e")
}

// oneCode is the -e of a command about one experiment: given twice, the
// first would be dropped without a word.
type oneCode struct{ code *string }

func (o oneCode) String() string {
	if o.code == nil {
		return ""
	}
	return *o.code
}

func (o oneCode) Set(v string) error {
	if *o.code != "" && *o.code != v {
		return fmt.Errorf("one experiment only, got %s and %s (benchq compare takes two)", *o.code, v)
	}
	*o.code = v
	return nil
}

// parseCodeArgs parses the arguments of a command about one experiment
// (-e CODE and flags, no words); done is true when the command must end
// with rc (-h, a usage error, no -e).
func parseCodeArgs(fs *flag.FlagSet, args []string, st *State, code *string) (rc int, done bool) {
	if rc, done := parseArgs(fs, args, st); done {
		return rc, true
	}
	name := strings.TrimPrefix(fs.Name(), "benchq ")
	switch {
	case fs.NArg() > 0:
		st.Errorf("%s: unexpected %q (usage: benchq %s -e CODE)", name, strings.Join(fs.Args(), " "), name)
		return ExitUsage, true
	case *code == "":
		st.Errorf("%s: which experiment? give -e CODE", name)
		return ExitUsage, true
	}
	return ExitOK, false
}

// formatChoices are the formats the reporter writes output in
// (contracts.OutputFormats), joined by sep.
func formatChoices(output, sep string) string {
	return strings.Join(contracts.OutputFormats(output), sep)
}

// formatHelp is -format's help: the formats, the default named.
func formatHelp(output string) string {
	f := contracts.OutputFormats(output)
	return f[0] + " (default) or " + strings.Join(f[1:], " or ")
}

// checkFormat is the error of a -format the reporter cannot write output
// in, "" for one it can.
func checkFormat(output, format string) string {
	if slices.Contains(contracts.OutputFormats(output), format) {
		return ""
	}
	return fmt.Sprintf("%s: -format %s: give %s", output, format, formatChoices(output, " or "))
}

// cmdSummaryArgs is `benchq summary -e CODE [-format json]`: the reporter
// prints the summary, but the arguments are checked here, before waiting for
// the collector, so that a usage error or -h needs no stack.
func cmdSummaryArgs(ctx context.Context, args []string, st *State) int {
	fs := newFlagSet("summary -e CODE [-format "+formatChoices("summary", "|")+"]", "Print the summary of an experiment again.")
	var code, format string
	experimentFlag(fs, &code)
	fs.StringVar(&format, "format", "", formatHelp("summary"))
	if rc, done := parseCodeArgs(fs, args, st, &code); done {
		return rc
	}
	if format != "" {
		if msg := checkFormat("summary", format); msg != "" {
			st.Errorf("%s", msg)
			return ExitUsage
		}
	}
	reporterArgs := []string{"-e", code}
	if format != "" {
		reporterArgs = append(reporterArgs, "--format", format)
	}
	return cmdSummary(ctx, reporterArgs, st)
}
