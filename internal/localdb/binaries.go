package localdb

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
)

// PGBinDir locates PostgreSQL's server binaries (initdb, postgres): the
// directory in $BENCHQ_PG_BIN, else the highest /usr/lib/postgresql/<v>/bin
// (Debian keeps them off PATH), else the directory of `postgres` on PATH.
func PGBinDir() (string, error) {
	if d := os.Getenv("BENCHQ_PG_BIN"); d != "" {
		if !isExecutable(filepath.Join(d, "postgres")) {
			return "", fmt.Errorf("postgresql: BENCHQ_PG_BIN=%s has no postgres binary: %w", d, ErrNotInstalled)
		}
		return d, nil
	}
	if d := debianPGBin("/usr/lib/postgresql"); d != "" {
		return d, nil
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		if resolved, err := filepath.EvalSymlinks(p); err == nil {
			p = resolved
		}
		if d := filepath.Dir(p); isExecutable(filepath.Join(d, "initdb")) {
			return d, nil
		}
	}
	return "", fmt.Errorf("postgresql: no postgres binary in $BENCHQ_PG_BIN, /usr/lib/postgresql/*/bin or PATH (apt-get install postgresql): %w", ErrNotInstalled)
}

// debianPGBin returns root/<highest numeric version>/bin if it holds postgres.
func debianPGBin(root string) string {
	entries, err := os.ReadDir(root)
	if err != nil {
		return ""
	}
	var versions []float64
	byVersion := map[float64]string{}
	for _, e := range entries {
		v, err := strconv.ParseFloat(e.Name(), 64) // "15", "9.6"
		if err != nil {
			continue
		}
		if d := filepath.Join(root, e.Name(), "bin"); isExecutable(filepath.Join(d, "postgres")) {
			versions = append(versions, v)
			byVersion[v] = d
		}
	}
	if len(versions) == 0 {
		return ""
	}
	sort.Float64s(versions)
	return byVersion[versions[len(versions)-1]]
}

// RedisBinary locates redis-server: $BENCHQ_REDIS_SERVER, else PATH.
func RedisBinary() (string, error) {
	return findBinary("redis", "BENCHQ_REDIS_SERVER", "redis-server", "not on PATH (apt-get install redis-server)")
}

// findBinary locates a server's command: the executable in $env, else
// command on PATH, else the first executable of places; missing names what
// was looked at and how to install it.
func findBinary(server, env, command, missing string, places ...string) (string, error) {
	if p := os.Getenv(env); p != "" {
		if !isExecutable(p) {
			return "", fmt.Errorf("%s: %s=%s is not an executable: %w", server, env, p, ErrNotInstalled)
		}
		return p, nil
	}
	if p, err := exec.LookPath(command); err == nil {
		return p, nil
	}
	for _, p := range places {
		if isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %s %s: %w", server, command, missing, ErrNotInstalled)
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// RunnableBy returns a path from which osUser can run bin: bin itself when
// every directory above it lets others through (a binary under /usr), else
// a hard link to it (a copy across file systems) in dir, which the caller
// has made reachable for osUser (prepareDataDir). A binary the bootstrap
// built under root's 0700 home is not runnable by another account.
//
// A symbolic link is followed first: `.benchq/bin/victoria-metrics` on PATH
// is a link into root's home, and both the check and the hard link are
// of the file it names (a hard link to a link is only the link).
func RunnableBy(bin, osUser, dir string) (string, error) {
	if osUser == "" {
		return bin, nil
	}
	if target, err := filepath.EvalSymlinks(bin); err == nil {
		if othersReach(bin) && othersReach(target) {
			return bin, nil
		}
		bin = target
	}
	if othersReach(bin) {
		return bin, nil
	}
	to := filepath.Join(dir, filepath.Base(bin))
	if fi, err := os.Stat(to); err == nil {
		if src, err := os.Stat(bin); err == nil && os.SameFile(fi, src) {
			return to, nil // linked by an earlier start
		}
	}
	_ = os.Remove(to)
	if err := os.Link(bin, to); err != nil {
		if err := copyExecutable(bin, to); err != nil {
			return "", fmt.Errorf("make %s runnable by %s: %w", bin, osUser, err)
		}
	}
	return to, nil
}

// othersReach reports whether every directory above path lets others
// through and path itself is executable by others (path's own directories:
// RunnableBy follows links).
func othersReach(path string) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	if fi, err := os.Stat(abs); err != nil || fi.Mode().Perm()&0o001 == 0 {
		return false
	}
	for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

func copyExecutable(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}
