#!/usr/bin/env bash
# Runs a command (make test's stages) while test-k8s's control plane and
# Prometheus build in the background, when they are not built yet.
#
#   scripts/k8s/prebuild.sh make test-stages
#
# On a new machine that build is make test's largest single cost: about 6
# minutes of both cores (12 CPU minutes; kube-apiserver alone about 3),
# which test-k8s, the last stage, used to spend before its first test.
# Here it starts first, at the lowest CPU and I/O priority, and uses what
# the stages before test-k8s leave idle: the bootstrap's downloads, the
# tests' waits. test-k8s runs the same build scripts, which wait for the
# background build (one build at a time) and then find everything built, or
# finish what it did not.
#
# The lowest priority holds only if the build's nice value is weighed
# against the tests: the build runs in a session of its own (setsid, so that
# it can be stopped as one), and with the kernel's autogroups
# (/proc/sys/kernel/sched_autogroup_enabled) a new session is a scheduling
# group of its own, which would get as much CPU as all of make test's
# processes together. So the group itself is set to nice 19 as well
# (/proc/self/autogroup).
#
# When the command fails or is interrupted, a build still under way is
# stopped (the next run starts it again; a killed build leaves no binary
# behind). The build's output goes to <cache>/background-build.log.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/cache.sh"
CACHE=$benchq_k8s_cache

# make -n, -q or -t: the command only prints or checks; nothing to build.
flags=${MAKEFLAGS:-}
case "${flags%% *}" in
  -*) ;;
  *[nqt]*) exec "$@" ;;
esac
if "$here/build-control-plane.sh" --check && "$here/build-prometheus.sh" --check; then
  exec "$@"
fi
mkdir -p "$CACHE"
log="$CACHE/background-build.log"
echo "prebuild: the control plane and Prometheus for test-k8s build in the background meanwhile (nice 19; log: $log)" >&2
io=()
if command -v ionice >/dev/null; then
  io=(ionice -c 3)
fi
# setsid: the build is a process group of its own, stopped as one below.
# The two builds run side by side: each has stretches where it keeps one
# core busy (a long chain of packages, a link), which the other fills.
setsid ${io[@]+"${io[@]}"} nice -n 19 bash -c '
  echo 19 >/proc/self/autogroup 2>/dev/null
  echo "started $(date +%T) ($(cat /proc/self/autogroup 2>/dev/null || echo "no autogroup"))"
  built() { if "$2" >/dev/null; then echo "$1 built $(date +%T)"; else echo "$1: build FAILED (exit $?) $(date +%T); test-k8s will build it again"; fi; }
  built "control plane" "$1" &
  built prometheus "$2" &
  wait' \
  build "$here/build-control-plane.sh" "$here/build-prometheus.sh" >"$log" 2>&1 </dev/null &
build=$!
stop() {
  if kill -0 "$build" 2>/dev/null; then
    echo "prebuild: stopping the background build (see $log)" >&2
    kill -TERM -- "-$build" 2>/dev/null
  fi
}

# The command runs as a job of this script, so that a signal sent to the
# script alone (make passes a SIGTERM on to its recipe, this script) reaches
# it at once: bash runs a trap only once its foreground command has ended,
# but interrupts `wait`. An asynchronous command ignores SIGINT unless told
# otherwise; env restores it, so that Ctrl-C still stops the tests.
env --default-signal=INT,QUIT "$@" &
cmd=$!
trap 'kill -INT "$cmd" 2>/dev/null' INT
trap 'kill -TERM "$cmd" 2>/dev/null' TERM HUP
while :; do
  wait "$cmd"
  rc=$?
  kill -0 "$cmd" 2>/dev/null || break # ended; else a trapped signal ended the wait
done
if [ "$rc" -ne 0 ]; then
  stop
fi
wait "$build" 2>/dev/null
exit "$rc"
