package main

import (
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
