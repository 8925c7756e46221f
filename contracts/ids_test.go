package contracts

import (
	"testing"
	"time"
)

func TestCodeIsUnixSecondsAndASuffix(t *testing.T) {
	at := time.Unix(1795000000, 999_000_000)
	if got := Code(at, ""); got != "1795000000" {
		t.Errorf("Code without suffix = %q", got)
	}
	if got := Code(at, "17"); got != "1795000000-17" {
		t.Errorf("Code with suffix = %q", got)
	}
	a, b := RandomSuffix(), RandomSuffix()
	if len(a) != 12 || a == b {
		t.Errorf("RandomSuffix = %q, %q: want 12 hex digits, drawn anew", a, b)
	}
	if c := Code(at, a); !CodePattern.MatchString(c) {
		t.Errorf("%q does not match CodePattern", c)
	}
}
