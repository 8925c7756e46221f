#!/usr/bin/env bash
# make bench-intake: the load test of the HTTP intake, printed, never
# asserted (e2e/intake_bench_test.go, e2e/k6/submit.js). k6 v1.8.1 is
# installed once into ~/.cache/benchq/k6 (pinned; go install).
# Options (environment): RATE (requests a second, default 1000), HOLD (how
# long at RATE, default 60s), RAMP (default 5s), BENCHQ_CPU_WINDOW (default 30s).
set -euo pipefail
cd "$(dirname "$0")/.."
K6_VERSION=v1.8.1
. scripts/lib/cache.sh
k6_bin=$benchq_cache/k6/$K6_VERSION/bin
if [ ! -x "$k6_bin/k6" ]; then
  echo "== installing k6 $K6_VERSION into $k6_bin"
  (cd /tmp && GOBIN=$k6_bin go install "go.k6.io/k6@$K6_VERSION")
fi
echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/{print $2}') GiB RAM, load $(cut -d' ' -f1 /proc/loadavg)"
echo "== versions: $(go version | cut -d' ' -f3), $("$k6_bin/k6" version 2>/dev/null | head -1 | cut -d' ' -f1-2), $(.benchq/bin/nats-server --version 2>&1 | head -1), PostgreSQL $(ls /usr/lib/postgresql | sort -n | tail -1), commit $(git rev-parse --short HEAD)"
echo "== intake under load: up to ${RATE:-1000} requests/s for ${HOLD:-60s} (ramp ${RAMP:-5s}), -ms 1 behind an experiment holding the slot"
BENCHQ_INTAKE_BENCH=1 BENCHQ_K6=$k6_bin/k6 go test -count=1 -timeout 90m -run '^TestIntakeLoad$' -v ./e2e/ >/tmp/benchq-bench-intake.log 2>&1 && rc=0 || rc=$?
grep -E '^   ' /tmp/benchq-bench-intake.log || true
if [ "$rc" != 0 ]; then
  echo "== the run failed (rc $rc); its log: /tmp/benchq-bench-intake.log"
  grep -E -- '--- FAIL|_test.go:[0-9]+:' /tmp/benchq-bench-intake.log | head -20
  exit "$rc"
fi
# The same cost without the garbage of the burst: the live heap of the
# scheduler's records of a queued experiment, after a collection (a Go
# benchmark of services/scheduler, 20,000 queued).
live=$(go test -count=1 -run '^$' -bench BenchmarkQueuedExperimentMemory -benchtime 20000x ./services/scheduler/ 2>&1 | awk '/B\/queued/ { print $(NF-1) }')
echo "   live heap per queued experiment (20,000 queued, after a collection): ${live:-?} B"
