package main

import (
	"math"
	"testing"
)

func TestParseJavaVersion(t *testing.T) {
	t.Parallel()
	for out, want := range map[string]string{
		"openjdk version \"17.0.15\" 2025-04-15\nOpenJDK Runtime Environment (build 17.0.15+6-Debian-1deb12u1)\nOpenJDK 64-Bit Server VM (build 17.0.15+6-Debian-1deb12u1, mixed mode, sharing)\n": "openjdk 17.0.15 (build 17.0.15+6-Debian-1deb12u1)",
		"Picked up JAVA_TOOL_OPTIONS: -Xmx1g\njava version \"21.0.2\" 2024-01-16 LTS\nJava(TM) SE Runtime Environment (build 21.0.2+13-LTS-58)\n":                                                  "java 21.0.2 (build 21.0.2+13-LTS-58)",
		"something else\n": "something else",
		"":                 "unknown",
	} {
		if got := parseJavaVersion(out); got != want {
			t.Errorf("parseJavaVersion(%q) = %q, want %q", out, got, want)
		}
	}
}

func TestJarVersion(t *testing.T) {
	t.Parallel()
	names := []string{"HdrHistogram-2.2.2.jar", "benchq-ycsb-0.1.0.jar", "core-extras-1.0.jar", "core-0.17.0.jar", "jedis-4.4.8.jar", "README"}
	for artifact, want := range map[string]string{"core": "0.17.0", "jedis": "4.4.8", "benchq-ycsb": "0.1.0", "HdrHistogram": "2.2.2", "postgresql": ""} {
		if got := jarVersion(names, artifact); got != want {
			t.Errorf("jarVersion(%s) = %q, want %q", artifact, got, want)
		}
	}
}

func TestParseLoadAverage(t *testing.T) {
	t.Parallel()
	if got := parseLoadAverage("11.62 7.45 7.14 3/512 30001\n"); got != 11.62 {
		t.Errorf("got %g", got)
	}
	if got := parseLoadAverage(""); !math.IsNaN(got) {
		t.Errorf("empty: %g", got)
	}
}
