package localdb

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testCtx is the context of one test: it ends with the test or after d.
func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// serverDir returns a fresh directory for a server that may run as another
// OS user: t.TempDir's parent is private to root, so open it for traversal.
func serverDir(t *testing.T, name string) string {
	t.Helper()
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(base, name)
}

func skipIfNotInstalled(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, ErrNotInstalled) {
		t.Skipf("skipping: %v", err)
	}
}
