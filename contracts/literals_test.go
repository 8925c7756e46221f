package contracts

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// protocolLiterals are the ways a piece of the protocol gets spelled by
// hand. Outside this package (Go) and the module that loads its JSON files
// (Python), none may appear in code: a subject, stream, bucket, durable or
// status changes here, once.
var protocolLiterals = []struct {
	what string
	re   *regexp.Regexp
}{
	{"a subject, stream or KV bucket name", regexp.MustCompile(`benchq\.(experiments|exp|jobs|results)\b|BENCHQ_(REQUESTS|EVENTS|JOBS|RESULTS)\b|benchq_(experiments|volumes|agents)\b`)},
	{"a subject suffix", regexp.MustCompile(`["'][^"']*\.(sut|phase|barrier|driver)\.(ready|failed|removed|go|started|done|skipped|ended)["']`)},
	{"a durable consumer name", regexp.MustCompile(`["'](scheduler-requests|scheduler-events|scheduler-results|deployer-drivers|collector-events|collector-results)["']`)},
	{"a status or kind", regexp.MustCompile(`(==|!=)\s*["'](running|done|failed|cancelled|skipped|started|simulated|load|run)["']|["'](running|done|failed|cancelled|skipped|started|simulated)["']\s*(==|!=)|\b(status|kind)\s*(=|<>|!=)\s*'(running|done|failed|cancelled|skipped|started|simulated|ok|load|run)'`)},
}

// TestProtocolIsSpelledOnlyInContracts keeps protocol names out of hand-written literals.
func TestProtocolIsSpelledOnlyInContracts(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard", "*.go", "*.py", "*.sh").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): nothing to search", err)
	}
	exempt := regexp.MustCompile(`^contracts/|benchq_reporter/contracts\.py$|_test\.go$|/tests/|^e2e/|^docs/`)
	searched := 0
	for _, f := range strings.Fields(string(out)) {
		if exempt.MatchString(f) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue // deleted in the working tree
		}
		searched++
		for n, line := range strings.Split(string(b), "\n") {
			if c := strings.TrimSpace(line); strings.HasPrefix(c, "//") || strings.HasPrefix(c, "#") || strings.HasPrefix(c, ">>>") {
				continue // prose (and a docstring's example for users) may name them
			}
			for _, l := range protocolLiterals {
				if l.re.MatchString(line) {
					t.Errorf("%s:%d: %s spelled by hand (take it from contracts): %s", f, n+1, l.what, strings.TrimSpace(line))
				}
			}
		}
	}
	if searched < 100 {
		t.Errorf("searched only %d files: the search is broken", searched)
	}
}

// The patterns must catch what they are for, or the test above proves nothing.
func TestProtocolLiteralsCatchHandSpelling(t *testing.T) {
	for _, line := range []string{
		`js.Publish(ctx, "benchq.exp."+code+".phase.done", b)`,
		`sub := code + ".sut.ready"`,
		`Durable: "scheduler-events",`,
		`if st.Status == "running" {`,
		`if kind != 'load':`,
		`WHERE status = 'failed'`,
		`kv, _ := js.KeyValue(ctx, "benchq_agents")`,
	} {
		caught := false
		for _, l := range protocolLiterals {
			caught = caught || l.re.MatchString(line)
		}
		if !caught {
			t.Errorf("not caught: %s", line)
		}
	}
}
