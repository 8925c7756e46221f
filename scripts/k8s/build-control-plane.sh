#!/usr/bin/env bash
# Builds a real Kubernetes control plane from pinned Go modules, once:
# etcd v3.5.35, kube-apiserver, kube-controller-manager, kube-scheduler and
# kubectl v1.34.2, and kwok v0.8.0 (with its stage files). Everything lands in
# a cache outside the repository; a second run builds nothing and prints the
# same directory. internal/k8stest starts these binaries for the tests.
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
ETCD_VERSION=v3.5.35
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
if [ "${BENCHQ_K8S_OPTIMIZED:-}" = 1 ]; then
  gcflags=()
  flavour=""
else
  gcflags=("-gcflags=all=-N -l")
  flavour=" unoptimized"
fi

# built NAME VERSION: true when $BIN/NAME exists and was built from VERSION
# in the flavour wanted (an optimised build serves the tests as well).
built() {
  [ -x "$BIN/$1" ] || return 1
  local have
  have=$(cat "$BIN/.$1.version" 2>/dev/null)
  [ "$have" = "$2$flavour" ] || { [ -n "$flavour" ] && [ "$have" = "$2" ]; }
}
stamp() { echo "$2$flavour" >"$BIN/.$1.version"; }

# all_built: nothing left to build.
all_built() {
  for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    built "$b" "$K8S_VERSION" || return 1
  done
  built etcd "$ETCD_VERSION" && built kwok "$KWOK_VERSION" && [ -d "$CACHE/kwok-stage" ]
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

# --- Kubernetes: a wrapper module that requires k8s.io/kubernetes and maps each
# of its `=> ./staging/...` replaces to the published staging module.
k8s_wanted=()
for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  built "$b" "$K8S_VERSION" || k8s_wanted+=("$b")
done
if [ ${#k8s_wanted[@]} -gt 0 ]; then
  step "kubernetes $K8S_VERSION: ${k8s_wanted[*]} (several minutes the first time)"
  go mod download "k8s.io/kubernetes@$K8S_VERSION"
  kdir=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  w="$SRC/kubernetes-$K8S_VERSION"
  mkdir -p "$w"
  {
    echo "module benchq.local/k8s-control-plane"
    echo
    echo "go 1.24.0"
    echo
    echo "godebug default=go1.24"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    sed -n 's#^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/.*#\t\1 => \1 '"$STAGING_VERSION"'#p' "$kdir/go.mod"
    echo ")"
  } >"$w/go.mod.new"
  if ! cmp -s "$w/go.mod.new" "$w/go.mod.want" 2>/dev/null; then
    cp "$w/go.mod.new" "$w/go.mod"
    cp "$w/go.mod.new" "$w/go.mod.want"
    rm -f "$w/go.sum"
  fi
  rm -f "$w/go.mod.new"
  ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=34 -X k8s.io/component-base/version.gitTreeState=clean"
  for b in "${k8s_wanted[@]}"; do
    step "go build k8s.io/kubernetes/cmd/$b"
    (cd "$w" && go build -mod=mod -trimpath ${gcflags[@]+"${gcflags[@]}"} -ldflags "$ldflags" -o "$BIN/$b.tmp" "k8s.io/kubernetes/cmd/$b")
    mv "$BIN/$b.tmp" "$BIN/$b"
    stamp "$b" "$K8S_VERSION"
  done
fi

# --- etcd: the server module through a wrapper (go install ignores its replaces).
if ! built etcd "$ETCD_VERSION"; then
  step "etcd $ETCD_VERSION"
  w="$SRC/etcd-$ETCD_VERSION"
  mkdir -p "$w"
  if [ ! -f "$w/go.mod" ]; then
    printf 'module benchq.local/etcd\n\ngo 1.24.0\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" >"$w/go.mod"
  fi
  (cd "$w" && go build -mod=mod -trimpath ${gcflags[@]+"${gcflags[@]}"} -ldflags "-s -w" -o "$BIN/etcd.tmp" go.etcd.io/etcd/server/v3)
  mv "$BIN/etcd.tmp" "$BIN/etcd"
  stamp etcd "$ETCD_VERSION"
fi

# --- kwok: built inside a copy of its own module (honours its replaces); the
# stage files it ships are copied next to the binaries.
if ! built kwok "$KWOK_VERSION" || [ ! -d "$CACHE/kwok-stage" ]; then
  step "kwok $KWOK_VERSION"
  go mod download "sigs.k8s.io/kwok@$KWOK_VERSION"
  kdir=$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  w="$SRC/kwok-$KWOK_VERSION"
  rm -rf "$w"
  cp -r "$kdir" "$w"
  chmod -R u+w "$w"
  (cd "$w" && go build -trimpath ${gcflags[@]+"${gcflags[@]}"} -ldflags "-s -w" -o "$BIN/kwok.tmp" ./cmd/kwok)
  mv "$BIN/kwok.tmp" "$BIN/kwok"
  rm -rf "$CACHE/kwok-stage.tmp"
  mkdir -p "$CACHE/kwok-stage.tmp"
  cp -r "$w/kustomize/stage/." "$CACHE/kwok-stage.tmp/"
  rm -rf "$CACHE/kwok-stage"
  mv "$CACHE/kwok-stage.tmp" "$CACHE/kwok-stage"
  stamp kwok "$KWOK_VERSION"
fi

rm -rf "$GOCACHE"
step "ready: $BIN (kwok stages in $CACHE/kwok-stage)"
echo "$BIN"
