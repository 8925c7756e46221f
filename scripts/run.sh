#!/usr/bin/env bash
# make run: start the embedded stack (unless `make up` already did), run one
# experiment (benchq ycsb, or $BENCHMARK: benchbase), print its summary,
# write its HTML report (reporter report) and say where it is, and stop what
# this script started.
set -uo pipefail
cd "$(dirname "$0")/.."
home=${BENCHQ_HOME:-.benchq}
BENCHQ=$home/bin/benchq
started=0
if [ ! -f "$home/stack.json" ]; then
  "$BENCHQ" up || exit 1
  started=1
fi
# The report needs the experiment's code: the user's -e, else one of ours.
code=""
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in -e | --e) code=${args[i + 1]:-} ;; esac
done
if [ -z "$code" ]; then
  code="run-$(date +%s)"
  args=(-e "$code" "${args[@]}")
fi
"$BENCHQ" "${BENCHMARK:-ycsb}" "${args[@]}" run
rc=$?
db=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["db_url"])' "$home/stack.json" 2>/dev/null)
report="$home/reports/$code.html"
if [ -n "$db" ] && .venv/bin/reporter report --db "$db" -e "$code" -o "$report" >/dev/null; then
  echo
  echo "HTML report of $code (summary and plots; opens without network): $report"
fi
if [ $started -eq 1 ]; then "$BENCHQ" down; fi
exit $rc
