package ycsb

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/benchq/benchq/contracts"
)

// ErrNotFinished is returned by ParseSummary when the output has no
// "[OVERALL], RunTime(ms)" line: YCSB was killed, crashed or is still running.
var ErrNotFinished = errors.New("ycsb did not finish: no [OVERALL] RunTime(ms) line")

// Summary is the final report YCSB prints to stdout.
type Summary struct {
	RunTimeMS  float64
	Throughput float64              // ops/sec as YCSB printed it
	Ops        []contracts.OpResult // one per operation block, in output order
	GC         map[string]float64   // "[TOTAL_GCS_G1_Young_Generation], Count, 8" → "TOTAL_GCS_G1_Young_Generation.Count": 8
}

// Operations is the number of operations YCSB executed in the measured
// phase: the sum of Count over the operation blocks, each weighed by
// contracts.OperationWeight (CLEANUP, one per client thread, is not a
// workload operation; a READ-MODIFY-WRITE's read and update are in READ and
// UPDATE too, and it counts once).
//
// Failed operations are included: YCSB measures an operation that did not
// return OK under "<OP>-FAILED" (or "<OP>-<STATUS>" with
// reportlatencyforeacherror) and leaves it out of <OP>'s Operations count,
// although <OP>'s Return= codes count it. So READ=67085 plus READ-FAILED=32714
// are the 99799 reads executed, and Operations matches the "N operations" of
// YCSB's last status line and the Throughput it printed.
//
// Blocks that do not count executed operations are excluded too:
// "Intended-<OP>" duplicates (measurement.interval=both) and the
// measurement.trackjvm samples.
func (s Summary) Operations() int64 {
	var n int64
	for _, op := range s.Ops {
		n += contracts.OperationWeight(op.Name) * op.Count
	}
	return n
}

// ParseSummary parses YCSB's stdout. Lines that are not "[METRIC], measurement,
// value" lines (JDBC binding chatter, for instance) and measurements it has no
// field for are ignored. It returns an error wrapping ErrNotFinished if there
// is no [OVERALL] RunTime line, and an error naming the line if a known
// measurement has a value that is not a number.
//
// Values Java prints as NaN or Infinity (an average over zero operations, a
// throughput over zero milliseconds) become 0, so a Summary always encodes to
// JSON.
func ParseSummary(r io.Reader) (Summary, error) {
	var (
		s        Summary
		finished bool
		last     string
		index    = map[string]int{} // op name → position in s.Ops
	)
	br := bufio.NewReader(r)
	for lineNo := 1; ; lineNo++ {
		raw, readErr := br.ReadString('\n')
		if readErr != nil && readErr != io.EOF {
			return Summary{}, fmt.Errorf("read ycsb summary: %w", readErr)
		}
		line := strings.TrimRight(raw, "\r\n")
		if strings.TrimSpace(line) != "" {
			last = line
		}
		if metric, measurement, value, ok := splitSummaryLine(line); ok {
			if err := s.apply(metric, measurement, value, index, &finished); err != nil {
				return Summary{}, fmt.Errorf("ycsb summary line %d %q: %w", lineNo, line, err)
			}
		}
		if readErr == io.EOF {
			break
		}
	}
	if !finished {
		if last == "" {
			return Summary{}, fmt.Errorf("%w; output is empty", ErrNotFinished)
		}
		return Summary{}, fmt.Errorf("%w; last line: %q", ErrNotFinished, last)
	}
	return s, nil
}

// splitSummaryLine splits "[READ], 95thPercentileLatency(us), 591".
func splitSummaryLine(line string) (metric, measurement, value string, ok bool) {
	if !strings.HasPrefix(line, "[") {
		return "", "", "", false
	}
	metric, rest, ok := strings.Cut(line[1:], "], ")
	if !ok || metric == "" {
		return "", "", "", false
	}
	i := strings.LastIndex(rest, ", ")
	if i < 0 {
		return "", "", "", false
	}
	return metric, rest[:i], strings.TrimSpace(rest[i+2:]), true
}

func (s *Summary) apply(metric, measurement, value string, index map[string]int, finished *bool) error {
	switch {
	case metric == "OVERALL":
		switch measurement {
		case "RunTime(ms)":
			v, err := parseNonNegative(measurement, value)
			if err != nil {
				return err
			}
			s.RunTimeMS = v
			*finished = true
		case "Throughput(ops/sec)":
			v, err := parseNonNegative(measurement, value)
			if err != nil {
				return err
			}
			s.Throughput = v
		}
		return nil
	case strings.HasPrefix(metric, "TOTAL_GC"):
		v, err := parseJavaFloat(value)
		if err != nil {
			return err
		}
		if s.GC == nil {
			s.GC = map[string]float64{}
		}
		s.GC[metric+"."+measurement] = v
		return nil
	}

	latency, isLatency := latencyFields[measurement]
	isReturn := strings.HasPrefix(measurement, "Return=")
	if measurement != "Operations" && !isLatency && !isReturn {
		return nil // histogram buckets, time series points, other percentiles, trackjvm extremes
	}
	i, ok := index[metric]
	if !ok {
		i = len(s.Ops)
		index[metric] = i
		s.Ops = append(s.Ops, contracts.OpResult{Name: metric})
	}
	op := &s.Ops[i]
	switch {
	case isLatency:
		v, err := parseJavaFloat(value)
		if err != nil {
			return err
		}
		*latency(op) = v
	case isReturn:
		v, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return err
		}
		if op.ReturnCodes == nil {
			op.ReturnCodes = map[string]int64{}
		}
		op.ReturnCodes[strings.TrimPrefix(measurement, "Return=")] = v
	default:
		v, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return err
		}
		op.Count = v
	}
	return nil
}

// latencyFields maps the latency measurements of an operation block to the
// OpResult field they fill.
var latencyFields = map[string]func(*contracts.OpResult) *float64{
	"AverageLatency(us)":        func(op *contracts.OpResult) *float64 { return &op.AvgUS },
	"MinLatency(us)":            func(op *contracts.OpResult) *float64 { return &op.MinUS },
	"MaxLatency(us)":            func(op *contracts.OpResult) *float64 { return &op.MaxUS },
	"50thPercentileLatency(us)": func(op *contracts.OpResult) *float64 { return &op.P50US },
	"95thPercentileLatency(us)": func(op *contracts.OpResult) *float64 { return &op.P95US },
	"99thPercentileLatency(us)": func(op *contracts.OpResult) *float64 { return &op.P99US },
	"99.9PercentileLatency(us)": func(op *contracts.OpResult) *float64 { return &op.P999US },
}

// parseNonNegative is parseJavaFloat for a time or a rate, which YCSB never
// prints below 0 (found by FuzzParseSummary: a negative runtime was taken).
func parseNonNegative(measurement, s string) (float64, error) {
	v, err := parseJavaFloat(s)
	if err == nil && v < 0 {
		return 0, fmt.Errorf("negative %s %s", measurement, s)
	}
	return v, err
}

// parseJavaFloat parses a Java long or Double.toString value ("8",
// "0.1377726750861079", "1.0E7", "NaN", "Infinity"); non-finite values
// become 0.
func parseJavaFloat(s string) (float64, error) {
	v, err := parseFinite(s)
	if errors.Is(err, errNotFinite) {
		return 0, nil
	}
	return v, err
}
