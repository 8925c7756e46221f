package localdb

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// Version runs `binary --version` (redis-server, postgres, pgbouncer or
// victoria-metrics) and returns the product and version as bexhoma reports
// them: "Redis 7.0.15", "PostgreSQL 15.14", "PgBouncer 1.18.0".
func Version(ctx context.Context, binary string) (string, error) {
	if filepath.Base(binary) == "carbon-cache.py" {
		return carbonVersion(binary)
	}
	out, err := exec.CommandContext(ctx, binary, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("version of %s: %w: %s", binary, err, strings.TrimSpace(string(out)))
	}
	if filepath.Base(binary) == "victoria-metrics" && strings.TrimSpace(string(out)) == "" {
		// Built by `go install` (the bootstrap), it has no version stamped
		// in: it is the pinned one.
		return "VictoriaMetrics " + VictoriaMetricsVersion, nil
	}
	v, err := parseVersion(string(out))
	if err != nil {
		return "", fmt.Errorf("version of %s: %w", binary, err)
	}
	return v, nil
}

var (
	redisVersionRE = regexp.MustCompile(`^Redis server v=(\S+)`)
	pgVersionRE    = regexp.MustCompile(`^postgres \(PostgreSQL\) (\S+)`)
	pgbVersionRE   = regexp.MustCompile(`^PgBouncer (\S+)`)
	promVersionRE  = regexp.MustCompile(`^prometheus, version (\S+)`)
	vmVersionRE    = regexp.MustCompile(`^victoria-metrics-\d+-\d+-(?:tags-)?(v\d+\.\d+\.\d+)`)
)

func parseVersion(out string) (string, error) {
	out = strings.TrimSpace(out)
	if m := redisVersionRE.FindStringSubmatch(out); m != nil {
		return "Redis " + m[1], nil
	}
	if m := pgVersionRE.FindStringSubmatch(out); m != nil {
		return "PostgreSQL " + m[1], nil
	}
	if m := pgbVersionRE.FindStringSubmatch(out); m != nil {
		return "PgBouncer " + m[1], nil
	}
	if m := vmVersionRE.FindStringSubmatch(out); m != nil {
		return "VictoriaMetrics " + m[1], nil
	}
	if m := promVersionRE.FindStringSubmatch(out); m != nil {
		return "Prometheus " + m[1], nil
	}
	return "", fmt.Errorf("unrecognised --version output %q", out)
}

// carbonVersion reads the version of carbon installed beside carbon-cache.py
// (its venv's package metadata): carbon-cache.py has no --version. pip
// writes carbon-<version>.dist-info when it builds a wheel, and
// carbon-<version>[-py3.N].egg-info when it installs the sdist the legacy
// way (as the pip of some machines does).
func carbonVersion(script string) (string, error) {
	venv := filepath.Dir(filepath.Dir(script))
	var found []string
	for _, meta := range []string{"carbon-*.dist-info", "carbon-*.egg-info"} {
		m, _ := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages", meta))
		found = append(found, m...)
	}
	if len(found) != 1 {
		return "", fmt.Errorf("version of %s: %d carbon-*.dist-info or carbon-*.egg-info in %s, want 1", script, len(found), venv)
	}
	v := strings.TrimPrefix(filepath.Base(found[0]), "carbon-")
	v = strings.TrimSuffix(strings.TrimSuffix(v, ".dist-info"), ".egg-info")
	v, _, _ = strings.Cut(v, "-py")
	return "Graphite carbon " + v, nil
}
