// Package version is the version of benchq a binary was built from: the
// tag or commit, so that a plan, and the summary printed from it, name the
// code that produced the figures.
package version

import "runtime/debug"

// stamp is set at build time by scripts/bootstrap.sh:
//
//	go build -ldflags "-X github.com/benchq/benchq/internal/version.stamp=$(scripts/version.sh)"
//
// scripts/version.sh prints `git describe --tags --always --dirty`, which
// also names the nearest tag; the reporter's --version reads the same
// script's output (services/reporter/src/benchq_reporter/version.py).
var stamp string

// Unknown is reported by a binary built without a stamp and outside a
// checkout (go test, go run of a module copy): no guess.
const Unknown = "unknown"

// String is the stamped version; without one, the commit the go command
// recorded for a plain `go build` in a checkout (abbreviated like git's,
// "-dirty" when the tree had changes); else Unknown.
func String() string {
	if stamp != "" {
		return stamp
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return Unknown
	}
	return fromBuildSettings(info.Settings)
}

func fromBuildSettings(settings []debug.BuildSetting) string {
	var revision string
	var modified bool
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if revision == "" {
		return Unknown
	}
	if len(revision) > 7 {
		revision = revision[:7]
	}
	if modified {
		revision += "-dirty"
	}
	return revision
}
