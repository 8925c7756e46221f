#!/usr/bin/env bash
# Prints the version benchq is built as: the nearest tag and the commits
# since, or the abbreviated commit, "-dirty" when the tree has uncommitted
# changes (git describe --tags --always --dirty). Outside a git checkout, or
# without git, it prints "unknown" rather than a guess. scripts/bootstrap.sh
# stamps it into the Go binaries and the reporter (docs/version: README.md).
cd "$(dirname "$0")/.." || { echo unknown; exit 0; }
git describe --tags --always --dirty 2>/dev/null || echo unknown
