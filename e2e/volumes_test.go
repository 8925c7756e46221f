package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchq/benchq/contracts"
)

// Persistent volumes on the embedded stack. Four small PostgreSQL
// experiments on one volume (same DBMS, use case and scale factor):
//  1. -rst local, stopped in the middle of its loading phase: the volume is
//     not marked loaded;
//  2. -rst local: loads again (the half-loaded volume emptied first) and
//     marks it loaded;
//  3. -rst local: skips loading; the SUT holds exactly the loaded rows when
//     it is ready, the summary says why loading was skipped, and the
//     read-only benchmark finds every row (no failed operation);
//  4. -rst local -rsr: starts from a clean copy and loads again.
//
// Then `benchq volumes` lists it, and `benchq volumes rm` removes it.
func (s *stack) volumeExperiments(t *testing.T) {
	const rows = 10000 // -sf 0.01
	// -xtb 2000 paces loading (10,000 rows in about 5 s), so that stopping
	// experiment 1 two seconds in interrupts it.
	flags := []string{"-dbms", "PostgreSQL", "-sf", "0.01", "-xop", "0.005", "-xwl", "c", "-xtb", "2000", "-nlt", "2", "-nbt", "2", "-rst", "local", "-tr"}
	const volume = "bq-postgresql-ycsb-0.01"
	base := time.Now().Unix()
	type result struct {
		code   string
		end    contracts.ExperimentEnd
		ready  contracts.SUTReady
		rows   int64 // in the SUT at sut.ready
		loaded bool  // its loading phase ran (not skipped)
		out    string
	}
	run := func(n int, extra []string, onLoadStarted func(code string)) result {
		t.Helper()
		r := result{code: fmt.Sprintf("e2e-vol%d-%d", n, base)}
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		ev := s.events(ctx, r.code)
		s.cli(t, time.Minute, append(append([]string{"ycsb", "-e", r.code, "--detach"}, flags...), append(extra, "run")...)...)
		for r.end.Code == "" && ctx.Err() == nil {
			m, err := ev.Next(jetstream.FetchMaxWait(time.Second))
			if err != nil {
				continue
			}
			subj := m.Subject()
			var pe contracts.PhaseEvent
			_ = json.Unmarshal(m.Data(), &pe)
			switch {
			case strings.HasSuffix(subj, ".sut.ready"):
				_ = json.Unmarshal(m.Data(), &r.ready)
				r.rows, _ = s.sutRows(t, r.ready)
			case strings.HasSuffix(subj, ".phase.started") && pe.Kind == contracts.KindLoad:
				r.loaded = true
				if onLoadStarted != nil {
					onLoadStarted(r.code)
				}
			case isEnd(subj):
				_ = json.Unmarshal(m.Data(), &r.end)
			}
		}
		if r.end.Code == "" {
			t.Fatalf("%s did not end within 4 minutes", r.code)
		}
		r.out, _ = s.benchq(context.Background(), "summary", "-e", r.code)
		return r
	}
	volState := func() string {
		out := s.cli(t, time.Minute, "volumes")
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, volume) {
				return l
			}
		}
		return ""
	}

	// 1. Interrupted loading. While it loads, the volume is listed as in
	// use by its SUT; once torn down, by none.
	e1 := run(1, []string{"-rsr"}, func(code string) {
		if l := volState(); !strings.Contains(l, code+" (") {
			t.Errorf("while experiment %s loads, its volume is not listed as in use by it: %q", code, l)
		}
		time.Sleep(2 * time.Second)
		s.cli(t, time.Minute, "stop", "-e", code, "-reason", "e2e: interrupt the loading")
	})
	if e1.end.Status != contracts.ExperimentCancelled || e1.ready.Volume == nil || e1.ready.Volume.Name != volume {
		t.Fatalf("experiment 1: %s (%s), volume %+v; want cancelled on %s", e1.end.Status, e1.end.Reason, e1.ready.Volume, volume)
	}
	if l := volState(); !strings.Contains(l, "| false ") || strings.Contains(l, e1.code) {
		t.Errorf("after an interrupted loading the volume must not be loaded, nor in use: %q", l)
	}
	// 2. Loads again, from an empty volume.
	e2 := run(2, nil, nil)
	if e2.end.Status != contracts.ExperimentDone || !e2.loaded || e2.rows != 0 || e2.ready.Volume.Loaded {
		t.Errorf("experiment 2: %s, loading ran %v, %d rows at start (want 0), volume %+v", e2.end.Status, e2.loaded, e2.rows, e2.ready.Volume)
	}
	if l := volState(); !strings.Contains(l, "| true ") {
		t.Errorf("after experiment 2 the volume must be loaded: %q", l)
	}
	// 3. Skips loading: the rows are there.
	e3 := run(3, nil, nil)
	if e3.end.Status != contracts.ExperimentDone || e3.loaded || e3.rows != rows {
		t.Errorf("experiment 3: %s, loading ran %v, %d rows at start (want %d)", e3.end.Status, e3.loaded, e3.rows, rows)
	}
	if v := e3.ready.Volume; v == nil || !v.Loaded || v.LoadedBy != e2.code {
		t.Errorf("experiment 3's volume %+v, want loaded by %s", v, e2.code)
	}
	for _, want := range []string{"skipped: the database is persisted on volume " + volume, "by experiment " + e2.code, "TEST passed: Workflow as planned"} {
		if !strings.Contains(e3.out, want) {
			t.Errorf("experiment 3's summary lacks %q:\n%s", want, e3.out)
		}
	}
	if strings.Contains(e3.out, "TEST failed") {
		t.Errorf("experiment 3's summary has a failed test:\n%s", e3.out)
	}
	keepSummary(t, e3.out)
	// 4. -rsr: a clean copy, loaded again.
	e4 := run(4, []string{"-rsr"}, nil)
	if e4.end.Status != contracts.ExperimentDone || !e4.loaded || e4.rows != 0 || !e4.ready.Volume.New {
		t.Errorf("experiment 4 (-rsr): %s, loading ran %v, %d rows at start (want 0), volume %+v", e4.end.Status, e4.loaded, e4.rows, e4.ready.Volume)
	}
	if out, err := s.benchq(context.Background(), "volumes", "rm", volume); err != nil || !strings.Contains(out, "removed") {
		t.Errorf("volumes rm: %v\n%s", err, out)
	}
	if l := volState(); l != "" {
		t.Errorf("removed volume still listed: %q", l)
	}
}
