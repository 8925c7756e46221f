package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, &State{Env: func(string) string { return "" }, Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

// The seed command of bexhoma's loading test case plans four configurations.
func TestDryRunPlansTheGrid(t *testing.T) {
	code, out, errs := run("ycsb", "-dbms", "PostgreSQL", "-nlp", "1,8", "-nlt", "64", "-nlf", "1,4", "-nbp", "1", "-nbt", "64", "-nbf", "2", "--dry-run", "run")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := "### Workflow\n\n#### Planned\n" +
		"* DBMS PostgreSQL-64-1-16384 - Pods [[1]]\n* DBMS PostgreSQL-64-1-65536 - Pods [[1]]\n" +
		"* DBMS PostgreSQL-64-8-16384 - Pods [[1]]\n* DBMS PostgreSQL-64-8-65536 - Pods [[1]]\n"
	if !strings.HasPrefix(out, want) {
		t.Errorf("got:\n%s\nwant prefix:\n%s", out, want)
	}
}

func TestDryRunRepetitionsAndPods(t *testing.T) {
	_, out, _ := run("ycsb", "-dbms", "PostgreSQL", "-nlp", "8", "-nbp", "1,8", "-xnbf", "2,3", "-nc", "2", "-dry-run", "run")
	if !strings.Contains(out, "* DBMS PostgreSQL-64-8-16384 - Pods [[1, 8, 1, 8], [1, 8, 1, 8]]\n") {
		t.Errorf("got:\n%s", out)
	}
}

func TestUsageErrors(t *testing.T) {
	cases := map[string]struct {
		args []string
		code int
		msg  string
	}{
		"unknown flag":    {[]string{"ycsb", "-nosuch", "1", "run"}, ExitUsage, "-nosuch"},
		"malformed list":  {[]string{"ycsb", "-dbms", "Redis", "-nlp", "1,x", "run"}, ExitUsage, "-nlp"},
		"no action":       {[]string{"ycsb", "-dbms", "Redis"}, ExitUsage, "run"},
		"unknown command": {[]string{"frobnicate"}, ExitUsage, "frobnicate"},
		"unknown dbms":    {[]string{"ycsb", "-dbms", "NoSuchDB", "-dry-run", "run"}, ExitFailed, `unknown DBMS "NoSuchDB"`},
		"stack not up":    {[]string{"ycsb", "-dbms", "Redis", "run"}, ExitNotReady, "make up"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Setenv("BENCHQ_HOME", t.TempDir())
			var out, errb bytes.Buffer
			code := Main(context.Background(), c.args, &State{Env: func(k string) string {
				if k == "BENCHQ_HOME" {
					return t.TempDir()
				}
				return ""
			}, Stdout: &out, Stderr: &errb})
			if code != c.code || !strings.Contains(errb.String(), c.msg) {
				t.Errorf("exit %d, stderr %q; want %d containing %q", code, errb.String(), c.code, c.msg)
			}
		})
	}
}
