package main

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// agentGolden is a command line the agent builds, pinned by the agent's own
// tests (one argument per line).
func agentGolden(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../services/driver-agent/testdata/ycsb-redis-run.golden")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func TestBareCommandSwapsMainClassAndHistogramDir(t *testing.T) {
	t.Parallel()
	in := agentGolden(t)
	orig := slices.Clone(in)
	got, err := bareCommand(in, "/tmp/bench/hdr")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(in, orig) {
		t.Error("bareCommand changed its input")
	}
	if len(got) != len(in) {
		t.Fatalf("len = %d, want %d", len(got), len(in))
	}
	var diff []string
	for i := range in {
		if got[i] != in[i] {
			diff = append(diff, in[i]+" -> "+got[i])
		}
	}
	want := []string{
		"io.benchq.ycsb.Launcher -> site.ycsb.Client",
		"hdrhistogram.output.path=/tmp/benchq-shard-1/ -> hdrhistogram.output.path=/tmp/bench/hdr/",
	}
	if !slices.Equal(diff, want) {
		t.Errorf("changed arguments:\n%s\nwant:\n%s", strings.Join(diff, "\n"), strings.Join(want, "\n"))
	}
}

func TestBareCommandRejectsUnknownCommands(t *testing.T) {
	t.Parallel()
	for name, cmd := range map[string][]string{
		"no launcher":           {"java", "-cp", "x", "site.ycsb.Client", "-p", "hdrhistogram.output.path=/a/"},
		"two launchers":         {"java", launcherClass, launcherClass, "-p", "hdrhistogram.output.path=/a/"},
		"no hdr path":           {"java", "-cp", "x", launcherClass, "-t"},
		"hdr path not after -p": {"java", launcherClass, "hdrhistogram.output.path=/a/"},
	} {
		if _, err := bareCommand(cmd, "/b"); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
