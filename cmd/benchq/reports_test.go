package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The reporter's commands through benchq: the stack's database URL is
// passed for the user, the report goes to $BENCHQ_HOME/reports/CODE.html
// by default and its path is printed. A script stands in for the reporter
// and records its arguments (the real one is tested in services/reporter
// and, through benchq, by the e2e experiments).
func TestReporterCommandsPassTheStacksDatabase(t *testing.T) {
	s := newFakeStack(t, "")
	calls := filepath.Join(t.TempDir(), "calls")
	fake := filepath.Join(t.TempDir(), "reporter")
	script := "#!/bin/sh\necho \"$BENCHQ_CLI: $*\" >> " + calls + "\nif [ \"$1\" = report ]; then echo \"$5\"; fi\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"BENCHQ_HOME": s.home, "BENCHQ_REPORTER": fake}
	// A reports directory an older benchq made for everyone to read.
	if err := os.MkdirAll(filepath.Join(s.home, "reports"), 0o755); err != nil {
		t.Fatal(err)
	}
	db := " --db postgres://benchq@" + s.ln.Addr().String() + "/benchq"
	report := filepath.Join(s.home, "reports", "c1.html")
	for _, c := range []struct {
		args     []string
		reporter string
		out      string
	}{
		{[]string{"report", "-e", "c1"}, "report -e c1 -o " + report + db, "HTML report of c1 (summary and plots; opens without network): " + report + "\n"},
		{[]string{"report", "-e", "c1", "-o", "x.html", "-png", "p"}, "report -e c1 -o x.html --png p" + db, "HTML report of c1 (summary and plots; opens without network): x.html\n"},
		{[]string{"compare", "-e", "a", "-e", "b"}, "compare --format markdown -e a -e b" + db, ""},
		{[]string{"export", "-e", "c1", "-o", "out", "-format", "parquet"}, "export -e c1 -o out --format parquet" + db, ""},
		{[]string{"list"}, "list" + db, ""},
	} {
		_ = os.Remove(calls)
		code, out, errs := runWith(t, env, c.args...)
		got, _ := os.ReadFile(calls)
		// BENCHQ_CLI=benchq: the reporter's hints then name benchq.
		if code != ExitOK || strings.TrimSpace(string(got)) != "benchq: "+c.reporter || out != c.out || errs != "" {
			t.Errorf("benchq %v: exit %d, stdout %q, stderr %q, reporter called with %q; want %q, stdout %q",
				c.args, code, out, errs, got, c.reporter, c.out)
		}
	}
	// The home's reports are the results database's figures: other users may not read them.
	if fi, err := os.Stat(filepath.Join(s.home, "reports")); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm() != 0o750 {
		t.Errorf("reports directory: mode %v, want 0750 (0755 without the bits for others)", fi.Mode().Perm())
	}
}

// The reporter benchq runs: BENCHQ_REPORTER; else the one next to benchq's
// binary (the bootstrap's link, so that a BENCHQ_HOME anywhere finds it),
// a stale link included (running it fails naming it); else the venv beside
// the stack's home.
func TestFindReporter(t *testing.T) {
	home, bin := t.TempDir(), t.TempDir()
	st := &State{Env: func(k string) string { return map[string]string{"BENCHQ_HOME": home}[k] }}
	fallback := filepath.Join(filepath.Dir(home), ".venv", "bin", "reporter")
	if got := findReporter(st, bin); got != fallback {
		t.Errorf("nothing next to benchq: %q, want %q", got, fallback)
	}
	link := filepath.Join(bin, "reporter")
	if err := os.Symlink(filepath.Join(t.TempDir(), "removed-venv", "reporter"), link); err != nil {
		t.Fatal(err)
	}
	if got := findReporter(st, bin); got != link {
		t.Errorf("a link next to benchq: %q, want %q", got, link)
	}
	st.Env = func(k string) string {
		return map[string]string{"BENCHQ_HOME": home, "BENCHQ_REPORTER": "/opt/r"}[k]
	}
	if got := findReporter(st, bin); got != "/opt/r" {
		t.Errorf("BENCHQ_REPORTER: %q", got)
	}
}
