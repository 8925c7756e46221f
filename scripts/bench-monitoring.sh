#!/usr/bin/env bash
# make bench-monitoring: monitoring's three cost figures, printed, never asserted.
#  1. collector ingest: storeMetrics vs a raw COPY (services/collector BenchmarkIngest);
#  2. monitoring's cost: the default experiment's benchmarking throughput with
#     and without -m -mc -ma, ABBA-interleaved on one embedded stack of its own;
#  3. reporter: `summary -e` of 64 shards x 1 h (services/reporter/tests/bench_summary.py).
# Options (environment): BLOCKS (ABBA blocks, default 2), FLAGS (the experiment
# without monitoring; default the Makefile's, uncapped: -xtb 0, 500,000
# operations), BENCHQ_INGEST_ROWS, BENCHQ_INGEST_ROUNDS.
set -euo pipefail
cd "$(dirname "$0")/.."
# A benchmarking phase's kind, as the contracts name it.
run_kind=$(python3 -c 'import json; print(json.load(open("contracts/names.json"))["kinds"]["run"])')
BLOCKS=${BLOCKS:-2}
FLAGS=${FLAGS:--dbms Redis -sf 0.1 -xop 0.5 -xwl a -nlp 2 -nlt 8 -nbp 1 -nbt 8 -xtb 0 -xli 2 -tr}
MONITOR="-m -mc -ma"
bin=$(pwd)/.benchq/bin

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/{print $2}') GiB RAM, load $(cut -d' ' -f1 /proc/loadavg)"
echo "== versions: $(go version | cut -d' ' -f3), $(prometheus --version 2>&1 | head -1), $(redis-server --version | cut -d' ' -f3), PostgreSQL $(ls /usr/lib/postgresql | sort -n | tail -1), commit $(git rev-parse --short HEAD)"

echo "== 1. collector ingest"
go test -run '^$' -bench Ingest -benchtime 1x ./services/collector/ 2>/dev/null | grep '^ingest'

echo "== 2. monitoring's cost to the measurement ($BLOCKS ABBA blocks; A = without, B = with $MONITOR)"
home=$(mktemp -d /tmp/benchq-bench-mon-XXXXXX)
chmod 755 "$home"
export BENCHQ_HOME=$home BENCHQ_BIN=$bin BENCHQ_REPORTER=$(pwd)/.venv/bin/reporter
trap '"$bin/benchq" down >/dev/null 2>&1 || true; rm -rf "$home"' EXIT
trap 'exit 130' INT TERM
"$bin/benchq" up >/dev/null
db=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["db_url"])' "$home/stack.json")
declare -a A B
n=0
for ((b = 1; b <= BLOCKS; b++)); do
  for way in A B B A; do
    n=$((n + 1))
    code="bench-mon-${way,,}-$n-$(date +%s)"
    extra=""; [ "$way" = B ] && extra=$MONITOR
    # shellcheck disable=SC2086
    "$bin/benchq" ycsb -e "$code" $FLAGS $extra run >"$home/$code.out" 2>&1 || { cat "$home/$code.out"; exit 1; }
    tput=$(psql -At "$db" -c "SELECT round(sum(throughput)::numeric, 1) FROM shard_results WHERE code = '$code' AND kind = '$run_kind'")
    echo "   run $n $way: benchmarking throughput $tput ops/s ($code)"
    if [ "$way" = A ]; then A+=("$tput"); else B+=("$tput"); fi
  done
done
.venv/bin/python - "${A[*]}" "${B[*]}" <<'PY'
import statistics, sys
from benchq_reporter.summary.repetitions import t975
a, b = (list(map(float, s.split())) for s in sys.argv[1:3])
ma, mb = statistics.median(a), statistics.median(b)
print(f"   median without {ma:.1f} ops/s, with {mb:.1f} ops/s: monitoring costs {100 * (ma - mb) / ma:+.2f} % (goal <= 2 %)")
# Each ABBA block compares runs made minutes apart, so drift of the machine
# cancels within it: the cost per block, and their mean with a 95 % interval
# (Student's t), say whether the sample resolves a 2 % difference at all.
costs = [100 * (1 - (b[2 * k] + b[2 * k + 1]) / (a[2 * k] + a[2 * k + 1])) for k in range(len(a) // 2)]
print("   cost per ABBA block: " + ", ".join(f"{c:+.2f} %" for c in costs))
if len(costs) > 1:
    t95 = t975(len(costs) - 1)
    m, half = statistics.mean(costs), t95 * statistics.stdev(costs) / len(costs) ** 0.5
    print(f"   mean cost {m:+.2f} % ± {half:.2f} % (95 % interval {m - half:+.2f} % .. {m + half:+.2f} %)")
PY

echo "== 3. reporter"
.venv/bin/pytest -q -s services/reporter/tests/bench_summary.py 2>&1 | grep '^reporter summary'
