"""The Workload section: what the experiment was asked to do, and its state."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..contracts import BACKEND, KIND
from ..model import ExperimentData
from ..plan import Settings


@dataclass(frozen=True)
class Workload:
    """The experiment's settings, as the Workload section states them."""

    benchmark: str
    sf: float | None
    duration_s: float | None  # None while the experiment runs
    code: str
    status: str
    reason: str | None
    workload: str
    recordcount: int | None
    operationcount: int | None
    insert_order: str
    batch_size: int | None
    target_base: int | None
    loading_factors: list[float]
    benchmarking_factors: list[float]
    version: str
    dbms: list[str]
    loading_pods: list[int]
    loading_threads: list[int]
    benchmarking_pods: list[int]
    benchmarking_threads: list[int]
    clients: list[int]
    repetitions: int
    duration_bench_s: float | None = None  # Benchbase: each benchmarking phase's duration
    new_connection: bool = False  # Benchbase -xconn
    estimated_s: float | None = None  # the plan's estimate of the duration
    backend: str | None = None  # where the SUTs ran: local or kubernetes
    monitoring_lines: list[str] = field(default_factory=list)  # bexhoma's lines on monitoring
    placement_lines: list[str] = field(default_factory=list)  # ... on nodes and storage
    pooling_line: str | None = None
    notes: list[str] = field(default_factory=list)  # what was not applied, and why
    tsdb: dict[str, Any] = field(default_factory=dict)  # benchmark tsdb: the generators' settings (contracts.TSDB)
    benchmarking: bool = True  # a benchmarking phase is planned (not: action load)


def build_workload(data: ExperimentData) -> Workload:
    exp = data.experiment
    plan = data.plan
    s = plan.settings
    begin = exp.get("started_at") or exp.get("planned_at")
    end = exp.get("ended_at")
    duration = (end - begin).total_seconds() if end is not None and begin is not None else None
    backends = data.configurations["backend"].dropna().unique() if "backend" in data.configurations else []
    backend = str(backends[0]) if len(backends) else None
    return Workload(
        benchmark=s.benchmark,
        sf=s.sf,
        duration_s=duration,
        code=data.code,
        status=exp.get("status") or "unknown",
        reason=exp.get("reason"),
        workload=s.workload,
        recordcount=plan.recordcount,
        operationcount=plan.operationcount,
        insert_order=s.insert_order,
        batch_size=s.batch_size,
        target_base=s.target_base,
        loading_factors=s.loading_factors,
        benchmarking_factors=s.benchmarking_factors,
        version=plan.version,
        dbms=s.dbms,
        loading_pods=s.loading_pods,
        loading_threads=s.loading_threads,
        benchmarking_pods=s.benchmarking_pods,
        benchmarking_threads=s.benchmarking_threads,
        clients=s.clients,
        repetitions=s.repetitions,
        duration_bench_s=s.duration_s,
        new_connection=s.new_connection,
        estimated_s=plan.estimated_s,
        backend=backend,
        monitoring_lines=monitoring_lines(s, backend),
        placement_lines=placement_lines(s, loading=any(p.kind == KIND.load for p in plan.phases), backend=backend),
        pooling_line=pooling_line(s),
        notes=list(s.notes),
        tsdb=dict(s.tsdb),
        benchmarking=any(p.kind == KIND.run for p in plan.phases),
    )


def monitoring_lines(s: Settings, backend: str | None) -> list[str]:
    """bexhoma's Workload lines on monitoring (its experiments/base.py), in
    its words; on the local backend they say what monitors instead of
    sidecars."""
    out = []
    # What monitors depends on where the SUTs ran; unknown (no SUT came
    # up), the lines say only what was monitored.
    by = {
        BACKEND.local: {
            "cluster": " by the deployer's process exporter (SUT) and the driver agents' (loaders, benchmarkers)",
            "sut": " by the deployer's process exporter",
            "application": " by exporter processes beside the SUT",
        },
        BACKEND.kubernetes: {
            "cluster": " by a cluster-wide installation",
            "sut": " by sidecar containers",
            "application": " by sidecar containers",
        },
    }.get(backend or "", {})
    if s.monitoring.get("cluster"):
        out.append(f"System metrics are monitored{by.get('cluster', '')}.")
    elif s.monitoring.get("sut"):
        out.append(f"System metrics are monitored{by.get('sut', '')}.")
    if s.monitoring.get("application"):
        out.append(f"Application metrics are monitored{by.get('application', '')}.")
    return out


def placement_lines(s: Settings, loading: bool, backend: str | None = None) -> list[str]:
    """bexhoma's Workload lines on the nodes and the database's storage. On the local backend a volume
    has no size (a directory; the notes say -rss was ignored), so the line names none."""
    out = []
    if loading and s.nodes.get("loading"):
        out.append(f"Loading is fixed to {s.nodes['loading']}.")
    if s.nodes.get("benchmarking"):
        out.append(f"Benchmarking is fixed to {s.nodes['benchmarking']}.")
    if s.nodes.get("sut"):
        out.append(f"SUT is fixed to {s.nodes['sut']}.")
    storage_class, size = s.storage.get("class"), s.storage.get("size")
    if backend == BACKEND.local and storage_class:
        size = None
    if storage_class and size:
        line = f"Database is persisted to disk of type {storage_class} and size {size}."
        if s.storage.get("remove"):
            line += " Persistent storage is removed at experiment start."
        out.append(line)
    elif storage_class:
        line = f"Database is persisted to a volume of type {storage_class}."
        if s.storage.get("remove"):
            line += " Persistent storage is removed at experiment start."
        out.append(line)
    elif size:
        out.append(f"Database uses ephemeral storage of size {size}.")
    return out


def pooling_line(s: Settings) -> str | None:
    """bexhoma's pooling line, when the request gave the pool's loop."""
    if s.pool_pods and s.pool_inbound and s.pool_outbound:
        return (
            f"Pooling is done with {s.pool_pods} pods having {s.pool_inbound} inbound "
            f"and {s.pool_outbound} outbound connections in total."
        )
    return None
