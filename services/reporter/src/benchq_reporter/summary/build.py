"""The summary of one experiment: a YCSB summary or a Benchbase (TPC-C) one.

A tsdb experiment (metrics generators) has the YCSB layout, its WRITE and
QUERY operations in the tables, and its own Ingest section (tsdb.py).

Pure: ExperimentData in, Summary out. No database, no printing; render.py
turns a Summary into markdown or JSON. Both kinds share the Workload,
Connections and Workflow sections and the result tests; their figures are
computed by ycsb.py and benchbase.py, from the attempts attempts.py
selects.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ..contracts import BENCHMARK, KIND, PHASE
from ..model import ExperimentData
from . import benchbase as bb
from . import checks, ycsb
from . import repetitions as rep
from .attempts import kind_operations
from .checks import Test
from .connections import Connection, build_connections
from .monitoring import Monitoring, build_monitoring
from .saturation import Saturation, build_saturation
from .tsdb import Ingest, build_ingest
from .workflow import Workflow, build_workflow
from .workload import Workload, build_workload


@dataclass(frozen=True, eq=False)  # DataFrames do not compare to a bool
class Summary:
    """What every summary has."""

    code: str
    workload: Workload
    connections: list[Connection]
    workflow: Workflow
    tests: list[Test]
    show_tests: bool  # -tr: print the Tests section
    monitoring: Monitoring  # empty (falsy) when the experiment was not monitored

    @property
    def tests_passed(self) -> bool:
        return all(t.passed for t in self.tests)


@dataclass(frozen=True, eq=False)
class YcsbSummary(Summary):
    """A YCSB experiment's Loading and Execution tables (ycsb.py)."""

    loading_per_connection: pd.DataFrame
    loading_per_run: pd.DataFrame
    execution_per_connection: pd.DataFrame
    execution_per_phase: pd.DataFrame
    loading_latency: pd.DataFrame
    execution_latency: pd.DataFrame
    # Notes printed under a table, keyed by its field name.
    notes: dict[str, list[str]] = field(default_factory=dict)
    # The saturation search's steps (empty unless -xsat).
    saturation: Saturation = field(default_factory=lambda: Saturation(steps=pd.DataFrame()))
    # Benchmark tsdb: sent against what the database stored (empty for YCSB).
    ingest: Ingest = field(default_factory=lambda: Ingest(table=pd.DataFrame()))
    # Each figure's mean, std and 95 % CI across the -nc repetitions (empty for -nc 1).
    repetitions: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=rep.COLUMNS))


@dataclass(frozen=True, eq=False)
class BenchbaseSummary(Summary):
    """A Benchbase (TPC-C) experiment's Execution and Loading tables, in bexhoma's layout (benchbase.py)."""

    benchbase: bb.Tables


# A skipped loading phase's note under the Loading tables, which render.py
# prints even when they have no rows.
SKIPPED_NOTE = "Loading skipped: "


def skipped_loading(data: ExperimentData) -> list[str]:
    """The reasons of the loading phases skipped (the database persisted on a volume)."""
    p = data.phases
    if p.empty:
        return []
    return [str(r) for r in p.loc[(p["status"] == PHASE.skipped) & (p["kind"] == KIND.load), "reason"]]


def summarize(data: ExperimentData) -> YcsbSummary | BenchbaseSummary:
    """Build every section of the summary of one experiment."""
    workflow = build_workflow(data)
    monitoring = build_monitoring(data)
    common = {
        "code": data.code,
        "workload": build_workload(data),
        "connections": build_connections(data),
        "workflow": workflow,
        "show_tests": data.plan.settings.test_results,
        "monitoring": monitoring,
    }
    if data.plan.settings.benchmark == BENCHMARK.benchbase:
        tables = bb.summarize(bb.shard_rows(data))
        return BenchbaseSummary(
            **common,
            benchbase=tables,
            tests=[*checks.benchbase_tests(tables), *checks.monitoring_tests(monitoring), checks.workflow(workflow)],
        )

    # A metrics workload has no scale factor: its loading phase writes one
    # point of each series (sf and SF/h missing, not the request's default).
    sf = None if data.plan.settings.benchmark == BENCHMARK.tsdb else data.plan.settings.sf
    planned = data.plan.table()
    loading = ycsb.shard_table(data, planned, KIND.load)
    execution = ycsb.shard_table(data, planned, KIND.run)
    loading_lat = ycsb.phase_latency(kind_operations(data, KIND.load), planned)
    execution_lat = ycsb.phase_latency(kind_operations(data, KIND.run), planned)
    loading_conn = ycsb.loading_per_connection(loading, sf)
    execution_conn = ycsb.execution_per_connection(execution)
    loading_run = ycsb.loading_per_run(loading, sf, loading_lat, ycsb.phase_windows(data, KIND.load))
    execution_phase = ycsb.execution_per_phase(execution, execution_lat, ycsb.phase_windows(data, KIND.run))
    return YcsbSummary(
        **common,
        loading_per_connection=loading_conn,
        loading_per_run=loading_run,
        execution_per_connection=execution_conn,
        execution_per_phase=execution_phase,
        loading_latency=ycsb.latency_table(loading_lat, "DBMS", "configuration"),
        execution_latency=ycsb.latency_table(execution_lat, "phase", "phase"),
        tests=checks.ycsb_tests(
            loading_conn,
            execution_conn,
            execution,
            loading_run,
            execution_phase,
            workflow,
            monitoring,
            skipped_loading(data),
            data.plan.settings.error_share_limit,
            benchmarking_planned=bool((data.plan.table()["kind"] == KIND.run).any()),
        )
        + checks.threshold_tests(data.plan.settings.thresholds, execution_lat, execution_phase),
        notes={
            "loading_per_connection": ycsb.per_connection_sf_notes(loading, sf),
            "loading_per_run": ycsb.aggregate_notes(loading_lat)
            + ycsb.error_notes(loading_run, "DBMS", data.plan.settings.error_share_limit)
            + [SKIPPED_NOTE + r for r in skipped_loading(data)],
            "execution_per_phase": ycsb.aggregate_notes(execution_lat)
            + ycsb.error_notes(execution_phase, "phase", data.plan.settings.error_share_limit)
            + ycsb.unsummarized_notes(execution_phase, "phase"),
            "loading_latency": ycsb.latency_notes(loading_lat),
            "execution_latency": ycsb.latency_notes(execution_lat),
        },
        saturation=build_saturation(data),
        ingest=build_ingest(data),
        repetitions=pd.concat(
            [rep.across(loading_run, planned, "DBMS"), rep.across(execution_phase, planned, "phase")], ignore_index=True
        )
        if data.plan.settings.repetitions >= 2
        else pd.DataFrame(columns=rep.COLUMNS),
    )
