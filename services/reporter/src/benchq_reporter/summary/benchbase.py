"""bexhoma's Benchbase (TPC-C) summary sections, from shard rows.

bexhoma prints a Benchbase experiment as "### Execution" with "#### Per Pod"
and "#### Aggregated Parallel", and "### Loading" (time_load, terminals,
pods, Throughput [SF/h]); the column names here are bexhoma's. Two figures
of Aggregated Parallel are computed differently, because bexhoma's are wrong:

* latency: bexhoma takes the maximum of the pods' 95th percentiles and the
  mean of their averages. Here the 95th percentile is that of the pods'
  merged HdrHistograms (exact to 3 significant digits; percentiles do not
  add up, histograms do) and the average is the request-weighted mean of
  the pods' averages (exact).
* throughput: bexhoma adds up the pods' rates, each over its own window.
  Here Throughput and Goodput are all (successful) requests of the pods over
  their common window: from the earliest first request of a pod to the
  latest end of a pod's measured window (its first request + its measured
  time). With one pod that is the pod's own rate. ``time`` is that window.

Input: a DataFrame with one row per reported shard (one attempt per
(phase, shard)), the columns of SHARD_COLUMNS:

=============== ======================================================================
configuration   configuration name (the SUT)
base            the configuration's name without its repetition (bexhoma's rows are named by it)
phase           phase name; kind "load" or "run"
experiment_run  -nc repetition (1-based); client: benchmarking phase number (0: load)
shard, pods     the shard's number (1-based) and the phase's planned shards
status          "ok" or "failed"
terminals       the shard's terminals (loader threads when loading)
target          the shard's target rate (requests/s, 0 = unthrottled)
sf              scale factor (warehouses)
runtime_s       measured window of the shard (s); for loading, the loading time
requests        measured requests, whatever their outcome (the ALL operation's count)
successes       successful requests (ALL's OK return code): Goodput's numerator
errors          failed requests (ALL's ERROR and UNKNOWN return codes)
throughput      requests/s as the driver reported it (Benchbase's definition)
first_op_at     start of the shard's first measured request (NaT if unknown)
avg_us, p95_us  the shard's own latency figures over all its requests
histogram       its latencies as a decoded HdrHistogram (hdrh), or None
=============== ======================================================================

``shard_rows`` builds that frame from an experiment's tables (the driver
agent ships each TPC-C shard as a Final whose operations are the five
transaction types and ALL: internal/benchbase in Go). ``summarize`` turns
it into the three tables and their notes; render.py prints them.

Pure: no database, no printing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from hdrh.histogram import HdrHistogram

from ..contracts import KIND, RESULT
from ..model import TS, ExperimentData
from . import latency
from .attempts import select_attempts

# The operation holding all requests of a shard (Go: benchbase.All), and the
# five transaction types (benchbase.TxTypes).
ALL = "ALL"
TX_TYPES = ["NewOrder", "Payment", "OrderStatus", "Delivery", "StockLevel"]
ERROR_CODES = ("ERROR", "UNKNOWN")

SHARD_COLUMNS: dict[str, Any] = {
    "configuration": object,
    "base": object,
    "phase": object,
    "kind": object,
    "experiment_run": "Int64",
    "client": "Int64",
    "shard": "Int64",
    "pods": "Int64",
    "status": object,
    "terminals": "Int64",
    "target": "Int64",
    "sf": "float64",
    "runtime_s": "float64",
    "requests": "Int64",
    "successes": "Int64",
    "errors": "Int64",
    "throughput": "float64",
    "first_op_at": TS,
    "avg_us": "float64",
    "p95_us": "float64",
    "histogram": object,
}

THROUGHPUT = "Throughput (requests/second)"
GOODPUT = "Goodput (requests/second)"
P95 = "Latency Distribution.95th Percentile Latency (microseconds)"
AVG = "Latency Distribution.Average Latency (microseconds)"
SF_PER_HOUR = "Throughput [SF/h]"
# Benchbase's figures of a run, as bexhoma's Per Pod and Aggregated Parallel tables show them.
_FIGURE_COLUMNS = ["time", "num_errors", THROUGHPUT, GOODPUT, "efficiency", P95, AVG]
PER_POD_COLUMNS = ["DBMS", "experiment_run", "terminals", "target", "client", "child", *_FIGURE_COLUMNS]
AGGREGATED_COLUMNS = ["DBMS", "experiment_run", "terminals", "target", "pod_count", *_FIGURE_COLUMNS]
LOADING_COLUMNS = ["DBMS", "time_load", "terminals", "pods", SF_PER_HOUR]

MERGED_NOTE = (
    f"Aggregated Parallel: {P95} is the 95th percentile of the pods' merged HdrHistograms "
    "(exact to 3 significant digits) and the average latency the request-weighted mean of the pods' "
    "averages, not bexhoma's maximum and mean of the pods' figures."
)
UPPER_BOUND_NOTE = (
    "Aggregated Parallel: the 95th percentile of {phases} is the maximum over the pods (an upper bound): "
    "not every pod shipped a histogram."
)
WINDOW_NOTE = (
    f"Aggregated Parallel: {THROUGHPUT} and {GOODPUT} are all (successful) requests of the pods over their "
    "common window, from the earliest first request of a pod to the latest end of a pod's measured window; "
    "time is that window in seconds. With one pod they are the pod's own figures."
)
GOODPUT_NOTE = (
    f"{GOODPUT} counts the requests that succeeded: TPC-C's intended rollbacks (NewOrder's 1 %, counted "
    "USER_ABORTED) are neither errors (num_errors) nor goodput, so goodput is below throughput without an error."
)
SUM_NOTE = (
    "Aggregated Parallel: {phases} lack a pod's first-request time, so their throughput and goodput are "
    "the sum of the pods' rates and time the longest pod's."
)
EFFICIENCY_NOTE = (
    "efficiency is 0, as in bexhoma without keying and think times: TPC-C's efficiency "
    "(tpmC per 12.86 × warehouses) needs them, and neither engine applies them."
)


@dataclass(frozen=True, eq=False)  # DataFrames do not compare to a bool
class Tables:
    """bexhoma's Benchbase tables: Per Pod and Aggregated Parallel (Execution), and Loading."""

    per_pod: pd.DataFrame
    aggregated: pd.DataFrame
    loading: pd.DataFrame
    notes: list[str] = field(default_factory=list)  # printed under Aggregated Parallel
    skew_ms: dict[str, float] = field(
        default_factory=dict
    )  # phase (as named in the notes) of several pods → start skew


