# benchq — the two commands are `make run` and `make test`.
SHELL := /bin/bash
BENCHQ_HOME ?= $(CURDIR)/.benchq
export BENCHQ_HOME
# The CLI the bootstrap built into this home, else the repository's (a stack
# started with another BENCHQ_HOME by .benchq/bin/benchq is still found by
# make down and make summary). Expanded when a recipe runs, after its
# bootstrap.
BENCHQ = $(firstword $(wildcard $(BENCHQ_HOME)/bin/benchq $(CURDIR)/.benchq/bin/benchq) $(BENCHQ_HOME)/bin/benchq)

# The default experiment: YCSB workload A, 100,000 rows loaded by 2 shards,
# 200,000 operations by 1 shard, -xtb 16384 -xnlf 1 -xnbf 1, monitored (-m -mc -ma).
DBMS ?= Redis
EXPERIMENT ?= -dbms $(DBMS) -sf 0.1 -xop 0.2 -xwl a -nlp 2 -nlt 8 -nbp 1 -nbt 8 -xtb 16384 -xnlf 1 -xnbf 1 -xli 2 -tr -m -mc -ma

# The TPC-C experiment (`make run-tpcc`): 2 warehouses loaded by one pod,
# 30 s of 8 terminals on 1 pod, then split over 2 pods.
TPCC ?= -dbms PostgreSQL -sf 2 -xsd 0.5 -nbp 1,2 -nbt 8 -tr

.PHONY: run run-tpcc up down summary test test-stages test-go test-py test-ycsb test-fuzz test-e2e test-k8s bootstrap clean lint lint-go lint-py

run: bootstrap
	@scripts/run.sh $(EXPERIMENT)

run-tpcc: bootstrap
	@BENCHMARK=benchbase scripts/run.sh $(TPCC)

up: bootstrap
	@$(BENCHQ) up

down:
	@if [ -x $(BENCHQ) ]; then $(BENCHQ) down; else echo "make down: no benchq built ($(BENCHQ)), so no stack of $(BENCHQ_HOME) to stop"; fi

summary:
	@test -n "$(E)" || { echo "usage: make summary E=<code>"; exit 2; }
	@$(BENCHQ) summary -e $(E)

bootstrap:
	@scripts/bootstrap.sh

test:
	@scripts/k8s/prebuild.sh $(MAKE) --no-print-directory test-stages

# make test's stages, in this order. On a machine that has not built
# test-k8s's control plane yet, make test builds it in the background
# meanwhile, niced (scripts/k8s/prebuild.sh), and test-k8s waits for it.
test-stages: bootstrap lint test-go test-py test-fuzz test-e2e test-k8s

# Linters, zero findings: golangci-lint (pinned by the bootstrap; .golangci.yml),
# ruff's lint and format check and mypy on the reporter's public API
# (services/reporter/pyproject.toml); ruff's, with its defaults, on the
# Python outside the reporter (internal/localdb's carbon-cache.py).
lint: lint-go lint-py

lint-go: bootstrap
	$(BENCHQ_HOME)/bin/golangci-lint run ./...

lint-py: bootstrap
	cd services/reporter && ../../.venv/bin/ruff check . && ../../.venv/bin/ruff format --check . && ../../.venv/bin/mypy
	.venv/bin/ruff check internal/localdb && .venv/bin/ruff format --check internal/localdb

# One package's tests per core (go test's default): four at once took as
# long (4.3 min against 4.4), the cores being busy, not waiting.
# The drivers' JVMs of the tests compile with C1 only: their shards last
# seconds, where C2's compiles cost more CPU than they save (e2e/stack_test.go
# sets the same for the e2e's stacks; users' stacks keep the JVM's defaults).
# No separate `go vet`: lint-go's govet runs go vet's analyzers (all of
# them, and inline), on the k8s-tagged files too.
test-go:
	JAVA_TOOL_OPTIONS=-XX:TieredStopAtLevel=1 BENCHQ_YCSB_REQUIRED=1 go test -count=1 ./contracts/... ./catalog/... ./internal/... ./services/... ./cmd/... ./grafana/... ./deploy/... ./docs/...

