package atomicfile

import (
	"fmt"
	"os"
	"strings"
)

// ReadSecret reads a secret file (a key, a token, a password file),
// refusing one that its group or others may read, and returns it trimmed
// of surrounding white space. what names it in errors ("http token").
func ReadSecret(path, what string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s %s is readable by others (mode %v): chmod 600 it", what, path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return []byte(strings.TrimSpace(string(b))), nil
}