# --- Input ------------------------------------------------------------------


def frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Shard rows (dicts with SHARD_COLUMNS' keys) as a typed DataFrame."""
    df = pd.DataFrame(rows, columns=list(SHARD_COLUMNS))
    for c, t in SHARD_COLUMNS.items():
        if t == TS:
            df[c] = pd.to_datetime(df[c], utc=True, format="ISO8601")
        elif t is not object:
            df[c] = df[c].astype(t)
    return df


def _histogram(ops: pd.DataFrame) -> HdrHistogram | None:
    """The shard's histogram of all requests: ALL's, else the types' merged, else None."""
    all_ = ops[ops["operation"] == ALL]
    if len(all_) and isinstance(all_["histogram"].iloc[0], str):
        return latency.decode(all_["histogram"].iloc[0])
    types = ops[ops["operation"].isin(TX_TYPES)]
    if len(types) and types["histogram"].map(lambda h: isinstance(h, str)).all():
        return latency.merge(types["histogram"])
    return None


def shard_rows(data: ExperimentData) -> pd.DataFrame:
    """The SHARD_COLUMNS frame of an experiment's TPC-C shards (one attempt each)."""
    chosen = select_attempts(data.shards, data.phases)
    planned = {p.name: p for p in data.plan.phases}
    sf = data.plan.settings.sf
    rows = []
    for s in chosen.itertuples(index=False):
        ops = data.operations[
            (data.operations["phase"] == s.phase)
            & (data.operations["shard"] == s.shard)
            & (data.operations["attempt"] == s.attempt)
        ]
        all_ = ops[ops["operation"] == ALL]
        codes = (all_["return_codes"].iloc[0] or {}) if len(all_) else None
        runtime_s = s.runtime_ms / 1000 if pd.notna(s.runtime_ms) else float("nan")
        plan = planned.get(s.phase)
        rows.append(
            {
                "configuration": s.configuration,
                "base": plan.base if plan else s.configuration,
                "phase": s.phase,
                "kind": s.kind,
                # A phase the plan does not know: as if it were the first run's.
                "experiment_run": plan.experiment_run if plan else 1,
                "client": plan.client if plan else 0,
                "shard": s.shard,
                "pods": plan.pods if plan else None,
                "status": s.status,
                "terminals": s.threads,
                "target": s.target,
                "sf": sf,
                "runtime_s": runtime_s,
                "requests": all_["count"].iloc[0] if len(all_) else None,
                "successes": int(codes.get("OK", 0)) if codes is not None else None,
                "errors": sum(int(codes.get(c, 0)) for c in ERROR_CODES) if codes is not None else None,
                "throughput": s.throughput,
                "first_op_at": s.first_op_at,
                "avg_us": all_["avg_us"].iloc[0] if len(all_) else None,
                "p95_us": all_["p95_us"].iloc[0] if len(all_) else None,
                "histogram": _histogram(ops),
            }
        )
    df = frame(rows)
    # Plan order first (load, run1, run2, ...), then shards.
    order = {phase: i for i, phase in enumerate(planned)}
    df["_order"] = df["phase"].map(lambda p: order.get(p, len(order)))
    return df.sort_values(["_order", "phase", "shard"], kind="stable").drop(columns="_order").reset_index(drop=True)


def bexhoma_names(df: pd.DataFrame) -> pd.Series:
    """The name bexhoma's Benchbase tables give each row's phase: the configuration without
    its repetition and the client (the phase's place in the configuration's sequence of pod
    counts), PostgreSQL-1-1-1024-2. The repetition is the experiment_run column, not part of
    the name as in bexhoma's YCSB tables (pgb-64-4-128-64-2-1). A phase the plan does not know
    (no base or no client) keeps its own name."""
    if df.empty:
        return pd.Series([], dtype="object", index=df.index)
    client = df["client"].fillna(0).astype(int)
    known = (client > 0) & df["base"].notna()
    own = df["base"].astype(str) + "-" + client.astype(str)
    return own.where(known, df["phase"])


def with_run(name: str, experiment_run: Any) -> str:
    """A row's name where the repetition must show (the notes, the Loading rows, the report's
    plot): bexhoma's name, and from the second repetition on "(experiment_run N)"."""
    if pd.isna(experiment_run) or int(experiment_run) == 1:
        return name
    return f"{name} (experiment_run {int(experiment_run)})"


# --- Tables -----------------------------------------------------------------


def _num_errors(df: pd.DataFrame) -> pd.Series:
    """Failed requests, plus one for a failed shard (as ycsb.py's exceptions)."""
    return df["errors"].astype("Int64").fillna(0) + df["status"].ne(RESULT.ok).astype("Int64")


def per_pod(run: pd.DataFrame) -> pd.DataFrame:
    runtime = run["runtime_s"]
    return pd.DataFrame(
        {
            "DBMS": run["name"] + "-" + run["shard"].astype(str),
            "experiment_run": run["experiment_run"],
            "terminals": run["terminals"],
            "target": run["target"],
            "client": run["client"],
            "child": run["shard"],
            "time": runtime,
            "num_errors": _num_errors(run),
            THROUGHPUT: run["throughput"],
            GOODPUT: run["successes"].astype("float64") / runtime.where(runtime > 0),
            "efficiency": 0.0,
            P95: run["p95_us"],
            AVG: run["avg_us"],
        },
        columns=PER_POD_COLUMNS,
    ).reset_index(drop=True)


def _merged_p95(g: pd.DataFrame) -> tuple[float, bool]:
    """The phase's 95th percentile and whether it is exact (merged, or a single pod's own)."""
    if len(g) == 1:
        return float(g["p95_us"].iloc[0]), True
    hists = list(g["histogram"])
    if all(isinstance(h, HdrHistogram) for h in hists):
        total = HdrHistogram(latency.LOWEST, latency.HIGHEST, latency.DIGITS)
        for h in hists:
            total.add(h)
        return float(latency.value_at_percentile(total, 95.0)), True
    return float(g["p95_us"].max(skipna=False)), False


def aggregated(run: pd.DataFrame) -> tuple[pd.DataFrame, list[str], dict[str, float]]:
    """One row per benchmarking phase, with the notes that concern its figures and the start skews."""
    rows, bounded, summed, skews = [], [], [], {}
    for _, g in run.groupby("phase", sort=False):
        name = g["name"].iloc[0]
        label = with_run(name, g["experiment_run"].iloc[0])  # as the notes name the phase
        requests = g["requests"].astype("float64")
        p95, exact = _merged_p95(g)
        if not exact:
            bounded.append(label)
        starts = g["first_op_at"]
        complete = starts.notna().all() and g["status"].eq(RESULT.ok).all() and g["runtime_s"].notna().all()
        if complete:
            ends = starts + pd.to_timedelta(g["runtime_s"], unit="s")
            window = (ends.max() - starts.min()).total_seconds()
            throughput = requests.sum(skipna=False) / window
            goodput = g["successes"].astype("float64").sum(skipna=False) / window
            if len(g) > 1:
                skews[label] = (starts.max() - starts.min()).total_seconds() * 1000
        else:
            summed.append(label)
            window = g["runtime_s"].max(skipna=False)
            throughput = g["throughput"].sum(skipna=False)
            goodput = (g["successes"].astype("float64") / g["runtime_s"]).sum(skipna=False)
        weighted = (g["avg_us"] * requests).sum(skipna=False)
        total = requests.sum(skipna=False)
        rows.append(
            {
                "DBMS": name,
                "experiment_run": g["experiment_run"].iloc[0],
                "terminals": g["terminals"].sum(skipna=False),
                "target": g["target"].sum(skipna=False),
                "pod_count": len(g),
                "time": window,
                "num_errors": _num_errors(g).sum(),
                THROUGHPUT: throughput,
                GOODPUT: goodput,
                "efficiency": 0.0,
                P95: p95,
                AVG: weighted / total if pd.notna(total) and total else float("nan"),
            }
        )
    df = pd.DataFrame(rows, columns=AGGREGATED_COLUMNS)
    for c in ["experiment_run", "terminals", "target", "pod_count", "num_errors"]:
        df[c] = df[c].astype("Int64")
    notes = [MERGED_NOTE, WINDOW_NOTE, GOODPUT_NOTE]
    if bounded:
        notes.append(UPPER_BOUND_NOTE.format(phases=", ".join(bounded)))
    if summed:
        notes.append(SUM_NOTE.format(phases=", ".join(summed)))
    return df, [*notes, EFFICIENCY_NOTE], skews


def loading(load: pd.DataFrame, run: pd.DataFrame | None = None) -> pd.DataFrame:
    """The loading of each configuration as bexhoma lists it: a row per benchmarking run
    (named after it) that used the loaded database, or the configuration's own row when
    none ran; its time (the slowest loader's), terminals and pods (the loaders'), and SF/h."""
    runs = (
        run[["configuration", "name"]].drop_duplicates()
        if run is not None and not run.empty
        else pd.DataFrame(columns=["configuration", "name"])
    )
    rows = []
    for _, g in load.groupby("phase", sort=False):
        time_load = g["runtime_s"].max(skipna=False)
        sf = g["sf"].iloc[0]
        configuration = g["configuration"].iloc[0]
        names = list(runs.loc[runs["configuration"] == configuration, "name"])
        # Loading has no experiment_run column: a later repetition's rows say theirs.
        names = [with_run(n, g["experiment_run"].iloc[0]) for n in names] or [configuration]
        for name in names:
            rows.append(
                {
                    "DBMS": name,
                    "time_load": time_load,
                    "terminals": g["terminals"].sum(skipna=False),
                    "pods": len(g),
                    SF_PER_HOUR: sf * 3600 / time_load if pd.notna(time_load) and time_load > 0 else float("nan"),
                }
            )
    df = pd.DataFrame(rows, columns=LOADING_COLUMNS)
    for c in ["terminals", "pods"]:
        df[c] = df[c].astype("Int64")
    return df


def summarize(rows: pd.DataFrame) -> Tables:
    rows = rows.assign(name=bexhoma_names(rows))
    run = rows[rows["kind"] == KIND.run]
    agg, notes, skews = aggregated(run)
    return Tables(
        per_pod=per_pod(run),
        aggregated=agg,
        loading=loading(rows[rows["kind"] == KIND.load], run),
        notes=notes,
        skew_ms=skews,
    )
