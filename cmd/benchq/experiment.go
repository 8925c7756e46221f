package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/plan"
	"github.com/benchq/benchq/internal/saturation"
	"github.com/benchq/benchq/internal/stack"
)

// expFlags binds bexhoma's flag names to a request. Lists are comma
// separated; -dbms may also be repeated. The same flags serve `benchq ycsb`
// and `benchq benchbase`; the scheduler (through plan.FromRequest) rejects
// combinations that make no sense, with the field named.
type expFlags struct {
	benchmark               string
	dbms                    listFlag
	sf, xop, xsd            float64
	xwl, xio                string
	xtb                     int
	xnlf, xnbf              floatList
	nlp, nlt, nbp, nbt, ne  intList
	nc, mse, xli, xbs, xmet int
	ms                      optInt // -ms: unset is the default (1), 0 is no limit
	tr                      bool
	thresholds              multiFlag // -threshold, repeated: k6's notation (p99<5ms)
	maxErrors               float64   // -max-errors: 0 = the plan's default
	m, mc, ma               bool
	rr, rc, lr, lc          string
	debug                   bool   // -db: print the request before submitting it
	suite                   string // -b: Benchbase's benchmark (tpcc only)
	rst, rss                string
	rsr                     bool
	rnn, rnl, rnb           string
	nw                      intList
	nwr                     int
	costPerHour             float64
	xnpp, xnpi, xnpo        intList
	xconn                   bool
	// The saturation search (docs/saturation.md): -xsat, its step factor,
	// step length, p99 bound, precision, steps and hold (minutes).
	xsat                       bool
	xsatf, xsatp99, xsatprec   float64
	xsats, xsatmax             int
	xsh                        float64
	code                       string
	detach, dryRun, noReport   bool
	refused                    map[string]bexOption // bexhoma's options benchq refuses, by name
	timeoutSUT, timeoutBarrier int
	timeoutShard               int
	// benchq tsdb: the metrics generators, in haggar's flags (docs/tsdb.md).
	protocol, prefix                     string
	metrics                              int
	flushInterval, jitter, spawnInterval time.Duration
}

// Actions after the flags, as in bexhoma.
const actionSummary = "summary"

var actions = []string{contracts.ActionRun, contracts.ActionStart, contracts.ActionLoad, actionSummary}

