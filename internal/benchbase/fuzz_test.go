package benchbase

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// The parsers read files a Java process wrote, possibly cut short by a
// killed driver: whatever the bytes, they return an error or a result that
// encodes to JSON (the agent publishes it), and never panic (the agent
// would die with every shard it runs).

// addFixture seeds f with the fixture file name, whole and cut short, at
// most its first lines lines: the fuzzer minimizes every input it finds
// interesting, which a 2,000-line file makes slower than fuzzing itself.
func addFixture(f *testing.F, name string, lines int) {
	data, err := os.ReadFile(filepath.Join(fixture, name))
	if err != nil {
		f.Fatal(err)
	}
	if all := bytes.SplitAfter(data, []byte("\n")); len(all) > lines {
		data = bytes.Join(all[:lines], nil)
	}
	f.Add(data)
	f.Add(data[:len(data)/2])
}

func FuzzParseSummary(f *testing.F) {
	addFixture(f, "summary.json", 1000)
	f.Fuzz(encodes("summary.json", func(r io.Reader) (any, error) { return ParseSummary(r) }))
}

func FuzzParseConsole(f *testing.F) {
	addFixture(f, "benchbase-console.log", 1000)
	f.Fuzz(encodes("console log", func(r io.Reader) (any, error) { return ParseConsole(r) }))
}

// encodes is a fuzz function: what parse accepts encodes to JSON.
func encodes(what string, parse func(io.Reader) (any, error)) func(*testing.T, []byte) {
	return func(t *testing.T, data []byte) {
		res, err := parse(bytes.NewReader(data))
		if err != nil {
			return
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("%s %q parses into a result that does not encode: %v", what, data, err)
		}
	}
}

// FuzzParseRaw: every request ParseRaw counts is in exactly one transaction
// type's histogram and in the total.
func FuzzParseRaw(f *testing.F) {
	addFixture(f, "raw.head2000.csv", 20)
	f.Fuzz(func(t *testing.T, data []byte) {
		raw, err := ParseRaw(bytes.NewReader(data))
		if err != nil {
			return
		}
		var sum int64
		for _, rec := range raw.Types {
			sum += rec.Count()
		}
		if raw.All == nil || sum != raw.All.Count() {
			t.Fatalf("raw.csv %q: per-type counts add up to %d, the total is %v", data, sum, raw.All)
		}
	})
}
