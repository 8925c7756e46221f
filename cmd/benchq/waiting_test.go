package main

import (
	"strings"
	"testing"

	"github.com/benchq/benchq/contracts"
)

// An experiment queued behind a SUT another keeps with `start` says so,
// naming it and how to free it; with a free slot, its own SUT, or -ms 0
// it says nothing.
func TestSlotWaitNamesWhoHoldsTheSlots(t *testing.T) {
	one, none := 1, 0
	state := func(code string, ms *int, status string, phase int) contracts.ExperimentState {
		return contracts.ExperimentState{Code: code, Status: contracts.ExperimentRunning,
			Plan: contracts.Plan{Settings: contracts.Request{MaxSUTs: ms},
				Configurations: []contracts.PlanConfiguration{{Name: code + "-Redis-1", Phases: []contracts.PlanPhase{{Name: "p0"}}}}},
			Configs: []contracts.ConfigState{{Status: status, Phase: phase}}}
	}
	kept := state("st2", &one, contracts.ConfigRunning, 1) // past its last phase: held by start
	queued := state("vbusy", &one, contracts.ConfigPending, 0)
	got := slotWait(queued, []contracts.ExperimentState{kept, queued})
	want := "waiting for a SUT slot: -ms 1 allows 1 SUT alive at once, and 1 is: st2-Redis-1 of experiment st2, kept until benchq stop -e st2"
	if !strings.HasPrefix(got, want) {
		t.Errorf("got %q, want %q…", got, want)
	}
	// A plan stored without max_suts has the scheduler's default, 1.
	if got := slotWait(state("vbusy", nil, contracts.ConfigPending, 0), []contracts.ExperimentState{kept}); !strings.HasPrefix(got, "waiting for a SUT slot: -ms 1 ") {
		t.Errorf("no max_suts in the plan: %q", got)
	}
	deploying := state("other", &one, contracts.ConfigDeploying, 0)
	if got := slotWait(queued, []contracts.ExperimentState{deploying, queued}); !strings.Contains(got, "other-Redis-1 of experiment other (deploying)") {
		t.Errorf("behind a deploying SUT: %q", got)
	}
	for name, c := range map[string]struct {
		x   contracts.ExperimentState
		all []contracts.ExperimentState
	}{
		"a free slot":    {queued, []contracts.ExperimentState{queued}},
		"-ms 0":          {state("vbusy", &none, contracts.ConfigPending, 0), []contracts.ExperimentState{kept}},
		"its own SUT up": {kept, []contracts.ExperimentState{kept, queued}},
	} {
		if got := slotWait(c.x, c.all); got != "" {
			t.Errorf("%s: %q, want nothing", name, got)
		}
	}
}
