#!/usr/bin/env bash
# make bench-tsdb-scaling: the seed's "1 node against N nodes", through the
# whole embedded stack as a user runs it: `benchq tsdb -dbms Graphite -nw
# NODES -xsat -cost-per-hour COST`, a saturation search per cluster size (a
# carbon-relay in front of N carbon-caches), then the summary's Scaling
# table (each size's knee, per node, efficiency against linear, cost) and
# each search's knee line. Printed, never asserted (docs/tsdb.md).
# Options (environment): NODES (default 1,2,3), METRICS per agent (1000),
# AGENTS per generator of the first step (8), GENERATORS (2), STEP seconds
# (10), COST per node-hour (0.10).
set -euo pipefail
cd "$(dirname "$0")/.."
NODES=${NODES:-1,2,3}
METRICS=${METRICS:-1000}
AGENTS=${AGENTS:-8}
GENERATORS=${GENERATORS:-2}
STEP=${STEP:-10}
COST=${COST:-0.10}
. scripts/lib/cache.sh
bin=$(pwd)/.benchq/bin
carbon=$(ls -d /opt/benchq/carbon/*/ "$benchq_cache"/carbon/*/ 2>/dev/null | head -1 || true)

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/{print $2}') GiB RAM, load $(cut -d' ' -f1 /proc/loadavg)"
echo "== versions: $(go version | cut -d' ' -f3), carbon $("${carbon}bin/python" -c 'import importlib.metadata as m; print(m.version("carbon"))' 2>/dev/null || echo '?'), graphite-web $("${carbon}bin/python" -c 'import importlib.metadata as m; print(m.version("graphite-web"))' 2>/dev/null || echo '?'), commit $(git rev-parse --short HEAD)"
echo "== benchq tsdb -dbms Graphite -nw $NODES -xsat: $GENERATORS generators x $AGENTS agents x $METRICS metrics flushed every second to start, whole agents added, ${STEP} s steps; cost $COST per node-hour"

home=$(mktemp -d /tmp/benchq-bench-tsdb-scaling-XXXXXX)
chmod 755 "$home"
export BENCHQ_HOME=$home BENCHQ_BIN=$bin BENCHQ_REPORTER=$(pwd)/.venv/bin/reporter
trap '"$bin/benchq" down >/dev/null 2>&1 || true; rm -rf "$home"' EXIT
trap 'exit 130' INT TERM
"$bin/benchq" up >/dev/null
code=bench-tsdb-scaling-$(date +%s)
start=$(date +%s)
if ! out=$("$bin/benchq" tsdb -e "$code" -dbms Graphite -nw "$NODES" -nbp "$GENERATORS" -nbt "$AGENTS" -metrics "$METRICS" \
  -xsat -xsats "$STEP" -cost-per-hour "$COST" -no-report run 2>&1); then
  echo "$out" | tail -30
  echo "== the experiment failed"
  exit 1
fi
echo "$out" > /tmp/benchq-bench-tsdb-scaling.md
echo "== took $(($(date +%s) - start)) s; the whole summary (every step): /tmp/benchq-bench-tsdb-scaling.md"
# The Scaling table, and each configuration's knee line.
echo "$out" | awk '/^#### Scaling/ { on = 1 } on && /^$/ && n++ > 0 { on = 0 } on'
echo "$out" | grep -E 'maximum sustainable throughput' || true
