package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/stack"
	"github.com/benchq/benchq/internal/testenv"
)

// fakeStack is a stack that benchq takes for up: a stack.json in a temp
// BENCHQ_HOME whose one service is a sleep process, and whose NATS and
// database addresses are a listener of the test (unless a real NATS is
// given). It tells whether a command touched it.
type fakeStack struct {
	home   string
	file   []byte
	exited chan struct{} // closed when the service process ends
	ln     net.Listener
}

func newFakeStack(t *testing.T, natsURL string) *fakeStack {
	t.Helper()
	f := &fakeStack{home: t.TempDir(), exited: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.ln = ln
	t.Cleanup(func() { _ = ln.Close() })
	if natsURL == "" {
		natsURL = "nats://" + ln.Addr().String()
	}
	service := exec.Command("sleep", "300")
	if err := service.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = service.Wait(); close(f.exited) }()
	t.Cleanup(func() { _ = service.Process.Kill(); <-f.exited })

	s := stack.Stack{NATSURL: natsURL, DBURL: "postgres://benchq@" + ln.Addr().String() + "/benchq",
		Procs: []stack.Proc{{Name: "scheduler", Pid: service.Process.Pid, Log: filepath.Join(f.home, "scheduler.log")}}}
	f.file, _ = json.MarshalIndent(s, "", "  ")
	if err := os.WriteFile(filepath.Join(f.home, "stack.json"), f.file, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// main runs benchq with BENCHQ_HOME set to the stack's home.
func (f *fakeStack) main(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	env := func(k string) string {
		if k == "BENCHQ_HOME" {
			return f.home
		}
		return ""
	}
	code = Main(ctx, args, &State{Env: env, Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

// untouched fails t if the stack file changed, its service was signalled
// or anything connected to the stack's addresses.
func (f *fakeStack) untouched(t *testing.T) {
	t.Helper()
	if data, err := os.ReadFile(filepath.Join(f.home, "stack.json")); !bytes.Equal(data, f.file) {
		t.Errorf("stack.json changed or removed (%v):\n%s", err, data)
	}
	select {
	case <-f.exited:
		t.Errorf("the stack's service process was stopped")
	default:
	}
	// A connection the command made waits in the listener's backlog.
	_ = f.ln.(*net.TCPListener).SetDeadline(time.Now().Add(50 * time.Millisecond))
	if c, err := f.ln.Accept(); err == nil {
		c.Close()
		t.Errorf("the command connected to the stack (NATS or results DB)")
	} else if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("accept: %v", err)
	}
}

// Every command prints its usage on stdout for -h and --help, wherever they
// stand, and does nothing else: with a stack up, down stops nothing, status
// and stop connect to nothing.
func TestHelpDoesNothing(t *testing.T) {
	cases := [][]string{
		{"help"}, {"-h"}, {"--help"},
		{"up", "-h"}, {"up", "--help"},
		{"down", "-h"}, {"down", "--help"}, {"down", "-help"},
		{"restart", "-h"}, {"restart", "scheduler", "--help"},
		{"status", "-h"}, {"status", "--help"},
		{"stop", "-h"}, {"stop", "-e", "c1", "--help"},
		{"summary", "-h"}, {"summary", "-e", "c1", "--help"},
		{"dashboard", "-h"}, {"dashboard", "-e", "c1", "-upload", "--help"},
		{"ycsb", "-h"}, {"ycsb", "run", "-dbms", "Redis", "--help"}, {"ycsb", "-dbms", "Redis", "-h", "run"},
		{"benchbase", "--help"}, {"benchbase", "start", "-h"},
		{"report", "-h"}, {"compare", "-h"}, {"export", "--help"}, {"list", "-h"},
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			s := newFakeStack(t, "")
			code, out, errs := s.main(t.Context(), args...)
			want := "usage: benchq " + args[0]
			switch args[0] {
			case "help", "-h", "--help":
				want = "usage: benchq <command>"
			}
			if code != ExitOK || !strings.HasPrefix(out, want) || errs != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 0 and stdout starting with %q", code, out, errs, want)
			}
			s.untouched(t)
		})
	}
}

// An unknown flag or a word a command does not take is a usage error: exit
// 2, one line naming it, before the command has done anything.
func TestUsageErrorsDoNothing(t *testing.T) {
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"--nosuch"}, `unknown command "--nosuch"`},
		{[]string{"up", "-nosuch"}, "unknown flag -nosuch"},
		{[]string{"down", "-nosuch"}, "unknown flag -nosuch"},
		{[]string{"down", "now"}, `down: unexpected "now"`},
		{[]string{"status", "--nosuch"}, "unknown flag --nosuch"},
		{[]string{"status", "all"}, `status: unexpected "all"`},
		{[]string{"restart", "-nosuch", "scheduler"}, "unknown flag -nosuch"},
		{[]string{"restart", "scheduler", "deployer"}, "usage: benchq restart"},
		{[]string{"stop", "-e", "c1", "-nosuch"}, "unknown flag -nosuch"},
		{[]string{"stop", "c1"}, `stop: unexpected "c1"`},
		{[]string{"summary", "-nosuch"}, "unknown flag -nosuch"},
		{[]string{"summary"}, "give -e CODE"},
		{[]string{"summary", "-e", "c1", "c2"}, `summary: unexpected "c2"`},
		{[]string{"summary", "-e", "c1", "-e", "c2"}, "one experiment only, got c1 and c2 (benchq compare takes two)"},
		{[]string{"report", "-e", "c1", "--experiment", "c2"}, "one experiment only, got c1 and c2"},
		{[]string{"summary", "-e", "c1", "-format", "csv"}, "summary: -format csv: give markdown or json"},
		{[]string{"export", "-e", "c1", "-o", "d", "-format", "xlsx"}, "export: -format xlsx: give csv or parquet"},
		{[]string{"compare", "-e", "c1", "-e", "c2", "-format", "pdf"}, "compare: -format pdf: give markdown or html"},
		{[]string{"dashboard"}, "give -e CODE"},
		{[]string{"report"}, "give -e CODE"},
		{[]string{"compare", "-e", "a"}, "give two experiments or more: benchq compare -e A -e B"},
		{[]string{"export", "-e", "a"}, "give -o DIR"},
		{[]string{"list", "all"}, `list: unexpected "all"`},
		{[]string{"dashboard", "-e", "c1", "c2"}, `dashboard: unexpected "c2"`},
		{[]string{"ycsb", "run", "-dbms", "Redis", "-nosuch"}, "unknown flag -nosuch"},
		{[]string{"ycsb", "run", "-dbms", "Redis", "-nlp", "1,x"}, `invalid value "1,x" for flag -nlp`},
		{[]string{"ycsb", "run", "-dbms", "Redis", "now"}, `got "run now"`},
		{[]string{"ycsb", "-dbms", "Redis", "run", "--", "-sf", "2"}, `got "run -sf 2"`},
		{[]string{"benchbase", "-dbms", "PostgreSQL", "load", "-dry-run", "run"}, `got "load run"`},
		{[]string{"ycsb", "-e", "Bench-A", "-dbms", "Redis", "run"}, `experiment code "Bench-A": use lower-case letters`},
		{[]string{"ycsb", "-dbms", "Redis", "-nbpp", "2", "run"}, "unknown flag -nbpp (did you mean -nbp?)"},
		{[]string{"ycsb", "-dbms", "Redis", "--monitorin", "run"}, "unknown flag --monitorin (did you mean --monitoring?)"},
		{[]string{"ycsb", "-dbms", "Redis", "--num-loading-podz", "2", "run"}, "unknown flag --num-loading-podz (did you mean --num-loading-pods?)"},
		{[]string{"ycsb", "-dbms", "Redis", "--context", "kind-a", "run"}, "--context (bexhoma's -cx, --context) is not supported: the deployer, not the CLI, talks to Kubernetes"},
		{[]string{"ycsb", "-dbms", "Redis", "-xconn", "run"}, "-xconn is a benchbase option; benchq ycsb does not take it"},
		{[]string{"benchbase", "-dbms", "PostgreSQL", "-b", "twitter", "run"}, "-b twitter: benchq's Benchbase runs tpcc only"},
		{[]string{"ycsb", "-dbms", "Redis", "--num-config", "0", "run"}, "--num-config 0: an experiment runs at least once"},
		{[]string{"ycsb", "-dbms", "Redis", "-ms", "-1", "run"}, "-ms -1: give the SUTs alive at once, or 0 for no limit"},
		{[]string{"ycsb", "-dbms", "Redis", "-timeout-shard", "5s", "run"}, `invalid value "5s" for flag -timeout-shard: want a whole number (seconds`},
		{[]string{"ycsb", "-dbms", "Redis", "-sf", "1x", "run"}, `invalid value "1x" for flag -sf: want a number (`},
		{[]string{"tsdb", "-dbms", "VictoriaMetrics", "-flush-interval", "1", "run"}, `invalid value "1" for flag -flush-interval: want a duration such as 500ms, 30s or 5m`},
		{[]string{"stop", "-wait", "2"}, `invalid value "2" for flag -wait: want a duration`},
		{[]string{"ycsb", "-dbms", "Redis", "--timeout-shard=5s", "run"}, `invalid value "5s" for flag --timeout-shard: want a whole number`},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Parallel()
			s := newFakeStack(t, "")
			code, out, errs := s.main(t.Context(), c.args...)
			if code != ExitUsage || !strings.Contains(errs, c.msg) || strings.Count(errs, "\n") != 1 || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and one line on stderr containing %q", code, out, errs, c.msg)
			}
			s.untouched(t)
		})
	}
}