func newExpFlagSet(f *expFlags, benchmark string, out io.Writer) *flag.FlagSet {
	f.benchmark = benchmark
	fs := flag.NewFlagSet("benchq "+benchmark, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: benchq %s [flags] run|start|load|summary\n\n"+
			"run: load and benchmark; load: loading only; start: deploy the SUTs and keep them (benchq stop ends them);\n"+
			"summary: print the summary of -e CODE again.\n\nflags (bexhoma's names; its long names, e.g. --num-loading-pods, work too):\n", benchmark)
		fs.VisitAll(func(fl *flag.Flag) {
			if !strings.HasPrefix(fl.Usage, "alias of -") {
				printFlag(fs.Output(), fl)
			}
		})
		printRefused(fs.Output(), benchmark)
	}
	bb := benchmark == plan.BenchmarkBenchbase
	ts := benchmark == plan.BenchmarkTSDB
	xtb, sfHelp := plan.DefaultTargetBase, "scale factor: million rows to load"
	switch {
	case bb:
		xtb, sfHelp = plan.DefaultBenchbaseTargetBase, "scale factor: TPC-C warehouses"
	case ts:
		xtb, sfHelp = 0, "refused by benchq tsdb, which has no scale factor (the series are -nbt agents × -metrics per generator)"
	}
	fs.Var(&f.dbms, "dbms", "DBMS to benchmark, comma separated or repeated (catalog names: "+strings.Join(plan.BenchmarkDBMS(benchmark), ", ")+")")
	fs.Float64Var(&f.sf, "sf", 1, sfHelp)
	if ts {
		d := plan.DefaultTSDB
		fs.Float64Var(&f.xsd, "xsd", 0, "benchmarking duration in minutes (default 5)")
		fs.IntVar(&f.xmet, "xmet", 0, "benchmarking duration in whole seconds (instead of -xsd, in minutes)")
		fs.StringVar(&f.xwl, "xwl", "", "workload: haggar (the default; the only one)")
		fs.StringVar(&f.protocol, "protocol", d.Protocol, "how the generators write: carbon (plaintext over TCP) or remote-write (Prometheus remote write 1.0)")
		fs.IntVar(&f.metrics, "metrics", d.Metrics, "series per agent (haggar -metrics); -nbt and -nlt are the agents, -nbp and -nlp the generators")
		fs.DurationVar(&f.flushInterval, "flush-interval", time.Duration(d.FlushIntervalMS)*time.Millisecond, "a point of every series each interval (haggar -flush-interval)")
		fs.DurationVar(&f.jitter, "jitter", time.Duration(*d.JitterMS)*time.Millisecond, "each agent's random start delay, at most (haggar -jitter)")
		fs.DurationVar(&f.spawnInterval, "spawn-interval", time.Duration(*d.SpawnIntervalMS)*time.Millisecond, "between agents' starts (haggar -spawn-interval; its default is 10s)")
		fs.StringVar(&f.prefix, "prefix", d.Prefix, "generator g writes the series <prefix><g>.agent<i>.metric<j>")
	} else if bb {
		fs.Float64Var(&f.xsd, "xsd", 0, "benchmarking duration in minutes (default 5)")
		fs.StringVar(&f.suite, "b", "tpcc", "Benchbase's benchmark: tpcc (the only one benchq runs)")
		fs.BoolVar(&f.xconn, "xconn", false, "a new connection per transaction")
		fs.StringVar(&f.xwl, "xwl", "", "workload: tpcc (the default; the only one)")
	} else {
		fs.Float64Var(&f.xop, "xop", 0, "million operations per benchmarking phase (default: sf)")
		fs.Float64Var(&f.xsd, "xsd", 0, "the most a benchmarking phase may run, in minutes (YCSB's maxexecutiontime; it stops earlier when its operations are done)")
		fs.IntVar(&f.xmet, "xmet", 0, "the most a benchmarking phase may run, in seconds (-xsd in seconds; bexhoma's --xmax-execution-time; benchmarking phases only)")
		fs.StringVar(&f.xwl, "xwl", "", "workload: a-f (default a)")
		fs.StringVar(&f.xio, "xio", "", "insert order: hashed (default) or ordered")
		fs.IntVar(&f.xbs, "xbs", 0, "insert batch size (JDBC: PostgreSQL, PgBouncer)")
	}
	fs.IntVar(&f.xtb, "xtb", xtb, "target base: operations/s per target factor (0 = unthrottled)")
	fs.Var(&f.xnlf, "xnlf", "loading target factors, comma separated (default 1)")
	fs.Var(&f.xnbf, "xnbf", "benchmarking target factors, comma separated (default 1)")
	fs.Var(&f.nlp, "nlp", "loader pods (shards), comma separated (default 1)")
	fs.Var(&f.nlt, "nlt", "loader threads in total, comma separated (default 64; Benchbase 1; tsdb: agents, default -nbt's first)")
	fs.Var(&f.nbp, "nbp", "benchmarker pods (shards; tsdb: generators), comma separated (default 1)")
	fs.Var(&f.nbt, "nbt", "benchmarker threads (Benchbase: terminals; tsdb: agents) in total, comma separated (default 64; tsdb 100)")
	fs.Var(&f.ne, "ne", "clients: benchmarking runs as this multiple of the benchmarker pods, comma separated (default 1)")
	fs.IntVar(&f.nc, "nc", 1, "repetitions, each on a fresh SUT")
	fs.Var(&f.ms, "ms", "SUTs alive at once, across all running experiments; 0: no limit (default 1)")
	fs.IntVar(&f.mse, "mse", 0, "SUTs of this experiment alive at once (default: no bound of its own)")
	xliHelp := "seconds between status intervals (default 10; 1 with -xsat)"
	if benchmark == plan.BenchmarkTSDB {
		xliHelp = "seconds between status intervals (default 1: ingest is evaluated second by second)"
	}
	fs.IntVar(&f.xli, "xli", 0, xliHelp)
	fs.BoolVar(&f.tr, "tr", false, "test results (the Tests section)")
	fs.Var(&f.thresholds, "threshold", "a bound on every benchmarking phase's figure, repeated, as k6 writes them: p99<5ms, p99[READ]<=800us,\n"+
		"goodput>=0.95*target, throughput>1000, error_share<0.1% (latency from merged histograms); each is a result test and turns -tr on")
	fs.Float64Var(&f.maxErrors, "max-errors", 0, "percent of failed operations above which a phase is marked and its test fails (default 1)")
	fs.BoolVar(&f.m, "m", false, "monitor the SUT")
	fs.BoolVar(&f.mc, "mc", false, "monitor all components (cluster-wide)")
	fs.BoolVar(&f.ma, "ma", false, "collect application metrics of the SUT")
	fs.StringVar(&f.rc, "rc", "", "SUT CPU request, e.g. 4 or 500m")
	fs.StringVar(&f.rr, "rr", "", "SUT RAM request, e.g. 16Gi")
	fs.StringVar(&f.lr, "lr", "", "SUT RAM limit, e.g. 64Gi")
	fs.StringVar(&f.lc, "lc", "", "SUT CPU limit, e.g. 8 or 1500m")
	fs.BoolVar(&f.debug, "db", false, "print the request (JSON) on stderr before submitting it")
	fs.StringVar(&f.rst, "rst", "", "storage class of the SUT's persistent volume")
	fs.StringVar(&f.rss, "rss", "", "size of the SUT's volume, e.g. 50Gi (without -rst: an ephemeral-storage request)")
	fs.BoolVar(&f.rsr, "rsr", false, "remove the SUT's volume first (start from a clean copy)")
	fs.StringVar(&f.rnn, "rnn", "", "node for the SUT")
	fs.StringVar(&f.rnl, "rnl", "", "node for the loaders")
	fs.StringVar(&f.rnb, "rnb", "", "node for the benchmarkers")
	fs.Var(&f.nw, "nw", "workers of a clustered DBMS; a comma separated list (1,2,3) runs one configuration per number, compared in the summary's scaling table")
	fs.Float64Var(&f.costPerHour, "cost-per-hour", 0, "the price of one SUT node for an hour (any currency): cost columns beside the scaling table")
	fs.IntVar(&f.nwr, "nwr", 0, "replicas per worker of a clustered DBMS")
	fs.Var(&f.xnpp, "xnpp", "connection pool pods, comma separated (PgBouncer)")
	fs.Var(&f.xnpi, "xnpi", "pool inbound connections in total, comma separated")
	fs.Var(&f.xnpo, "xnpo", "pool outbound connections in total, comma separated")
	fs.BoolVar(&f.xsat, "xsat", false, "saturation search: from -xtb × -xnbf on -nbp shards, raise the offered load until a step fails, bisect to the knee (docs/saturation.md)")
	fs.Float64Var(&f.xsatf, "xsatf", 0, "saturation: offered load × this per passing step (default 2)")
	fs.IntVar(&f.xsats, "xsats", 0, "saturation: seconds per step (default 20)")
	fs.Float64Var(&f.xsatp99, "xsatp99", 0, "saturation: a step fails when its p99 exceeds this many ms (default: no bound)")
	fs.Float64Var(&f.xsatprec, "xsatprec", 0, "saturation: bisect until the first failing load is at most this percent above the last passing one (default 5)")
	fs.IntVar(&f.xsatmax, "xsatmax", 0, "saturation: at most this many steps (default 16)")
	fs.Float64Var(&f.xsh, "xsh", 0, "saturation: hold the knee this many minutes and judge its stability (default 0: no hold)")
	fs.StringVar(&f.code, "e", "", "experiment code (default: unix time); with 'summary': the experiment to show")
	fs.BoolVar(&f.detach, "detach", false, "return once the experiment is accepted")
	fs.BoolVar(&f.noReport, "no-report", false, "do not write the HTML report after run (it takes a few seconds; benchq report -e CODE writes it later)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print the planned workflow and configurations; run nothing")
	fs.IntVar(&f.timeoutSUT, "timeout-sut", 0, "seconds a SUT may take to become ready (default 120)")
	fs.IntVar(&f.timeoutBarrier, "timeout-barrier", 0, "seconds the shards of a phase may take to be READY (default 120)")
	fs.IntVar(&f.timeoutShard, "timeout-shard", 0, "seconds a shard may run (default: max(3600, 2 × the expected phase + 300))")
	f.refused = bindBexhoma(fs, benchmark)
	return fs
}

