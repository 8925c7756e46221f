package main

import (
	"encoding/json"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/plan"
)

// planOf is the plan (as JSON, its settings and notes included) that
// `benchq BENCHMARK ARGS run` would submit from the local backend, or the
// CLI's error (flags named as typed) if it refuses the arguments.
func planOf(t *testing.T, benchmark string, args ...string) (string, string) {
	t.Helper()
	var f expFlags
	fs := newExpFlagSet(&f, benchmark, io.Discard)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%s %v: %v", benchmark, args, err)
	}
	typed := typedNames(fs, args)
	if err := f.check(typed); err != nil {
		return "", err.Error()
	}
	req := f.request("c1", contracts.ActionRun, time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
	req.Notes = plan.Notes(req, contracts.BackendLocal)
	data, _ := json.Marshal(req)
	_, p, errs := plan.FromRequest(data, "c1")
	if len(errs) > 0 {
		return "", flagReason(errs, typed)
	}
	out, _ := json.Marshal(p)
	return string(out), ""
}

// No silent flags: every flag of `benchq ycsb`, `benchq benchbase` and
// `benchq tsdb` (with every alias) changes the plan on the local backend:
// its settings, or a note the dry run warns of and the summary lists, or
// is refused naming it; the few that act only on the CLI say what they do.
func TestEveryFlagActs(t *testing.T) {
	cliOnly := map[string]string{
		"e":         "names the experiment (its code); tested by the e2e experiments",
		"detach":    "returns once the experiment is accepted",
		"dry-run":   "prints the plan instead of submitting it",
		"db":        "prints the request on stderr before submitting it",
		"no-report": "run does not write the HTML report; the e2e workload runs use it",
	}
	onlyValue := map[string]string{ // benchbase's only choice: anything else is refused
		"benchbase/xwl": "tpcc", "benchbase/b": "tpcc",
		"tsdb/xtb": "0", // tsdb's load is its agents × series: any other target base is refused
	}
	samples := map[string][]string{
		"dbms": {"Redis"}, "sf": {"0.02"}, "xop": {"0.02"}, "xwl": {"c"}, "xio": {"ordered"}, "xtb": {"100"},
		"xnlf": {"2"}, "xnbf": {"2"}, "nlp": {"2"}, "nlt": {"8"}, "nbp": {"2"}, "nbt": {"8"}, "ne": {"2"},
		"nc": {"2"}, "ms": {"3"}, "mse": {"2"}, "xli": {"5"}, "xbs": {"100"}, "tr": nil, "max-errors": {"2"},
		"m": nil, "mc": nil, "ma": nil, "rc": {"4"}, "rr": {"1Gi"}, "lr": {"2Gi"}, "lc": {"2"},
		"rst": {"shared"}, "rss": {"1Gi"}, "rnn": {"n1"}, "rnl": {"n2"}, "rnb": {"n3"},
		"xsd": {"1"}, "xmet": {"30"}, "xconn": nil, "timeout-sut": {"99"}, "timeout-barrier": {"99"}, "timeout-shard": {"99"},
		"threshold": {"p99<5ms"}, "cost-per-hour": {"0.5"}, "xsat": nil, "xsatf": {"3"}, "xsats": {"30"}, "xsatp99": {"5"}, "xsatprec": {"10"}, "xsatmax": {"8"}, "xsh": {"1"},
	}
	// What a flag needs beside the baseline to mean something.
	context := map[string][]string{
		"ycsb/nw": {"-dbms", "Redis"}, "ycsb/nwr": {"-dbms", "Redis", "-nw", "3"}, "rsr": {"-rst", "shared"},
		"xnpp": {"-dbms", "PgBouncer"}, "xnpi": {"-dbms", "PgBouncer"}, "xnpo": {"-dbms", "PgBouncer"},
		"xsatf": {"-xsat"}, "xsats": {"-xsat"}, "xsatp99": {"-xsat"}, "xsatprec": {"-xsat"}, "xsatmax": {"-xsat"}, "xsh": {"-xsat"},
	}
	samples["nw"], samples["nwr"], samples["xnpp"], samples["xnpi"], samples["xnpo"], samples["rsr"] = []string{"4"}, []string{"1"}, []string{"2"}, []string{"64"}, []string{"32"}, nil
	// benchq tsdb's own (haggar's).
	samples["metrics"], samples["flush-interval"], samples["jitter"] = []string{"7"}, []string{"2s"}, []string{"3ms"}
	samples["spawn-interval"], samples["prefix"], samples["protocol"] = []string{"9ms"}, []string{"bench."}, []string{"remote-write"}
	for _, benchmark := range []string{plan.BenchmarkYCSB, plan.BenchmarkBenchbase, plan.BenchmarkTSDB} {
		var f expFlags
		fs := newExpFlagSet(&f, benchmark, io.Discard)
		base := []string{"-sf", "0.01"}
		switch benchmark {
		case plan.BenchmarkBenchbase:
			base = []string{"-sf", "1"}
			samples["sf"], samples["dbms"] = []string{"2"}, []string{"PgBouncer"}
		case plan.BenchmarkTSDB:
			base = []string{"-dbms", "VictoriaMetrics"}
			samples["dbms"] = []string{"Graphite"}
			context["tsdb/nw"], context["tsdb/nwr"] = []string{"-dbms", "Graphite"}, []string{"-dbms", "Graphite", "-nw", "3"}
		}
		fs.VisitAll(func(fl *flag.Flag) {
			name := canonical(fs, fl)
			t.Run(benchmark+" -"+fl.Name, func(t *testing.T) {
				if why, ok := cliOnly[name]; ok {
					t.Skipf("-%s acts on the CLI only: %s", name, why)
				}
				sample, ok := samples[name]
				only, isOnly := onlyValue[benchmark+"/"+name]
				if isOnly {
					sample = []string{only}
				} else if !ok {
					t.Fatalf("-%s: no sample value; add one so that this test can check that it acts", name)
				}
				ctx, ok := context[benchmark+"/"+name]
				if !ok {
					ctx = context[name]
				}
				args := append(append([]string(nil), base...), ctx...)
				if !slices.Contains(args, "-dbms") {
					args = append(args, "-dbms", "PostgreSQL")
				}
				before, beforeErr := planOf(t, benchmark, args...)
				after, afterErr := planOf(t, benchmark, append(append(args, "-"+fl.Name), sample...)...)
				switch {
				case afterErr != "" && beforeErr == "" && !strings.Contains(afterErr, "-"+name) && !strings.Contains(afterErr, "-"+fl.Name):
					t.Errorf("-%s %s is refused without being named: %s", fl.Name, strings.Join(sample, " "), afterErr)
				case afterErr != "":
					// refused, naming it (or what it needs, refused before it)
				case isOnly && before != after:
					t.Errorf("-%s %s, its only value, changed the plan", fl.Name, only)
				case !isOnly && before == after:
					t.Errorf("-%s %s is accepted and changes nothing: the plan, its settings and its notes are the same without it", fl.Name, strings.Join(sample, " "))
				}
			})
		})
	}
}

