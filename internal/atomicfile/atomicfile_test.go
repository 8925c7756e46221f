package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteJSONAndReadBack(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	type rec struct {
		Name string `json:"name"`
		N    int    `json:"n"`
	}
	if err := WriteJSON(path, rec{"a", 1}, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(path, rec{"b", 2}, 0o644); err != nil { // replaces
		t.Fatal(err)
	}
	var got rec
	if err := ReadJSON(path, &got); err != nil || got != (rec{"b", 2}) {
		t.Fatalf("read back %+v, %v", got, err)
	}
	b, _ := os.ReadFile(path)
	if !strings.HasSuffix(string(b), "}\n") {
		t.Errorf("no final newline: %q", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary file left behind: %v", entries)
	}
}

func TestReadJSONErrors(t *testing.T) {
	dir := t.TempDir()
	var v map[string]any
	if err := ReadJSON(filepath.Join(dir, "missing.json"), &v); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want os.ErrNotExist", err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ReadJSON(bad, &v); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("corrupt file: %v, want an error naming %s", err, bad)
	}
}

func TestWriteIntoMissingDirFailsCleanly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "dir", "x.json")
	if err := Write(path, []byte("x"), 0o644); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("got %v, want an error naming %s", err, path)
	}
}

func TestReadSecretRefusesFilesOthersMayRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte("  s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadSecret(path, "token"); err != nil || string(b) != "s3cret" {
		t.Errorf("ReadSecret = %q, %v", b, err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSecret(path, "token"); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("group-readable: %v", err)
	}
	if _, err := ReadSecret(path+".missing", "token"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

// A link planted where the temporary file used to be (a fixed name) is not
// written through, and the file gets exactly the mode asked for.
func TestWriteDoesNotFollowAPlantedLink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("untouched"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ".env")
	if err := os.Symlink(victim, filepath.Join(dir, "..env.tmp")); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("SECRET=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "untouched" {
		t.Errorf("the planted link's target now holds %q", b)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v, mode %v", path, err, fi.Mode().Perm())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "..env.*.tmp")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
