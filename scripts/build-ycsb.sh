#!/usr/bin/env bash
# Builds benchq's YCSB bindings + launcher (services/driver-agent/ycsb) and installs our jar and
# every runtime dependency jar into <cache>/ycsb/lib/ (scripts/lib/cache.sh), and the
# workload files into .../ycsb/workloads/. Run with: java -cp "$LIB/*" io.benchq.ycsb.Launcher
#
# Idempotent: a hash of the pom, sources, workloads and this script is stored next to the jars;
# when it matches, nothing is built ("ycsb: up to date"). Works from any cwd. Maven's local
# repository is the default (~/.m2); the build output stays in services/driver-agent/ycsb/target.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SRC=services/driver-agent/ycsb
. scripts/lib/cache.sh
DEST="$benchq_cache/ycsb" # lib and workloads: cachedir.YCSBLib and YCSBWorkloads
LIB="$DEST/lib"
STAMP="$LIB/.source-hash"

die() {
  echo "build-ycsb: FAILED: $*" >&2
  exit 1
}

command -v mvn >/dev/null || die "mvn not found (install Maven 3.8+ and Java 17)"
command -v java >/dev/null || die "java not found (install Java 17)"
[ -f "$SRC/pom.xml" ] || die "$ROOT/$SRC/pom.xml is missing"

# Paths are part of what is hashed (sha256sum prints them), so a rename also triggers a build.
source_hash() {
  find "$SRC/pom.xml" "$SRC/src" "$SRC/workloads" contracts/testdata/pool_addresses.txt scripts/build-ycsb.sh -type f -print0 \
    | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1
}

mkdir -p "$DEST"
# Two agents starting at once must not install over each other.
exec 9>"$DEST/.lock"
flock 9

# archive: a class-data-sharing archive of the classes a shard's JVM loads (what a standby
# JVM initialises: YCSB core, our bindings, their libraries), so that a JVM maps them instead
# of reading and verifying them from the jars: a fresh JVM's job to READY goes from about 500
# to 290 ms on this machine's two busy cores. The agent passes it when it is there
# (services/driver-agent: launcher). A damaged archive crashes the JVM, so a JVM must start on
# it (exit 4: a standby without a job) before it takes its name. Made for the installed lib
# dir: the JVM checks the class path against it and ignores an archive that does not match.
archive() {
  local tmp="$LIB/.classes.jsa.$$" code=0
  rm -f "$tmp" "$LIB/classes.jsa"
  java -XX:ArchiveClassesAtExit="$tmp" '-Xlog:cds*=off' -cp "$LIB/*" io.benchq.ycsb.Launcher \
    --standby </dev/null >/dev/null 2>&1 || true
  if [ -s "$tmp" ]; then
    java -XX:SharedArchiveFile="$tmp" -Xshare:on '-Xlog:cds*=off' -cp "$LIB/*" \
      io.benchq.ycsb.Launcher --standby </dev/null >/dev/null 2>&1 || code=$?
  fi
  if [ -s "$tmp" ] && [ "$code" -eq 4 ]; then
    mv "$tmp" "$LIB/classes.jsa"
    echo "ycsb: class-data-sharing archive $LIB/classes.jsa"
  else
    rm -f "$tmp"
    echo "ycsb: no class-data-sharing archive (this JVM could not make a usable one); shards start without it"
  fi
}

HASH="$(source_hash)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$HASH" ] \
    && compgen -G "$LIB/benchq-ycsb-*.jar" >/dev/null; then
  echo "ycsb: up to date"
  exit 0
fi

echo "ycsb: building (maven output is quiet unless something fails)"
# A fresh target dir: stale jars (after a version bump) or classes of deleted sources would
# otherwise end up on the classpath.
rm -rf "$SRC/target"
mvn -q -B -f "$SRC/pom.xml" package dependency:copy-dependencies \
  || die "maven build failed (see the maven output above)"

JAR="$(compgen -G "$SRC/target/benchq-ycsb-*.jar" | head -n1 || true)"
[ -n "$JAR" ] || die "maven finished but $SRC/target/benchq-ycsb-*.jar is missing"
compgen -G "$SRC/target/lib/*.jar" >/dev/null || die "no dependency jars in $SRC/target/lib"

# Stage next to the destination, then swap directories, so a reader never sees a half-copied
# lib dir and jars from an older build never linger.
STAGE="$(mktemp -d "$DEST/.stage.XXXXXX")"
trap 'rm -rf "$STAGE"' EXIT
mkdir "$STAGE/lib" "$STAGE/workloads"
cp "$SRC"/target/lib/*.jar "$JAR" "$STAGE/lib/"
cp "$SRC"/workloads/workload* "$STAGE/workloads/"
echo "$HASH" >"$STAGE/lib/.source-hash"

rm -rf "$DEST/workloads" && mv "$STAGE/workloads" "$DEST/workloads"
# lib (with the stamp) goes last: a stamp present means everything is installed.
rm -rf "$LIB" && mv "$STAGE/lib" "$LIB"

echo "ycsb: installed $(ls "$LIB"/*.jar | wc -l) jars into $LIB"
archive
