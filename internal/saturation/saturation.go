// Package saturation is benchq's saturation search (docs/saturation.md): it
// judges one step of offered load from its shards' finals (Evaluate) and
// decides the next step (Next) — raise the load by a factor while steps
// pass, add shards when the drivers rather than the SUT were the limit,
// bisect between the last passing and the first failing load to the
// precision asked for, then hold the knee. Pure functions: the scheduler
// calls them when a step's phase ends and keeps the steps in its state.
// saturation.go holds the settings, evaluate.go the judging of a step,
// search.go the search.
package saturation

import (
	"github.com/benchq/benchq/contracts"
)

// Defaults of a request's saturation settings.
var Defaults = contracts.Saturation{
	StepFactor: 2, StepS: 20, WarmupS: 3, MinAchieved: 95, Precision: 5,
	MaxSteps: 16, MaxShards: 8, MaxCV: 10,
}

// WithDefaults fills every setting s leaves unset.
func WithDefaults(s contracts.Saturation) contracts.Saturation {
	d := Defaults
	set := func(v *float64, def float64) {
		if *v == 0 {
			*v = def
		}
	}
	seti := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	set(&s.StepFactor, d.StepFactor)
	seti(&s.StepS, d.StepS)
	if s.WarmupS == 0 && s.StepS > 2*d.WarmupS {
		s.WarmupS = d.WarmupS
	}
	set(&s.MinAchieved, d.MinAchieved)
	set(&s.Precision, d.Precision)
	seti(&s.MaxSteps, d.MaxSteps)
	seti(&s.MaxShards, d.MaxShards)
	set(&s.MaxCV, d.MaxCV)
	return s
}
