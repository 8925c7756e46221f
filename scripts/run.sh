#!/usr/bin/env bash
# make run: start the embedded stack (unless `benchq up` already did), run
# one experiment (benchq ycsb, or $BENCHMARK: benchbase: it prints the
# summary, writes the HTML report and says where), and stop what this script
# started.
set -uo pipefail
cd "$(dirname "$0")/.."
home=${BENCHQ_HOME:-.benchq}
BENCHQ=$home/bin/benchq
started=0
if [ ! -f "$home/stack.json" ]; then
  "$BENCHQ" up || exit 1
  started=1
fi
"$BENCHQ" "${BENCHMARK:-ycsb}" "$@" run
rc=$?
if [ $started -eq 1 ]; then "$BENCHQ" down; fi
exit $rc
