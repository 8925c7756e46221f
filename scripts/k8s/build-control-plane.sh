#!/usr/bin/env bash
# Builds a real Kubernetes control plane from pinned Go modules, once:
# etcd v3.6.4, kube-apiserver, kube-controller-manager, kube-scheduler and
# kubectl v1.34.2, and kwok v0.8.0 (with its stage files), in one Go module.
# Everything lands in a cache outside the repository; a second run builds
# nothing and prints the same directory. internal/k8stest starts these
# binaries for the tests.
#
#   scripts/k8s/build-control-plane.sh          # prints the bin directory
#   scripts/k8s/build-control-plane.sh --check  # exit 0 when all is built
#   BENCHQ_K8S_OPTIMIZED=1 ...                   # optimised (see below)
#
# One build at a time: a second run waits for the first (make test starts
# one in the background, scripts/k8s/prebuild.sh, and test-k8s waits for it).
# The cache: $BENCHQ_K8S_CACHE, else k8s in benchq's cache (scripts/lib/cache.sh).
set -euo pipefail

K8S_VERSION=v1.34.2
STAGING_VERSION=v0.34.2
ETCD_VERSION=v3.6.4 # what k8s.io/kubernetes $K8S_VERSION requires
KWOK_VERSION=v0.8.0

. "$(dirname "$0")/../lib/cache.sh"
CACHE=$benchq_k8s_cache
BIN="$CACHE/bin"
SRC="$CACHE/src"
mkdir -p "$BIN" "$SRC"
step() { printf 'build-control-plane: %s\n' "$*" >&2; }

export CGO_ENABLED=0
export GOFLAGS=-buildvcs=false
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
# A Go build cache of its own, removed once everything is built: its
# gigabytes of Kubernetes objects serve no other build, and would otherwise
# fill the user's cache.
export GOCACHE="$CACHE/go-build-control-plane"

# The tests' control plane is built without the compiler's optimisations
# (-N -l): kube-apiserver builds in 185 s instead of 274 here, and
# test-k8s runs as fast on it (its time goes to the tests' own waits).
# make bench-k8s-scale, which loads the API server, builds an optimised one
# into a cache of its own: BENCHQ_K8S_OPTIMIZED=1.
# Either way without debugging information (-dwarf=false): the linker strips
# it (-s -w below), so the compiler need not write it. Measured here: the
# whole unoptimised build 465 CPU s instead of 501; k8s.io/api and
# apimachinery alone 76 instead of 85 unoptimised, 119 instead of 126
# optimised. The stamps stay as they were: the binaries behave the same.
if [ "${BENCHQ_K8S_OPTIMIZED:-}" = 1 ]; then
  gcflags=("-gcflags=all=-dwarf=false")
  flavour=""
else
  gcflags=("-gcflags=all=-N -l -dwarf=false")
  flavour=" unoptimized"
fi

# How the binaries are built, in their stamps: a cache built another way
# (one module per binary, before 2026-11-29) is rebuilt once, so that
# every machine runs the same dependency versions.
RECIPE=one-module

# built NAME VERSION: true when $BIN/NAME exists and was built from VERSION
# by this recipe in the flavour wanted (an optimised build serves the tests
# as well).
built() {
  [ -x "$BIN/$1" ] || return 1
  local have
  have=$(cat "$BIN/.$1.version" 2>/dev/null)
  [ "$have" = "$2 $RECIPE$flavour" ] || { [ -n "$flavour" ] && [ "$have" = "$2 $RECIPE" ]; }
}
stamp() { echo "$2 $RECIPE$flavour" >"$BIN/.$1.version"; }

# all_built: nothing left to build.
all_built() {
  for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    built "$b" "$K8S_VERSION" || return 1
  done
  built etcd "$ETCD_VERSION" && built kwok "$KWOK_VERSION" &&
    [ "$(cat "$CACHE/kwok-stage/.version" 2>/dev/null)" = "$KWOK_VERSION" ]
}
if [ "${1:-}" = --check ]; then
  all_built
  exit
fi

exec 9>"$CACHE/.build-control-plane.lock"
if ! flock -n 9; then
  step "waiting for the build under way (make test starts one in the background; its log: $CACHE/background-build.log)"
  flock 9
fi

