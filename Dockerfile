# syntax=docker/dockerfile:1
# benchq's images, one target each, built from the repository root:
#
#   docker build --target scheduler    -t benchq/scheduler:dev .
#   docker build --target collector    -t benchq/collector:dev .
#   docker build --target deployer     -t benchq/deployer:dev .
#   docker build --target driver-agent -t benchq/driver-agent:dev .
#   docker build --target reporter     -t benchq/reporter:dev .
#   docker build --target graphite     -t benchq/graphite:dev .
#
# (--build-arg VERSION=$(scripts/version.sh) stamps the version.) One file
# with a target per image rather than a file per image: the Go module is
# compiled once for all four Go images and YCSB built once for two, and the
# stages cannot drift apart. deploy/compose/compose.yaml builds the targets;
# deploy/k8s runs the images. Every base is pinned to a version, and every
# image runs as user benchq (uid 10001) on the same Debian base.

# --- build stages ------------------------------------------------------------

# Every Go binary: the services, and healthcheck (the images have no curl).
FROM golang:1.26.8-bookworm AS go
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-X github.com/benchq/benchq/internal/version.stamp=${VERSION}" \
      -o /out/ ./services/scheduler ./services/collector ./services/deployer ./services/driver-agent ./cmd/healthcheck ./cmd/graphite-pod

# YCSB core (Maven Central) with benchq's bindings and launcher.
FROM maven:3.9.11-eclipse-temurin-17 AS ycsb
WORKDIR /src
COPY services/driver-agent/ycsb/ ./
RUN mvn -q -B package dependency:copy-dependencies \
 && mkdir -p /out/lib /out/workloads && cp target/lib/*.jar target/benchq-ycsb-*.jar /out/lib/ && cp workloads/workload* /out/workloads/

FROM debian:12.12-slim AS base
RUN useradd --system --uid 10001 --home-dir /var/lib/benchq --create-home benchq
COPY --from=go /out/healthcheck /usr/local/bin/
ENV BENCHQ_METRICS_ADDR=:9464
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 CMD ["healthcheck", "http://127.0.0.1:9464/healthz"]

# --- images ------------------------------------------------------------------

FROM base AS scheduler
COPY --from=go /out/scheduler /usr/local/bin/
USER benchq
# 8080: the HTTP intake (BENCHQ_HTTP_ADDR); 9464: /metrics, /healthz.
EXPOSE 8080 9464
ENTRYPOINT ["scheduler"]

FROM base AS collector
COPY --from=go /out/collector /usr/local/bin/
USER benchq
EXPOSE 9464
ENTRYPOINT ["collector"]

# The driver agent with a JRE and YCSB: the Kubernetes backend's driver
# Jobs (BENCHQ_DRIVER_IMAGE) and the compose stack's agent pool. TPC-C runs
# on the agent's embedded engine: Benchbase is not on Maven Central.
FROM base AS driver-agent
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/*
COPY --from=ycsb /out/ /opt/benchq/ycsb/
COPY --from=go /out/driver-agent /usr/local/bin/
ENV BENCHQ_YCSB_LIB=/opt/benchq/ycsb/lib BENCHQ_YCSB_WORKLOADS=/opt/benchq/ycsb/workloads BENCHQ_HOME=/var/lib/benchq
# It serves no HTTP port unless BENCHQ_METRICS_ADDR is set; its heartbeats
# in the agents bucket are its health.
ENV BENCHQ_METRICS_ADDR=
HEALTHCHECK NONE
USER benchq
WORKDIR /var/lib/benchq
ENTRYPOINT ["driver-agent"]

# The deployer. With BENCHQ_BACKEND=kubernetes it only talks to the API
# server; with the local backend (the compose stack) it runs the SUTs as
# processes in its container — PostgreSQL 15, PgBouncer, Redis 7 and their
# exporters from Debian 12 — and the phase agents a phase needs beyond the
# pool, so it carries the driver agent's runtime too.
FROM driver-agent AS deployer
USER root
RUN mkdir -p /etc/postgresql-common/createcluster.d \
 && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.d/benchq.conf \
 && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      postgresql redis-server pgbouncer prometheus-redis-exporter prometheus-postgres-exporter \
 && rm -rf /var/lib/apt/lists/*
COPY --from=go /out/deployer /usr/local/bin/
ENV BENCHQ_METRICS_ADDR=:9464
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 CMD ["healthcheck", "http://127.0.0.1:9464/healthz"]
USER benchq
EXPOSE 9464
ENTRYPOINT ["deployer"]

# The Graphite SUT on Kubernetes (catalog graphite.json): carbon and
# graphite-web from PyPI, pinned as the bootstrap pins them, in the venv
# where internal/localdb looks for them, run by graphite-pod as the local
# backend runs them; its data is the pod's volume at /data.
FROM base AS graphite
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 python3-venv libcairo2 \
 && rm -rf /var/lib/apt/lists/*
COPY scripts/carbon-requirements.txt /tmp/
RUN python3 -m venv /opt/benchq/carbon/1.1.10 \
 && /opt/benchq/carbon/1.1.10/bin/pip install --no-cache-dir --no-deps -r /tmp/carbon-requirements.txt \
 && rm /tmp/carbon-requirements.txt \
 && install -d -o benchq -g benchq /data
COPY --from=go /out/graphite-pod /usr/local/bin/
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 CMD ["healthcheck", "http://127.0.0.1:9108/healthz"]
VOLUME /data
USER benchq
# 2003: carbon's plaintext protocol; 8080: graphite-web; 9108: /metrics.
EXPOSE 2003 8080 9108
ENTRYPOINT ["graphite-pod"]

# The reporter: a CLI on the results database (BENCHQ_DB_URL, the password
# in PGPASSWORD): docker compose run --rm reporter summary -e CODE
FROM python:3.12.12-slim-bookworm AS reporter
WORKDIR /src
COPY services/reporter/requirements.txt services/reporter/
RUN pip install --no-cache-dir -r services/reporter/requirements.txt
COPY services/reporter/ services/reporter/
ARG VERSION=dev
RUN echo "${VERSION}" > services/reporter/src/benchq_reporter/VERSION \
 && pip install --no-cache-dir --no-deps ./services/reporter \
 && useradd --system --uid 10001 benchq
USER benchq
ENTRYPOINT ["reporter"]
