#!/usr/bin/env bash
# make bench-phases: what an experiment spends outside its operations, and
# how exact a short phase's CPU seconds are — printed against issue 29's
# goals, never asserted. On an embedded stack of its own:
#  1. the default experiment (make run's) RUNS times without monitoring and
#     RUNS times with -m -mc -ma: its overhead = (experiment − the phases'
#     operation windows) / experiment, from `experiments` and
#     `shard_results.first_op_at/last_op_at`; the SUT's time to ready; the
#     phase switch (scripts/phase-switch.sql: a phase's last operation to
#     the next one's GO and first operation); and the overhead of a grid of
#     4 PgBouncer configurations (-xnpp 1,2 -xnpo 4,16);
#  2. PgBouncer -xnpp 2 -mc, 20,000 rows unthrottled (a loading phase of about 2 s): each phase's SUT
#     and pool CPU seconds, and its loaders' or benchmarkers', in the
#     summary against the kernel's count of the same processes in /proc over
#     the same window (a sampler reads them every 20 ms), and how many of
#     the phase's edges the deployer and the agents read.
# Options (environment): RUNS (default 2), PARTS (default "1 2"), GAP
# (seconds between experiments, default 2), COLD=1
# (root: drop the page cache before the first experiment; goal for a first
# run on a fresh machine: overhead <= 5 %).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-2}
PARTS=${PARTS:-1 2}
GAP=${GAP:-2}
DEFAULT="-dbms Redis -sf 0.1 -xop 0.2 -xwl a -nlp 2 -nlt 8 -nbp 1 -nbt 8 -xtb 16384 -xnlf 1 -xnbf 1 -xli 2 -tr"
GRID="-dbms PgBouncer -sf 0.02 -xop 0.2 -xwl a -nlp 1 -nlt 8 -nbp 1 -nbt 8 -xtb 8192 -xnpp 1,2 -xnpo 4,16 -ms 1 -xli 1 -tr"
POOL="-dbms PgBouncer -sf 0.02 -xop 0.2 -xwl a -nlp 2 -nlt 8 -nbp 1 -nbt 8 -xtb 0 -xnpp 2 -xli 1 -tr -mc"
# A benchmarking phase's kind, as the contracts name it.
run_kind=$(python3 -c 'import json; print(json.load(open("contracts/names.json"))["kinds"]["run"])')
bin=$(pwd)/.benchq/bin
py=$(pwd)/.venv/bin/python

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/{print $2}') GiB RAM, load $(cut -d' ' -f1 /proc/loadavg)"
echo "== versions: $(go version | cut -d' ' -f3), $(redis-server --version | cut -d' ' -f3), PostgreSQL $(ls /usr/lib/postgresql | sort -n | tail -1), $(pgbouncer --version 2>/dev/null | head -1), $(java -version 2>&1 | head -1), commit $(git rev-parse --short HEAD)"

home=$(mktemp -d /tmp/benchq-bench-phases-XXXXXX)
chmod 755 "$home"
export BENCHQ_HOME=$home BENCHQ_BIN=$bin BENCHQ_REPORTER=$(pwd)/.venv/bin/reporter
sampler=""
trap '[ -n "$sampler" ] && kill "$sampler" 2>/dev/null; "$bin/benchq" down >/dev/null 2>&1 || true; rm -rf "$home"' EXIT
trap 'exit 130' INT TERM
"$bin/benchq" up >/dev/null
db=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["db_url"])' "$home/stack.json")

# overhead CODE: one line of the experiment's figures.
overhead() {
  psql -At -F ' ' "$db" -v code="$1" -v kind="$run_kind" <<'SQL'
WITH w AS (
  SELECT phase, attempt, min(first_op_at) AS f, max(last_op_at) AS l FROM shard_results
  WHERE code = :'code' GROUP BY phase, attempt
), e AS (
  SELECT extract(epoch FROM ended_at - planned_at) AS total FROM experiments WHERE code = :'code'
)
SELECT round(e.total::numeric, 2), round(sum(extract(epoch FROM l - f))::numeric, 2),
       round((100 * (e.total - sum(extract(epoch FROM l - f))) / e.total)::numeric, 1),
       (SELECT round(max(ready_after_ms) / 1000.0, 2) FROM configurations WHERE code = :'code'),
       (SELECT round(sum(throughput)::numeric, 0) FROM shard_results WHERE code = :'code' AND kind = :'kind')
FROM w, e GROUP BY e.total
SQL
}

