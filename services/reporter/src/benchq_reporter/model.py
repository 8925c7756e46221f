"""The rows of one experiment, as typed DataFrames.

Both the database reader (db.py) and the test fixtures build an
ExperimentData through ``from_tables``, so the summary sees the same dtypes
whether a row came from PostgreSQL (datetimes, ints, dicts) or from JSON
(ISO strings, ints where the value happened to be whole).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pandas as pd

from .plan import Plan
from .plan import read as read_plan

TS = "timestamp"

# Columns the reporter reads, per table of internal/resultsdb/migrations.
# The experiment code is left out of the child tables: everything here
# belongs to one experiment. configurations.endpoint is left out: no section
# needs it (it never holds a password: the schema refuses one).
COLUMNS: dict[str, dict[str, Any]] = {
    "experiments": {
        "code": object,
        "request": object,
        "plan": object,
        "status": object,
        "reason": object,
        "planned_at": TS,
        "started_at": TS,
        "ended_at": TS,
    },
    "configurations": {
        "name": object,
        "dbms": object,
        "experiment_run": "Int64",
        "info": object,
        "backend": object,
        "ready_at": TS,
        "ready_after_ms": "Int64",
        "removed_at": TS,
        "failure": object,
    },
    "phases": {
        "phase": object,
        "attempt": "Int64",
        "configuration": object,
        "kind": object,
        "status": object,
        "shards": "Int64",
        "started_at": TS,
        "ended_at": TS,
        "reason": object,
    },
    "shard_results": {
        "phase": object,
        "shard": "Int64",
        "attempt": "Int64",
        "configuration": object,
        "kind": object,
        "agent": object,
        "status": object,
        "error": object,
        "threads": "Int64",
        "target": "Int64",
        "started_at": TS,
        "ended_at": TS,
        "runtime_ms": "float64",
        "throughput": "float64",
        "message_id": object,
        "first_op_at": TS,
        "last_op_at": TS,
    },
    "shard_operations": {
        "phase": object,
        "shard": "Int64",
        "attempt": "Int64",
        "operation": object,
        "count": "Int64",
        "avg_us": "float64",
        "min_us": "float64",
        "max_us": "float64",
        "p50_us": "float64",
        "p95_us": "float64",
        "p99_us": "float64",
        "p999_us": "float64",
        "return_codes": object,
        "histogram": object,
    },
    # Written by the collector (migration 0004): one reduced metric per phase, attempt and component.
    "metric_summaries": {
        "configuration": object,
        "phase": object,
        "attempt": "Int64",
        "kind": object,
        "component": object,
        "section": object,
        "position": "Int64",
        "metric": object,
        "title": object,
        "value": "float64",
        "missing": object,
        "samples": "Int64",
        "window_start": TS,
        "window_end": TS,
    },
    # The saturation search's judged steps (migration 0006).
    "saturation_steps": {
        "configuration": object,
        "phase": object,
        "attempt": "Int64",
        "step": "Int64",
        "role": object,
        "offered": "Int64",
        "shards": "Int64",
        "threads": "Int64",
        "steady_from": TS,
        "steady_to": TS,
        "seconds": "Int64",
        "achieved": "float64",
        "goodput": "float64",
        "error_share": "float64",
        "p95_ms": "float64",
        "p99_ms": "float64",
        "cv": "float64",
        "worst_second": "float64",
        "busy": "float64",
        "verdict": object,
        "why": object,
        "next": object,
        "knee": object,
    },
    # Benchmark tsdb: the time-series database's own counter of stored points (migration 0009).
    "ingest_readings": {
        "phase": object,
        "attempt": "Int64",
        "shard": "Int64",
        "at": TS,
        "total": "float64",
        "after_end": "boolean",
        "counter": object,
    },
    "ingest_drains": {"phase": object, "attempt": "Int64", "ended_at": TS, "drained": "boolean"},
    # Read for the DataFrames (dataframes.py) only, not for the summary.
    "intervals": {
        "phase": object,
        "shard": "Int64",
        "attempt": "Int64",
        "elapsed_s": "Int64",
        "at": TS,
        "operations": "Int64",
        "ops_per_sec": "float64",
        "per_op": object,
    },
    # The collector's samples pulled from Prometheus (migration 0003); labels_hash is derived from labels.
    "metrics": {
        "configuration": object,
        "phase": object,
        "component": object,
        "metric": object,
        "labels": object,
        "time": TS,
        "value": "float64",
    },
}


@dataclass(frozen=True, eq=False)  # DataFrames do not compare to a bool
class ExperimentData:
    """Everything the results database holds about one experiment.

    ``experiment`` is the experiments row as a dict (timestamps as
    pd.Timestamp or None); the other fields are one DataFrame per table
    with exactly the columns of COLUMNS, possibly empty.
    """

    experiment: dict[str, Any]
    configurations: pd.DataFrame
    phases: pd.DataFrame
    shards: pd.DataFrame
    operations: pd.DataFrame
    metrics: pd.DataFrame  # metric_summaries; empty when the experiment was not monitored
    # saturation_steps; empty unless the experiment ran a saturation search.
    saturation: pd.DataFrame = field(default_factory=lambda: frame("saturation_steps", ()))
    # ingest_readings and ingest_drains; empty unless benchmark tsdb.
    ingest: pd.DataFrame = field(default_factory=lambda: frame("ingest_readings", ()))
    ingest_drains: pd.DataFrame = field(default_factory=lambda: frame("ingest_drains", ()))

    @property
    def code(self) -> str:
        return self.experiment["code"]

    @cached_property
    def plan(self) -> Plan:
        """The experiment's plan, typed (plan.py reads the stored JSON), with the
        phases a saturation search added to it step by step."""
        return read_plan(self.experiment.get("plan")).with_steps(self.saturation)

    @classmethod
    def from_tables(cls, tables: Mapping[str, Sequence[Mapping[str, Any]]]) -> ExperimentData:
        """Build from rows keyed by table name; ``experiments`` must hold one row."""
        experiments = frame("experiments", tables.get("experiments", ()))
        if len(experiments) != 1:
            raise ValueError(f"expected one experiments row, got {len(experiments)}")
        row = experiments.iloc[0].to_dict()
        experiment = {k: (None if _missing(v) else v) for k, v in row.items()}
        return cls(
            experiment=experiment,
            configurations=frame("configurations", tables.get("configurations", ())),
            phases=frame("phases", tables.get("phases", ())),
            shards=frame("shard_results", tables.get("shard_results", ())),
            operations=frame("shard_operations", tables.get("shard_operations", ())),
            metrics=frame("metric_summaries", tables.get("metric_summaries", ())),
            saturation=frame("saturation_steps", tables.get("saturation_steps", ())),
            ingest=frame("ingest_readings", tables.get("ingest_readings", ())),
            ingest_drains=frame("ingest_drains", tables.get("ingest_drains", ())),
        )


def frame(table: str, rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Rows of one table as a DataFrame with the declared columns and dtypes."""
    spec = COLUMNS[table]
    df = pd.DataFrame([{c: r.get(c) for c in spec} for r in rows], columns=list(spec))
    for column, dtype in spec.items():
        if dtype == TS:
            df[column] = pd.to_datetime(df[column], utc=True, format="ISO8601")
        elif dtype is object:
            df[column] = df[column].astype(object).where(df[column].notna(), None)
        else:
            df[column] = df[column].astype(dtype)
    return df


def _missing(value: Any) -> bool:
    return value is None or (not isinstance(value, (dict, list)) and bool(pd.isna(value)))
