package main

import (
	"fmt"
	"path/filepath"
	"strings"
)

// The two main classes: our Launcher (READY/GO barrier around YCSB's
// Client, services/driver-agent/ycsb) and YCSB's own Client.
const (
	launcherClass = "io.benchq.ycsb.Launcher"
	clientClass   = "site.ycsb.Client"
)

// hdrPathProperty is where YCSB writes its HdrHistogram logs; the agent
// points it at a temporary directory of its own.
const hdrPathProperty = "hdrhistogram.output.path="

// bareCommand turns the java command line the agent ran for a shard into
// the bare YCSB command line: the same JVM, classpath, workload and
// properties, but YCSB's Client as the main class (no probe, no prewarm, no
// READY/GO barrier) and the histogram logs written into hdrDir, since the
// agent's directory is gone once its shard ended.
func bareCommand(agentCmd []string, hdrDir string) ([]string, error) {
	out := make([]string, len(agentCmd))
	copy(out, agentCmd)
	mains, paths := 0, 0
	for i, a := range out {
		switch {
		case a == launcherClass:
			out[i] = clientClass
			mains++
		case strings.HasPrefix(a, hdrPathProperty) && i > 0 && out[i-1] == "-p":
			out[i] = hdrPathProperty + strings.TrimRight(hdrDir, string(filepath.Separator)) + string(filepath.Separator)
			paths++
		}
	}
	if mains != 1 {
		return nil, fmt.Errorf("bare command: want the main class %s once in the agent's command, found it %d times: %q", launcherClass, mains, agentCmd)
	}
	if paths != 1 {
		return nil, fmt.Errorf("bare command: want one -p %s... in the agent's command, found %d: %q", hdrPathProperty, paths, agentCmd)
	}
	return out, nil
}
