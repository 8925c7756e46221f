"""One experiment's results as pandas DataFrames: ``load(code)``.

    >>> import benchq_reporter
    >>> frames = benchq_reporter.load("1795267275")      # db_url defaults to $BENCHQ_DB_URL
    >>> frames["shards"].query("reported and kind == 'run'").groupby("configuration")["throughput"].sum()

``load`` returns a dict of DataFrames, the frames of FRAMES, each with the
columns and dtypes listed there (docs/dataframes.md is generated from the
same table: ``schema_markdown()``). Every frame has the experiment ``code``
as its first column, so frames of several experiments concatenate. The
frames are the results database's rows, tidied, never aggregated: the
summary's figures are computed from them (summary.py), and a notebook can
compute its own.

Conventions: times are ``datetime64[us, UTC]``; latencies are µs (``_us``);
throughputs are operations per second; integers that may be missing are
``Int64``; text is ``str`` (missing: NaN); JSON documents (the plan, a
configuration's facts, return codes, label sets) are JSON text with sorted
keys, so they survive CSV and compare as strings.

build() is pure (rows in, frames out); load() reads the database through
db.py, in one snapshot.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from . import db
from .model import ExperimentData, frame
from .summary.attempts import reported_metrics, select_attempts

TS = "datetime64[us, UTC]"


@dataclass(frozen=True)
class Column:
    name: str
    dtype: str
    unit: str
    about: str


@dataclass(frozen=True)
class Frame:
    row: str  # what one row is
    key: tuple[str, ...]  # unique within the frame
    columns: tuple[Column, ...]

    @property
    def dtypes(self) -> dict[str, str]:
        return {c.name: c.dtype for c in self.columns}


def _c(name: str, dtype: str, unit: str, about: str) -> Column:
    return Column(name, dtype, unit, about)


CODE = _c("code", "str", "", "the experiment code")
PHASE = _c("phase", "str", "", "phase name: configuration + `-0` (loading) or `-<client>` (benchmarking, 1, 2, …)")
SHARD = _c("shard", "Int64", "", "shard number, 1-based")
ATTEMPT = _c("attempt", "Int64", "", "attempt of the phase or shard, 1-based (a re-run after a failure adds one)")
CONFIGURATION = _c("configuration", "str", "", "SUT configuration name")
KIND = _c("kind", "str", "", "`load` or `run`")
# The key columns of everything a shard attempt reported.
SHARD_ATTEMPT = (CODE, PHASE, SHARD, ATTEMPT)

FRAMES: dict[str, Frame] = {
    "experiment": Frame(
        "the experiment",
        ("code",),
        (
            CODE,
            _c("benchmark", "str", "", "`ycsb`, `benchbase` or `tsdb`"),
            _c("workload", "str", "", "YCSB workload letter, `tpcc` or `haggar`"),
            _c("dbms", "str", "", "the DBMSs of the experiment, comma separated"),
            _c("status", "str", "", "`running`, `done`, `failed` or `cancelled`"),
            _c("reason", "str", "", "why it failed or was cancelled"),
            _c("version", "str", "", "benchq version that planned it (`dev`: a plan without one)"),
            _c("planned_at", TS, "", "when the scheduler accepted it"),
            _c("started_at", TS, "", "the experiment started: the scheduler planned it (Duration counts from here)"),
            _c("ended_at", TS, "", "last phase ended"),
            _c("plan", "str", "JSON", "the stored plan: settings, configurations, phases, shards"),
        ),
    ),
    "configurations": Frame(
        "one SUT configuration (one SUT, loaded once)",
        ("code", "configuration"),
        (
            CODE,
            CONFIGURATION,
            _c("dbms", "str", "", "DBMS name"),
            _c("experiment_run", "Int64", "", "`-nc` repetition, 1-based"),
            _c("backend", "str", "", "where the SUT ran (`local`, `kubernetes`)"),
            _c("ready_at", TS, "", "SUT ready"),
            _c("ready_after_ms", "Int64", "ms", "from deploy to ready"),
            _c("removed_at", TS, "", "SUT removed"),
            _c("failure", "str", "", "why the SUT failed"),
            _c("info", "str", "JSON", "version and host facts (the summary's Connections section)"),
        ),
    ),
    "phases": Frame(
        "one attempt of a loading or benchmarking phase",
        ("code", "phase", "attempt"),
        (
            CODE,
            PHASE,
            ATTEMPT,
            CONFIGURATION,
            KIND,
            _c("status", "str", "", "`started`, `done` or `failed`"),
            _c("shards", "Int64", "", "number of shards (pods)"),
            _c("started_at", TS, "", "phase started"),
            _c("ended_at", TS, "", "phase ended"),
            _c("reason", "str", "", "why it failed"),
        ),
    ),
    "shards": Frame(
        "one attempt of one shard (a driver process) of a phase",
        ("code", "phase", "shard", "attempt"),
        (
            *SHARD_ATTEMPT,
            CONFIGURATION,
            KIND,
            _c(
                "reported",
                "bool",
                "",
                "the attempt the summary counts: its phase's highest attempt whose shards all finished ok, else its highest",
            ),
            _c("agent", "str", "", "driver agent that ran it"),
            _c("status", "str", "", "`ok` or `failed`"),
            _c("error", "str", "", "why it failed"),
            _c("threads", "Int64", "", "driver threads (YCSB) or terminals (TPC-C)"),
            _c("target", "Int64", "ops/s", "target rate of the shard (0 or missing: unlimited)"),
            _c("started_at", TS, "", "driver started"),
            _c("ended_at", TS, "", "driver ended"),
            _c("first_op_at", TS, "", "start of its first operation"),
            _c("last_op_at", TS, "", "end of its last operation"),
            _c("runtime_ms", "float64", "ms", "runtime as the tool reported it (missing: it printed no summary)"),
            _c("throughput", "float64", "ops/s", "throughput as the tool reported it"),
        ),
    ),
    "operations": Frame(
        "one operation type of one shard attempt's final result",
        ("code", "phase", "shard", "attempt", "operation"),
        (
            *SHARD_ATTEMPT,
            _c("operation", "str", "", "READ, UPDATE, INSERT, CLEANUP, Intended-READ, ... or a TPC-C transaction"),
            _c("count", "Int64", "operations", "operations done"),
            _c("avg_us", "float64", "µs", "mean latency"),
            _c("min_us", "float64", "µs", "minimum latency"),
            _c("max_us", "float64", "µs", "maximum latency"),
            _c("p50_us", "float64", "µs", "median latency"),
            _c("p95_us", "float64", "µs", "95th percentile latency"),
            _c("p99_us", "float64", "µs", "99th percentile latency"),
            _c("p999_us", "float64", "µs", "99.9th percentile latency"),
            _c("return_codes", "str", "JSON", 'operations per return code, e.g. `{"OK": 100207}`'),
            _c("histogram", "str", "", "every latency (µs) as an HdrHistogram, V2 compressed, base64"),
        ),
    ),
    "intervals": Frame(
        "one status line a shard streamed while it ran",
        ("code", "phase", "shard", "attempt", "elapsed_s"),
        (
            *SHARD_ATTEMPT,
            CONFIGURATION,
            KIND,
            _c("elapsed_s", "Int64", "s", "since the shard started, as the tool printed it"),
            _c("at", TS, "", "when the line was printed"),
            _c("operations", "Int64", "operations", "done so far by the shard (cumulative)"),
            _c("ops_per_sec", "float64", "ops/s", "the shard's throughput since its previous line"),
        ),
    ),
    "interval_operations": Frame(
        "one operation type in one status line (since the shard's previous line)",
        ("code", "phase", "shard", "attempt", "elapsed_s", "operation"),
        (
            *SHARD_ATTEMPT,
            _c("elapsed_s", "Int64", "s", "of the status line (key into intervals)"),
            _c("at", TS, "", "when the line was printed"),
            _c("operation", "str", "", "as in operations"),
            _c("count", "Int64", "operations", "operations in the interval"),
            _c("errors", "Int64", "operations", "failed operations in the interval (TPC-C only)"),
            _c("avg_us", "float64", "µs", "mean latency"),
            _c("min_us", "float64", "µs", "minimum latency"),
            _c("max_us", "float64", "µs", "maximum latency"),
            _c("p50_us", "float64", "µs", "median latency (TPC-C)"),
            _c("p90_us", "float64", "µs", "90th percentile latency (YCSB)"),
            _c("p95_us", "float64", "µs", "95th percentile latency (TPC-C)"),
            _c("p99_us", "float64", "µs", "99th percentile latency"),
            _c("p999_us", "float64", "µs", "99.9th percentile latency (YCSB)"),
            _c("p9999_us", "float64", "µs", "99.99th percentile latency (YCSB)"),
        ),
    ),
    "ingest": Frame(
        "one reading of a time-series database's own count of stored points (benchmark tsdb, docs/tsdb.md)",
        ("code", "phase", "attempt", "at"),
        (
            CODE,
            PHASE,
            ATTEMPT,
            _c("shard", "Int64", "", "the generator that read it (the phase's first)"),
            _c("at", TS, "", "when it was read"),
            _c("total", "float64", "points", "the counter's value"),
            _c("after_end", "boolean", "", "read after the generators stopped (the drain)"),
            _c("counter", "str", "", 'the selector read, e.g. `vm_rows_inserted_total{type="graphite"}`'),
        ),
    ),
    "metrics": Frame(
        "one sample of one monitored series (the collector's pull from Prometheus)",
        ("code", "phase", "component", "metric", "labels", "time"),
        (
            CODE,
            CONFIGURATION,
            PHASE,
            _c("component", "str", "", "`sut`, `pool`, `loader`, `benchmarker`"),
            _c("metric", "str", "", "the metric set's key (`cpu_seconds`, `max_ram`, ...; catalog/metrics)"),
            _c("labels", "str", "JSON", "the series' labels"),
            _c("time", TS, "", "sample time"),
            _c("value", "float64", "as scraped", "before the metric set's scale: bytes, CPU seconds (a counter), ..."),
        ),
    ),
    "metric_summaries": Frame(
        "one metric of one component in one phase attempt, as the summary shows it",
        ("code", "phase", "attempt", "component", "metric"),
        (
            CODE,
            CONFIGURATION,
            PHASE,
            ATTEMPT,
            KIND,
            _c(
                "reported",
                "bool",
                "",
                "the attempt the summary shows: the one its shards are reported from, else the phase's latest",
            ),
            _c("component", "str", "", "as in metrics"),
            _c("section", "str", "", "`system` (Monitoring) or `application` (Application Metrics)"),
            _c("position", "Int64", "", "column order within its section"),
            _c("metric", "str", "", "as in metrics"),
            _c("title", "str", "", "the summary's column title, with its unit (`CPU [CPUs]`, `Max RAM [Gb]`)"),
            _c("value", "float64", "see title", "the reduced figure; missing exactly when `missing` says why"),
            _c("missing", "str", "", "why the figure could not be had"),
            _c("samples", "Int64", "", "samples it was reduced from"),
            _c("window_start", TS, "", "start of the window it covers"),
            _c("window_end", TS, "", "end of the window it covers"),
        ),
    ),
}

# The keys of a status line's per-operation block (YCSB's status line, the
# TPC-C driver's interval), as interval_operations' columns.
STATUS_KEYS = {
    "Count": "count",
    "Errors": "errors",
    "Avg": "avg_us",
    "Min": "min_us",
    "Max": "max_us",
    "50": "p50_us",
    "90": "p90_us",
    "95": "p95_us",
    "99": "p99_us",
    "99.9": "p999_us",
    "99.99": "p9999_us",
}
TIME_SERIES = ("intervals", "metrics")


class UnknownExperiment(LookupError):
    """No experiment with that code in the results database."""


def load(code: str, db_url: str | None = None) -> dict[str, pd.DataFrame]:
    """The frames of FRAMES for one experiment, read from the results database.

    ``db_url`` is a libpq URL; default ``$BENCHQ_DB_URL`` (as the reporter
    CLI). Raises ValueError without a URL, db.Unreachable or db.DatabaseError
    when the database cannot be used, UnknownExperiment for an unknown code.
    """
    url = db_url or os.environ.get(db.ENV_DB_URL)
    if not url:
        raise ValueError(f"no results database: pass db_url or set {db.ENV_DB_URL}")
    with db.connect(url) as conn:
        rows = db.fetch_tables(conn, code, (*db.SUMMARY_TABLES, *TIME_SERIES))
    if rows is None:
        raise UnknownExperiment(f"no experiment with code '{code}' in the results database")
    return build(ExperimentData.from_tables(rows), rows)


def build(data: ExperimentData, series: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, pd.DataFrame]:
    """The frames from an experiment's rows and its time-series rows (``intervals``, ``metrics``). Pure."""
    code = data.code
    phase_of = _phase_table(data)
    intervals = frame("intervals", series.get("intervals", ()))
    shards = data.shards.copy()
    shards["reported"] = False
    shards.loc[select_attempts(data.shards, data.phases).index, "reported"] = True
    e = data.experiment
    experiment = pd.DataFrame(
        [
            {
                "benchmark": data.plan.settings.benchmark,
                "workload": data.plan.settings.workload,
                "dbms": ", ".join(data.plan.settings.dbms),
                "status": e["status"],
                "reason": e["reason"],
                "version": data.plan.version,
                "planned_at": e["planned_at"],
                "started_at": e["started_at"],
                "ended_at": e["ended_at"],
                "plan": _json(e["plan"]),
            }
        ]
    )
    raw = {
        "experiment": experiment,
        "configurations": data.configurations.rename(columns={"name": "configuration"}).assign(
            info=lambda d: d["info"].map(_json)
        ),
        "phases": data.phases,
        "shards": shards,
        "operations": data.operations.assign(return_codes=lambda d: d["return_codes"].map(_json)),
        "intervals": intervals.merge(phase_of, on="phase", how="left"),
        "interval_operations": _interval_operations(intervals),
        "metrics": frame("metrics", series.get("metrics", ())).assign(labels=lambda d: d["labels"].map(_json)),
        "metric_summaries": data.metrics.assign(reported=reported_metrics(data.metrics, data.shards, data.phases)),
        "ingest": data.ingest,
    }
    return {name: typed(name, raw[name].assign(code=code)) for name in FRAMES}


