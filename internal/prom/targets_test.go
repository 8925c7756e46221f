package prom

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestTargetsWriteRemove(t *testing.T) {
	t.Parallel()
	tg := Targets{Dir: filepath.Join(t.TempDir(), "targets")}
	g := Group{Targets: []string{"127.0.0.1:9187"}, Labels: map[string]string{LabelExperiment: "1234", LabelComponent: "sut"}}
	if err := tg.Write("sut-PostgreSQL-1", g); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(tg.Dir, "sut-PostgreSQL-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got []Group
	if err := json.Unmarshal(b, &got); err != nil || len(got) != 1 || got[0].Targets[0] != "127.0.0.1:9187" || got[0].Labels[LabelExperiment] != "1234" {
		t.Errorf("file_sd file %s: %+v, %v", b, got, err)
	}
	// Only the group's file is left: no temporary file lingers.
	if entries, _ := os.ReadDir(tg.Dir); len(entries) != 1 {
		t.Errorf("directory holds %d entries", len(entries))
	}
	if err := tg.Remove("sut-PostgreSQL-1"); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(tg.Dir); len(entries) != 0 {
		t.Errorf("directory holds %d entries after Remove", len(entries))
	}
	if err := tg.Remove("sut-PostgreSQL-1"); err != nil {
		t.Errorf("second Remove: %v", err)
	}
}

func TestTargetsRejects(t *testing.T) {
	t.Parallel()
	tg := Targets{Dir: t.TempDir()}
	for name, g := range map[string]Group{
		"../escape":  {Targets: []string{"127.0.0.1:1"}},
		"no-targets": {},
		"bad-label":  {Targets: []string{"127.0.0.1:1"}, Labels: map[string]string{"not-a-label": "x"}},
	} {
		if err := tg.Write(name, g); err == nil {
			t.Errorf("Write(%q, %+v) accepted", name, g)
		}
	}
}
