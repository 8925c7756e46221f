package benchbase

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrNoSummary: Benchbase wrote no summary.json (it failed, was killed, or
// only loaded).
var ErrNoSummary = errors.New("benchbase wrote no summary.json")

// summaryLatency maps summary.json's "Latency Distribution" keys (and the
// CSV column prefixes) onto Latency's fields.
var summaryLatency = map[string]func(*Latency) *float64{
	"Average":         func(l *Latency) *float64 { return &l.AvgUS },
	"Minimum":         func(l *Latency) *float64 { return &l.MinUS },
	"25th Percentile": func(l *Latency) *float64 { return &l.P25US },
	"Median":          func(l *Latency) *float64 { return &l.P50US },
	"75th Percentile": func(l *Latency) *float64 { return &l.P75US },
	"90th Percentile": func(l *Latency) *float64 { return &l.P90US },
	"95th Percentile": func(l *Latency) *float64 { return &l.P95US },
	"99th Percentile": func(l *Latency) *float64 { return &l.P99US },
	"Maximum":         func(l *Latency) *float64 { return &l.MaxUS },
}

type summaryJSON struct {
	StartMS     *int64             `json:"Start timestamp (milliseconds)"`
	ElapsedNS   *int64             `json:"Elapsed Time (nanoseconds)"`
	DBMSType    string             `json:"DBMS Type"`
	DBMSVersion string             `json:"DBMS Version"`
	Benchmark   string             `json:"Benchmark Type"`
	FinalState  string             `json:"Final State"`
	Measured    *int64             `json:"Measured Requests"`
	Isolation   string             `json:"isolation"`
	ScaleFactor string             `json:"scalefactor"`
	Terminals   string             `json:"terminals"`
	Latency     map[string]float64 `json:"Latency Distribution"`
	Throughput  *float64           `json:"Throughput (requests/second)"`
	Goodput     *float64           `json:"Goodput (requests/second)"`
}

// ParseSummary reads Benchbase's summary.json: the run's settings, measured
// requests, window, throughput, goodput and latency distribution. The
// success count is recovered from Goodput × window (Benchbase computed the
// one from the other).
func ParseSummary(r io.Reader) (Result, error) {
	var s summaryJSON
	if err := json.NewDecoder(r).Decode(&s); err != nil {
		return Result{}, fmt.Errorf("summary.json: %w", err)
	}
	var missing []string
	for name, absent := range map[string]bool{
		"Start timestamp (milliseconds)": s.StartMS == nil, "Elapsed Time (nanoseconds)": s.ElapsedNS == nil,
		"Measured Requests": s.Measured == nil, "Throughput (requests/second)": s.Throughput == nil,
		"Goodput (requests/second)": s.Goodput == nil,
	} {
		if absent {
			missing = append(missing, strconv.Quote(name))
		}
	}
	if len(missing) > 0 {
		return Result{}, fmt.Errorf("summary.json: missing %s", strings.Join(slices.Sorted(slices.Values(missing)), ", "))
	}
	// A torn or foreign file can hold numbers no run gives; refused here,
	// they would make a result that cannot be published (JSON times end
	// at year 9999) or a negative rate.
	if start := time.UnixMilli(*s.StartMS); start.Year() < 1970 || start.Year() > 9999 {
		return Result{}, fmt.Errorf("summary.json: Start timestamp %d ms is not a time of a run", *s.StartMS)
	}
	if *s.ElapsedNS < 0 || *s.Measured < 0 {
		return Result{}, fmt.Errorf("summary.json: negative elapsed time (%d ns) or measured requests (%d)", *s.ElapsedNS, *s.Measured)
	}
	res := Result{
		Benchmark: strings.ToLower(s.Benchmark), DBMSType: s.DBMSType, DBMSVersion: s.DBMSVersion,
		Isolation: s.Isolation, FinalState: s.FinalState,
		Start:   time.UnixMilli(*s.StartMS).UTC(),
		Elapsed: time.Duration(*s.ElapsedNS), MeasuredRequests: *s.Measured,
		Throughput: *s.Throughput, Goodput: *s.Goodput,
	}
	res.Successes = roundCount(res.Goodput * res.Elapsed.Seconds())
	var err error
	if s.ScaleFactor != "" {
		if res.ScaleFactor, err = strconv.ParseFloat(s.ScaleFactor, 64); err != nil {
			return Result{}, fmt.Errorf("summary.json: scalefactor %q: %w", s.ScaleFactor, err)
		}
	}
	if s.Terminals != "" {
		if res.Terminals, err = strconv.Atoi(s.Terminals); err != nil {
			return Result{}, fmt.Errorf("summary.json: terminals %q: %w", s.Terminals, err)
		}
	}
	for key, v := range s.Latency {
		stat, ok := strings.CutSuffix(key, " Latency (microseconds)")
		field := summaryLatency[stat]
		if !ok || field == nil {
			continue // a statistic this version of Benchbase added: not ours to guess
		}
		*field(&res.Latency) = v
	}
	return res, nil
}

// ParseWindows reads results.csv, results.<Type>.csv (latencies in
// milliseconds, one row per window of windowS seconds) or samples.csv
// (microseconds, one row per second, with a Requests column). Latencies
// become microseconds. Without a Requests column a window's requests are
// its throughput × windowS, which is how Benchbase computed the throughput
// (the last, partial window included).
func ParseWindows(r io.Reader, windowS int) ([]Window, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("read header: %w", err)
	}
	type column struct {
		index int
		set   func(*Window, float64)
	}
	var cols []column
	hasTime, hasRequests, hasThroughput := false, false, false
	for i, name := range header {
		name = strings.TrimSpace(name)
		switch name {
		case "Time (seconds)":
			hasTime = true
			cols = append(cols, column{i, func(w *Window, v float64) { w.TimeS = v }})
		case "Requests":
			hasRequests = true
			cols = append(cols, column{i, func(w *Window, v float64) { w.Requests = roundCount(v) }})
		case "Throughput (requests/second)":
			hasThroughput = true
			cols = append(cols, column{i, func(w *Window, v float64) { w.Throughput = v }})
		default:
			stat, unit, ok := latencyColumn(name)
			if !ok {
				continue // "tp (req/s) scaled" and the like
			}
			field := summaryLatency[stat]
			if unit == "millisecond" {
				cols = append(cols, column{i, func(w *Window, v float64) { *field(&w.Latency) = msToUS(v) }})
			} else {
				cols = append(cols, column{i, func(w *Window, v float64) { *field(&w.Latency) = v }})
			}
		}
	}
	if !hasTime || !hasThroughput {
		return nil, fmt.Errorf("header %q: want the columns \"Time (seconds)\" and \"Throughput (requests/second)\"", strings.Join(header, ","))
	}
	if !hasRequests && windowS <= 0 {
		return nil, errors.New("no Requests column and no window size to compute requests from")
	}
	var out []Window
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		var w Window
		for _, c := range cols {
			if c.index >= len(rec) {
				return nil, fmt.Errorf("line %d: %d fields, want at least %d", line, len(rec), c.index+1)
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[c.index]), 64)
			if err != nil {
				return nil, fmt.Errorf("line %d, column %q: %w", line, header[c.index], err)
			}
			c.set(&w, v)
		}
		if !hasRequests {
			w.Requests = roundCount(w.Throughput * float64(windowS))
		}
		out = append(out, w)
	}
}