# bootstrap first: the venv, and the collector whose one-shot migration
# makes the tests' results database (services/reporter/tests/conftest.py).
test-py: bootstrap
	.venv/bin/pytest -q -n 2 services/reporter/tests

# The YCSB bindings and launcher against throwaway Redis, Redis Cluster,
# PostgreSQL and PgBouncer servers started by internal/localdb (the barrier
# protocol, loads, workloads, sharded inserts, data integrity), with each
# phase's throughput; about 1.5 minutes. test-go runs the same test.
test-ycsb:
	BENCHQ_YCSB_REQUIRED=1 go test -count=1 -v -timeout 20m ./services/driver-agent/ycsb/

# The e2e tests after the chaos test all at once (-parallel 6): go test
# starts parallel tests in no set order, and with fewer slots the longest
# one could start last and run alone at the end; the bexhoma grid (5
# minutes) has a stack of its own for the same reason. The saturation
# test's stack has ten times the others' CPU weight (e2e/stack_test.go);
# the rest share the two cores.
test-e2e:
	go test -count=1 -timeout 25m -parallel 6 -v ./e2e/...

# The Grafana dashboards (grafana/dashboards/*.json) from their generator
# (services/reporter/src/benchq_reporter/grafana/dashboards.py, grafana-foundation-sdk);
# make test fails when the committed JSON is not what it writes.
.PHONY: dashboards
dashboards: bootstrap
	.venv/bin/python -m benchq_reporter.grafana.dashboards

clean: down
	rm -rf $(BENCHQ_HOME)

# Each fuzz target for a few seconds beyond its seeds (plain `go test`
# runs the seeds); make bench-fuzz runs them longer (2 minutes each).
test-fuzz:
	scripts/fuzz.sh $(or $(FUZZTIME),5s)

.PHONY: bench-fuzz
bench-fuzz:
	@scripts/fuzz.sh $(or $(FUZZTIME),2m)

# The kubernetes backend against a real control plane (etcd, kube-apiserver,
# controller-manager, scheduler v1.34.2 and kwok v0.8.0 on loopback), built
# once into ~/.cache/benchq/k8s by scripts/k8s/build-control-plane.sh, and
# Prometheus 2.42 with its kubernetes discovery (scripts/k8s/build-prometheus.sh)
# for deploy/k8s/prometheus.yaml. The tests that need them carry the k8s
# build tag and are named TestControlPlane or TestKube…; test-go has run
# the packages' other tests already.
.PHONY: test-k8s
test-k8s:
	scripts/k8s/build-control-plane.sh
	scripts/k8s/build-prometheus.sh
	BENCHQ_K8S_REQUIRED=1 go test -count=1 -tags k8s -run '^Test(ControlPlane|Kube)' -timeout 15m ./internal/k8stest/ ./services/deployer/kube/ ./services/scheduler/

