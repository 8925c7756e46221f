package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/benchq/benchq/contracts"
)

// ycsbFlags binds bexhoma's flag names to a request. Lists are comma
// separated; -dbms may also be repeated.
type ycsbFlags struct {
	dbms                       listFlag
	sf, xop                    float64
	xwl, xio                   string
	xtb                        int
	xnlf, xnbf                 floatList
	nlp, nlt, nbp, nbt, ne     intList
	nc, ms, xli, xbs           int
	tr                         bool
	code                       string
	detach, dryRun             bool
	timeoutSUT, timeoutBarrier int
	timeoutShard               int
}

func newYCSBFlagSet(f *ycsbFlags, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("benchq ycsb", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Var(&f.dbms, "dbms", "DBMS to benchmark, comma separated or repeated (catalog names: Redis, PostgreSQL)")
	fs.Float64Var(&f.sf, "sf", 1, "scale factor: million rows to load")
	fs.Float64Var(&f.xop, "xop", 0, "million operations per benchmarking phase (default: sf)")
	fs.StringVar(&f.xwl, "xwl", "a", "YCSB workload a-f")
	fs.StringVar(&f.xio, "xio", "hashed", "insert order: hashed or ordered")
	fs.IntVar(&f.xtb, "xtb", 16384, "target base: ops/s per target factor (0 = unthrottled)")
	fs.Var(&f.xnlf, "xnlf", "loading target factors, comma separated (default 1)")
	fs.Var(&f.xnbf, "xnbf", "benchmarking target factors, comma separated (default 1)")
	fs.Var(&f.nlp, "nlp", "loader pods (shards), comma separated (default 1)")
	fs.Var(&f.nlt, "nlt", "loader threads in total, comma separated (default 64)")
	fs.Var(&f.nbp, "nbp", "benchmarker pods (shards), comma separated (default 1)")
	fs.Var(&f.nbt, "nbt", "benchmarker threads in total, comma separated (default 64)")
	fs.Var(&f.ne, "ne", "clients: benchmarking runs as this multiple of the benchmarker pods (default 1)")
	fs.IntVar(&f.nc, "nc", 1, "repetitions, each on a fresh SUT")
	fs.IntVar(&f.ms, "ms", 1, "SUTs alive at once")
	fs.IntVar(&f.xli, "xli", 10, "seconds between status intervals")
	fs.IntVar(&f.xbs, "xbs", 0, "insert batch size (JDBC)")
	fs.BoolVar(&f.tr, "tr", false, "test results (the Tests section)")
	fs.StringVar(&f.code, "e", "", "experiment code (default: unix time)")
	fs.BoolVar(&f.detach, "detach", false, "return once the experiment is accepted")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print the planned workflow and configurations; run nothing")
	// bexhoma's older names.
	fs.IntVar(&f.xtb, "tb", 16384, "alias of -xtb")
	fs.Var(&f.xnlf, "nlf", "alias of -xnlf")
	fs.Var(&f.xnbf, "nbf", "alias of -xnbf")
	fs.Float64Var(&f.xop, "sfo", 0, "alias of -xop")
	fs.StringVar(&f.xwl, "workload", "a", "alias of -xwl")
	fs.IntVar(&f.timeoutSUT, "timeout-sut", 0, "seconds a SUT may take to become ready")
	fs.IntVar(&f.timeoutBarrier, "timeout-barrier", 0, "seconds the shards of a phase may take to be READY")
	fs.IntVar(&f.timeoutShard, "timeout-shard", 0, "seconds a shard may run")
	return fs
}

// request builds the JSON request; validation is the scheduler's job (one
// place), the CLI only parses.
func (f *ycsbFlags) request(code string, now time.Time) contracts.Request {
	tb := f.xtb
	tr := f.tr
	r := contracts.Request{
		SchemaVersion: contracts.SchemaVersion, ID: code + ".request", Code: code, TS: &now,
		Benchmark: "ycsb", DBMS: f.dbms, SF: f.sf, Operations: f.xop, Workload: f.xwl, InsertOrder: f.xio,
		TargetBase: &tb, LoadingFactors: f.xnlf, BenchmarkingFactors: f.xnbf,
		LoadingPods: f.nlp, LoadingThreads: f.nlt, BenchmarkingPods: f.nbp, BenchmarkingThreads: f.nbt,
		Clients: f.ne, Repetitions: f.nc, MaxSUTs: f.ms, StatusInterval: f.xli, BatchSize: f.xbs, TestResults: &tr,
	}
	if f.timeoutSUT+f.timeoutBarrier+f.timeoutShard > 0 {
		r.Timeouts = &contracts.Timeouts{SUTReadyS: f.timeoutSUT, BarrierS: f.timeoutBarrier, ShardS: f.timeoutShard}
	}
	return r
}

func cmdYCSB(ctx context.Context, args []string, st *State) int {
	var f ycsbFlags
	fs := newYCSBFlagSet(&f, st.Stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage // the flag package already named the flag
	}
	rest := fs.Args()
	if len(rest) != 1 || rest[0] != "run" {
		st.errorf("ycsb: expected the action 'run' after the flags, got %q", strings.Join(rest, " "))
		return ExitUsage
	}
	if len(f.dbms) == 0 {
		st.errorf("ycsb: -dbms is required (e.g. -dbms Redis)")
		return ExitUsage
	}
	now := time.Now().UTC()
	code := f.code
	if code == "" {
		code = strconv.FormatInt(now.Unix(), 10)
	}
	req := f.request(code, now)
	data, _ := json.Marshal(req)
	if f.dryRun {
		return dryRun(st, code, data)
	}
	s, err := loadStack(st)
	if err != nil {
		st.errorf("%v", err)
		return ExitNotReady
	}
	return submitAndFollow(ctx, st, s, code, req.ID, data, f.detach)
}

type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
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