var latencyColumnRe = regexp.MustCompile(`^(.+) Latency \((millisecond|microseconds)\)$`)

func latencyColumn(name string) (stat, unit string, ok bool) {
	m := latencyColumnRe.FindStringSubmatch(name)
	if m == nil || summaryLatency[m[1]] == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// Raw is what Benchbase's raw.csv holds: every measured request.
type Raw struct {
	Types     map[string]*Recorder // by transaction name
	All       *Recorder
	FirstOpAt time.Time // start of the first request
	LastOpAt  time.Time // end of the last one
}

// ParseRaw reads raw.csv ("Transaction Type Index,Transaction Name,Start
// Time (microseconds),Latency (microseconds),Worker Id (start number),Phase
// Id (index in config file)"; despite its name the start time is in
// seconds, with microseconds as decimals) into exact per-type latency
// histograms.
func ParseRaw(r io.Reader) (Raw, error) {
	cr := csv.NewReader(bufio.NewReaderSize(r, 1<<16))
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return Raw{}, fmt.Errorf("raw.csv: read header: %w", err)
	}
	idx := map[string]int{}
	for i, h := range header {
		idx[strings.TrimSpace(h)] = i
	}
	nameCol, okName := idx["Transaction Name"]
	startCol, okStart := idx["Start Time (microseconds)"]
	latCol, okLat := idx["Latency (microseconds)"]
	if !okName || !okStart || !okLat {
		return Raw{}, fmt.Errorf("raw.csv: header %q lacks Transaction Name, Start Time or Latency", strings.Join(header, ","))
	}
	raw := Raw{Types: map[string]*Recorder{}, All: NewRecorder()}
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return raw, nil
		}
		if err != nil {
			return Raw{}, fmt.Errorf("raw.csv line %d: %w", line, err)
		}
		start, err := parseEpochSeconds(rec[startCol])
		if err != nil {
			return Raw{}, fmt.Errorf("raw.csv line %d: start time: %w", line, err)
		}
		us, err := strconv.ParseInt(strings.TrimSpace(rec[latCol]), 10, 64)
		if err != nil {
			return Raw{}, fmt.Errorf("raw.csv line %d: latency: %w", line, err)
		}
		name := strings.TrimSpace(rec[nameCol])
		t := raw.Types[name]
		if t == nil {
			t = NewRecorder()
			raw.Types[name] = t
		}
		if err := t.Record(us); err != nil {
			return Raw{}, fmt.Errorf("raw.csv line %d: %w", line, err)
		}
		if err := raw.All.Record(us); err != nil {
			return Raw{}, fmt.Errorf("raw.csv line %d: %w", line, err)
		}
		end := start.Add(time.Duration(us) * time.Microsecond)
		if raw.FirstOpAt.IsZero() || start.Before(raw.FirstOpAt) {
			raw.FirstOpAt = start
		}
		if end.After(raw.LastOpAt) {
			raw.LastOpAt = end
		}
	}
}