# switches CODE: the phase switch's to-GO and to-first-operation times, ms.
switches() { psql -At -F ' ' "$db" -v code="$1" -f scripts/phase-switch.sql | grep -v '^(' | grep -v '^ ' | awk 'NF==3 {print $2, $3}'; }

if [[ " $PARTS " == *" 1 "* ]]; then
echo "== 1. the default experiment, $RUNS runs each way (goals: overhead <= 3 % with -m -mc -ma, SUT ready <= 0.3 s, switch p99 <= 250 ms)"
# GAP seconds between experiments: an agent refills its standby JVMs only
# after 1 s without an experiment (services/driver-agent/standby.go), so
# experiments submitted back to back (GAP=0) start JVMs once the standbys
# are used up.
echo "   experiments $GAP s apart (GAP=0: back to back)"
for way in plain monitored; do
  flags=$DEFAULT; [ "$way" = monitored ] && flags="$DEFAULT -m -mc -ma"
  rows=()
  for ((n = 1; n <= RUNS; n++)); do
    code="bench-ph-${way:0:4}-$n-$(date +%s)"
    note=""
    if [ "$way$n" = plain1 ]; then
      note=" [the stack's first experiment]"
      # COLD=1: the page cache dropped first (root only), as on a machine
      # that has not read the JVM's, YCSB's or the SUT's files yet.
      if [ "${COLD:-0}" = 1 ] && [ "$(id -u)" = 0 ]; then
        sync && echo 3 >/proc/sys/vm/drop_caches && note=" [the stack's first experiment, page cache dropped before it]"
      fi
    fi
    [ "$way$n" = plain1 ] || sleep "$GAP"
    # shellcheck disable=SC2086
    "$bin/benchq" ycsb -e "$code" $flags run >"$home/$code.out" 2>&1 || { tail -20 "$home/$code.out"; exit 1; }
    read -r total windows pct ready tput <<<"$(overhead "$code")"
    echo "   $way run $n: experiment ${total} s, operation windows ${windows} s: overhead ${pct} %, SUT ready ${ready} s; benchmarking ${tput} ops/s ($code)$note"
    switches "$code" >>"$home/switch-$way"
    # A switch far above the goal: its timeline now, before the stack and
    # its database go with the bench.
    if switches "$code" | awk '$2 > 500 { slow = 1 } END { exit !slow }'; then
      echo "   a switch over 500 ms in $code; its timeline (scripts/timeline.sql):"
      psql "$db" -v code="$code" -f scripts/timeline.sql | sed 's/^/     /'
    fi
  done
  "$py" - "$home/switch-$way" "$way" <<'PY'
import statistics, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]
go, first = [r[0] for r in rows], [r[1] for r in rows]
after = [f - g for g, f in rows]
print(f"   {sys.argv[2]}: {len(rows)} phase switches: to GO p50 {pct(go, .5):.0f} ms, p99 {pct(go, .99):.0f} ms; "
      f"to the first operation p50 {pct(first, .5):.0f} ms, p99 {pct(first, .99):.0f} ms (goal p99 <= 250 ms); "
      f"GO instant to the first operation p99 {pct(after, .99):.0f} ms (goal <= 50 ms)")
if len(rows) <= 51:
    # pct's rank of the 99th percentile, round(0.99 (n - 1)), is the highest of up to 51 values.
    print(f"   ({len(rows)} switches: each p99 here is their highest; RUNS=52 or more for a p99 below the maximum)")
PY
done
# The same figures for a grid: 4 PgBouncer configurations (-xnpp 1,2 -xnpo
# 4,16), each with its own SUT, one after another (-ms 1).
code="bench-ph-grid-$(date +%s)"
sleep "$GAP"
# shellcheck disable=SC2086
"$bin/benchq" ycsb -e "$code" $GRID run >"$home/$code.out" 2>&1 || { tail -20 "$home/$code.out"; exit 1; }
read -r total windows pct ready tput <<<"$(overhead "$code")"
echo "   grid of 4 PgBouncer configurations: experiment ${total} s, operation windows ${windows} s: overhead ${pct} % (goal <= 5 %), SUT ready <= ${ready} s ($code)"
fi

