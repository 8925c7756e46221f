#!/usr/bin/env bash
# Runs a command (make test's stages) while test-k8s's control plane and
# Prometheus build in the background, when they are not built yet.
#
#   scripts/k8s/prebuild.sh make test-stages
#
# On a new machine that build is make test's largest single cost: about 12
# minutes of both cores (kube-apiserver alone 4), which test-k8s, the last
# stage, used to spend before its first test. Here it starts first, at the
# lowest CPU and I/O priority, and uses what the stages before test-k8s
# leave idle: the bootstrap's downloads, the tests' waits. The tests keep
# their cores (a nice 19 process gets about 1/70 of a core against one at
# nice 0), so their timings barely change. test-k8s runs the same build
# scripts, which wait for the background build (one build at a time) and
# then find everything built, or finish what it did not.
#
# When the command fails, a build still under way is stopped (the next run
# starts it again; a killed build leaves no binary behind). The build's
# output goes to <cache>/background-build.log.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
CACHE=${BENCHQ_K8S_CACHE:-$HOME/.cache/benchq/k8s}

if "$here/build-control-plane.sh" --check && "$here/build-prometheus.sh" --check; then
  exec "$@"
fi
mkdir -p "$CACHE"
log="$CACHE/background-build.log"
echo "prebuild: the control plane for test-k8s builds in the background meanwhile (nice 19; log: $log)" >&2
io=()
if command -v ionice >/dev/null; then
  io=(ionice -c 3)
fi
# setsid: the build is a process group of its own, stopped as one below.
setsid "${io[@]}" nice -n 19 bash -c 'echo "started $(date +%T)" && "$1" && echo "control plane built $(date +%T)" && "$2" && echo "prometheus built $(date +%T)"' \
  build "$here/build-control-plane.sh" "$here/build-prometheus.sh" >"$log" 2>&1 </dev/null &
build=$!
stop() {
  if kill -0 "$build" 2>/dev/null; then
    echo "prebuild: stopping the background build (see $log)" >&2
    kill -TERM -- "-$build" 2>/dev/null
  fi
}
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM

"$@"
rc=$?
if [ "$rc" -ne 0 ]; then
  stop
fi
wait "$build" 2>/dev/null
exit "$rc"
