package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/benchq/benchq/internal/nearest"
)

// bexOption is one option of bexhoma's ycsb.py or benchbase.py, under
// every name bexhoma has given it: the names of the version the seeds use
// (-nlf, -tb, -sfo, --workload) and of the current one (-xnlf, -xtb, -xop,
// --xworkload), short and long. Each is either benchq's flag under another
// name (flag) or refused with the reason (why): nothing is accepted and then
// ignored.
type bexOption struct {
	names  []string // "-nlf", "--num-loading-target-factors", ...
	flag   string   // benchq's flag; "" when refused
	why    string   // why benchq refuses it
	only   string   // the benchmark (ycsb, benchbase) it belongs to; "" both
	isBool bool     // a switch: a refused one takes no value
}

// bexhomaOptions are every option of bexhoma's ycsb.py and benchbase.py
// (Beuth-Erdelt/Benchmark-Experiment-Host-Manager: the seeds' version and
// the current one), in the order of its argument parser.
var bexhomaOptions = []bexOption{
	{names: []string{"-aws", "--aws"}, isBool: true, why: "benchq does not know AWS EKS node groups; pin components to nodes with -rnn, -rnl and -rnb"},
	{names: []string{"-dbms", "--dbms"}, flag: "dbms"},
	{names: []string{"-db", "--debug"}, flag: "db"},
	{names: []string{"-sl", "--skip-loading"}, isBool: true, why: "benchq skips loading by itself when the SUT's persistent volume (-rst) already holds the data (docs/volumes.md); it never benchmarks an empty SUT"},
	{names: []string{"-ss", "--skip-shutdown"}, isBool: true, why: "use the action start instead of run: it deploys the SUTs and keeps them until benchq stop"},
	{names: []string{"-cx", "--context"}, why: "the deployer, not the CLI, talks to Kubernetes: start the stack with the kubeconfig and context it should use (docs/kubernetes.md)"},
	{names: []string{"-e", "--experiment"}, flag: "e"},
	{names: []string{"-d", "--detached"}, flag: "detach"},
	{names: []string{"-m", "--monitoring"}, flag: "m"},
	{names: []string{"-ma", "--monitoring-app"}, flag: "ma"},
	{names: []string{"-mc", "--monitoring-cluster"}, flag: "mc"},
	{names: []string{"-ms", "--max-sut"}, flag: "ms"},
	{names: []string{"-mse", "--max-sut-experiment"}, flag: "mse"},
	{names: []string{"-nc", "--num-config"}, flag: "nc"},
	{names: []string{"-ne", "--num-query-executors"}, flag: "ne"},
	{names: []string{"-nw", "--num-worker"}, flag: "nw"},
	{names: []string{"-nwr", "--num-worker-replicas"}, flag: "nwr"},
	{names: []string{"-nws", "--num-worker-shards"}, why: "benchq's clusters spread the hash slots evenly over the -nw masters; there is no shard count per worker (bexhoma uses it for Citus, which benchq's catalog does not have)"},
	{names: []string{"-nl", "--num-loading"}, why: "bexhoma itself no longer takes it; give the loader pods with -nlp"},
	{names: []string{"-nlp", "--num-loading-pods"}, flag: "nlp"},
	{names: []string{"-nlt", "--num-loading-threads"}, flag: "nlt"},
	{names: []string{"-nlf", "--num-loading-target-factors", "-xnlf", "--xnum-loading-target-factors"}, flag: "xnlf"},
	{names: []string{"-nsr", "--num-sut-replicas", "-xnsr", "--xnum-sut-replicas"}, why: "benchq deploys one SUT per configuration; the replicas of a clustered DBMS are -nwr"},
	{names: []string{"-nbp", "--num-benchmarking-pods"}, flag: "nbp"},
	{names: []string{"-nbt", "--num-benchmarking-threads"}, flag: "nbt"},
	{names: []string{"-nbf", "--num-benchmarking-target-factors", "-xnbf", "--xnum-benchmarking-target-factors"}, flag: "xnbf"},
	{names: []string{"-npp", "--num-pooling-pods", "-xnpp", "--xnum-pooling-pods"}, flag: "xnpp"},
	{names: []string{"-npi", "--num-pooling-in", "-xnpi", "--xnum-pooling-in"}, flag: "xnpi"},
	{names: []string{"-npo", "--num-pooling-out", "-xnpo", "--xnum-pooling-out"}, flag: "xnpo"},
	{names: []string{"-wl", "--workload", "-xwl", "--xworkload"}, flag: "xwl"},
	{names: []string{"-sf", "--scaling-factor"}, flag: "sf"},
	{names: []string{"-sfo", "--scaling-factor-operations", "-xop", "--xnum-operations"}, flag: "xop", only: "ycsb"},
	{names: []string{"-su", "--scaling-users"}, why: "bexhoma itself no longer takes it; give the benchmarking threads with -nbt"},
	{names: []string{"-sbs", "--scaling-batchsize", "-xsbs", "--xscaling-batchsize"}, flag: "xbs", only: "ycsb"},
	{names: []string{"-slg", "--scaling-logging", "-xli", "--xlogging-interval"}, flag: "xli"},
	{names: []string{"-xio", "--extra-insert-order"}, flag: "xio", only: "ycsb"},
	{names: []string{"-ltf", "--list-target-factors"}, why: "bexhoma itself no longer takes it; give the target factors with -xnbf (benchmarking) and -xnlf (loading)"},
	{names: []string{"-tb", "--target-base", "-xtb", "--xtarget-base"}, flag: "xtb"},
	{names: []string{"-xmet", "--xmax-execution-time"}, flag: "xmet", only: "ycsb"},
	{names: []string{"-sd", "--scaling-duration", "-xsd", "--xscaling-duration"}, flag: "xsd"},
	{names: []string{"-xkey", "--extra-keying"}, isBool: true, only: "benchbase", why: "benchq's TPC-C terminals send their next transaction at once, as Benchbase without keying; keying and think times are not implemented"},
	{names: []string{"-xconn", "--extra-new-connection"}, flag: "xconn", only: "benchbase"},
	{names: []string{"-xbatch", "--extra-batchsize"}, only: "benchbase", why: "benchq's TPC-C loader (docs/tpcc.md) sizes its own insert batches"},
	{names: []string{"-b", "--benchmark", "-xbt", "--xbenchmark-type"}, flag: "b", only: "benchbase"},
	{names: []string{"-t", "--timeout"}, why: "benchq bounds phases, not single queries: -timeout-shard (seconds a shard may run), -timeout-sut and -timeout-barrier"},
	{names: []string{"-lr", "--limit-ram"}, flag: "lr"},
	{names: []string{"-lc", "--limit-cpu"}, flag: "lc"},
	{names: []string{"-rr", "--request-ram"}, flag: "rr"},
	{names: []string{"-rc", "--request-cpu"}, flag: "rc"},
	{names: []string{"-rct", "--request-cpu-type"}, why: "benchq places components by node name (-rnn, -rnl, -rnb), not by node label"},
	{names: []string{"-rg", "--request-gpu"}, why: "no DBMS in benchq's catalog uses a GPU"},
	{names: []string{"-rgt", "--request-gpu-type"}, why: "no DBMS in benchq's catalog uses a GPU"},
	{names: []string{"-rst", "--request-storage-type"}, flag: "rst"},
	{names: []string{"-rss", "--request-storage-size"}, flag: "rss"},
	{names: []string{"-rsr", "--request-storage-remove"}, flag: "rsr"},
	{names: []string{"-rnn", "--request-node-name"}, flag: "rnn"},
	{names: []string{"-rnl", "--request-node-loading"}, flag: "rnl"},
	{names: []string{"-rnb", "--request-node-benchmarking"}, flag: "rnb"},
	{names: []string{"-mtn", "--multi-tenant-num"}, why: "benchq has no multi-tenant experiments: one database per SUT"},
	{names: []string{"-mtb", "--multi-tenant-by"}, why: "benchq has no multi-tenant experiments: one database per SUT"},
	{names: []string{"-mtv", "--multi-tenant-volume"}, isBool: true, why: "benchq has no multi-tenant experiments: one database per SUT"},
	{names: []string{"-tr", "--test-result"}, flag: "tr"},
	{names: []string{"--set"}, why: "a DBMS's settings are its catalog entry's (catalog/<dbms>.json, settings); benchq does not override them per experiment"},
}