# The kubernetes backend at scale (docs/kubernetes.md): on the control plane
# of test-k8s with 100 kwok nodes, 200 experiments of a loading and a
# benchmarking phase of 64 shards each (25,600 driver pods), the scheduler
# and the deployer as processes; prints whether all ended done, every Job
# was created and removed, the API throttling met, and the two services'
# CPU and memory (services/scheduler/kube_scale_test.go). Options:
# make bench-k8s-scale EXPERIMENTS=20 SHARDS=16 NODES=10 MS=5.
# It loads the API server, so it runs an optimised control plane, built
# once into a cache of its own (make test's is built without optimisations).
.PHONY: bench-k8s-scale
K8S_OPTIMIZED = BENCHQ_K8S_OPTIMIZED=1 BENCHQ_K8S_CACHE="$${BENCHQ_K8S_CACHE:-$$(. scripts/lib/cache.sh && echo "$$benchq_cache/k8s-optimized")}"
bench-k8s-scale:
	@$(K8S_OPTIMIZED) scripts/k8s/build-control-plane.sh
	@report=$$(mktemp); $(K8S_OPTIMIZED) BENCHQ_K8S_SCALE=1 BENCHQ_K8S_REQUIRED=1 BENCHQ_SCALE_REPORT=$$report \
	  BENCHQ_SCALE_EXPERIMENTS=$(or $(EXPERIMENTS),200) BENCHQ_SCALE_SHARDS=$(or $(SHARDS),64) \
	  BENCHQ_SCALE_NODES=$(or $(NODES),100) BENCHQ_SCALE_MS=$(or $(MS),20) \
	  go test -count=1 -tags k8s -run '^TestKubeScale$$' -timeout 150m ./services/scheduler/ > $$report.log 2>&1; rc=$$?; \
	  if [ -s $$report ]; then cat $$report; else tail -40 $$report.log; fi; [ $$rc = 0 ] || grep -E 'kube_scale_test.go:[0-9]+: ' $$report.log | head -20; \
	  echo "log: $$report.log"; exit $$rc

# Driver efficiency (the agent's overhead): CPU seconds per million YCSB
# operations of the bare YCSB command line and of a shard through the driver
# agent, on a Redis of its own (docs/bench.md). It prints figures and never
# fails on them. It adds rounds until the overhead's 95 % interval is within
# +-2 % (up to 40 rounds, 30 minutes). Options: make bench BENCH="-resolve 0"
# (5 rounds only), BENCH="-runs 3 -operations 1000000".
.PHONY: bench
bench: bootstrap
	@go build -o $(BENCHQ_HOME)/bin/bench ./cmd/bench
	@$(BENCHQ_HOME)/bin/bench $(BENCH)

# Monitoring's figures: collector ingest vs a raw COPY, the
# default experiment's throughput with and without -m -mc -ma (ABBA), and the
# reporter's time on 64 shards x 1 h (docs/bench.md). Prints, never fails on
# a figure. Options: make bench-monitoring BLOCKS=3.
.PHONY: bench-monitoring
bench-monitoring: bootstrap
	@BLOCKS=$(or $(BLOCKS),2) scripts/bench-monitoring.sh

# The HTTP intake under load: k6 submits small
# experiments with -ms 1 at up to RATE a second for HOLD; prints requests
# lost, the accept latency and the scheduler's CPU with the queue full
# against idle (docs/bench.md). RATE, HOLD, RAMP, BENCHQ_CPU_WINDOW.
.PHONY: bench-intake
bench-intake: bootstrap
	@scripts/bench-intake.sh

# Reproducibility: two saturation searches each for a throttled Redis and for
# PostgreSQL, their knees and whether they agree within the precision
# (docs/saturation.md); about 15 minutes.
.PHONY: bench-saturation
bench-saturation: bootstrap
	@scripts/bench-saturation.sh

# The embedded TPC-C engine on this machine: W warehouses loaded, then
# SHARDS shards of TERMINALS terminals for SECONDS, started together, on a
# PostgreSQL with the catalog's settings (cmd/bench-tpcc). Prints figures.
.PHONY: bench-tpcc
bench-tpcc:
	@go run ./cmd/bench-tpcc -warehouses $(or $(W),2) -terminals $(or $(TERMINALS),4) -seconds $(or $(SECONDS),30) -shards $(or $(SHARDS),1)

# Metrics ingest (issue 30): VictoriaMetrics, then Graphite's carbon (one
# carbon-cache; a relay in front of CACHES carbon-caches), fed over carbon by
# our generator in steps of doubling agents, then bisected, until a step
# does not keep up; prints per step offered/sent/stored/backlog, the read
# probe's latency and the CPU of both sides, each knee, and the carbon
# scaling against linear (cmd/bench-tsdb). ONLY=victoriametrics|graphite.
.PHONY: bench-tsdb
bench-tsdb: bootstrap
	@go run ./cmd/bench-tsdb -metrics $(or $(METRICS),1000) -agents $(or $(AGENTS),2) -step $(or $(STEP),10s) -caches $(or $(CACHES),1,2,3) $(if $(ONLY),-only $(ONLY))