// Flags after the action, as bexhoma's argparse takes them, make exactly
// the request that the same flags before it make: the requests published
// to a real NATS are compared.
func TestFlagsAfterTheActionMakeTheSameRequest(t *testing.T) {
	url := testenv.NATS(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	b := testenv.Bus(t, ctx, url)
	published := make(chan *nats.Msg, 8)
	if _, err := b.NC.ChanSubscribe(contracts.SubjRequest, published); err != nil {
		t.Fatal(err)
	}
	if err := b.NC.Flush(); err != nil {
		t.Fatal(err)
	}

	orders := map[string][]string{
		"before": {"ycsb", "-dbms", "Redis", "-sf", "0.1", "-nbp", "1,2", "-m", "--detach", "-e", "before", "run"},
		"after":  {"ycsb", "run", "-dbms", "Redis", "-sf", "0.1", "-nbp", "1,2", "-m", "--detach", "-e", "after"},
		"mixed":  {"ycsb", "-dbms", "Redis", "run", "-sf", "0.1", "-e", "mixed", "-nbp", "1,2", "--detach", "-m"},
	}
	// Without a scheduler nothing answers: each command follows its
	// experiment until its context ends.
	followCtx, stopFollowing := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stopFollowing()
	for _, args := range orders {
		s := newFakeStack(t, url)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, _, errs := s.main(followCtx, args...); code == ExitUsage {
				t.Errorf("%v: exit %d: %s", args, code, errs)
			}
		}()
	}

	requests := map[string]map[string]any{}
	for len(requests) < len(orders) {
		select {
		case m := <-published:
			var r map[string]any
			if err := json.Unmarshal(m.Data, &r); err != nil {
				t.Fatalf("request %s: %v", m.Data, err)
			}
			code, _ := r["code"].(string)
			if id, _ := r["id"].(string); orders[code] == nil || !strings.HasPrefix(id, code+".request.") || len(id) != len(code+".request.")+12 {
				t.Fatalf("unexpected request %s", m.Data)
			}
			for _, k := range []string{"code", "id", "ts"} {
				delete(r, k)
			}
			requests[code] = r
		case <-ctx.Done():
			t.Fatalf("only %d of %d requests published (%v)", len(requests), len(orders), requests)
		}
	}
	want, _ := json.Marshal(requests["before"])
	for _, wanted := range []string{`"action":"run"`, `"sf":0.1`, `"benchmarking_pods":[1,2]`, `"monitoring":{"sut":true}`} {
		if !strings.Contains(string(want), wanted) {
			t.Errorf("request without %s: %s", wanted, want)
		}
	}
	for _, order := range []string{"after", "mixed"} {
		if got, _ := json.Marshal(requests[order]); !bytes.Equal(got, want) {
			t.Errorf("flags %s the action:\n%s\nwant (flags before it):\n%s", order, got, want)
		}
	}
}

// --dry-run after the action plans as before it, and runs nothing.
func TestDryRunAfterTheAction(t *testing.T) {
	s := newFakeStack(t, "")
	_, before, _ := s.main(t.Context(), "benchbase", "-dbms", "PostgreSQL", "-nbp", "1,2", "--dry-run", "-e", "x", "run")
	code, after, errs := s.main(t.Context(), "benchbase", "run", "-dbms", "PostgreSQL", "--dry-run", "-nbp", "1,2", "-e", "x")
	if code != ExitOK || after != before || !strings.Contains(after, "Pods [[1, 2]]") {
		t.Errorf("exit %d (%s); flags after the action:\n%s\nbefore it:\n%s", code, errs, after, before)
	}
	s.untouched(t)
}
