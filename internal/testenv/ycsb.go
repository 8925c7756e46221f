package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/benchq/benchq/internal/cachedir"
)

// YCSBLib is the directory of the YCSB jars, built from the current sources
// (scripts/build-ycsb.sh is a no-op while they are unchanged), or
// $BENCHQ_YCSB_LIB as it is. Skips without java or maven, or fails with
// BENCHQ_YCSB_REQUIRED set (make test sets it: there, a missing tool is a
// broken bootstrap, not a reason to test nothing).
func YCSBLib(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("BENCHQ_YCSB_LIB"); d != "" {
		return d
	}
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			SkipUnlessRequired(t, "BENCHQ_YCSB_REQUIRED", "%s not installed", tool)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	script := filepath.Join(repoRoot(t), "scripts", "build-ycsb.sh")
	if out, err := exec.CommandContext(ctx, script).CombinedOutput(); err != nil {
		t.Fatalf("scripts/build-ycsb.sh: %v\n%s", err, out)
	}
	return cachedir.YCSBLib()
}

// repoRoot is the repository's root: the nearest directory above the
// test's working directory (its package) that holds go.mod.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// SkipUnlessRequired skips t, saying why, unless the environment variable
// required is set: then what is missing fails it.
func SkipUnlessRequired(t testing.TB, required, format string, args ...any) {
	t.Helper()
	if os.Getenv(required) != "" {
		t.Fatalf("%s is set, but "+format, append([]any{required}, args...)...)
	}
	t.Skipf("skipping: "+format, args...)
}
