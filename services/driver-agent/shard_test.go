package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseMarker(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 21, 12, 50, 24, 397170363, time.UTC)
	for _, c := range []struct {
		line   string
		marker string
		ok     bool
	}{
		{"BENCHQ FIRST_OP 2026-11-21T12:50:24.397170363Z", firstOpMarker, true},
		{"BENCHQ LAST_OP 2026-11-21T12:50:24.397170363Z\r", lastOpMarker, true},
		{"BENCHQ FIRST_OP soon", "", false},
		{"BENCHQ READY", "", false},
		{"2026-11-21 12:50:25:387 1 sec: 2950 operations; 2940 current ops/sec;", "", false},
	} {
		m, got, ok := parseMarker(c.line)
		if ok != c.ok || m != c.marker || (ok && !got.Equal(at)) {
			t.Errorf("parseMarker(%q) = %q, %v, %v; want %q, %v, %v", c.line, m, got, ok, c.marker, at, c.ok)
		}
	}
}

// A stderr line too long for the scanner does not stop the reading: the
// driver never blocks on a full pipe, and a standby's DONE after it is seen.
func TestStderrReadsOnPastAnOverlongLine(t *testing.T) {
	r := &shardRun{a: &Agent{}}
	stderr := strings.NewReader(readyLine + "\n" + strings.Repeat("x", 2<<20) + "\n" + doneLine + "\n")
	ready := make(chan struct{})
	tail := &tailBuffer{max: 5}
	r.readStderr(t.Context(), stderr, ready, tail)
	select {
	case <-ready:
	default:
		t.Error("READY not signalled")
	}
	if !r.done {
		t.Error("the DONE after the overlong line was not seen")
	}
	if !strings.Contains(tail.String(), "token too long") {
		t.Errorf("the overlong line is not named in the error tail: %q", tail.String())
	}
}
