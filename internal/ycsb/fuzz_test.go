package ycsb

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseSummary: whatever YCSB's stdout holds (a driver killed
// mid-write, JDBC chatter, a JVM's locale), the summary either parses into
// one that encodes to JSON (ParseSummary's promise: non-finite values
// become 0) or is refused with an error; a finished run has a runtime.
func FuzzParseSummary(f *testing.F) {
	files, err := filepath.Glob(fixturePrefix + "*.stdout*.txt")
	if err != nil || len(files) == 0 {
		f.Fatalf("no YCSB stdout fixtures: %v", err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("[OVERALL], RunTime(ms), NaN\n[READ], Operations, 1.0E7\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSummary(bytes.NewReader(data))
		if err != nil {
			if errors.Is(err, ErrNotFinished) || err.Error() != "" {
				return
			}
			t.Fatal("an error without a message")
		}
		if _, err := json.Marshal(s); err != nil {
			t.Fatalf("stdout %q parses into a summary that does not encode: %v", data, err)
		}
		if s.RunTimeMS < 0 {
			t.Fatalf("stdout %q: negative runtime %g", data, s.RunTimeMS)
		}
	})
}
