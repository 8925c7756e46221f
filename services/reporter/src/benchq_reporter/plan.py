"""The plan stored with an experiment (experiments.plan), typed.

This is the one module that reads the plan's JSON, and the one place
with defaults for what it lacks: the rest of the reporter reads typed
values. The plan is what the scheduler expanded from the request (Go:
internal/plan.Plan; its settings are the request with Go's defaults
applied, contracts.Request).

The fallbacks in ``read`` are for plans stored before the plan carried
every setting resolved. Those left out what a setting's JSON
omits when unset (Go's omitempty: no batch size, no Benchbase duration
for YCSB, no insert order for Benchbase, test_results and new_connection
when false...), and the oldest ones settings added since (benchmark,
workload tpcc, repetitions, test_results). Each fallback is the value the
scheduler used then; with a plan that has the setting it does nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from .contracts import BENCHMARK, KIND, WORKLOAD

# The plan's default of error_share_limit (internal/plan.DefaultErrorShareLimit),
# for plans stored before they carried it.
DEFAULT_ERROR_SHARE_LIMIT = 1.0


@dataclass(frozen=True)
class Settings:
    """The request the plan was expanded from, as the summary uses it."""

    # The experiment
    benchmark: str
    dbms: list[str]
    sf: float | None
    workload: str
    target_base: int | None
    repetitions: int
    test_results: bool
    error_share_limit: float  # percent: a phase above it is marked, its test fails
    # Loading
    loading_pods: list[int]
    loading_threads: list[int]
    loading_factors: list[float]
    insert_order: str
    batch_size: int | None
    # Benchmarking
    benchmarking_pods: list[int]
    benchmarking_threads: list[int]
    benchmarking_factors: list[float]
    clients: list[int]
    duration_s: float | None  # Benchbase: each benchmarking phase's duration
    new_connection: bool  # Benchbase -xconn
    # The SUT and where things run (the request's objects, as given)
    monitoring: Mapping[str, bool] = field(default_factory=dict)  # sut, cluster, application
    nodes: Mapping[str, str] = field(default_factory=dict)  # sut, loading, benchmarking
    storage: Mapping[str, Any] = field(default_factory=dict)  # class, size, remove
    resources: Mapping[str, str] = field(default_factory=dict)  # request_cpu, ...
    pool_pods: list[int] = field(default_factory=list)
    pool_inbound: list[int] = field(default_factory=list)
    pool_outbound: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the client did not apply, and why
    thresholds: list[Mapping[str, Any]] = field(default_factory=list)  # contracts.Threshold, as stored
    tsdb: Mapping[str, Any] = field(default_factory=dict)  # benchmark tsdb: the generators' settings (contracts.TSDB)
    cost_per_hour: float | None = None  # -cost-per-hour: one SUT node's price for an hour


@dataclass(frozen=True)
class Phase:
    """One planned phase with the facts of its configuration."""

    name: str
    configuration: str
    base: str  # the configuration's name without its repetition
    experiment_run: int  # -nc repetition, 1-based
    kind: str | None
    client: int  # benchmarking phase number inside the configuration (0: loading)
    pods: int | None


# Plan.table()'s columns; "order" is the phase's position in the plan.
PHASE_COLUMNS = ["phase", "configuration", "base", "experiment_run", "kind", "client", "pods", "order"]


@dataclass(frozen=True)
class Plan:
    """What the scheduler planned: the settings, the configurations and their phases."""

    settings: Settings
    version: str
    recordcount: int | None
    operationcount: int | None
    configurations: list[str]  # names, in plan order
    phases: list[Phase]  # in plan order: the order bexhoma runs them
    estimated_s: float | None = None  # the expected duration (internal/plan.EstimateOf)
    # configuration → its masters (0: not a cluster): -nw, but 1 for a master-copy cluster with -nwr
    # (Dragonfly: its servers are 1 + the replicas)
    workers: Mapping[str, int] = field(default_factory=dict)

    def table(self) -> pd.DataFrame:
        """One row per planned phase (PHASE_COLUMNS), in plan order."""
        rows = [
            {
                "phase": p.name,
                "configuration": p.configuration,
                "base": p.base,
                "experiment_run": p.experiment_run,
                "kind": p.kind,
                "client": p.client,
                "pods": p.pods,
                "order": i,
            }
            for i, p in enumerate(self.phases)
        ]
        df = pd.DataFrame(rows, columns=PHASE_COLUMNS)
        return df.astype({"experiment_run": "Int64", "client": "Int64", "pods": "Int64", "order": "Int64"})

    def with_steps(self, steps: pd.DataFrame) -> Plan:
        """The plan with the phases a saturation search added (saturation_steps rows).

        The scheduler plans a search's first step and adds each next one when
        the previous ends; a step's phase joins its configuration's phases,
        with its shards as pods.
        """
        known = {p.name for p in self.phases}
        new = steps.loc[~steps["phase"].isin(known)].sort_values(["step", "attempt"]).drop_duplicates("phase")
        if new.empty:
            return self
        phases = list(self.phases)
        for row in new.itertuples(index=False):
            same = [k for k, p in enumerate(phases) if p.configuration == row.configuration]
            if not same:
                continue
            like = phases[same[-1]]
            client = max(p.client for p in phases if p.configuration == row.configuration) + 1
            phases.insert(
                same[-1] + 1,
                Phase(
                    name=row.phase,
                    configuration=row.configuration,
                    base=like.base,
                    experiment_run=like.experiment_run,
                    kind=KIND.run,
                    client=client,
                    pods=int(row.shards),
                ),
            )
        return replace(self, phases=phases)


def read(plan: Mapping[str, Any] | None) -> Plan:
    """The typed plan; a value an older plan lacks takes the default the scheduler applied."""
    plan = plan or {}
    s = plan.get("settings") or {}
    configurations = plan.get("configurations") or []
    benchmark = s.get("benchmark") or BENCHMARK.ycsb
    return Plan(
        settings=Settings(
            benchmark=benchmark,
            dbms=list(s.get("dbms") or []),
            sf=_float(s.get("sf")),
            workload=str(s.get("workload") or (WORKLOAD.tpcc if benchmark == BENCHMARK.benchbase else "")),
            target_base=s.get("target_base"),
            repetitions=int(s.get("repetitions") or 1),
            test_results=bool(s.get("test_results", True)),
            error_share_limit=float(s.get("error_share_limit") or DEFAULT_ERROR_SHARE_LIMIT),
            loading_pods=list(s.get("loading_pods") or []),
            loading_threads=list(s.get("loading_threads") or []),
            loading_factors=list(s.get("loading_factors") or []),
            insert_order=str(s.get("insert_order") or ""),
            batch_size=s.get("batch_size"),
            benchmarking_pods=list(s.get("benchmarking_pods") or []),
            benchmarking_threads=list(s.get("benchmarking_threads") or []),
            benchmarking_factors=list(s.get("benchmarking_factors") or []),
            clients=list(s.get("clients") or []),
            duration_s=_float(s.get("duration_s")),
            new_connection=bool(s.get("new_connection")),
            monitoring=dict(s.get("monitoring") or {}),
            nodes=dict(s.get("nodes") or {}),
            storage=dict(s.get("storage") or {}),
            resources=dict(s.get("resources") or {}),
            pool_pods=list(s.get("pool_pods") or []),
            pool_inbound=list(s.get("pool_inbound") or []),
            pool_outbound=list(s.get("pool_outbound") or []),
            notes=list(s.get("notes") or []),
            thresholds=[dict(t) for t in s.get("thresholds") or []],
            tsdb=dict(s.get("tsdb") or {}),
            cost_per_hour=_float(s.get("cost_per_hour")),
        ),
        estimated_s=_float(plan.get("estimated_s")),
        workers={c["name"]: int((c.get("sut") or {}).get("workers") or 0) for c in configurations},
        # Plans record the build's version (internal/version); "dev" stands for a plan without one.
        version=str(plan.get("version") or s.get("version") or "dev"),
        recordcount=plan.get("recordcount"),
        operationcount=plan.get("operationcount"),
        configurations=[c["name"] for c in configurations],
        phases=[
            Phase(
                name=ph["name"],
                configuration=cfg["name"],
                base=cfg.get("base", cfg["name"]),
                experiment_run=cfg.get("experiment_run", 1),
                kind=ph.get("kind"),
                client=ph.get("client", 0),
                pods=ph.get("pods"),
            )
            for cfg in configurations
            for ph in cfg.get("phases") or []
        ],
    )


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
