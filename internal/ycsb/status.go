package ycsb

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Status is one status line YCSB prints to stderr every status.interval
// seconds. Its fields map one to one onto contracts.Interval.
type Status struct {
	At         time.Time // the line's timestamp, in the local time zone (YCSB prints local time without a zone)
	ElapsedS   int64     // whole seconds since the phase started
	Operations int64     // operations done since the phase started (CLEANUP not included)
	OpsPerSec  float64   // throughput of the last interval; 0 if YCSB printed none or printed ∞ or NaN
	// PerOp holds one entry per "[NAME: k=v, ...]" block, e.g. "INSERT" →
	// {"Count":49996,"Max":19503,"Min":43,"Avg":420.83,"90":507,"99":2525,
	// "99.9":7943,"99.99":13295}. The values cover the last interval only:
	// Count is the operations measured since the previous line. Values YCSB
	// printed as ∞ or NaN are left out. Nil if the line has no blocks.
	PerOp map[string]map[string]float64
}

// statusHead matches the fixed start of a status line:
//
//	2026-11-21 10:53:29:230 10 sec: 54124 operations; 5411.86 current ops/sec; est completion in 9 second [INSERT: ...]
//
// It is not anchored: YCSB puts the -l label (default empty) in front of the
// timestamp without a separator.
var statusHead = regexp.MustCompile(`(?s)(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}):(\d{3}) (\d+) sec: (\d+) operations;(.*)$`)

// errNotFinite marks a number YCSB printed as ∞ or NaN.
var errNotFinite = errors.New("not a finite number")

// ParseStatusLine parses one line of YCSB's stderr. It returns ok=false and
// no error for lines that are not status lines (start-up messages, binding
// errors, the shell's time output). It returns ok=false and an error for a
// line that starts like a status line but whose fields do not parse.
//
// Blocks are parsed generically as "[NAME: key=value, ...]" (hdrhistogram,
// the default) or "[NAME key=value]" (histogram, timeseries); see the package
// documentation for what other measurement types print.
func ParseStatusLine(line string) (Status, bool, error) {
	m := statusHead.FindStringSubmatch(strings.TrimRight(line, "\r\n"))
	if m == nil {
		return Status{}, false, nil
	}
	st, err := parseStatus(m[1], m[2], m[3], m[4], m[5])
	if err != nil {
		return Status{}, false, fmt.Errorf("ycsb status line %q: %w", line, err)
	}
	return st, true, nil
}

func parseStatus(stamp, millis, elapsed, ops, rest string) (Status, error) {
	var st Status
	at, err := time.ParseInLocation("2006-01-02 15:04:05", stamp, time.Local)
	if err != nil {
		return Status{}, fmt.Errorf("timestamp: %w", err)
	}
	ms, _ := strconv.Atoi(millis) // three digits, guaranteed by statusHead
	st.At = at.Add(time.Duration(ms) * time.Millisecond)
	if st.ElapsedS, err = strconv.ParseInt(elapsed, 10, 64); err != nil {
		return Status{}, fmt.Errorf("elapsed seconds: %w", err)
	}
	if st.Operations, err = strconv.ParseInt(ops, 10, 64); err != nil {
		return Status{}, fmt.Errorf("operations: %w", err)
	}

	// YCSB leaves out "current ops/sec" while no operation is done, and "est
	// completion in ..." (which the contract has no field for) when the
	// operation count is unknown.
	rest = strings.TrimSpace(rest)
	const rate = " current ops/sec;"
	if i := strings.Index(rest, rate); i >= 0 && !strings.Contains(rest[:i], "[") {
		v, err := parseJavaDecimal(rest[:i])
		switch {
		case errors.Is(err, errNotFinite):
		case err != nil:
			return Status{}, fmt.Errorf("current ops/sec: %w", err)
		default:
			st.OpsPerSec = v
		}
		rest = rest[i+len(rate):]
	}
	if i := strings.Index(rest, "["); i >= 0 {
		if st.PerOp, err = parseBlocks(rest[i:]); err != nil {
			return Status{}, err
		}
	}
	return st, nil
}

// parseBlocks parses "[READ: Count=47962, Max=148095, ...] [UPDATE: ...] ".
func parseBlocks(s string) (map[string]map[string]float64, error) {
	perOp := map[string]map[string]float64{}
	for {
		s = strings.TrimSpace(s)
		if s == "" {
			return perOp, nil
		}
		if s[0] != '[' {
			return nil, fmt.Errorf("unexpected text %q between blocks", s)
		}
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return nil, fmt.Errorf("unterminated block %q", s)
		}
		name, values, err := parseBlock(s[1:end])
		if err != nil {
			return nil, fmt.Errorf("block %q: %w", s[:end+1], err)
		}
		perOp[name] = values
		s = s[end+1:]
	}
}

// parseBlock parses "READ: Count=47962, Max=148095" (hdrhistogram) or
// "READ AverageLatency(us)=217.97" (histogram, timeseries).
func parseBlock(s string) (string, map[string]float64, error) {
	name, body, ok := strings.Cut(s, ": ")
	if !ok {
		i := strings.LastIndexByte(s, ' ')
		if i < 0 {
			return "", nil, errors.New("want NAME: key=value pairs")
		}
		name, body = s[:i], s[i+1:]
	}
	if name == "" {
		return "", nil, errors.New("empty operation name")
	}
	values := map[string]float64{}
	for _, pair := range strings.Split(body, ", ") {
		k, v, ok := strings.Cut(pair, "=")
		if !ok || k == "" {
			return "", nil, fmt.Errorf("want key=value, got %q", pair)
		}
		f, err := parseJavaDecimal(v)
		switch {
		case errors.Is(err, errNotFinite):
		case err != nil:
			return "", nil, fmt.Errorf("%s: %w", k, err)
		default:
			values[k] = f
		}
	}
	return name, values, nil
}

// parseJavaDecimal parses a number formatted by java.text.DecimalFormat
// ("#.##") or a Java long. DecimalFormat follows the JVM's default locale, so
// the decimal separator may be a comma; it prints infinity as "∞" (the first
// interval of a fast load can be 0 ms long) and NaN as U+FFFD. Those, and any
// other value that is not finite, return errNotFinite.
func parseJavaDecimal(s string) (float64, error) {
	switch s {
	case "∞", "-∞", "\uFFFD":
		return 0, errNotFinite
	}
	if !strings.Contains(s, ".") {
		s = strings.Replace(s, ",", ".", 1)
	}
	return parseFinite(s)
}

// parseFinite parses a Go-syntax float; NaN and the infinities (which
// ParseFloat accepts as "NaN", "Infinity", …) return errNotFinite.
func parseFinite(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, errNotFinite
	}
	return v, nil
}
