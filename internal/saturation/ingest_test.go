package saturation

import (
	"strings"
	"testing"
	"time"

	"github.com/benchq/benchq/contracts"
)

// generator is a metrics generator's final that sent rate points/s for
// seconds (a status line a second); with stored >= 0 it carries the
// database's counter growing stored points/s from 1,000 (shard 1's).
func generator(n int, rate float64, seconds int, stored float64) *contracts.Final {
	first, last := t0, t0.Add(time.Duration(seconds)*time.Second)
	f := &contracts.Final{Shard: n, Status: contracts.StatusOK, Threads: 2, FirstOpAt: &first, LastOpAt: &last, StartedAt: first, EndedAt: last}
	for s := 1; s <= seconds; s++ {
		f.Progress = append(f.Progress, contracts.Progress{At: t0.Add(time.Duration(s) * time.Second), Operations: int64(rate * float64(s))})
	}
	f.Operations = []contracts.OpResult{{Name: "WRITE", Count: int64(rate * float64(seconds))}, {Name: "QUERY", Count: int64(seconds)}}
	if stored >= 0 {
		in := &contracts.Ingest{Counter: "c", EndedAt: last}
		for s := 0; s <= seconds+1; s++ {
			in.Readings = append(in.Readings, contracts.IngestReading{At: t0.Add(time.Duration(s) * time.Second), Total: 1000 + stored*float64(s)})
		}
		f.Ingest = in
	}
	return f
}

func TestEvaluateIngest(t *testing.T) {
	tsdb := WithDefaults(contracts.Saturation{StepS: 10})
	for _, c := range []struct {
		name           string
		sent, stored   float64
		verdict        string
		why            string
		goodput, sends float64
	}{
		{"kept up", 500, 1000, contracts.VerdictPass, "stored 1000 points/s", 1000, 1000},
		{"backlog grew", 500, 900, contracts.VerdictFail, "backlog grew by 100 ± 0 points/s", 900, 1000},
		{"not delivered", 400, 800, contracts.VerdictFail, "sent 800 points/s < 95 % of the offered 1000", 800, 800},
	} {
		t.Run(c.name, func(t *testing.T) {
			finals := []*contracts.Final{generator(1, c.sent, 10, c.stored), generator(2, c.sent, 10, -1)}
			st := EvaluateIngest(tsdb, 1, contracts.RoleStep, 1, 1000, finals)
			if st.Verdict != c.verdict || !strings.Contains(st.Why, c.why) {
				t.Errorf("verdict %s (%s), want %s saying %q", st.Verdict, st.Why, c.verdict, c.why)
			}
			if st.Seconds != 7 || st.Goodput != c.goodput || st.Achieved != c.sends || st.Threads != 4 {
				t.Errorf("%d s, stored %.1f/s (want %g), sent %.1f/s (want %g), %d agents", st.Seconds, st.Goodput, c.goodput, st.Achieved, c.sends, st.Threads)
			}
		})
	}
	// A counter that moves in bursts (a second's points at once, every
	// other second) keeps up on average: its backlog does not grow. One
	// that stores 15 % less in the same bursts does not.
	for _, c := range []struct {
		stored  float64
		verdict string
	}{{1000, contracts.VerdictPass}, {850, contracts.VerdictFail}} {
		g := generator(1, 1000, 20, 0)
		for i := range g.Ingest.Readings {
			g.Ingest.Readings[i].Total = 1000 + c.stored*float64(2*(i/2))
		}
		st := EvaluateIngest(tsdb, 1, contracts.RoleStep, 1, 1000, []*contracts.Final{g})
		if st.Verdict != c.verdict {
			t.Errorf("bursts storing %g points/s of 1000: %s (%s), want %s", c.stored, st.Verdict, st.Why, c.verdict)
		}
	}
	// A counter that stands still for seconds and jumps by less than was
	// sent (carbon overloaded) can hide its backlog in the trend's error;
	// the window's total still falls short by more than a second of
	// points, and fails.
	g := generator(1, 1000, 20, 0)
	for i := range g.Ingest.Readings {
		g.Ingest.Readings[i].Total = 1000 + 4250*float64((i+2)/5)
	}
	st := EvaluateIngest(tsdb, 1, contracts.RoleStep, 1, 1000, []*contracts.Final{g})
	if st.Verdict != contracts.VerdictFail || !strings.Contains(st.Why, "stored") || st.Goodput >= 800 {
		t.Errorf("a stalling counter storing 850 points/s of 1000: %s (%s), stored %.0f/s", st.Verdict, st.Why, st.Goodput)
	}
	// Without the database's count there is nothing to judge by.
	st = EvaluateIngest(tsdb, 1, contracts.RoleStep, 1, 1000, []*contracts.Final{generator(1, 500, 10, -1)})
	if st.Verdict != contracts.VerdictFail || !strings.Contains(st.Why, "not read") {
		t.Errorf("no readings: %s (%s)", st.Verdict, st.Why)
	}
}

// The search of metrics generators moves by whole agents.
func TestSearchMovesByTheQuantum(t *testing.T) {
	q := WithDefaults(contracts.Saturation{StepS: 10, Quantum: 300})
	steps := []contracts.SaturationStep{
		{Step: 1, Role: contracts.RoleStep, Offered: 900, Shards: 1, Verdict: contracts.VerdictPass, Goodput: 900},
	}
	move, _ := Next(q, steps)
	if move == nil || move.Offered != 1800 {
		t.Fatalf("after 900 passed: %+v, want 1800", move)
	}
	steps = append(steps, contracts.SaturationStep{Step: 2, Role: contracts.RoleStep, Offered: 1800, Shards: 1, Verdict: contracts.VerdictFail})
	if move, _ = Next(q, steps); move == nil || move.Offered != 1200 {
		t.Fatalf("between 900 and 1800: %+v, want 1200 (1350 rounded down to whole agents)", move)
	}
	steps = append(steps, contracts.SaturationStep{Step: 3, Role: contracts.RoleStep, Offered: 1200, Shards: 1, Verdict: contracts.VerdictPass, Goodput: 1200},
		contracts.SaturationStep{Step: 4, Role: contracts.RoleStep, Offered: 1500, Shards: 1, Verdict: contracts.VerdictFail})
	if move, knee := Next(q, steps); move != nil || knee == nil || knee.Offered != 1200 {
		t.Errorf("1200 passed, 1500 failed, no whole agent between: %+v, knee %+v", move, knee)
	}
}
