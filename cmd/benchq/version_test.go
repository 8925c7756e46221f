package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/benchq/benchq/internal/plan"
	"github.com/benchq/benchq/internal/version"
)

// stampFlag is the -X flag scripts/bootstrap.sh passes to go build.
const stampFlag = "-X github.com/benchq/benchq/internal/version.stamp="

// A binary built the way bootstrap builds it reports the stamped version,
// and the plans it makes carry it (the scheduler plans with the same code).
func TestVersionIsStampedAtBuild(t *testing.T) {
	repo, _ := filepath.Abs("../..")
	bin := filepath.Join(t.TempDir(), "benchq")
	const stamped = "v9.8.7-3-gabc1234-dirty"
	build := exec.Command("go", "build", "-ldflags", stampFlag+stamped, "-o", bin, "./cmd/benchq")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, arg := range []string{"--version", "version", "-version"} {
		out, err := exec.Command(bin, arg).Output()
		if err != nil || string(out) != "benchq "+stamped+"\n" {
			t.Errorf("benchq %s = %q, %v; want %q", arg, out, err, "benchq "+stamped+"\n")
		}
	}
}

func TestVersionInProcess(t *testing.T) {
	s := newFakeStack(t, "")
	code, out, errs := s.main(t.Context(), "--version")
	if code != ExitOK || out != "benchq "+version.String()+"\n" || errs != "" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	s.untouched(t)
	_, p, errs2 := plan.FromRequest([]byte(`{"schema_version":1,"dbms":["Redis"]}`), "c1")
	if len(errs2) > 0 || p.Version != version.String() {
		t.Errorf("plan version %q (errors %v); want %q", p.Version, errs2, version.String())
	}
}
