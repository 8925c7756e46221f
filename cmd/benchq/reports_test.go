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
	script := "#!/bin/sh\necho \"$*\" >> " + calls + "\nif [ \"$1\" = report ]; then echo \"$5\"; fi\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"BENCHQ_HOME": s.home, "BENCHQ_REPORTER": fake}
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
		if code != ExitOK || strings.TrimSpace(string(got)) != c.reporter || out != c.out || errs != "" {
			t.Errorf("benchq %v: exit %d, stdout %q, stderr %q, reporter called with %q; want %q, stdout %q",
				c.args, code, out, errs, got, c.reporter, c.out)
		}
	}
}
