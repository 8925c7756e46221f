"""The Workload section: what the experiment was asked to do, and its state."""

from __future__ import annotations

from dataclasses import dataclass

from ..model import ExperimentData


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


def build_workload(data: ExperimentData) -> Workload:
    exp = data.experiment
    plan = data.plan
    s = plan.settings
    begin = exp.get("started_at") or exp.get("planned_at")
    end = exp.get("ended_at")
    duration = (end - begin).total_seconds() if end is not None and begin is not None else None
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
    )