// Every option of bexhoma's ycsb.py and benchbase.py: an alias gives the
// same plan as benchq's name; a refused one fails naming itself and why.
func TestBexhomaOptions(t *testing.T) {
	for _, o := range bexhomaOptions {
		for _, benchmark := range []string{plan.BenchmarkYCSB, plan.BenchmarkBenchbase} {
			for _, n := range o.names {
				name := strings.TrimLeft(n, "-")
				applies := o.flag != "" && (o.only == "" || o.only == benchmark)
				if !applies {
					args := []string{benchmark, "-dbms", "PostgreSQL", n}
					if !o.isBool {
						args = append(args, "x")
					}
					code, _, errs := run(append(args, "-dry-run", "run")...)
					want := o.why
					if o.flag != "" {
						want = "is a " + o.only + " option"
					}
					if code != ExitUsage || !strings.Contains(errs, n) || !strings.Contains(errs, want) {
						t.Errorf("%s %s: exit %d, %q; want a usage error naming %s and %q", benchmark, n, code, errs, n, want)
					}
					continue
				}
				if name == o.flag || o.flag == "e" || o.flag == "detach" || o.flag == "db" {
					continue
				}
				var f expFlags
				fs := newExpFlagSet(&f, benchmark, io.Discard)
				fl := fs.Lookup(name)
				if fl == nil || canonical(fs, fl) != o.flag {
					t.Errorf("%s %s: not an alias of -%s", benchmark, n, o.flag)
				}
			}
		}
	}
}