// bindBexhoma adds bexhoma's other names of benchq's flags to fs (aliases:
// the same value) and returns the refused ones by name (without dashes).
func bindBexhoma(fs *flag.FlagSet, benchmark string) (refused map[string]bexOption) {
	refused = map[string]bexOption{}
	for _, o := range bexhomaOptions {
		for _, n := range o.names {
			name := strings.TrimLeft(n, "-")
			// Another benchmark's option is refused, unless this one has
			// the flag too (benchq tsdb's -xmet: its duration in seconds).
			if o.flag == "" || (o.only != "" && o.only != benchmark && fs.Lookup(o.flag) == nil) {
				refused[name] = o
				continue
			}
			if fs.Lookup(name) != nil {
				continue // benchq's own name
			}
			f := fs.Lookup(o.flag)
			if f == nil {
				panic("bexhoma option " + n + " names an unknown flag -" + o.flag)
			}
			fs.Var(f.Value, name, "alias of -"+o.flag)
		}
	}
	return refused
}

// refusedIn finds the first refused bexhoma option in args (up to "--") and
// says why it is refused, naming it as typed.
func refusedIn(args []string, refused map[string]bexOption, benchmark string) error {
	for _, a := range args {
		if a == "--" {
			return nil
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		o, ok := refused[name]
		if !ok {
			continue
		}
		typed, _, _ := strings.Cut(a, "=")
		if o.flag != "" { // a flag of the other benchmark
			return fmt.Errorf("%s is a %s option; benchq %s does not take it (run benchq %s -h for its flags)", typed, o.only, benchmark, benchmark)
		}
		return fmt.Errorf("%s (bexhoma's %s) is not supported: %s", typed, strings.Join(o.names, ", "), o.why)
	}
	return nil
}

// printRefused ends -h with bexhoma's options benchq refuses, and why.
func printRefused(w io.Writer, benchmark string) {
	fmt.Fprintf(w, "\nbexhoma's options that benchq %s refuses, and why:\n", benchmark)
	for _, o := range bexhomaOptions {
		if o.flag != "" || (o.only != "" && o.only != benchmark) {
			continue
		}
		fmt.Fprintf(w, "  %s\n    \t%s\n", strings.Join(o.names, ", "), o.why)
	}
}

// typedNames maps each flag the user set (by benchq's name) to the name it
// was typed under in args: -nlp, --num-loading-pods or -npp. Go's flag
// package takes -x and --x alike (bexhoma has both -dbms and --dbms), so
// the dashes are read from args.
func typedNames(fs *flag.FlagSet, args []string) map[string]string {
	dashes := map[string]string{}
	for _, t := range flagTokens(args) {
		dashes[t.name] = t.dashes
	}
	out := map[string]string{}
	fs.Visit(func(f *flag.Flag) {
		out[canonical(fs, f)] = cmp.Or(dashes[f.Name], "-") + f.Name
	})
	return out
}

// flagToken is a flag as args name it: its dashes and its name.
type flagToken struct{ dashes, name string }

// flagTokens are the flags args name, in order, up to "--" (a value after
// "=" left out; a value that looks like a flag, -1, is a token too, and
// names no flag).
func flagTokens(args []string) []flagToken {
	var out []flagToken
	for _, a := range args {
		if a == "--" {
			break
		}
		if d := a[:len(a)-len(strings.TrimLeft(a, "-"))]; d == "-" || d == "--" {
			name, _, _ := strings.Cut(a[len(d):], "=")
			out = append(out, flagToken{d, name})
		}
	}
	return out
}

// repeatable is a flag whose every use adds a value (-dbms A -dbms B,
// -threshold …): given twice it is meant so.
type repeatable interface{ repeats() }

// setTwice refuses an option that takes one value given more than once,
// under one name or two of bexhoma's (-xop 10 -sfo 5): the flag package
// keeps the last without a word. A repeatable flag (-dbms, -threshold) may
// repeat; a switch (-m) set twice is set.
func setTwice(fs *flag.FlagSet, args []string) error {
	first := map[string]string{} // benchq's name → as first typed
	for _, t := range flagTokens(args) {
		f := fs.Lookup(t.name)
		if f == nil {
			continue
		}
		if _, ok := f.Value.(repeatable); ok {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		c, typed := canonical(fs, f), t.dashes+t.name
		if was, ok := first[c]; ok {
			if strings.TrimLeft(was, "-") == t.name {
				hint := ""
				switch f.Value.(type) {
				case *intList, *floatList:
					hint = " (a list takes commas: 1,8)"
				}
				return fmt.Errorf("%s is given twice: give it once%s", typed, hint)
			}
			return fmt.Errorf("%s and %s are one option (-%s) under two of bexhoma's names: give it once", was, typed, c)
		}
		first[c] = typed
	}
	return nil
}

// canonical is benchq's name of a flag that may be one of its aliases.
func canonical(fs *flag.FlagSet, f *flag.Flag) string {
	if c, ok := strings.CutPrefix(f.Usage, "alias of -"); ok {
		return c
	}
	return f.Name
}

// closest suggests the defined flag nearest to an unknown one (at most two
// edits away), or "".
func closest(fs *flag.FlagSet, name string) string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return nearest.Name(name, names)
}