// printFlag prints one flag as flag.PrintDefaults does.
func printFlag(w io.Writer, fl *flag.Flag) {
	name, usage := flag.UnquoteUsage(fl)
	line := "  -" + fl.Name
	if name != "" {
		line += " " + name
	}
	line += "\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t")
	if d := fl.DefValue; d != "" && d != "0" && d != "false" && d != "[]" && !strings.Contains(usage, "default") {
		line += fmt.Sprintf(" (default %s)", d)
	}
	fmt.Fprintln(w, line)
}

// optInt is an int flag that knows whether it was given.
type optInt struct {
	set bool
	v   int
}

func (o *optInt) String() string {
	if o == nil || !o.set {
		return ""
	}
	return strconv.Itoa(o.v)
}

func (o *optInt) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is not an integer", s)
	}
	o.set, o.v = true, n
	return nil
}

// ptr is the value, or nil when not given.
func (o optInt) ptr() *int {
	if !o.set {
		return nil
	}
	v := o.v
	return &v
}

// request builds the JSON request, without its id (each submission draws
// one: contracts.RequestID); validation is the scheduler's job (one place),
// the CLI only parses.
func (f *expFlags) request(code, action string, now time.Time) contracts.Request {
	tb := f.xtb
	tr := f.tr
	r := contracts.Request{
		SchemaVersion: contracts.SchemaVersion, Code: code, TS: &now, Action: action,
		Benchmark: f.benchmark, DBMS: f.dbms, SF: f.sf, Operations: f.xop, Workload: f.xwl, InsertOrder: f.xio,
		TargetBase: &tb, LoadingFactors: f.xnlf, BenchmarkingFactors: f.xnbf,
		LoadingPods: f.nlp, LoadingThreads: f.nlt, BenchmarkingPods: f.nbp, BenchmarkingThreads: f.nbt,
		Clients: f.ne, Repetitions: f.nc, MaxSUTs: f.ms.ptr(), MaxSUTsExperiment: f.mse, StatusInterval: f.xli, BatchSize: f.xbs, TestResults: &tr,
		WorkerReplicas: f.nwr, CostPerHour: f.costPerHour, PoolPods: f.xnpp, PoolInbound: f.xnpi, PoolOutbound: f.xnpo,
		DurationS: int(math.Round(f.xsd * 60)), NewConnection: f.xconn,
	}
	switch len(f.nw) {
	case 0:
	case 1:
		r.Workers = f.nw[0]
	default:
		r.WorkersList = f.nw
	}
	if f.xmet > 0 {
		r.DurationS = f.xmet
	}
	if f.benchmark == plan.BenchmarkTSDB {
		jitter, spawn := int(f.jitter.Milliseconds()), int(f.spawnInterval.Milliseconds())
		r.TSDB = &contracts.TSDB{Protocol: f.protocol, Metrics: f.metrics, FlushIntervalMS: int(f.flushInterval.Milliseconds()),
			JitterMS: &jitter, SpawnIntervalMS: &spawn, Prefix: f.prefix}
	}
	r.Thresholds, _ = f.parseThresholds() // check refused a bad one
	if len(r.Thresholds) > 0 {
		tr = true
	}
	if f.maxErrors != 0 {
		me := f.maxErrors
		r.ErrorShareLimit = &me
	}
	if f.xsat {
		r.Saturation = &contracts.Saturation{StepFactor: f.xsatf, StepS: f.xsats, MaxP99MS: f.xsatp99, Precision: f.xsatprec,
			MaxSteps: f.xsatmax, HoldS: int(math.Round(f.xsh * 60))}
	}
	if f.m || f.mc || f.ma {
		r.Monitoring = &contracts.Monitoring{SUT: f.m, Cluster: f.mc, Application: f.ma}
	}
	if f.rc+f.rr+f.lr+f.lc != "" {
		r.Resources = &contracts.Resources{RequestCPU: f.rc, RequestMemory: f.rr, LimitMemory: f.lr, LimitCPU: f.lc}
	}
	if f.rst != "" || f.rss != "" || f.rsr {
		r.Storage = &contracts.Storage{Class: f.rst, Size: f.rss, Remove: f.rsr}
	}
	if f.rnn+f.rnl+f.rnb != "" {
		r.Nodes = &contracts.Nodes{SUT: f.rnn, Loading: f.rnl, Benchmarking: f.rnb}
	}
	if f.timeoutSUT+f.timeoutBarrier+f.timeoutShard > 0 {
		r.Timeouts = &contracts.Timeouts{SUTReadyS: f.timeoutSUT, BarrierS: f.timeoutBarrier, ShardS: f.timeoutShard}
	}
	return r
}