// A rejected request names the flag as the user typed it, in plain words
// (exit 1, as the scheduler would reject it). A duration, a series count
// or an interval of 0 or less would read as "not given" in the request and
// plan the default: refused before, naming the flag (exit 2, as a malformed
// value is).
func TestErrorsNameTheFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"ycsb", "-dbms", "Redis", "-nlp", "0"}, ExitFailed, "-nlp: must be at least 1, got 0"},
		{[]string{"ycsb", "-dbms", "Redis", "--num-loading-pods", "0"}, ExitFailed, "--num-loading-pods: must be at least 1, got 0"},
		{[]string{"ycsb", "-dbms", "Redis", "-rr", "lots"}, ExitFailed, `-rr: "lots" is not a Kubernetes quantity`},
		{[]string{"ycsb", "-dbms", "Redis", "-rnn", "nodeB"}, ExitFailed, `-rnn: "nodeB" is not a Kubernetes node name`},
		{[]string{"ycsb", "-dbms", "Redis", "-rst", "Fast_SSD"}, ExitFailed, `-rst: "Fast_SSD" is not a Kubernetes storage class name`},
		{[]string{"ycsb", "-dbms", "PostgreSQL", "-nw", "3"}, ExitFailed, "-dbms: PostgreSQL has no cluster in benchq's catalog"},
		{[]string{"ycsb", "-dbms", "Redis", "-nw", "2"}, ExitFailed, "-dbms: RedisCluster needs at least 3 workers (-nw), got 2"},
		// benchq tsdb's haggar flags, in the request's units.
		{[]string{"tsdb", "-dbms", "VictoriaMetrics", "-protocol", "foo"}, ExitFailed, `-protocol: "foo" is not allowed`},
		{[]string{"tsdb", "-dbms", "VictoriaMetrics", "-flush-interval", "1ms"}, ExitFailed, "-flush-interval: must be at least 10 ms, got 1 ms"},
		{[]string{"tsdb", "-dbms", "VictoriaMetrics", "-jitter", "-1s"}, ExitFailed, "-jitter: must be at least 0 ms, got -1,000 ms"},
		{[]string{"tsdb", "-dbms", "Prometheus"}, ExitFailed, "-protocol: Prometheus does not ingest carbon; it takes remote-write (-protocol remote-write)"},
		// 0 is not the default.
		{[]string{"tsdb", "-dbms", "VictoriaMetrics", "-xmet", "0"}, ExitUsage, "-xmet 0: give the benchmarking duration in whole seconds, at least 1"},
		{[]string{"tsdb", "-dbms", "VictoriaMetrics", "-xsd", "0.001"}, ExitUsage, "-xsd 0.001: give the benchmarking duration in minutes, at least 1 second"},
		{[]string{"benchbase", "-dbms", "PostgreSQL", "-xsd", "-1"}, ExitUsage, "-xsd -1: give the benchmarking duration in minutes"},
		{[]string{"tsdb", "-dbms", "VictoriaMetrics", "-metrics", "0"}, ExitUsage, "-metrics 0: each agent writes at least one series"},
		{[]string{"tsdb", "-dbms", "VictoriaMetrics", "-flush-interval", "0s"}, ExitUsage, "-flush-interval 0s: give how often each series gets a point"},
		{[]string{"tsdb", "-dbms", "VictoriaMetrics", "-xtb", "100"}, ExitUsage, "-xtb 100: benchq tsdb has no target rate"},
		// The search's tuning flags change nothing without it.
		{[]string{"ycsb", "-dbms", "Redis", "-xsatf", "3", "-xsh", "5"}, ExitUsage, "-xsatf tunes the saturation search: add -xsat, or leave -xsatf out"},
		{[]string{"tsdb", "-dbms", "VictoriaMetrics", "-xsh", "5"}, ExitUsage, "-xsh tunes the saturation search: add -xsat"},
		{[]string{"ycsb", "-dbms", "Redis", "-xsat", "-xsatprec", "0"}, ExitUsage, "-xsatprec 0 is not a setting of the search (a request's 0 means its default, 5 %): give a value, or leave -xsatprec out"},
		{[]string{"ycsb", "-dbms", "Redis", "-xsat", "-xsatp99", "0", "-xsats", "0"}, ExitUsage, "-xsats 0 is not a setting"},
		{[]string{"ycsb", "-dbms", "Redis", "-xsat", "-xsh", "-1"}, ExitUsage, "-xsh -1: give how many minutes to hold the knee"},
	} {
		code, _, errs := run(append(c.args, "-dry-run", "run")...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want %d, %q", c.args, code, errs, c.code, c.want)
		}
	}
}

// -nw with one number is the request's workers; with a list, its
// workers_list: one configuration per number. A number twice is refused
// under the flag's name.
func TestWorkersListFromTheCLI(t *testing.T) {
	one, _ := planOf(t, plan.BenchmarkTSDB, "-dbms", "Graphite", "-nw", "2", "-nbt", "4", "-metrics", "5")
	if !strings.Contains(one, `"workers":2`) || strings.Contains(one, "workers_list") {
		t.Errorf("-nw 2: %s", one)
	}
	list, _ := planOf(t, plan.BenchmarkTSDB, "-dbms", "Graphite", "-nw", "1,2", "-cost-per-hour", "0.5", "-nbt", "4", "-metrics", "5")
	for _, want := range []string{`"workers_list":[1,2]`, `"cost_per_hour":0.5`, `"name":"Graphite-4-1-0-nw1-1"`, `"name":"Graphite-4-1-0-nw2-1"`} {
		if !strings.Contains(list, want) {
			t.Errorf("-nw 1,2: no %s in %s", want, list)
		}
	}
	if _, reason := planOf(t, plan.BenchmarkTSDB, "-dbms", "Graphite", "-nw", "2,2", "-nbt", "4", "-metrics", "5"); !strings.Contains(reason, "-nw") || !strings.Contains(reason, "twice") {
		t.Errorf("-nw 2,2: %q", reason)
	}
}
