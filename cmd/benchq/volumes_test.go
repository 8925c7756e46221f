package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/testenv"
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

// The volumes table on a real NATS: one "(none …)" row when there is no
// volume; a volume a SUT uses before its record exists listed as new, and
// no "(none …)" row then; recorded volumes beside it, by name. A bucket that
// cannot be read says so in a row, and the new volume is still listed.
func TestVolumeTable(t *testing.T) {
	url := testenv.NATS(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	home := t.TempDir()
	closed := testenv.Bus(t, ctx, url)
	closed.Close() // its buckets cannot be read
	b := testenv.Bus(t, ctx, url)
	firsts := func(rows [][]string) []string {
		var out []string
		for _, r := range rows {
			if len(r) != len(volumeColumns) {
				t.Errorf("row %v has %d cells, want %d", r, len(r), len(volumeColumns))
			}
			out = append(out, r[0]+"|"+r[3])
		}
		return out
	}
	if got := firsts(volumeTable(ctx, b.JS, home)); !slices.Equal(got, []string{"(none: -rst keeps a SUT's data on one)|"}) {
		t.Errorf("no volumes: %v", got)
	}
	claim := filepath.Join(home, "suts", "e1", "Redis-1")
	if err := os.MkdirAll(claim, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(claim, "volume"), []byte("redis-b"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := firsts(volumeTable(ctx, b.JS, home)); !slices.Equal(got, []string{"redis-b|false (new)"}) {
		t.Errorf("a new volume: %v", got)
	}
	kv, err := b.JS.KeyValue(ctx, contracts.KVVolumes)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := json.Marshal(contracts.VolumeEntry{DBMS: "Redis", Loaded: true})
	if _, err := kv.Put(ctx, "redis-a", rec); err != nil {
		t.Fatal(err)
	}
	if got := firsts(volumeTable(ctx, b.JS, home)); !slices.Equal(got, []string{"redis-a|true", "redis-b|false (new)"}) {
		t.Errorf("a recorded volume and a new one: %v", got)
	}
	if got := firsts(volumeTable(ctx, closed.JS, home)); len(got) != 2 || !strings.HasPrefix(got[0], "(unreadable: ") || got[1] != "redis-b|false (new)" {
		t.Errorf("an unreadable bucket: %v", got)
	}
}
