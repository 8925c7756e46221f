package localdb

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func itoa(i int) string { return strconv.Itoa(i) }

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }

func TestParseVersion(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=c4a9a2b1fb2c1a8e\n": "Redis 7.0.15",
		"postgres (PostgreSQL) 15.14 (Debian 15.14-0+deb12u1)\n":                                      "PostgreSQL 15.14",
		"postgres (PostgreSQL) 16.4\n":                                                                "PostgreSQL 16.4",
		"prometheus, version 2.42.0+ds (branch: debian/sid, revision: 2.42.0+ds-5+deb12u1)\n":         "Prometheus 2.42.0+ds",
		"victoria-metrics-20251114-120306-tags-v1.151.0-0-g1a2b3c4d\n":                                "VictoriaMetrics v1.151.0",
	} {
		if got, err := parseVersion(in); err != nil || got != want {
			t.Errorf("parseVersion(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := parseVersion("something else"); err == nil {
		t.Error("garbage parsed")
	}
}

func TestVersionOfInstalledServers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var bins []string
	if b, err := RedisBinary(); err == nil {
		bins = append(bins, b)
	}
	if d, err := PGBinDir(); err == nil {
		bins = append(bins, filepath.Join(d, "postgres"))
	}
	if len(bins) == 0 {
		t.Skip("neither redis-server nor postgres installed")
	}
	re := regexp.MustCompile(`^(Redis|PostgreSQL) \d+\.\d+`)
	for _, b := range bins {
		v, err := Version(ctx, b)
		if err != nil || !re.MatchString(v) {
			t.Errorf("Version(%s) = %q, %v", b, v, err)
		}
	}
	if _, err := exec.LookPath("true"); err == nil {
		if _, err := Version(ctx, "true"); err == nil {
			t.Error("Version(true) should not parse")
		}
	}
}

func TestHostInfo(t *testing.T) {
	t.Parallel()
	info := HostInfo()
	for _, k := range []string{"RAM", "CPU", "Cores", "host", "node", "disk", "cpu_list"} {
		if _, ok := info[k]; !ok {
			t.Errorf("HostInfo lacks %s: %v", k, info)
		}
	}
	if ram, _ := info["RAM"].(int64); ram < 1<<20 {
		t.Errorf("RAM = %v", info["RAM"])
	}
}

func TestHostParsers(t *testing.T) {
	t.Parallel()
	if ram, ok := parseMemTotal("MemTotal:       24567892 kB\nMemFree: 1 kB\n"); !ok || ram != 24567892*1024 {
		t.Errorf("parseMemTotal = %d %v", ram, ok)
	}
	if _, ok := parseMemTotal("MemFree: 1 kB\n"); ok {
		t.Error("MemTotal found in its absence")
	}
	cpuinfo := "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Silver 4110 CPU @ 2.10GHz\n\nprocessor\t: 1\nmodel name\t: other\n"
	if got := parseCPUModel(cpuinfo); got != "Intel(R) Xeon(R) Silver 4110 CPU @ 2.10GHz" {
		t.Errorf("parseCPUModel = %q", got)
	}
	if got := parseCPUList("Name:\tx\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n"); got != "0-1" {
		t.Errorf("parseCPUList = %q", got)
	}
}

// A binary under a directory others cannot pass (root's 0700 home, where
// the bootstrap builds victoria-metrics) is linked into a directory they
// can; one they can reach is used where it is.
func TestRunnableBy(t *testing.T) {
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} { // t.TempDir's are 0700
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	closed, open := filepath.Join(base, "home"), filepath.Join(base, "sut")
	for _, d := range []string{closed, open} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(closed, "server")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := RunnableBy(bin, "someone", open); err != nil || got != bin {
		t.Fatalf("reachable binary: %q, %v; want it where it is", got, err)
	}
	if err := os.Chmod(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	got, err := RunnableBy(bin, "someone", open)
	if err != nil || got != filepath.Join(open, "server") || !othersReach(got) {
		t.Fatalf("unreachable binary: %q, %v; want a link in %s that others reach", got, err, open)
	}
	if again, err := RunnableBy(bin, "someone", open); err != nil || again != got {
		t.Errorf("second start: %q, %v", again, err)
	}
	if got, err := RunnableBy(bin, "", open); err != nil || got != bin {
		t.Errorf("running as ourselves: %q, %v", got, err)
	}
	// A link others reach that names the closed binary (.benchq/bin on
	// PATH, linking into root's home): the binary it names is linked.
	onPath := filepath.Join(base, "bin")
	if err := os.Mkdir(onPath, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(onPath, "server")); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(base, "sut2")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	got, err = RunnableBy(filepath.Join(onPath, "server"), "someone", other)
	if fi, lerr := os.Lstat(got); err != nil || got != filepath.Join(other, "server") || lerr != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Errorf("a reachable link to an unreachable binary: %q, %v; want a hard link of the binary in %s", got, err, other)
	}
}
