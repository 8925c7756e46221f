#!/usr/bin/env bash
# make bench-saturation: how reproducible the saturation knee is, printed, never
# asserted (e2e/saturation_test.go, TestSaturationRepeats): two saturation
# searches each for Redis held to 5 % of a CPU (a cgroup quota; needs root)
# and for PostgreSQL as the machine runs it, with the knees, their steps and
# time, and whether the two knees agree within the 5 % precision asked; and
# how far each Redis knee lies from the throttled Redis's capacity flat out
# (a closed-loop phase), measured right before and right after its search.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/{print $2}') GiB RAM, load $(cut -d' ' -f1 /proc/loadavg)"
echo "== versions: $(go version | cut -d' ' -f3), Redis $(redis-server --version | sed -E 's/.*v=([^ ]+).*/\1/'), PostgreSQL $(ls /usr/lib/postgresql | sort -n | tail -1), YCSB 0.17.0 (our bindings), commit $(git rev-parse --short HEAD)"
echo "== saturation searches: workload c, 10,000 rows, 1 shard of 16 threads from 500 ops/s, 10 s steps, precision 5 %"
BENCHQ_SATURATION_BENCH=1 go test -count=1 -timeout 90m -run '^TestSaturationRepeats$' -v ./e2e/ >/tmp/benchq-bench-saturation.log 2>&1 && rc=0 || rc=$?
grep -E '^ +saturation_test.go:[0-9]+: +(Redis|PostgreSQL)' /tmp/benchq-bench-saturation.log | sed -E 's/^ +saturation_test.go:[0-9]+: //' || true
if [ "$rc" != 0 ]; then
  echo "== the run failed (rc $rc); its log: /tmp/benchq-bench-saturation.log"
  grep -E -- '--- FAIL|_test.go:[0-9]+:' /tmp/benchq-bench-saturation.log | head -20
  exit "$rc"
fi
