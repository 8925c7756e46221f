// Package cachedir names the places outside the repository where benchq
// keeps what it downloads and builds (the YCSB jars, VictoriaMetrics,
// carbon, the Kubernetes control plane, PostgreSQL's template data
// directory, linters): one rule, which scripts/lib/cache.sh writes again for
// the shell scripts; cachedir_test.go holds the two to each other.
package cachedir

import (
	"os"
	"path/filepath"
)

// Root is $BENCHQ_CACHE, else $XDG_CACHE_HOME/benchq, else ~/.cache/benchq.
func Root() string {
	if c := os.Getenv("BENCHQ_CACHE"); c != "" {
		return c
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "benchq")
}

// YCSBLib is where scripts/build-ycsb.sh puts the YCSB core, our bindings
// and their dependencies: $BENCHQ_YCSB_LIB, else Root()/ycsb/lib.
func YCSBLib() string {
	if l := os.Getenv("BENCHQ_YCSB_LIB"); l != "" {
		return l
	}
	return filepath.Join(Root(), "ycsb", "lib")
}

// YCSBWorkloads is where scripts/build-ycsb.sh puts the workload files a–f
// (copies of services/driver-agent/ycsb/workloads, so that an agent started
// outside the repository finds them): $BENCHQ_YCSB_WORKLOADS, else
// Root()/ycsb/workloads.
func YCSBWorkloads() string {
	if w := os.Getenv("BENCHQ_YCSB_WORKLOADS"); w != "" {
		return w
	}
	return filepath.Join(Root(), "ycsb", "workloads")
}

// K8s is where scripts/k8s/ builds the control plane and Prometheus' pod
// binaries: $BENCHQ_K8S_CACHE, else Root()/k8s.
func K8s() string {
	if c := os.Getenv("BENCHQ_K8S_CACHE"); c != "" {
		return c
	}
	return filepath.Join(Root(), "k8s")
}
