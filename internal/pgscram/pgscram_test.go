package pgscram

import (
	"regexp"
	"strings"
	"testing"
)

// A verifier has PostgreSQL's form, a fresh salt each time, and never the
// password; a password PostgreSQL would normalise first is refused.
func TestVerifier(t *testing.T) {
	form := regexp.MustCompile(`^SCRAM-SHA-256\$4096:[A-Za-z0-9+/]{22}==\$[A-Za-z0-9+/]{43}=:[A-Za-z0-9+/]{43}=$`)
	a, err := Verifier("it's-a-secret")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Verifier("it's-a-secret")
	if !form.MatchString(a) || a == b || strings.Contains(a, "secret") {
		t.Errorf("verifiers %q and %q: want PostgreSQL's form, two salts, no password", a, b)
	}
	for _, bad := range []string{"", "caf\u00e9", "tab\there"} {
		if _, err := Verifier(bad); err == nil {
			t.Errorf("Verifier(%q) accepted", bad)
		}
	}
	stmt, err := AlterRole(`odd"role`, "it's-a-secret", true)
	if err != nil || !strings.HasPrefix(stmt, `ALTER ROLE "odd""role" LOGIN PASSWORD 'SCRAM-SHA-256$4096:`) || strings.Contains(stmt, "secret") {
		t.Errorf("AlterRole = %q, %v", stmt, err)
	}
}
