package contracts

import (
	"testing"
)

func TestWaits(t *testing.T) {
	p := Plan{Configurations: []PlanConfiguration{{Name: "c", Phases: []PlanPhase{{Name: "c-load"}, {Name: "c-run1"}}}}}
	s := ExperimentState{Status: ExperimentRunning, Plan: p, Configs: []ConfigState{{Status: ConfigRunning, Phase: 1,
		Current: &PhaseState{Attempt: 2, Status: PhasePreparing, Ready: []bool{true, false}}}}}
	cases := []struct {
		phase          string
		attempt, shard int
		want           bool
	}{
		{"c-run1", 2, 2, true},  // not READY yet
		{"c-run1", 2, 1, false}, // READY already (another agent has it)
		{"c-run1", 1, 2, false}, // an abandoned attempt
		{"c-load", 1, 1, false}, // an earlier phase
		{"c-run1", 2, 3, false}, // no such shard
	}
	for _, c := range cases {
		if got := s.Waits(c.phase, c.attempt, c.shard); got != c.want {
			t.Errorf("Waits(%s, %d, %d) = %v, want %v", c.phase, c.attempt, c.shard, got, c.want)
		}
	}
	s.Configs[0].Current.Status = PhaseRunning
	if s.Waits("c-run1", 2, 2) {
		t.Error("a running phase does not wait for READY")
	}
}