// parseEpochSeconds parses "1795258912.155084" exactly (no float rounding).
func parseEpochSeconds(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	whole, frac, _ := strings.Cut(s, ".")
	sec, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	if len(frac) > 9 {
		frac = frac[:9]
	}
	var ns int64
	if frac != "" {
		if ns, err = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64); err != nil {
			return time.Time{}, err
		}
	}
	return time.Unix(sec, ns).UTC(), nil
}

// Console is what Benchbase's console log (stdout and stderr) tells beyond
// its files.
type Console struct {
	// Settings is the block Benchbase prints at start ("Terminals: 8", …),
	// without the JDBC URL (it may carry credentials).
	Settings map[string]string `json:"settings,omitempty"`
	// Rate of the (first) phase in requests/s; 0 = unlimited.
	Rate int `json:"rate,omitempty"`
	// LoadTime is what "Finished executing N Loader Threads [time=…]" says.
	LoadTime time.Duration `json:"load_time_ns,omitempty"`
	// Outcomes counts, per transaction name and outcome code, the
	// "Workload Histograms" Benchbase prints at the end.
	Outcomes map[string]map[string]int64 `json:"outcomes,omitempty"`
	// From "Rate limited reqs/s: Results(...)": zero when absent.
	State            string  `json:"state,omitempty"`
	ElapsedNS        int64   `json:"elapsed_ns,omitempty"`
	MeasuredRequests int64   `json:"measured_requests,omitempty"`
	Throughput       float64 `json:"throughput,omitempty"`
	Goodput          float64 `json:"goodput,omitempty"`
}

