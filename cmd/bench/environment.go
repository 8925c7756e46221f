package main

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"github.com/benchq/benchq/internal/localdb"
)

// environment is the machine and the versions the figures were measured
// with; a figure without them cannot be compared with another.
type environment struct {
	CPU     string
	Cores   int
	CPUList string
	RAM     int64 // bytes
	Kernel  string

	Go       string // the toolchain that built the driver agent
	Java     string
	YCSB     string // YCSB core
	Jedis    string
	Bindings string // our bindings jar (benchq-ycsb)
	Redis    string
	NATS     string
	Commit   string
	Missing  []string // what could not be found out, and why
}

// describeEnvironment finds out the machine and the versions. What it
// cannot find out is printed as unknown, with the reason: the benchmark
// still runs.
func describeEnvironment(ctx context.Context, cfg Config) environment {
	var e environment
	unknown := func(what string, err error) string {
		e.Missing = append(e.Missing, fmt.Sprintf("%s: %v", what, err))
		return "unknown"
	}
	info := localdb.HostInfo()
	e.CPU, _ = info["CPU"].(string)
	e.Cores, _ = info["Cores"].(int)
	e.CPUList, _ = info["cpu_list"].(string)
	e.RAM, _ = info["RAM"].(int64)
	e.Kernel, _ = info["host"].(string)

	e.Go = runtime.Version()
	if bi, err := buildinfo.ReadFile(cfg.agentBin()); err == nil {
		e.Go = bi.GoVersion
	}
	if out, err := exec.CommandContext(ctx, cfg.Java, "-version").CombinedOutput(); err == nil {
		e.Java = parseJavaVersion(string(out))
	} else {
		e.Java = unknown("java", err)
	}
	if entries, err := os.ReadDir(cfg.YCSBLib); err == nil {
		var names []string
		for _, en := range entries {
			names = append(names, en.Name())
		}
		e.YCSB = orUnknown(jarVersion(names, "core"))
		e.Jedis = orUnknown(jarVersion(names, "jedis"))
		e.Bindings = orUnknown(jarVersion(names, "benchq-ycsb"))
	} else {
		e.YCSB = unknown("YCSB", err)
		e.Jedis, e.Bindings = e.YCSB, e.YCSB
	}
	if bin, err := localdb.RedisBinary(); err != nil {
		e.Redis = unknown("redis", err)
	} else if v, err := localdb.Version(ctx, bin); err != nil {
		e.Redis = unknown("redis", err)
	} else {
		e.Redis = strings.TrimPrefix(v, "Redis ")
	}
	if out, err := exec.CommandContext(ctx, cfg.natsBin(), "--version").CombinedOutput(); err == nil {
		e.NATS = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "nats-server:"))
	} else {
		e.NATS = unknown("nats-server", err)
	}
	e.Commit = gitCommit(ctx)
	return e
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// gitCommit is HEAD's short hash, "+dirty" when the working tree differs.
func gitCommit(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown (not a git checkout)"
	}
	commit := strings.TrimSpace(string(out))
	if st, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		commit += "+dirty"
	}
	return commit
}

var (
	javaVersionRE = regexp.MustCompile(`^(\S+) version "([^"]+)"`)
	javaBuildRE   = regexp.MustCompile(`Runtime Environment[^(]*\(build ([^)]+)\)`)
)

// parseJavaVersion turns `java -version`'s output into
// "openjdk 17.0.15 (build 17.0.15+6-Debian-1deb12u1)".
func parseJavaVersion(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i, l := range lines {
		m := javaVersionRE.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		v := m[1] + " " + m[2]
		if i+1 < len(lines) {
			if b := javaBuildRE.FindStringSubmatch(lines[i+1]); b != nil {
				v += " (build " + b[1] + ")"
			}
		}
		return v
	}
	if len(lines) > 0 && strings.TrimSpace(lines[0]) != "" {
		return strings.TrimSpace(lines[0])
	}
	return "unknown"
}

// loadAverage is the 1-minute load average (/proc/loadavg), NaN if unknown:
// other processes competing for the cores make every figure noisier.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return math.NaN()
	}
	return parseLoadAverage(string(b))
}

func parseLoadAverage(s string) float64 {
	f := strings.Fields(s)
	if len(f) == 0 {
		return math.NaN()
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// jarVersion finds "<artifact>-<version>.jar" among names and returns the
// version ("" when absent). The version must start with a digit, so that
// "core" does not match "core-extras-1.0.jar".
func jarVersion(names []string, artifact string) string {
	for _, n := range names {
		v, ok := strings.CutPrefix(n, artifact+"-")
		if !ok || !strings.HasSuffix(v, ".jar") {
			continue
		}
		v = strings.TrimSuffix(v, ".jar")
		if v != "" && v[0] >= '0' && v[0] <= '9' {
			return v
		}
	}
	return ""
}
