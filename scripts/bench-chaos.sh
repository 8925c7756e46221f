#!/usr/bin/env bash
# make bench-chaos: the chaos harness (e2e/chaos_test.go, docs/chaos.md) for many
# rounds. Each round runs a small Redis experiment and SIGKILLs one
# component of the embedded stack (or its SUT) at a random moment, restarts
# it with `benchq restart`, and checks the experiment ends done (or failed
# with a reason), each shard stored once, nothing left behind. Prints the
# round table and the totals; exits non-zero only when a round failed a
# check, never on a time.
# Options (environment): ROUNDS (default 50), SEED (repeats a run's kills).
set -uo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-50}
report=$(mktemp /tmp/benchq-chaos-report-XXXXXX)
log=$(mktemp /tmp/benchq-chaos-log-XXXXXX)
trap 'rm -f "$report"' EXIT

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/{print $2}') GiB RAM, load $(cut -d' ' -f1 /proc/loadavg)"
echo "== versions: $(go version | cut -d' ' -f3), $(.benchq/bin/nats-server --version 2>&1 | head -1), Redis $(redis-server --version | cut -d' ' -f3 | cut -d= -f2), PostgreSQL $(ls /usr/lib/postgresql | sort -n | tail -1), $(prometheus --version 2>&1 | head -1 | cut -d' ' -f1-3), commit $(git rev-parse --short HEAD)"
echo "== chaos: $ROUNDS rounds (log: $log)"
start=$(date +%s)
# A round takes ~12 s plus up to 4 min when one hangs; the timeout bounds
# the worst case (every round hanging) rather than the expected one.
timeout_min=$((ROUNDS * 5 + 10))
BENCHQ_CHAOS_ROUNDS=$ROUNDS BENCHQ_CHAOS_SEED=${SEED:-} BENCHQ_CHAOS_REPORT=$report \
  go test -count=1 -v -run '^TestChaos$' -timeout "${timeout_min}m" ./e2e/ >"$log" 2>&1
rc=$?
if [ -s "$report" ]; then
  cat "$report"
else
  echo "no report: the harness stopped before its end"; tail -30 "$log"
fi
[ $rc -ne 0 ] && { echo "== FAILED checks:"; grep -E 'round [0-9]+ \(|--- FAIL|panic:' "$log" | head -40; }
echo "== wall time: $(( $(date +%s) - start )) s"
exit $rc