// check refuses values the request cannot say, naming the flag as typed.
func (f *expFlags) check(typed map[string]string) error {
	name := func(flag string) string {
		if t, ok := typed[flag]; ok {
			return t
		}
		return "-" + flag
	}
	given := func(flag string) bool { _, ok := typed[flag]; return ok }
	switch {
	case f.nc < 1:
		return fmt.Errorf("%s %d: an experiment runs at least once (the number of repetitions, each on a fresh SUT)", name("nc"), f.nc)
	case f.benchmark == plan.BenchmarkYCSB && f.xwl != "" && !slices.Contains(plan.YCSBWorkloads, f.xwl) &&
		f.xwl != plan.WorkloadTPCC && f.xwl != plan.WorkloadHaggar: // those: the plan's check names the command that runs them
		return fmt.Errorf("%s %s: YCSB's core workloads are %s", name("xwl"), f.xwl, strings.Join(plan.YCSBWorkloads, ", "))
	case f.sf <= 0 && f.benchmark != plan.BenchmarkTSDB: // tsdb does not use it
		// 0 would read as "not given" in the request and plan SF 1.
		return fmt.Errorf("%s %g: the scale factor must be more than 0", name("sf"), f.sf)
	case f.ms.set && f.ms.v < 0:
		return fmt.Errorf("%s %d: give the SUTs alive at once, or 0 for no limit", name("ms"), f.ms.v)
	case f.suite != "" && f.suite != "tpcc":
		return fmt.Errorf("%s %s: benchq's Benchbase runs tpcc only (YCSB is benchq ycsb)", name("b"), f.suite)
	case f.xsd > 0 && f.xmet > 0:
		return fmt.Errorf("%s and %s both bound a benchmarking phase: give one", name("xsd"), name("xmet"))
	case f.benchmark != plan.BenchmarkYCSB && given("xsd") && f.xsd*60 < 0.5: // rounds to 0 seconds, "not given": the default (YCSB's -xsd 0 is no limit)
		return fmt.Errorf("%s %g: give the benchmarking duration in minutes, at least 1 second (%s in seconds)", name("xsd"), f.xsd, name("xmet"))
	case f.benchmark != plan.BenchmarkYCSB && given("xmet") && f.xmet < 1:
		return fmt.Errorf("%s %d: give the benchmarking duration in whole seconds, at least 1", name("xmet"), f.xmet)
	case f.benchmark == plan.BenchmarkTSDB && given("sf"):
		return fmt.Errorf("%s %g: benchq tsdb has no scale factor; its series are -nbt agents × -metrics per generator", name("sf"), f.sf)
	case f.benchmark == plan.BenchmarkTSDB && given("xtb") && f.xtb != 0:
		return fmt.Errorf("%s %d: benchq tsdb has no target rate; its load is -nbt agents × -metrics series, a point each -flush-interval", name("xtb"), f.xtb)
	case f.benchmark == plan.BenchmarkTSDB && f.metrics < 1:
		return fmt.Errorf("%s %d: each agent writes at least one series", name("metrics"), f.metrics)
	case f.xsh < 0: // the request's hold_s would name it in seconds
		return fmt.Errorf("%s %g: give how many minutes to hold the knee, 0 for no hold", name("xsh"), f.xsh)
	case f.benchmark == plan.BenchmarkTSDB && f.flushInterval <= 0:
		return fmt.Errorf("%s %v: give how often each series gets a point, e.g. 1s", name("flush-interval"), f.flushInterval)
	}
	if f.xsat {
		// 0 is what a request leaves out for the default: typed, it would be
		// replaced by the default without a word.
		d := saturation.Defaults
		for _, z := range []struct {
			flag, def string
			zero      bool
		}{
			{"xsatf", fmt.Sprint(d.StepFactor), f.xsatf == 0},
			{"xsats", fmt.Sprintf("%d s", d.StepS), f.xsats == 0},
			{"xsatprec", fmt.Sprintf("%g %%", d.Precision), f.xsatprec == 0},
			{"xsatmax", fmt.Sprint(d.MaxSteps), f.xsatmax == 0},
		} {
			if z.zero && given(z.flag) {
				return fmt.Errorf("%s 0 is not a setting of the search (a request's 0 means its default, %s): give a value, or leave %s out", name(z.flag), z.def, name(z.flag))
			}
		}
	} else {
		// They tune the search only: without it they would change nothing.
		for _, flag := range []string{"xsatf", "xsats", "xsatp99", "xsatprec", "xsatmax", "xsh"} {
			if given(flag) {
				return fmt.Errorf("%s tunes the saturation search: add %s, or leave %s out", name(flag), name("xsat"), name(flag))
			}
		}
	}
	if _, err := f.parseThresholds(); err != nil {
		return fmt.Errorf("%s %v", name("threshold"), err)
	}
	return nil
}

