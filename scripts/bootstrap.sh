#!/usr/bin/env bash
# Installs everything benchq needs on a fresh Debian machine, idempotently:
# apt packages that are missing, the Go binaries (pinned modules), YCSB core
# from Maven Central with our bindings, and the reporter's venv. Downloads are
# cached outside the repository (Go and Maven caches, ~/.cache/benchq, pip's
# cache); a second run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCHQ_HOME=${BENCHQ_HOME:-.benchq}
. scripts/lib/cache.sh
step() { printf 'bootstrap: %s\n' "$*"; }

# 1. Debian packages. Services do not start on install here; we start our own.
need=()
command -v redis-server >/dev/null || need+=(redis-server)
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || need+=(postgresql)
command -v pgbouncer >/dev/null || [ -x /usr/sbin/pgbouncer ] || need+=(pgbouncer)
command -v java >/dev/null || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || need+=(maven)
# Monitoring (-m, -mc, -ma): the embedded stack's Prometheus and the SUTs'
# exporters. Debian's pgbouncer exporter (1.7) crashes on pgbouncer 1.18's
# SHOW STATS, so benchq exports PgBouncer's metrics itself (internal/pgbexporter).
command -v prometheus >/dev/null || need+=(prometheus)
command -v prometheus-redis-exporter >/dev/null || need+=(prometheus-redis-exporter)
command -v prometheus-postgres-exporter >/dev/null || need+=(prometheus-postgres-exporter)
command -v chromium >/dev/null || need+=(chromium)  # the HTML report's browser test (reporter report)
if [ ${#need[@]} -gt 0 ]; then
  step "apt-get install ${need[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# Run as root, the local backend runs the SUTs and their exporters as
# benchq-sut, an account that owns nothing of the stack (docs/security.md).
if [ "$(id -u)" -eq 0 ] && ! id benchq-sut >/dev/null 2>&1; then
  step "useradd benchq-sut (the SUTs' OS account)"
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin benchq-sut
fi

# 2. Go binaries: our services and CLI, and nats-server from its pinned module.
# The version (tag or commit, scripts/version.sh) is stamped into the
# binaries, so plans and summaries name it, and written for the reporter.
version=$(scripts/version.sh)
mkdir -p "$BENCHQ_HOME/bin"
step "go build services (version $version)"
go build -ldflags "-X github.com/benchq/benchq/internal/version.stamp=$version" -o "$BENCHQ_HOME/bin/" \
  ./services/scheduler ./services/deployer ./services/driver-agent ./services/collector ./cmd/benchq
if [ ! -x "$BENCHQ_HOME/bin/nats-server" ]; then
  step "go build nats-server (pinned in go.mod)"
  go build -o "$BENCHQ_HOME/bin/nats-server" github.com/nats-io/nats-server/v2
fi

# golangci-lint, pinned; built once into the cache outside the repository
# (`make lint`). Its version is in the path, so a new pin builds anew.
# Without debugging information, which nobody reads from a tool we only run:
# 12-17 % less CPU to build it (153 CPU s against 174, and 180 against 217,
# in two pairs here).
GOLANGCI_LINT_VERSION=v2.15.0
lint_bin=$benchq_cache/golangci-lint/$GOLANGCI_LINT_VERSION
if [ ! -x "$lint_bin/golangci-lint" ]; then
  step "go install golangci-lint $GOLANGCI_LINT_VERSION"
  mkdir -p "$lint_bin"
  (cd / && GOBIN=$lint_bin go install -gcflags=all=-dwarf=false -ldflags="-s -w" "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION")
fi
ln -sf "$lint_bin/golangci-lint" "$BENCHQ_HOME/bin/golangci-lint"

# VictoriaMetrics, pinned (internal/localdb: VictoriaMetricsVersion, the
# same): a time-series SUT of the metrics-ingest workload. Built once from
# its Go module into the cache (about a minute; no cluster version is served),
# as its own build makes it: without debugging information it took as long
# (76 CPU s against 73 here).
VM_VERSION=v1.151.0
vm_bin=$benchq_cache/victoria-metrics/$VM_VERSION/bin
if [ ! -x "$vm_bin/victoria-metrics" ]; then
  step "go install victoria-metrics $VM_VERSION"
  mkdir -p "$vm_bin"
  (cd / && GOBIN=$vm_bin go install "github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics@$VM_VERSION")
fi
ln -sf "$vm_bin/victoria-metrics" "$BENCHQ_HOME/bin/victoria-metrics"

# Graphite's carbon and whisper, pinned with their dependencies, in a venv
# of their own (internal/localdb: CarbonHome). As root it goes to
# /opt/benchq, on the system's Python: the SUTs then run as benchq-sut,
# who cannot enter /root (where a pyenv Python may live).
CARBON_VERSION=1.1.10
carbon_python=python3
if [ "$(id -u)" = 0 ]; then
  carbon_home=/opt/benchq/carbon/$CARBON_VERSION
  [ -x /usr/bin/python3 ] && carbon_python=/usr/bin/python3
else carbon_home=$benchq_cache/carbon/$CARBON_VERSION; fi
carbon_want=$(sha256sum scripts/carbon-requirements.txt | cut -d' ' -f1)
if [ ! -x "$carbon_home/bin/carbon-cache.py" ] || [ "$(cat "$carbon_home/.benchq-requirements" 2>/dev/null)" != "$carbon_want" ]; then
  step "carbon $CARBON_VERSION venv ($carbon_home)"
  rm -rf "$carbon_home"
  "$carbon_python" -m venv "$carbon_home"
  "$carbon_home/bin/pip" install -q --no-deps -r scripts/carbon-requirements.txt
  echo "$carbon_want" > "$carbon_home/.benchq-requirements"
fi

# 3. YCSB core + our bindings (skips when unchanged).
scripts/build-ycsb.sh

# 4. Python venv for the reporter, re-installed when its pins change.
stamp=.venv/.benchq-requirements
want=$(cat services/reporter/requirements.txt services/reporter/requirements-dev.txt services/reporter/pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  step "python venv (.venv)"
  python3 -m venv .venv
  .venv/bin/pip install -q --upgrade pip >/dev/null
  .venv/bin/pip install -q -r services/reporter/requirements.txt -r services/reporter/requirements-dev.txt -e services/reporter
  echo "$want" > "$stamp"
fi
# The CLI runs the reporter found next to its own binary: a link to this
# venv's, so that a BENCHQ_HOME outside the repository finds it too.
ln -sfn "$(pwd)/.venv/bin/reporter" "$BENCHQ_HOME/bin/reporter"
# Read at run time (benchq_reporter/version.py); the editable install needs no reinstall.
echo "$version" > services/reporter/src/benchq_reporter/VERSION
step "ready"
