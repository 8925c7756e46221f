#!/usr/bin/env bash
# Builds prometheus and promtool v2.42.0 (the version deploy/k8s runs and
# Debian ships) from the Go module proxy, once, into the k8s cache, with the
# kubernetes service discovery alone: Debian's build leaves that one out, so
# it cannot read deploy/k8s/prometheus.yaml's scrape configuration.
# make test-k8s checks that configuration with these binaries (promtool check
# config, and Prometheus' own relabelling of the pods the deployer creates).
#
#   scripts/k8s/build-prometheus.sh          # prints the bin directory
#   scripts/k8s/build-prometheus.sh --check  # exit 0 when both are built
#
# One build at a time: a second run waits for the first (make test starts
# one in the background, scripts/k8s/prebuild.sh, and test-k8s waits for it).
# The cache: $BENCHQ_K8S_CACHE, else k8s in benchq's cache (scripts/lib/cache.sh).
set -euo pipefail
VERSION=v0.42.0 # the Go module of Prometheus 2.42.0
. "$(dirname "$0")/../lib/cache.sh"
CACHE=$benchq_k8s_cache
BIN="$CACHE/prometheus-$VERSION"
# How they are built, written beside them: a build made another way (every
# discovery, before 2026-11-29) is made again once, so that promtool
# refuses the same configurations on every machine.
RECIPE="kubernetes discovery only, unoptimized"
built() { [ -x "$BIN/prometheus" ] && [ -x "$BIN/promtool" ] && [ "$(cat "$BIN/.recipe" 2>/dev/null)" = "$RECIPE" ]; }
if [ "${1:-}" = --check ]; then
  built
  exit
fi
mkdir -p "$CACHE"
exec 9>"$CACHE/.build-prometheus.lock"
if ! flock -n 9; then
  echo "build-prometheus: waiting for the build under way (make test starts one in the background; its log: $CACHE/background-build.log)" >&2
  flock 9
fi
if built; then
  echo "$BIN"
  exit 0
fi
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOTOOLCHAIN=${GOTOOLCHAIN:-local}
# A Go build cache of its own, removed once built (see build-control-plane.sh).
export GOCACHE="$CACHE/go-build-prometheus"
echo "build-prometheus: go build prometheus, promtool $VERSION (about 2 minutes the first time)" >&2
dir=$(go mod download -json "github.com/prometheus/prometheus@$VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
src="$CACHE/src/prometheus-$VERSION"
rm -rf "$src" && mkdir -p "$CACHE/src" && cp -r "$dir" "$src" && chmod -R u+w "$src"
# Only the kubernetes service discovery, the one deploy/k8s/prometheus.yaml
# uses: Prometheus' own way to choose them (plugins.yml, then `make plugins`,
# which writes plugins/plugins.go). The other two dozen (AWS, Azure, xDS...)
# were a third of the build: 149 CPU s instead of 218 here. promtool then
# refuses any other discovery in the configuration, which the test would show.
cat >"$src/plugins/plugins.go" <<'GO'
// Written by benchq's scripts/k8s/build-prometheus.sh, as `make plugins`
// would from a plugins.yml that lists the kubernetes discovery alone.

package plugins

import _ "github.com/prometheus/prometheus/discovery/kubernetes" // Register kubernetes plugin.
GO
# Without the compiler's optimisations or debugging information, as the
# tests' control plane (build-control-plane.sh): only make test-k8s runs them.
rm -rf "$BIN.tmp"
(cd "$src" && go build -gcflags="all=-N -l -dwarf=false" -ldflags="-s -w" -o "$BIN.tmp/" ./cmd/prometheus ./cmd/promtool)
echo "$RECIPE" >"$BIN.tmp/.recipe"
rm -rf "$BIN" && mv "$BIN.tmp" "$BIN"
rm -rf "$GOCACHE"
echo "$BIN"
