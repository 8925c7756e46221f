#!/usr/bin/env bash
# End-to-end check of benchq's YCSB bindings and launcher against a throwaway redis-server, a
# throwaway 3-master Redis Cluster, a throwaway PostgreSQL 15 and a PgBouncer in front of it,
# all on free loopback ports in a temp dir:
#   - barrier protocol: BENCHQ READY on stderr, GO on stdin; exit 3 for an unreachable SUT or a
#     missing table, exit 4 when stdin closes without GO; stdout carries only the summary;
#   - load 10,000 records with 2 concurrent loaders (insertstart 0 / 5000) released together,
#     for Redis, PostgreSQL, and PostgreSQL batched (db.batchsize=1000, jdbc.autocommit=false,
#     reWriteBatchedInserts=true); verify the record counts;
#   - workload A (20,000 ops), then E (scans) and D briefly; no Return=ERROR anywhere, and with
#     dataintegrity=true no value read back differs from what was written;
#   - two benchmarking shards of workload D on PostgreSQL (io.benchq.ycsb.ShardedWorkload),
#     released with "GO <instant>": no duplicate key, count(*) = loaded + inserted, both report
#     their window (BENCHQ FIRST_OP / LAST_OP) and write HdrHistogram logs;
#   - Redis Cluster (redis.cluster=true; formed by redis-cli --cluster create): the same load,
#     A, then E with two benchmarking shards; data keys = index entries = loaded + inserted,
#     summed over the masters;
#   - PgBouncer (transaction pooling) with prepareThreshold=0: batched load and workload A
#     without any error; the same workload without prepareThreshold=0 is run too and its
#     prepared-statement errors reported as a note (they are why the catalog sets it).
# Prints the throughput of every phase and a final PASS/FAIL line. KEEP_TMP=1 keeps the temp dir
# (YCSB outputs, server logs) for inspection; CHECK_YCSB_RECORDS / CHECK_YCSB_OPS change the
# load size and the workload-A length. Needs: java 17, mvn,
# redis-server, redis-cli, PostgreSQL 15 in /usr/lib/postgresql/15/bin, pgbouncer, python3,
# runuser, setpriv; run as root.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
LIB="${BENCHQ_CACHE:-$HOME/.cache/benchq}/ycsb/lib"
WL="$ROOT/services/driver-agent/ycsb/workloads"
RECORDS="${CHECK_YCSB_RECORDS:-10000}" # even; larger values for comparable throughput numbers
RUN_OPS="${CHECK_YCSB_OPS:-20000}"
STEP_TIMEOUT=300 # seconds any single YCSB phase may take

TMP=""
REDIS_PID=""
PG_DATA=""
PGB_PID=""
declare -a CLUSTER_PIDS=()
declare -a CLUSTER_PORTS=()
declare -a JAVA_PIDS=()
declare -A FIFO_FD=()
declare -A PID=()
declare -a NOTES=()

say() { echo "check-ycsb: $*"; }

fail() {
  echo "check-ycsb: FAIL: $*" >&2
  exit 1
}

