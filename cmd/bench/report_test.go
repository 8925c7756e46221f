package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output:\n%s", path, got)
	}
}

func report(ms []measurement) []byte {
	var b bytes.Buffer
	writeRowHeader(&b)
	for _, m := range ms {
		writeRow(&b, m)
	}
	_, why := moreRounds(pairedOverheads(ms), 2, len(pairedOverheads(ms)), 40, time.Hour, time.Minute)
	writeSummary(&b, ms, 5, 2, why)
	return b.Bytes()
}

func withServers(m measurement) measurement {
	m.NATS, m.Redis = 30*time.Millisecond, 7*time.Second
	if m.Way == agent {
		m.AgentStart, m.Wall = 10*time.Millisecond, 13500*time.Millisecond
	}
	return m
}

func TestReportWithinTheLimit(t *testing.T) {
	t.Parallel()
	golden(t, "report-within.golden.txt", report([]measurement{
		withServers(run(1, agent, 10.6, 10.5)), withServers(run(1, bare, 10.3, 10.3)),
		withServers(run(2, bare, 10.1, 10.1)), withServers(run(2, agent, 10.4, 10.3)),
		withServers(run(3, agent, 10.5, 10.44)), withServers(run(3, bare, 10.2, 10.2)),
	}))
}

func TestReportOverTheLimit(t *testing.T) {
	t.Parallel()
	golden(t, "report-over.golden.txt", report([]measurement{
		withServers(run(1, agent, 12.0, 11.9)), withServers(run(1, bare, 10.0, 10.0)),
	}))
}

func TestDecided(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{
		{-2, 4.9, "all of it within 5 %."},
		{5.1, 9, "all of it over 5 %."},
		{-5.2, 9.9, "the range straddles 5 %"},
	} {
		if got := decided(c.lo, c.hi, 5); !strings.HasPrefix(got, c.want) {
			t.Errorf("decided(%g, %g) = %q, want %q...", c.lo, c.hi, got, c.want)
		}
	}
}
