package main

import (
	"os"
	"path/filepath"
	"testing"
)

// A SUT's configuration directory that names a volume claims it; one that
// names none, or a stack without SUTs, claims nothing.
func TestVolumeClaims(t *testing.T) {
	home := t.TempDir()
	for dir, volume := range map[string]string{"suts/e1/Redis-1": "redis-ycsb", "suts/e2/PostgreSQL-1": ""} {
		if err := os.MkdirAll(filepath.Join(home, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if volume != "" {
			if err := os.WriteFile(filepath.Join(home, dir, "volume"), []byte(volume), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := volumeClaims(home)
	if len(got) != 1 || got["redis-ycsb"].String() != "e1 (Redis-1)" {
		t.Errorf("claims = %v, want redis-ycsb used by e1 (Redis-1)", got)
	}
	if got := volumeClaims(t.TempDir()); len(got) != 0 {
		t.Errorf("no SUTs: %v", got)
	}
}