# Kill one pid (ours) and wait up to ~10 s for it to go away, then SIGKILL.
stop_pid() {
  local pid="$1" sig="${2:-TERM}"
  kill -0 "$pid" 2>/dev/null || return 0
  kill "-$sig" "$pid" 2>/dev/null || true
  for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

cleanup() {
  local rc=$?
  set +e
  for fd in "${FIFO_FD[@]}"; do
    eval "exec ${fd}>&-" 2>/dev/null
  done
  for pid in "${JAVA_PIDS[@]}"; do
    stop_pid "$pid"
  done
  [ -n "$REDIS_PID" ] && stop_pid "$REDIS_PID"
  for pid in "${CLUSTER_PIDS[@]}"; do
    stop_pid "$pid"
  done
  [ -n "$PGB_PID" ] && stop_pid "$PGB_PID"
  if [ -n "$PG_DATA" ] && [ -f "$PG_DATA/postmaster.pid" ]; then
    # SIGINT = PostgreSQL's "fast" shutdown.
    stop_pid "$(head -n1 "$PG_DATA/postmaster.pid")" INT
  fi
  wait 2>/dev/null
  if [ -n "$TMP" ]; then
    if [ -n "${KEEP_TMP:-}" ]; then
      echo "check-ycsb: outputs kept in $TMP (KEEP_TMP set)"
    else
      rm -rf "$TMP"
    fi
  fi
  if [ "$rc" -eq 0 ]; then
    echo "check-ycsb: PASS"
  else
    echo "check-ycsb: FAIL (exit $rc)"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# A launcher that died before GO must not kill this script with SIGPIPE; the write fails instead.
trap '' PIPE

free_port() {
  python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'
}

# ---------------------------------------------------------------- build (skipped when current)
scripts/build-ycsb.sh || fail "build-ycsb.sh failed"
compgen -G "$LIB/benchq-ycsb-*.jar" >/dev/null || fail "no benchq-ycsb jar in $LIB"

TMP="$(mktemp -d /tmp/benchq-check-ycsb.XXXXXX)"
chmod 755 "$TMP" # the postgres user must reach its data and socket dirs below

# ---------------------------------------------------------------- redis
REDIS_PORT="$(free_port)"
mkdir "$TMP/redis"
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
  --daemonize no --dir "$TMP/redis" >"$TMP/redis.log" 2>&1 &
REDIS_PID=$!
rcli() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" "$@"; }
for _ in $(seq 100); do
  [ "$(rcli ping 2>/dev/null)" = "PONG" ] && break
  kill -0 "$REDIS_PID" 2>/dev/null || fail "redis-server died: $(cat "$TMP/redis.log")"
  sleep 0.1
done
[ "$(rcli ping 2>/dev/null)" = "PONG" ] || fail "redis-server did not answer on $REDIS_PORT"
say "redis-server pid $REDIS_PID on 127.0.0.1:$REDIS_PORT"

# ---------------------------------------------------------------- redis cluster (3 masters)
for i in 0 1 2; do
  port="$(free_port)"
  mkdir "$TMP/cluster$i"
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
    --dir "$TMP/cluster$i" --cluster-enabled yes --cluster-config-file nodes.conf \
    --cluster-port "$(free_port)" >"$TMP/cluster$i.log" 2>&1 &
  CLUSTER_PIDS+=($!)
  CLUSTER_PORTS+=("$port")
done
for i in 0 1 2; do
  for _ in $(seq 100); do
    [ "$(redis-cli -p "${CLUSTER_PORTS[$i]}" ping 2>/dev/null)" = "PONG" ] && break
    kill -0 "${CLUSTER_PIDS[$i]}" 2>/dev/null || fail "cluster node $i died: $(cat "$TMP/cluster$i.log")"
    sleep 0.1
  done
done
redis-cli --cluster create "${CLUSTER_PORTS[@]/#/127.0.0.1:}" --cluster-yes \
  >"$TMP/cluster-create.log" 2>&1 || fail "redis-cli --cluster create: $(tail -n 5 "$TMP/cluster-create.log")"
for i in 0 1 2; do
  for _ in $(seq 150); do
    redis-cli -p "${CLUSTER_PORTS[$i]}" cluster info | grep -q 'cluster_state:ok' && break
    sleep 0.2
  done
  redis-cli -p "${CLUSTER_PORTS[$i]}" cluster info | grep -q 'cluster_state:ok' \
    || fail "cluster node $i: no cluster_state:ok"
done
say "redis cluster pids ${CLUSTER_PIDS[*]} on ports ${CLUSTER_PORTS[*]}"

# ---------------------------------------------------------------- postgresql
PG_PORT="$(free_port)"
PG_DATA="$TMP/pg/data"
mkdir -p "$TMP/pg/sock"
chown -R postgres: "$TMP/pg"
runuser -u postgres -- "$PGBIN/initdb" -D "$PG_DATA" -U postgres -A trust --no-sync \
  >"$TMP/initdb.log" 2>&1 || fail "initdb failed: $(cat "$TMP/initdb.log")"
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PG_DATA" -l "$TMP/pg/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $TMP/pg/sock" start >/dev/null \
  || fail "postgres did not start: $(cat "$TMP/pg/server.log")"
psql_() { "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres "$@"; }
psql_ -d postgres -c "CREATE DATABASE ycsb" || fail "CREATE DATABASE failed"
cols=""
for i in $(seq 0 9); do cols="$cols, FIELD$i TEXT"; done
psql_ -d ycsb -c "CREATE TABLE usertable (YCSB_KEY VARCHAR(255) PRIMARY KEY$cols)" \
  || fail "CREATE TABLE failed"
say "postgres pid $(head -n1 "$PG_DATA/postmaster.pid") on 127.0.0.1:$PG_PORT"
PG_URL="jdbc:postgresql://127.0.0.1:$PG_PORT/ycsb"

# ---------------------------------------------------------------- pgbouncer (transaction pooling)
PGB_PORT="$(free_port)"
mkdir "$TMP/pgb"
chown postgres: "$TMP/pgb"
cat >"$TMP/pgb/pgbouncer.ini" <<EOF
[databases]
* = host=127.0.0.1 port=$PG_PORT user=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PGB_PORT
unix_socket_dir =
auth_type = any
pool_mode = transaction
max_client_conn = 64
default_pool_size = 8
ignore_startup_parameters = extra_float_digits
EOF
# pgbouncer refuses root; setpriv execs it (no intermediate process), so the pid is pgbouncer's.
setpriv --reuid=postgres --regid=postgres --clear-groups pgbouncer "$TMP/pgb/pgbouncer.ini" \
  >"$TMP/pgb/pgbouncer.log" 2>&1 &
PGB_PID=$!
for _ in $(seq 100); do
  "$PGBIN/psql" -X -q -h 127.0.0.1 -p "$PGB_PORT" -U postgres -d ycsb -c 'SELECT 1' >/dev/null 2>&1 && break
  kill -0 "$PGB_PID" 2>/dev/null || fail "pgbouncer died: $(cat "$TMP/pgb/pgbouncer.log")"
  sleep 0.1
done
say "pgbouncer pid $PGB_PID on 127.0.0.1:$PGB_PORT (transaction pooling)"

# ---------------------------------------------------------------- helpers
REDIS_ARGS=(-db io.benchq.ycsb.RedisClient -p redis.host=127.0.0.1 -p "redis.port=$REDIS_PORT")
PG_ARGS=(-db io.benchq.ycsb.JdbcClient -p "db.url=$PG_URL" -p db.user=postgres)
PG_BATCH_ARGS=(-db io.benchq.ycsb.JdbcClient -p "db.url=$PG_URL?reWriteBatchedInserts=true"
  -p db.user=postgres -p db.batchsize=1000 -p jdbc.autocommit=false)
# prepareThreshold=0 (PgBouncer transaction mode) must pass through the URL untouched.
PG_NOPREP_ARGS=(-db io.benchq.ycsb.JdbcClient -p "db.url=$PG_URL?prepareThreshold=0"
  -p db.user=postgres)

# launch NAME ARGS...: starts the Launcher with stdin on a fifo held open by this shell.
launch() {
  local name="$1" fd
  shift
  mkfifo "$TMP/$name.in"
  java -cp "$LIB/*" io.benchq.ycsb.Launcher "$@" \
    <"$TMP/$name.in" >"$TMP/$name.out" 2>"$TMP/$name.err" &
  JAVA_PIDS+=($!)
  PID[$name]=$!
  # Opening the write end meets the child's open of the read end; keep it until GO.
  exec {fd}>"$TMP/$name.in"
  FIFO_FD[$name]=$fd
}

# wait_ready NAME...: every launcher has printed BENCHQ READY (and is still alive).
wait_ready() {
  local name deadline=$((SECONDS + 60))
  for name in "$@"; do
    until grep -qx "BENCHQ READY" "$TMP/$name.err" 2>/dev/null; do
      if ! kill -0 "${PID[$name]}" 2>/dev/null; then
        fail "$name exited before READY: $(tail -n 5 "$TMP/$name.err")"
      fi
      [ "$SECONDS" -lt "$deadline" ] || fail "$name not READY within 60 s"
      sleep 0.1
    done
  done
}

# send NAME LINE: writes LINE to NAME's stdin and closes it.
send() {
  local fd="${FIFO_FD[$1]}"
  [ -n "$2" ] && echo "$2" >&"$fd"
  eval "exec ${fd}>&-"
  unset "FIFO_FD[$1]"
}

# finish NAME [EXPECTED_RC]: waits (bounded) for NAME to exit and checks its exit code.
finish() {
  local name="$1" want="${2:-0}" pid rc deadline=$((SECONDS + STEP_TIMEOUT))
  pid="${PID[$name]}"
  while kill -0 "$pid" 2>/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || fail "$name still running after $STEP_TIMEOUT s"
    sleep 0.2
  done
  rc=0
  wait "$pid" || rc=$?
  [ "$rc" -eq "$want" ] || fail "$name exited $rc, expected $want: $(tail -n 20 "$TMP/$name.err")"
}

# run_phase NAME... : release the named (READY) launchers together and wait for all of them.
run_phase() {
  local name
  wait_ready "$@"
  for name in "$@"; do send "$name" GO; done
  for name in "$@"; do finish "$name"; done
}

# check_summary NAME: YCSB summary sane, no errors, stdout holds nothing but summary lines.
check_summary() {
  local name="$1" out="$TMP/$1.out"
  grep -q '^\[OVERALL\], Throughput(ops/sec), ' "$out" || fail "$name: no [OVERALL] Throughput line"
  grep -q 'Return=OK, ' "$out" || fail "$name: no Return=OK line"
  if grep -q 'Return=ERROR' "$out"; then
    fail "$name: errors: $(grep 'Return=ERROR' "$out" | tr '\n' ' ') $(grep -m3 'failed' "$TMP/$name.err")"
  fi
  # dataintegrity=true makes YCSB check every value read back ([VERIFY] Return=...).
  if grep -q '^\[VERIFY\], Return=' "$out" && grep '^\[VERIFY\], Return=' "$out" | grep -vq 'Return=OK'; then
    fail "$name: data integrity: $(grep '^\[VERIFY\], Return=' "$out" | tr '\n' ' ')"
  fi
  if grep -v '^\[' "$out" | grep -q .; then
    fail "$name: unexpected stdout line(s): $(grep -v '^\[' "$out" | head -n3)"
  fi
  if grep -q 'Return=NOT_FOUND' "$out"; then
    NOTES+=("$name: $(grep 'Return=NOT_FOUND' "$out" | tr '\n' ' ')")
  fi
}

throughput() { awk -F', ' '/^\[OVERALL\], Throughput/ {printf "%.0f", $3}' "$TMP/$1.out"; }
ops() { awk -F', ' -v op="[$2]" '$1 == op && $2 == "Operations" {print $3}' "$TMP/$1.out"; }

declare -a REPORT=()
report() { REPORT+=("$(printf '%-34s %s' "$1" "$2")"); say "$1: $2"; }

# load_phase TAG ARGS...: two loaders, 4 threads each, halves of the key space, one barrier.
load_phase() {
  local tag="$1"
  shift
  launch "$tag-load0" -load "$@" -P "$WL/workloada" -p recordcount=$RECORDS \
    -p insertstart=0 -p insertcount=$((RECORDS / 2)) -p dataintegrity=true -threads 4 -s
  launch "$tag-load1" -load "$@" -P "$WL/workloada" -p recordcount=$RECORDS \
    -p insertstart=$((RECORDS / 2)) -p insertcount=$((RECORDS / 2)) -p dataintegrity=true \
    -threads 4 -s
  run_phase "$tag-load0" "$tag-load1"
  check_summary "$tag-load0"
  check_summary "$tag-load1"
  local a b
  a="$(throughput "$tag-load0")"
  b="$(throughput "$tag-load1")"
  report "$tag load (2 loaders x 4 thr)" "$a + $b = $((a + b)) ops/s"
}

# run_workload TAG WORKLOAD OPS ARGS...: one client, 8 threads.
run_workload() {
  local tag="$1" wl="$2" n="$3" name="$1-run-$2"
  shift 3
  launch "$name" -t "$@" -P "$WL/workload$wl" -p recordcount=$RECORDS -p operationcount="$n" \
    -p dataintegrity=true -threads 8 -s
  run_phase "$name"
  check_summary "$name"
  local detail=""
  case "$wl" in
    e) detail=" (SCAN $(ops "$name" SCAN), INSERT $(ops "$name" INSERT))" ;;
    d) detail=" (READ $(ops "$name" READ), INSERT $(ops "$name" INSERT))" ;;
  esac
  report "$tag workload $wl ($n ops, 8 thr)" "$(throughput "$name") ops/s$detail"
}

# ---------------------------------------------------------------- barrier protocol
say "barrier protocol"
BAD_PORT="$(free_port)" # nothing listens there
launch proto-badredis -load -db io.benchq.ycsb.RedisClient -p redis.host=127.0.0.1 \
  -p "redis.port=$BAD_PORT" -P "$WL/workloada"
finish proto-badredis 3
grep -q "BENCHQ READY" "$TMP/proto-badredis.err" && fail "READY printed despite failed init"
grep -q "init failed" "$TMP/proto-badredis.err" || fail "no clear init failure message"
send proto-badredis ""

launch proto-notable -load "${PG_ARGS[@]}" -p table=nosuchtable -P "$WL/workloada"
finish proto-notable 3
grep -q "nosuchtable" "$TMP/proto-notable.err" || fail "missing table not named in the message"
send proto-notable ""

launch proto-nogo -load "${REDIS_ARGS[@]}" -P "$WL/workloada" -p recordcount=10
wait_ready proto-nogo
send proto-nogo ""   # EOF without GO
finish proto-nogo 4
[ -s "$TMP/proto-nogo.out" ] && fail "stdout not empty without GO: $(head -n3 "$TMP/proto-nogo.out")"
[ "$(rcli dbsize)" = "0" ] || fail "records written without GO"

launch proto-wrong -load "${REDIS_ARGS[@]}" -P "$WL/workloada" -p recordcount=10
wait_ready proto-wrong
send proto-wrong "GOO"
finish proto-wrong 4
say "barrier protocol ok (exit 3 on broken SUT / missing table, exit 4 without GO)"

# ---------------------------------------------------------------- redis
say "redis"
load_phase redis "${REDIS_ARGS[@]}"
dbsize="$(rcli dbsize)"
indexed="$(rcli zcard _indices)"
[ "$(rcli exists _indices)" = "1" ] || fail "redis: index key _indices missing"
[ $((dbsize - 1)) -eq $RECORDS ] || fail "redis: $((dbsize - 1)) data keys, expected $RECORDS"
[ "$indexed" -eq $RECORDS ] || fail "redis: index holds $indexed keys, expected $RECORDS"
say "redis: $((dbsize - 1)) data keys + index of $indexed"
run_workload redis a $RUN_OPS "${REDIS_ARGS[@]}"
run_workload redis e 2000 "${REDIS_ARGS[@]}"
run_workload redis d 5000 "${REDIS_ARGS[@]}"

# ---------------------------------------------------------------- postgresql
say "postgresql"
pg_count() { psql_ -d ycsb -At -c "SELECT count(*) FROM usertable"; }

load_phase pg "${PG_ARGS[@]}"
n="$(pg_count)"
[ "$n" -eq $RECORDS ] || fail "pg: count(*) = $n after load, expected $RECORDS"
say "pg: count(*) = $n"

psql_ -d ycsb -c "TRUNCATE usertable"
load_phase pg-batched "${PG_BATCH_ARGS[@]}"
n="$(pg_count)"
[ "$n" -eq $RECORDS ] || fail "pg batched: count(*) = $n after load, expected $RECORDS"
grep -q 'Return=BATCHED_OK' "$TMP/pg-batched-load0.out" || fail "pg batched: no BATCHED_OK inserts"
say "pg batched: count(*) = $n"
# Remember the loaded keys: E and D both insert keys from recordcount upwards, so E's rows are
# removed before D, which would otherwise (correctly) fail on duplicate keys.
psql_ -d ycsb -c "CREATE TABLE loaded_keys AS SELECT ycsb_key FROM usertable"

run_workload pg a $RUN_OPS "${PG_ARGS[@]}"
run_workload pg e 2000 "${PG_ARGS[@]}" -p jdbc.fetchsize=50 -p jdbc.autocommit=false
psql_ -d ycsb -c "DELETE FROM usertable u WHERE NOT EXISTS
  (SELECT 1 FROM loaded_keys l WHERE l.ycsb_key = u.ycsb_key)"
run_workload pg d 5000 "${PG_NOPREP_ARGS[@]}"

# ---------------------------------------------------------------- two shards inserting
say "two benchmarking shards of workload D"
psql_ -d ycsb -c "DELETE FROM usertable u WHERE NOT EXISTS
  (SELECT 1 FROM loaded_keys l WHERE l.ycsb_key = u.ycsb_key)"
for s in 1 2; do
  launch "pg-shard$s" -t "${PG_ARGS[@]}" -P "$WL/workloadd" -p recordcount=$RECORDS \
    -p operationcount=5000 -p workload=io.benchq.ycsb.ShardedWorkload -p benchq.shard=$s \
    -p benchq.shards=2 -p hdrhistogram.fileoutput=true -p "hdrhistogram.output.path=$TMP/pg-shard$s-" \
    -threads 4 -s
done
wait_ready pg-shard1 pg-shard2
# Both connect, then wait for the same instant before their first operation.
start="$(date -u -d '+0.4 sec' +%Y-%m-%dT%H:%M:%S.%NZ)"
for s in 1 2; do send "pg-shard$s" "GO $start"; done
first=()
for s in 1 2; do
  finish "pg-shard$s"
  check_summary "pg-shard$s"
  grep -q '^BENCHQ LAST_OP ' "$TMP/pg-shard$s.err" || fail "pg-shard$s: no BENCHQ LAST_OP line"
  at="$(sed -n 's/^BENCHQ FIRST_OP //p' "$TMP/pg-shard$s.err")"
  [ -n "$at" ] || fail "pg-shard$s: no BENCHQ FIRST_OP line"
  first+=("$(date -u -d "$at" +%s%N)")
  [ -s "$TMP/pg-shard$s-READ.hdr" ] || fail "pg-shard$s: no HdrHistogram log $TMP/pg-shard$s-READ.hdr"
done
inserted=$(( $(ops pg-shard1 INSERT) + $(ops pg-shard2 INSERT) ))
n="$(pg_count)"
[ "$n" -eq $((RECORDS + inserted)) ] \
  || fail "pg two shards: count(*) = $n, expected $RECORDS loaded + $inserted inserted"
skew="$(awk -v a="${first[0]}" -v b="${first[1]}" 'BEGIN { d = a - b; if (d < 0) d = -d; printf "%.1f", d / 1e6 }')"
report "pg workload d, 2 shards x 4 thr" "$(( $(throughput pg-shard1) + $(throughput pg-shard2) )) ops/s, $inserted inserts, start skew ${skew} ms"

# ---------------------------------------------------------------- redis cluster
say "redis cluster"
RC_ARGS=(-db io.benchq.ycsb.RedisClient -p redis.host=127.0.0.1 -p "redis.port=${CLUSTER_PORTS[0]}"
  -p redis.cluster=true)
# cluster_rows: "<data keys> <index entries>" summed over the (3 master) nodes.
cluster_rows() {
  local keys=0 idx=0 p n key
  for p in "${CLUSTER_PORTS[@]}"; do
    n="$(redis-cli -p "$p" dbsize)"
    for key in $(redis-cli -p "$p" --scan --pattern '_indices*'); do
      n=$((n - 1))
      idx=$((idx + $(redis-cli -p "$p" zcard "$key")))
    done
    keys=$((keys + n))
  done
  echo "$keys $idx"
}
load_phase rc "${RC_ARGS[@]}"
read -r keys idx <<<"$(cluster_rows)"
[ "$keys" -eq $RECORDS ] && [ "$idx" -eq $RECORDS ] \
  || fail "redis cluster: $keys data keys, $idx indexed after load, expected $RECORDS"
buckets="$(for p in "${CLUSTER_PORTS[@]}"; do redis-cli -p "$p" --scan --pattern '_indices*' | wc -l; done | paste -sd/)"
say "redis cluster: $keys data keys, $idx index entries in $buckets buckets per master"
run_workload rc a $RUN_OPS "${RC_ARGS[@]}"
# Workload E (scans over the masters' index buckets) with two benchmarking shards, whose
# inserts must not collide. (Only once: a second E run would insert the same new keys again.)
for s in 1 2; do
  launch "rc-shard$s" -t "${RC_ARGS[@]}" -P "$WL/workloade" -p recordcount=$RECORDS \
    -p operationcount=2000 -p workload=io.benchq.ycsb.ShardedWorkload -p benchq.shard=$s \
    -p benchq.shards=2 -p dataintegrity=true -threads 4 -s
done
run_phase rc-shard1 rc-shard2
check_summary rc-shard1
check_summary rc-shard2
inserted=$(( $(ops rc-shard1 INSERT) + $(ops rc-shard2 INSERT) ))
read -r keys idx <<<"$(cluster_rows)"
[ "$keys" -eq $((RECORDS + inserted)) ] && [ "$idx" -eq "$keys" ] \
  || fail "redis cluster, 2 shards of E: $keys data keys, $idx indexed, expected $RECORDS + $inserted"
report "rc workload e, 2 shards x 4 thr" "$(( $(throughput rc-shard1) + $(throughput rc-shard2) )) ops/s (SCAN $(( $(ops rc-shard1 SCAN) + $(ops rc-shard2 SCAN) )), INSERT $inserted), $keys keys"

# ---------------------------------------------------------------- pgbouncer
say "pgbouncer (transaction pooling)"
PGB_URL="jdbc:postgresql://127.0.0.1:$PGB_PORT/ycsb"
PGB_ARGS=(-db io.benchq.ycsb.JdbcClient -p "db.url=$PGB_URL?prepareThreshold=0" -p db.user=postgres)
PGB_BATCH_ARGS=(-db io.benchq.ycsb.JdbcClient
  -p "db.url=$PGB_URL?reWriteBatchedInserts=true&prepareThreshold=0" -p db.user=postgres
  -p db.batchsize=1000 -p jdbc.autocommit=false)
psql_ -d ycsb -c "TRUNCATE usertable"
load_phase pgb-batched "${PGB_BATCH_ARGS[@]}"
n="$(pg_count)"
[ "$n" -eq $RECORDS ] || fail "pgbouncer batched: count(*) = $n after load, expected $RECORDS"
run_workload pgb a $RUN_OPS "${PGB_ARGS[@]}"
for name in pgb-batched-load0 pgb-batched-load1 pgb-run-a; do
  if grep -q 'prepared statement' "$TMP/$name.err"; then
    fail "$name: prepared-statement errors despite prepareThreshold=0: $(grep -m1 'prepared statement' "$TMP/$name.err")"
  fi
done
# The control: pgjdbc's default (server-side prepared statements from the 5th execution).
launch pgb-noprep -t -db io.benchq.ycsb.JdbcClient -p "db.url=$PGB_URL" -p db.user=postgres \
  -P "$WL/workloada" -p recordcount=$RECORDS -p operationcount=$RUN_OPS -threads 8 -s
run_phase pgb-noprep
errors="$(awk -F', ' '$2 == "Return=ERROR" {n += $3} END {print n + 0}' "$TMP/pgb-noprep.out")"
NOTES+=("pgbouncer without prepareThreshold=0: $errors of $RUN_OPS operations failed ($(grep -c 'prepared statement' "$TMP/pgb-noprep.err" || true) prepared-statement errors logged)")

# ---------------------------------------------------------------- summary
echo
echo "check-ycsb: throughput (client and servers share this machine):"
for line in "${REPORT[@]}"; do echo "  $line"; done
for f in "${NOTES[@]}"; do echo "  note: $f"; done
