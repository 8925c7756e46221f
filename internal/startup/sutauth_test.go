package startup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEachSUTHasAPasswordOfItsOwn(t *testing.T) {
	a := SUTKey("the stack's key")
	p := a.PasswordOf("1234", "Redis-1")
	if len(p) != 43 || strings.ContainsAny(p, ":\\@/ \"'") {
		t.Errorf("password %q: want 43 characters of base64url", p)
	}
	if p != a.PasswordOf("1234", "Redis-1") {
		t.Error("the same SUT's password differs between two derivations: the deployer and the agents would disagree")
	}
	for _, other := range [][2]string{{"1234", "Redis-2"}, {"1235", "Redis-1"}, {"12341", "Redis-"}, {"", "1234Redis-1"}} {
		if a.PasswordOf(other[0], other[1]) == p {
			t.Errorf("experiment %q configuration %q has the password of 1234/Redis-1", other[0], other[1])
		}
	}
	if SUTKey("another key").PasswordOf("1234", "Redis-1") == p {
		t.Error("another stack's key gives the same password")
	}
	if p == "the stack's key" || strings.Contains(p, "stack") {
		t.Error("the password shows the key")
	}
}

func TestSUTAuthFromEnv(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "sut.key")
	if err := os.WriteFile(file, []byte("k3y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name     string
		getenv   func(string) string
		want     string // the password of 1/A
		key, err bool
	}{
		{"none", env(), "", false, false},
		{"key file", env(SUTKeyFileEnv, file), SUTPasswordOf("k3y", "1", "A"), true, false},
		{"key", env(SUTKeyEnv, " k3y "), SUTPasswordOf("k3y", "1", "A"), true, false},
		{"one SUT's password", env(SUTPasswordEnv, "pw"), "pw", false, false},
		{"twice", env(SUTKeyEnv, "k3y", SUTPasswordEnv, "pw"), "", false, true},
		{"missing file", env(SUTKeyFileEnv, filepath.Join(dir, "absent")), "", false, true},
	} {
		a, err := SUTAuthFromEnv(tc.getenv)
		if (err != nil) != tc.err {
			t.Errorf("%s: err %v, want error %v", tc.name, err, tc.err)
			continue
		}
		if got := a.PasswordOf("1", "A"); got != tc.want || a.HasKey() != tc.key {
			t.Errorf("%s: password %q key %v, want %q %v", tc.name, got, a.HasKey(), tc.want, tc.key)
		}
	}
}
