package plan

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/benchq/benchq/contracts"
)

// Threshold figures: latency percentiles (and the mean and maximum) judged
// from the merged histograms of a phase's shards, the common-window rates
// and the share of failed operations.
var (
	latencyFigures = []string{"p50", "p95", "p99", "p99.9", "avg", "max"}
	rateFigures    = []string{"throughput", "goodput"}
	thresholdOps   = []string{"<=", ">=", "<", ">"}
	thresholdRE    = regexp.MustCompile(`^([a-z_]+[0-9.]*)(?:\[([A-Z_-]+)\])?\s*(<=|>=|<|>)\s*(.+)$`)
	valueRE        = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*(\*\s*target|us|µs|ms|s|%|ops/s)?$`)
)

// ParseThreshold reads one threshold as k6 users write them, on a figure of
// the summary: p99<5ms, p99[READ]<=800us, avg<1ms, goodput>=0.95*target,
// throughput>1000, error_share<0.1%. Latency takes us, ms or s (stored in
// µs); a rate is ops/s or a multiple of the phase's target; error_share is
// a percent.
func ParseThreshold(text string) (contracts.Threshold, error) {
	t := contracts.Threshold{Text: strings.TrimSpace(text)}
	m := thresholdRE.FindStringSubmatch(strings.ReplaceAll(t.Text, " ", ""))
	if m == nil {
		return t, fmt.Errorf("%q: want <figure><op><value>, e.g. p99<5ms, goodput>=0.95*target, error_share<0.1%%", text)
	}
	t.Figure, t.Operation, t.Op = m[1], m[2], m[3]
	v := valueRE.FindStringSubmatch(m[4])
	if v == nil {
		return t, fmt.Errorf("%q: %q is not a value such as 5ms, 800us, 1000, 0.95*target or 0.1%%", text, m[4])
	}
	n, _ := strconv.ParseFloat(v[1], 64)
	unit := strings.ReplaceAll(v[2], " ", "")
	switch {
	case slices.Contains(latencyFigures, t.Figure):
		scale := map[string]float64{"us": 1, "µs": 1, "ms": 1e3, "s": 1e6}
		f, ok := scale[unit]
		if !ok {
			return t, fmt.Errorf("%q: a latency needs a unit: us, ms or s", text)
		}
		t.Value = n * f
	case slices.Contains(rateFigures, t.Figure):
		switch unit {
		case "", "ops/s":
			t.Value = n
		case "*target":
			t.Value, t.OfTarget = n, true
		default:
			return t, fmt.Errorf("%q: %s is in ops/s or a multiple of the target (0.95*target)", text, t.Figure)
		}
	case t.Figure == "error_share":
		if unit != "%" {
			return t, fmt.Errorf("%q: error_share is a percent: error_share<0.1%%", text)
		}
		t.Value = n
	default:
		return t, fmt.Errorf("%q: unknown figure %q; thresholds take %s, %s and error_share", text, t.Figure,
			strings.Join(latencyFigures, ", "), strings.Join(rateFigures, ", "))
	}
	if t.Operation != "" && !slices.Contains(latencyFigures, t.Figure) {
		return t, fmt.Errorf("%q: only a latency is per operation ([READ])", text)
	}
	return t, nil
}

// checkThreshold rejects a threshold a JSON request gives that the
// reporter could not judge.
func checkThreshold(t contracts.Threshold) error {
	switch {
	case !slices.Contains(latencyFigures, t.Figure) && !slices.Contains(rateFigures, t.Figure) && t.Figure != "error_share":
		return fmt.Errorf("unknown figure %q", t.Figure)
	case !slices.Contains(thresholdOps, t.Op):
		return fmt.Errorf("op %q: want one of %s", t.Op, strings.Join(thresholdOps, " "))
	case t.OfTarget && !slices.Contains(rateFigures, t.Figure):
		return fmt.Errorf("only throughput and goodput compare with the target")
	case t.Operation != "" && !slices.Contains(latencyFigures, t.Figure):
		return fmt.Errorf("only a latency is per operation")
	}
	return nil
}
