package benchbase

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ConsoleFile is the name under which the agent keeps Benchbase's console
// output (stdout and stderr) in the shard's output directory.
const ConsoleFile = "benchbase-console.log"

// DefaultWindowS is Benchbase's default sampling window (-s) of results.csv.
const DefaultWindowS = 5

// Outputs are the outputs of one Benchbase run; nil readers are absent.
type Outputs struct {
	Summary io.Reader            // <name>.summary.json: required
	Results io.Reader            // <name>.results.csv
	Samples io.Reader            // <name>.samples.csv
	PerType map[string]io.Reader // <name>.results.<Type>.csv, by type name
	Raw     io.Reader            // <name>.raw.csv
	Console io.Reader            // ConsoleFile
	WindowS int                  // the -s of the run; 0 = DefaultWindowS
}

// Parse assembles a Result from a run's outputs. summary.json gives the
// totals and the latency distribution of all requests; results.<Type>.csv
// the requests per type; the console log the outcomes per type, the rate
// and whether connections were per transaction; raw.csv, when given,
// per-type latencies and histograms (exact) and the first and last
// request's times. A raw.csv whose row count is not the measured requests
// is an error: a truncated file would make every figure from it wrong.
func Parse(o Outputs) (Result, error) {
	if o.Summary == nil {
		return Result{}, ErrNoSummary
	}
	window := o.WindowS
	if window <= 0 {
		window = DefaultWindowS
	}
	res, err := ParseSummary(o.Summary)
	if err != nil {
		return Result{}, err
	}
	if o.Results != nil {
		if res.Windows, err = ParseWindows(o.Results, window); err != nil {
			return Result{}, fmt.Errorf("results.csv: %w", err)
		}
	}
	if o.Samples != nil {
		if res.Samples, err = ParseWindows(o.Samples, 1); err != nil {
			return Result{}, fmt.Errorf("samples.csv: %w", err)
		}
	}
	var console Console
	if o.Console != nil {
		if console, err = ParseConsole(o.Console); err != nil {
			return Result{}, err
		}
		res.Rate = console.Rate
		res.NewConnection = strings.EqualFold(console.Settings["New Connection Per Txn"], "true")
	}
	var raw *Raw
	if o.Raw != nil {
		r, err := ParseRaw(o.Raw)
		if err != nil {
			return Result{}, err
		}
		if n := r.All.Count(); n != res.MeasuredRequests {
			return Result{}, fmt.Errorf("raw.csv has %d requests, summary.json measured %d: truncated or from another run", n, res.MeasuredRequests)
		}
		raw = &r
		first, last := r.FirstOpAt, r.LastOpAt
		res.FirstOpAt, res.LastOpAt = &first, &last
		if res.Histogram, err = r.All.Encode(); err != nil {
			return Result{}, err
		}
	}
	for _, name := range TxTypes {
		t := Transaction{Name: name, Outcomes: console.Outcomes[name]}
		known := t.Outcomes != nil
		if f := o.PerType[name]; f != nil {
			if t.Windows, err = ParseWindows(f, window); err != nil {
				return Result{}, fmt.Errorf("results.%s.csv: %w", name, err)
			}
			for _, w := range t.Windows {
				t.Requests += w.Requests
			}
			known = true
		}
		if raw != nil {
			rec := raw.Types[name]
			if rec == nil {
				rec = NewRecorder()
			}
			if t.Windows != nil && rec.Count() != t.Requests {
				return Result{}, fmt.Errorf("raw.csv has %d %s requests, results.%s.csv %d", rec.Count(), name, name, t.Requests)
			}
			t.Requests, t.Latency = rec.Count(), rec.Latency()
			if t.Histogram, err = rec.Encode(); err != nil {
				return Result{}, err
			}
			known = true
		}
		if known {
			res.Transactions = append(res.Transactions, t)
		}
	}
	return res, nil
}

// ReadDir parses the outputs Benchbase wrote into dir (-d): the files named
// <anything>.summary.json, .results.csv, .samples.csv, .raw.csv and
// .results.<Type>.csv (or exactly those names), and ConsoleFile. Two files
// of one kind (two runs in one directory) are an error.
func ReadDir(dir string, windowS int) (Result, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Result{}, fmt.Errorf("benchbase outputs: %w", err)
	}
	find := func(suffix string) (string, error) {
		var found []string
		for _, e := range entries {
			if n := e.Name(); !e.IsDir() && (n == suffix || strings.HasSuffix(n, "."+suffix)) {
				found = append(found, n)
			}
		}
		switch len(found) {
		case 0:
			return "", nil
		case 1:
			return filepath.Join(dir, found[0]), nil
		}
		return "", fmt.Errorf("benchbase outputs: %d files named *%s in %s: %s", len(found), suffix, dir, strings.Join(found, ", "))
	}
	var files []*os.File
	defer func() {
		for _, f := range files {
			_ = f.Close()
		}
	}()
	open := func(suffix string) (io.Reader, error) {
		path, err := find(suffix)
		if err != nil || path == "" {
			return nil, err
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("benchbase outputs: %w", err)
		}
		files = append(files, f)
		return f, nil
	}
	o := Outputs{PerType: map[string]io.Reader{}, WindowS: windowS}
	for suffix, dst := range map[string]*io.Reader{
		"summary.json": &o.Summary, "results.csv": &o.Results, "samples.csv": &o.Samples,
		"raw.csv": &o.Raw, ConsoleFile: &o.Console,
	} {
		if *dst, err = open(suffix); err != nil {
			return Result{}, err
		}
	}
	if o.Summary == nil {
		return Result{}, fmt.Errorf("%w in %s", ErrNoSummary, dir)
	}
	for _, name := range TxTypes {
		r, err := open("results." + name + ".csv")
		if err != nil {
			return Result{}, err
		}
		if r != nil {
			o.PerType[name] = r
		}
	}
	return Parse(o)
}

// ReadLoad reads what a loading run of Benchbase tells in its console log:
// the loading time ("Finished executing N Loader Threads [time=…]"), the
// loader threads and the scale factor. start is when the agent started
// Benchbase.
func ReadLoad(console io.Reader, start time.Time) (Load, error) {
	c, err := ParseConsole(console)
	if err != nil {
		return Load{}, err
	}
	if c.LoadTime == 0 {
		return Load{}, errors.New("benchbase console: no \"Finished executing … Loader Threads [time=…]\" line: loading did not finish")
	}
	l := Load{Start: start.UTC(), Elapsed: c.LoadTime}
	if v := c.Settings["Scale Factor"]; v != "" {
		if l.ScaleFactor, err = strconv.ParseFloat(v, 64); err != nil {
			return Load{}, fmt.Errorf("benchbase console: Scale Factor %q: %w", v, err)
		}
	}
	if v := c.Settings["Loader Threads"]; v != "" {
		if l.Terminals, err = strconv.Atoi(v); err != nil {
			return Load{}, fmt.Errorf("benchbase console: Loader Threads %q: %w", v, err)
		}
	}
	return l, nil
}