# --- One wrapper module for all of them: it requires k8s.io/kubernetes, etcd's
# server and kwok, and maps each of Kubernetes' `=> ./staging/...` replaces
# to the published staging module. One module means one set of dependency
# versions, so the packages the binaries share (client-go, grpc, etcd's
# client, protobuf...) compile once: 573 CPU s here instead of 725 when each
# was built in a module of its own (docs/kubernetes.md). The price: each
# dependency comes at the higher of the versions its users ask for, except
# the Kubernetes libraries the replaces pin to v0.34.2. So
#  - etcd is v3.6.4, the version Kubernetes v1.34.2 itself requires;
#  - kwok is built against the v0.34.2 libraries (it asks for v0.36.1), and
#    the Kubernetes binaries get kwok's newer grpc, otel, klog, kube-openapi
#    and utils than v1.34.2 pins;
#  - k8s.io/cri-api and k8s.io/cri-client keep kwok's version (v0.36.1), not
#    v0.34.2: kwok's log streaming needs their newer API. Of the binaries
#    here only kube-controller-manager links them (through kubelet helpers
#    its volume code imports); none of the tests reaches a container runtime.
wanted=()
pkgs=()
for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  built "$b" "$K8S_VERSION" || { wanted+=("$b"); pkgs+=("k8s.io/kubernetes/cmd/$b"); }
done
built etcd "$ETCD_VERSION" || { wanted+=(etcd); pkgs+=(go.etcd.io/etcd/server/v3); }
built kwok "$KWOK_VERSION" || { wanted+=(kwok); pkgs+=(sigs.k8s.io/kwok/cmd/kwok); }
if [ ${#wanted[@]} -gt 0 ]; then
  step "kubernetes $K8S_VERSION, etcd $ETCD_VERSION, kwok $KWOK_VERSION: ${wanted[*]} (several minutes the first time)"
  kdir=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  w="$SRC/control-plane"
  mkdir -p "$w"
  {
    echo "module benchq.local/k8s-control-plane"
    echo
    echo "go 1.26.0"
    echo
    echo "godebug default=go1.24"
    echo
    echo "require ("
    echo "	k8s.io/kubernetes $K8S_VERSION"
    echo "	go.etcd.io/etcd/server/v3 $ETCD_VERSION"
    echo "	sigs.k8s.io/kwok $KWOK_VERSION"
    echo ")"
    echo
    echo "replace ("
    sed -n 's#^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/.*#\t\1 => \1 '"$STAGING_VERSION"'#p' "$kdir/go.mod" |
      grep -vE '^.k8s\.io/cri-(api|client) '
    echo ")"
  } >"$w/go.mod.new"
  if ! cmp -s "$w/go.mod.new" "$w/go.mod.want" 2>/dev/null; then
    cp "$w/go.mod.new" "$w/go.mod"
    cp "$w/go.mod.new" "$w/go.mod.want"
    rm -f "$w/go.sum"
  fi
  rm -f "$w/go.mod.new"
  # The version variables are Kubernetes' (without them the server reports
  # a bogus version and kubectl fails); etcd and kwok have none of them.
  ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=34 -X k8s.io/component-base/version.gitTreeState=clean"
  rm -rf "$BIN/.new"
  (cd "$w" && go build -mod=mod -trimpath "${gcflags[@]}" -ldflags "$ldflags" -o "$BIN/.new/" "${pkgs[@]}")
  mv "$BIN/.new/server" "$BIN/.new/etcd" 2>/dev/null || true # etcd's main package is .../server/v3
  for b in "${wanted[@]}"; do
    mv "$BIN/.new/$b" "$BIN/$b"
    case $b in
      etcd) stamp etcd "$ETCD_VERSION" ;;
      kwok) stamp kwok "$KWOK_VERSION" ;;
      *) stamp "$b" "$K8S_VERSION" ;;
    esac
  done
  rm -rf "$BIN/.new"
  # What builds before this one left (a module per binary, a copy of kwok's
  # module, which may still be read-only if a build was stopped mid-copy;
  # the binaries of a killed build).
  chmod -R u+w "$SRC"/kwok-v* 2>/dev/null || true
  rm -rf "$SRC"/kubernetes-v* "$SRC"/etcd-v* "$SRC"/kwok-v* "$BIN"/*.tmp
fi

# --- kwok's stage files (what its fake nodes and pods do), from its module.
if [ "$(cat "$CACHE/kwok-stage/.version" 2>/dev/null)" != "$KWOK_VERSION" ]; then
  kdir=$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  rm -rf "$CACHE/kwok-stage.tmp"
  mkdir -p "$CACHE/kwok-stage.tmp"
  # Writable copies (the module cache's files are read-only).
  cp -r --no-preserve=mode "$kdir/kustomize/stage/." "$CACHE/kwok-stage.tmp/"
  echo "$KWOK_VERSION" >"$CACHE/kwok-stage.tmp/.version"
  rm -rf "$CACHE/kwok-stage"
  mv "$CACHE/kwok-stage.tmp" "$CACHE/kwok-stage"
fi

rm -rf "$GOCACHE"
step "ready: $BIN (kwok stages in $CACHE/kwok-stage)"
echo "$BIN"