// parseThresholds reads every -threshold (plan.ParseThreshold); the error
// is the first one's that does not parse.
func (f *expFlags) parseThresholds() ([]contracts.Threshold, error) {
	var out []contracts.Threshold
	for _, text := range f.thresholds {
		t, err := plan.ParseThreshold(text)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// backendOf is the deployer's backend: the running stack's (recorded at
// benchq up), else BENCHQ_BACKEND as the deployer would read it, local by
// default.
func backendOf(st *State) string {
	if s, _ := stack.Load(st); s != nil && s.Backend != "" {
		return s.Backend
	}
	if b := st.Env("BENCHQ_BACKEND"); b != "" {
		return b
	}
	return contracts.BackendLocal
}

// cmdExperiment is `benchq ycsb|benchbase [flags] ACTION`.
func cmdExperiment(ctx context.Context, benchmark string, args []string, st *State) int {
	var f expFlags
	fs := newExpFlagSet(&f, benchmark, st.Stderr)
	if err := refusedIn(args, f.refused, benchmark); err != nil {
		st.Errorf("%s: %v", benchmark, err)
		return ExitUsage
	}
	if rc, done := parseArgs(fs, args, st); done {
		return rc
	}
	if err := setTwice(fs, args); err != nil {
		st.Errorf("%s: %v", benchmark, err)
		return ExitUsage
	}
	typed := typedNames(fs, args)
	if err := f.check(typed); err != nil {
		st.Errorf("%s: %v", benchmark, err)
		return ExitUsage
	}
	rest := fs.Args()
	if len(rest) != 1 || !slices.Contains(actions, rest[0]) {
		st.Errorf("%s: expected one action after the flags (%s), got %q", benchmark, strings.Join(actions, ", "), strings.Join(rest, " "))
		return ExitUsage
	}
	action := rest[0]
	if action == actionSummary {
		if f.code == "" {
			st.Errorf("%s summary: which experiment? give -e CODE", benchmark)
			return ExitUsage
		}
		if other := experimentBenchmark(ctx, st, f.code); other != "" && other != benchmark {
			st.Errorf("note: %s is a %s experiment, not %s (benchq %s summary -e %s); its summary follows", f.code, other, benchmark, other, f.code)
		}
		return cmdSummary(ctx, []string{"-e", f.code}, st)
	}
	if len(f.dbms) == 0 {
		st.Errorf("%s: -dbms is required (e.g. -dbms %s)", benchmark, map[bool]string{true: "PostgreSQL", false: "Redis"}[benchmark == plan.BenchmarkBenchbase])
		return ExitUsage
	}
	now := time.Now().UTC()
	code := f.code
	if code != "" && !contracts.CodePattern.MatchString(code) {
		// The scheduler could answer such a request only under a code of
		// its own choosing, which the CLI would not be waiting on.
		st.Errorf("experiment code %q: use lower-case letters, digits and '-', at most 40, starting with a letter or digit", code)
		return ExitUsage
	}
	if code == "" {
		code = contracts.Code(now, "")
	}
	req := f.request(code, action, now)
	req.ID = contracts.RequestID(code, contracts.RandomSuffix()) // this submission's
	req.Notes = plan.Notes(req, backendOf(st))
	data, _ := json.Marshal(req)
	if f.debug {
		fmt.Fprintf(st.Stderr, "request: %s\n", data)
	}
	// The scheduler checks the request again (JSON clients have only it);
	// here the errors can name the flags as they were typed.
	_, p, errs := plan.FromRequest(data, code)
	if len(errs) > 0 {
		st.Errorf("the request would be rejected: %s", flagReason(errs, typed))
		return ExitFailed
	}
	if f.dryRun {
		return dryRun(st, p) // plans only: it does not look at the stack
	}
	for _, n := range req.Notes {
		st.Errorf("warning: %s", n)
	}
	s, err := stack.Load(st)
	if err != nil {
		st.Errorf("%v", err)
		return ExitNotReady
	}
	return submitAndFollow(ctx, st, s, code, req.ID, data, f.detach || action == contracts.ActionStart, !f.noReport)
}

type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) repeats()       {}
func (l *listFlag) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

type intList []int

func (l *intList) String() string { return fmt.Sprint([]int(*l)) }
func (l *intList) Set(v string) error {
	*l = nil
	for _, p := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return fmt.Errorf("%q is not an integer (expected a comma separated list such as 1,8)", p)
		}
		*l = append(*l, n)
	}
	return nil
}

type floatList []float64

func (l *floatList) String() string { return fmt.Sprint([]float64(*l)) }
func (l *floatList) Set(v string) error {
	*l = nil
	for _, p := range strings.Split(v, ",") {
		n, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return fmt.Errorf("%q is not a number (expected a comma separated list such as 1,4)", p)
		}
		*l = append(*l, n)
	}
	return nil
}