# The carbon scaling through the whole stack: benchq tsdb -dbms Graphite
# -nw NODES -xsat -cost-per-hour COST, one saturation search per cluster
# size, and the summary's Scaling table (scripts/bench-tsdb-scaling.sh;
# about 10 minutes). NODES, METRICS, AGENTS, GENERATORS, STEP, COST.
.PHONY: bench-tsdb-scaling
bench-tsdb-scaling: bootstrap
	@scripts/bench-tsdb-scaling.sh

# benchq tsdb -xsat against VictoriaMetrics held to 10 % of a CPU (a cgroup;
# needs root), then its capacity measured flat out twice: the knee, its
# steps and time, and whether it lies within 10 % of the capacity
# (e2e/tpcc_test.go, TestTSDBKneeOfAThrottledVictoriaMetrics; ~6 min).
.PHONY: bench-tsdb-knee
bench-tsdb-knee: bootstrap
	@BENCHQ_TSDB_KNEE=1 go test -count=1 -timeout 30m -run '^TestTSDBKneeOfAThrottledVictoriaMetrics$$' -v ./e2e/ > /tmp/benchq-bench-tsdb-knee.log 2>&1 && rc=0 || rc=$$?; \
	  echo "== machine: $$(nproc) cores, load $$(cut -d' ' -f1 /proc/loadavg); VictoriaMetrics $$(grep -m1 VM_VERSION= scripts/bootstrap.sh | cut -d= -f2), commit $$(git rev-parse --short HEAD)"; \
	  grep -E '^ +tpcc_test.go:[0-9]+: +(tsdb knee|VictoriaMetrics tsdb)' /tmp/benchq-bench-tsdb-knee.log | sed -E 's/^ +tpcc_test.go:[0-9]+: //'; \
	  if [ $$rc != 0 ]; then grep -E -- '--- FAIL|_test.go:[0-9]+:' /tmp/benchq-bench-tsdb-knee.log | head -20; echo "log: /tmp/benchq-bench-tsdb-knee.log"; exit $$rc; fi

# Between the operations: the default experiment's overhead (experiment
# minus the phases' operation windows), its SUT's time to ready and the
# phase switch, without and with -m -mc -ma, and a short phase's CPU
# seconds against /proc (PgBouncer -xnpp 2 -mc), printed against issue 29's
# goals (docs/bench.md). About 4 minutes. Options: make bench-phases RUNS=3 PARTS=2.
.PHONY: bench-phases
bench-phases: bootstrap
	@RUNS=$(or $(RUNS),2) PARTS="$(or $(PARTS),1 2)" scripts/bench-phases.sh

# What a warm driver JVM (-reuse-jvm, docs/adr/0018) changes: the same
# unthrottled YCSB job on a fresh JVM and twice on one standby JVM, the
# ratios printed. About a minute. Options: make bench-warm-jvm ROUNDS=5 OPS=1000000.
.PHONY: bench-warm-jvm
bench-warm-jvm: bootstrap
	@. scripts/lib/cache.sh && BENCHQ_YCSB_LIB=$$benchq_ycsb_lib ROUNDS=$(or $(ROUNDS),3) OPS=$(or $(OPS),400000) python3 scripts/bench-warm-jvm.py

# Chaos: e2e/chaos_test.go for 50 rounds; `make test`
# runs 3. Each SIGKILLs one component (or the SUT) at a random moment of an
# experiment and checks it ends done or failed with a reason, each shard
# stored once, no process left behind (docs/chaos.md). Prints the rounds and
# the totals. Options: make bench-chaos ROUNDS=100 SEED=42.
.PHONY: bench-chaos
bench-chaos: bootstrap
	@ROUNDS=$(or $(ROUNDS),50) SEED=$(SEED) scripts/bench-chaos.sh