var (
	ansiRe    = regexp.MustCompile("\x1b\\[[0-9;]*m")
	settingRe = regexp.MustCompile(`^([A-Z][A-Za-z ]*[A-Za-z]):\s+(.*\S)\s*$`)
	loadRe    = regexp.MustCompile(`Finished executing \d+ Loader Threads \[time=([0-9.]+)s\]`)
	phaseRe   = regexp.MustCompile(`PHASE START :: .*\[Rate=([A-Za-z0-9]+)\]`)
	resultsRe = regexp.MustCompile(`Results\(state=(\w+), nanoSeconds=(\d+), measuredRequests=(\d+)\) = (\S+) requests/sec \(throughput\), (\S+) requests/sec \(goodput\)`)
	entryRe   = regexp.MustCompile(`\.([A-Za-z0-9_]+)/\d+\s+\[\s*(\d+)\]`)
)

// consoleSections maps the headings of Benchbase's "Workload Histograms"
// onto outcome codes.
var consoleSections = map[string]string{
	"Completed Transactions:":                  CodeOK,
	"Aborted Transactions:":                    CodeAborted,
	"Rejected Transactions (Server Retry):":    CodeRetry,
	"Rejected Transactions (Retry Different):": CodeRetryDifferent,
	"Unexpected SQL Errors:":                   CodeError,
	"Unknown Status Transactions:":             CodeUnknown,
}

// ParseConsole reads Benchbase's console log. Lines it does not know are
// ignored; a log of a run that loaded only has no outcomes or results.
func ParseConsole(r io.Reader) (Console, error) {
	c := Console{Settings: map[string]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	section := ""
	for sc.Scan() {
		line := strings.TrimRight(ansiRe.ReplaceAllString(sc.Text(), ""), "\r")
		trimmed := strings.TrimSpace(line)
		if code, ok := consoleSections[trimmed]; ok {
			section = code
			continue
		}
		if section != "" {
			if m := entryRe.FindStringSubmatch(line); m != nil {
				n, _ := strconv.ParseInt(m[2], 10, 64) // digits, guaranteed by entryRe
				if c.Outcomes == nil {
					c.Outcomes = map[string]map[string]int64{}
				}
				if c.Outcomes[m[1]] == nil {
					c.Outcomes[m[1]] = map[string]int64{}
				}
				c.Outcomes[m[1]][section] += n
				continue
			}
			if trimmed == "" || trimmed == "<EMPTY>" {
				continue
			}
			section = "" // "User Aborts:" or the closing log line
		}
		if m := settingRe.FindStringSubmatch(line); m != nil && !strings.HasPrefix(line, "[") {
			if m[1] != "URL" {
				c.Settings[m[1]] = m[2]
			}
			continue
		}
		if m := loadRe.FindStringSubmatch(line); m != nil {
			s, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				return Console{}, fmt.Errorf("console: load time %q: %w", m[1], err)
			}
			c.LoadTime = time.Duration(math.Round(s * float64(time.Second)))
			continue
		}
		if m := phaseRe.FindStringSubmatch(line); m != nil && c.Rate == 0 {
			if m[1] != "unlimited" {
				c.Rate, _ = strconv.Atoi(m[1])
			}
			continue
		}
		if m := resultsRe.FindStringSubmatch(line); m != nil {
			c.State = m[1]
			c.ElapsedNS, _ = strconv.ParseInt(m[2], 10, 64)
			c.MeasuredRequests, _ = strconv.ParseInt(m[3], 10, 64)
			c.Throughput = parseJavaDouble(m[4])
			c.Goodput = parseJavaDouble(m[5])
		}
	}
	if err := sc.Err(); err != nil {
		return Console{}, fmt.Errorf("console: %w", err)
	}
	return c, nil
}

// parseJavaDouble reads a number Java printed; NaN and Infinity (a rate over
// zero time) become 0 so a result always encodes to JSON.
func parseJavaDouble(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}