if [[ " $PARTS " == *" 2 "* ]]; then
echo "== 2. a short phase's CPU seconds: PgBouncer -xnpp 2 -mc against /proc (goal: within ±5 % for every phase of at least 1 s)"
code="bench-ph-cpu-$(date +%s)"
# The sampler: every 20 ms, the CPU seconds (own + reaped children) of
#  - the SUT: every process whose command is postgres or pgbouncer and whose
#    root is a SUT of this stack (its data directory is under $home/suts);
#  - the drivers: every child of this stack's agents (stack.json) and what
#    runs below it; a driver that exited keeps its last reading (20 ms of
#    its work at most are lost, after its last operation).
"$py" - "$home" "$home/cpu-samples" <<'PY' &
import json, os, sys, time
home, out = sys.argv[1], open(sys.argv[2], "w", buffering=1)
hz = os.sysconf("SC_CLK_TCK")
agents = {p["pid"] for p in json.load(open(f"{home}/stack.json"))["procs"] if p["name"].startswith("driver-agent")}
def stat(p):
    f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
    return int(f[1]), sum(int(x) for x in f[11:15]) / hz  # ppid; utime+stime+cutime+cstime
def trees():
    kids, suts, drivers = {}, [], []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            ppid, _ = stat(p)
            cmd = open(f"/proc/{p}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(p))
        if home + "/suts" in cmd and ("postgres" in cmd or "pgbouncer" in cmd):
            suts.append(int(p))
        if ppid in agents:
            drivers.append(int(p))
    def below(roots):
        seen, todo = set(), list(roots)
        while todo:
            p = todo.pop()
            if p not in seen:
                seen.add(p)
                todo.extend(kids.get(p, []))
        return seen
    return below(suts), below(drivers)
suts, drivers, scanned, last = set(), set(), 0.0, {}
while True:
    now = time.time()
    if now - scanned > 0.1:
        suts, drivers = trees()
        scanned = now
    sut = 0.0
    for p in suts:
        try:
            sut += stat(p)[1]
        except (OSError, IndexError, ValueError):
            pass
    for p in drivers:
        try:
            last[p] = stat(p)[1]
        except (OSError, IndexError, ValueError):
            pass
    out.write(f"{time.time():.4f} {sut:.2f} {sum(last.values()):.2f}\n")
    time.sleep(0.02)
PY
sampler=$!
# shellcheck disable=SC2086
"$bin/benchq" ycsb -e "$code" $POOL run >"$home/$code.out" 2>&1 || { tail -20 "$home/$code.out"; exit 1; }
sleep 8 # the collector pulls a phase's metrics a few seconds after its end
kill "$sampler"; sampler=""
psql -At -F ' ' "$db" -c "SELECT s.kind, extract(epoch FROM s.window_start), extract(epoch FROM s.window_end),
    coalesce(sum(s.value) FILTER (WHERE s.component IN ('sut', 'pool'))::text, 'nan'),
    coalesce(sum(s.value) FILTER (WHERE s.component IN ('loader', 'benchmarker'))::text, 'nan'),
    (SELECT count(*) FROM messages m WHERE m.code = s.code AND m.subject LIKE '%.sut.edge' AND m.payload->>'phase' = s.phase),
    (SELECT count(*) FROM shard_results r JOIN messages m ON m.id = r.message_id
      WHERE r.code = s.code AND r.phase = s.phase AND jsonb_array_length(coalesce(m.payload->'driver_cpu', '[]')) >= 2),
    (SELECT count(*) FROM shard_results r WHERE r.code = s.code AND r.phase = s.phase)
  FROM metric_summaries s WHERE s.code = '$code' AND s.metric = 'cpu_seconds'
  GROUP BY s.code, s.phase, s.kind, s.window_start, s.window_end ORDER BY 2" >"$home/cpu-summary"
"$py" - "$home/cpu-samples" "$home/cpu-summary" "$code" <<'PY'
import bisect, sys
ts, sut, drv = [], [], []
for l in open(sys.argv[1]):
    t, s, d = map(float, l.split())
    ts.append(t); sut.append(s); drv.append(d)
def at(vs, t):
    i = bisect.bisect_left(ts, t)
    if i == 0 or i >= len(ts):
        return float("nan")
    f = (t - ts[i - 1]) / (ts[i] - ts[i - 1])
    return vs[i - 1] + f * (vs[i] - vs[i - 1])
for l in open(sys.argv[2]):
    kind, start, end, got_sut, got_drv, edges, read, shards = l.split()
    start, end = float(start), float(end)
    for who, got, vs, how in (("SUT + pool", got_sut, sut, f"{edges} of 2 edges read by the deployer"),
                              ("drivers", got_drv, drv, f"{read} of {shards} shards read at their edges by their agent")):
        truth = at(vs, end) - at(vs, start)
        got = float(got)
        print(f"   {kind} phase of {end - start:.1f} s: {who} CPU seconds {got:.2f} in the summary, {truth:.2f} in /proc: "
              f"{100 * (got - truth) / truth:+.1f} % ({how}) ({sys.argv[3]})")
PY
fi
