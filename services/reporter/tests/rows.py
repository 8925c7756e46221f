"""Experiment rows for tests: load the JSON fixtures, insert them into PostgreSQL."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from benchq_reporter.model import ExperimentData

DATA = Path(__file__).parent / "data"
# In foreign-key order; child rows get the experiment code on insert.
TABLES = [
    "experiments",
    "configurations",
    "phases",
    "shard_results",
    "shard_operations",
    "metric_summaries",
    "intervals",
    "metrics",
    "saturation_steps",
    "ingest_readings",
]


def load_tables(name: str = "ycsb-redis.json", *more: str) -> dict[str, list[dict[str, Any]]]:
    """A fresh, mutable copy of a fixture's rows (table name → rows); ``more`` fixtures add theirs."""
    docs = [json.loads((DATA / n).read_text()) for n in (name, *more)]
    return copy.deepcopy({t: [row for doc in docs for row in doc.get(t, [])] for t in TABLES})


def experiment(tables: dict[str, list[dict[str, Any]]]) -> ExperimentData:
    return ExperimentData.from_tables(tables)


def insert(url: str, tables: dict[str, list[dict[str, Any]]]) -> None:
    """Insert one experiment's rows as the collector would have written them."""
    code = tables["experiments"][0]["code"]
    with psycopg.connect(url) as conn:
        if tables.get("metrics"):
            # The collector creates the daily partitions before it stores samples.
            times = [row["time"] for row in tables["metrics"]]
            conn.execute("SELECT metrics_ensure_partitions(%s::timestamptz, %s::timestamptz)", (min(times), max(times)))
        for table in TABLES:
            for row in tables.get(table, []):
                row = {"code": code, **row}
                values = [Jsonb(v) if isinstance(v, (dict, list)) else v for v in row.values()]
                conn.execute(
                    sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(
                        sql.Identifier(table),
                        sql.SQL(", ").join(map(sql.Identifier, row)),
                        sql.SQL(", ").join(sql.Placeholder() * len(row)),
                    ),
                    values,
                )


MONITORED = "ycsb-redis-mon"


def monitored_tables() -> dict[str, list[dict[str, Any]]]:
    """ycsb-redis.json with the collector's metric_summaries rows, under its own code."""
    tables = load_tables("ycsb-redis.json", "metric-summaries-redis.json")
    tables["experiments"][0]["code"] = MONITORED
    return tables


FRAMES = "ycsb-redis-frames"


def frames_tables() -> dict[str, list[dict[str, Any]]]:
    """The monitored experiment with its time series (intervals, metrics), run with -m -mc -ma."""
    tables = load_tables("ycsb-redis.json", "metric-summaries-redis.json", "timeseries-redis.json")
    tables["experiments"][0]["code"] = FRAMES
    settings = tables["experiments"][0]["plan"]["settings"]
    settings["monitoring"] = {"sut": True, "cluster": True, "application": True}
    return tables
