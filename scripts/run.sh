#!/usr/bin/env bash
# make run: start the embedded stack (unless `make up` already did), run one
# experiment (benchq ycsb, or $BENCHMARK: benchbase), print its summary, and
# stop what this script started.
set -uo pipefail
cd "$(dirname "$0")/.."
BENCHQ=${BENCHQ_HOME:-.benchq}/bin/benchq
started=0
if [ ! -f "${BENCHQ_HOME:-.benchq}/stack.json" ]; then
  "$BENCHQ" up || exit 1
  started=1
fi
"$BENCHQ" "${BENCHMARK:-ycsb}" "$@" run
rc=$?
if [ $started -eq 1 ]; then "$BENCHQ" down; fi
exit $rc