def typed(name: str, df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with exactly the columns of FRAMES[name], in order, with their dtypes, sorted by the key.

    Sorting here, not in SQL, makes the order the same whichever way the
    rows came (the database's collation orders text its own way).
    """
    f = FRAMES[name]
    spec = f.dtypes
    out = df.reindex(columns=list(spec))
    for column, dtype in spec.items():
        values = out[column]
        if dtype == TS:
            values = pd.to_datetime(values, utc=True, format="ISO8601")
        elif dtype == "str":
            # None and NaN alike become the str dtype's NaN.
            values = values.astype(object).where(values.notna(), None)
        out[column] = values.astype(pd.api.types.pandas_dtype(dtype))
    return out.sort_values(list(f.key), kind="stable").reset_index(drop=True)


def _phase_table(data: ExperimentData) -> pd.DataFrame:
    """phase → configuration, kind: from the plan, overridden by the phases the collector stored."""
    planned = data.plan.table()[["phase", "configuration", "kind"]]
    stored = data.phases[["phase", "configuration", "kind"]]
    return pd.concat([stored, planned]).drop_duplicates("phase")


def _interval_operations(intervals: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for iv in intervals.itertuples(index=False):
        per_op: dict[str, Any] = iv.per_op or {}  # type: ignore[assignment]  # a JSON object column
        for operation, figures in sorted(per_op.items()):
            row = {
                "phase": iv.phase,
                "shard": iv.shard,
                "attempt": iv.attempt,
                "elapsed_s": iv.elapsed_s,
                "at": iv.at,
                "operation": operation,
            }
            row.update({STATUS_KEYS[k]: v for k, v in figures.items() if k in STATUS_KEYS})
            rows.append(row)
    df = pd.DataFrame(
        rows, columns=["phase", "shard", "attempt", "elapsed_s", "at", "operation", *STATUS_KEYS.values()]
    )
    # Counts arrive as JSON numbers (floats); they are whole.
    for column in ("count", "errors"):
        df[column] = pd.to_numeric(df[column]).round().astype("Int64")
    return df


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, ensure_ascii=False)


def schema_markdown() -> str:
    """The frames' reference (docs/dataframes.md holds it verbatim; a test compares)."""
    out = []
    for name, f in FRAMES.items():
        out.append(f"### `{name}`\n\nOne row per {f.row}; key: {', '.join(f'`{k}`' for k in f.key)}.\n")
        out.append("| column | dtype | unit | meaning |\n|---|---|---|---|")
        out.extend(f"| `{c.name}` | {c.dtype} | {c.unit} | {c.about} |" for c in f.columns)
        out.append("")
    return "\n".join(out)
