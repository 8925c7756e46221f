package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchq credentials writes a .env only its owner reads, once.
func TestCredentialsWritesOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not", "made", "yet") // benchq credentials makes it (0700)
	run := func() (int, string) {
		var out, errb bytes.Buffer
		code := Main(t.Context(), []string{"credentials", dir}, &State{Env: func(string) string { return "" }, Stdout: &out, Stderr: &errb})
		return code, out.String() + errb.String()
	}
	if code, out := run(); code != ExitOK {
		t.Fatalf("exit %d: %s", code, out)
	}
	path := filepath.Join(dir, ".env")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf(".env mode %v, want 0600", fi.Mode().Perm())
	}
	first, _ := os.ReadFile(path)
	if !strings.Contains(string(first), "BENCHQ_NATS_SEED_AGENT=SU") || !strings.Contains(string(first), "BENCHQ_DB_PASSWORD=") {
		t.Errorf(".env lacks the agent's seed or the database password:\n%s", first)
	}
	code, out := run()
	if code != ExitFailed || !strings.Contains(out, "docker compose down -v") {
		t.Errorf("second run: exit %d, %q; want a refusal naming how to start over", code, out)
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(first, again) {
		t.Error("the second run replaced .env")
	}
}
