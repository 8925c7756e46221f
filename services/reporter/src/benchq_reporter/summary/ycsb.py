"""YCSB's Loading and Execution tables, in bexhoma's layout and column names.

Pure: ExperimentData in, DataFrames out; render.py prints them. Column
names are bexhoma's, so notebooks written against bexhoma's DataFrames
keep working.

Rules that keep every number traceable to a row:
  * each (phase, shard) counts once, as attempts.py selects it;
  * a run or phase adds up throughput, threads, target and operation
    counts and takes the maximum runtime; its latency figures (percentiles,
    mean, maximum) are those of the merged HdrHistograms of its shards
    (latency.py) — percentiles do not add up, histograms do. Shards without
    a histogram (older drivers) leave the maximum of the shards' percentiles,
    an upper bound, labelled as such;
  * a run or phase is also measured over its common window: all operations
    over the time from the earliest first operation of a shard to the latest
    end of one, with the start skew of its shards;
  * "Intended-<OP>" operations (latency from the intended start under a
    target rate) appear in the latency tables only, labelled;
  * nothing is rounded here; render.py rounds when printing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from .. import contracts
from ..contracts import RESULT
from ..model import ExperimentData
from . import latency
from .attempts import SHARD_KEYS, kind_operations, reported_shards

THROUGHPUT = "[OVERALL].Throughput(ops/sec)"
RUNTIME = "[OVERALL].RunTime(ms)"
SF_PER_HOUR = "Throughput [SF/h]"
WINDOW_THROUGHPUT = "Throughput common window(ops/sec)"
GOODPUT = "Goodput common window(ops/sec)"
ERROR_SHARE = "Error share(%)"
START_SKEW = "Start skew(ms)"
MERGED_NOTE = (
    "Latency figures of a run are those of the merged HdrHistograms of its shards "
    "(exact to 3 significant digits), not a mean or maximum of the shards' own figures."
)
UPPER_BOUND_NOTE = (
    "Latency percentiles of {ops} are the maximum over the shards (an upper bound): "
    "not every shard shipped a histogram."
)
WINDOW_NOTE = (
    f"{WINDOW_THROUGHPUT} = all operations / (latest end of a shard's last operation - "
    f"earliest start of a shard's first operation); {THROUGHPUT} adds up the shards' own rates. "
    f"{START_SKEW} = latest - earliest start of a shard's first operation. "
    f"{GOODPUT} counts only successful operations; {ERROR_SHARE} = failed operations "
    f"(YCSB's <OP>-FAILED) / all operations."
)
ERROR_NOTE = (
    "{phase}: {share:.2f} % of its operations failed (more than {limit:g} %): {throughput} and "
    "{window} count failed operations, {goodput} does not."
)
INTENDED_NOTE = (
    "Latency from 'intended start' (YCSB's Intended-<OP>, with a target rate) is measured from "
    "when the operation was due, so it includes the queueing that coordinated omission hides."
)
# YCSB reports CLEANUP (closing the client) like an operation; bexhoma hides it.
HIDDEN_OPERATIONS = {"CLEANUP", "Intended-CLEANUP"}
INTENDED = contracts.INTENDED_PREFIX
FAILED = contracts.FAILED_SUFFIX
# Latency statistic (latency.stats) → YCSB's measurement name, in YCSB's order.
LATENCY_FIGURES = {
    "count": "Operations",
    "mean": "AverageLatency(us)",
    "p50": "50thPercentileLatency(us)",
    "p95": "95thPercentileLatency(us)",
    "p99": "99thPercentileLatency(us)",
    "p999": "99.9PercentileLatency(us)",
    "max": "MaxLatency(us)",
}
# The same statistic of one shard, as stored (shard_operations).
SHARD_FIGURES = {
    "count": "count",
    "mean": "avg_us",
    "p50": "p50_us",
    "p95": "p95_us",
    "p99": "p99_us",
    "p999": "p999_us",
    "max": "max_us",
}


def ok_column(operation: str) -> str:
    return f"[{operation}].Return=OK"


def p99_column(operation: str) -> str:
    return f"[{operation}].99thPercentileLatency(us)"


# YCSB's successful return codes: BATCHED_OK is an insert queued into a JDBC
# batch (-xtb / batchsize), committed with it; not an exception.
SUCCESS_CODES = frozenset({"OK", "BATCHED_OK"})


def _successes(codes: Any) -> int:
    """[OP].Return=OK: successful operations, OK and BATCHED_OK (a batched JDBC insert)."""
    return sum(int(n) for rc, n in (codes or {}).items() if rc in SUCCESS_CODES)


def _exceptions(codes: Any) -> int:
    """Operations that returned anything but success (ERROR, NOT_FOUND, ...)."""
    return sum(int(n) for rc, n in (codes or {}).items() if rc not in SUCCESS_CODES)


def operation_columns(ops: pd.DataFrame) -> pd.DataFrame:
    """Wide per-shard operation figures: Return=OK and p99 per operation, plus exceptions.

    An operation absent from a shard that reported others had zero OK
    returns there; a shard that reported no operation at all keeps NaN.
    """
    if ops.empty:
        return pd.DataFrame(columns=[*SHARD_KEYS, "exceptions"])
    ops = ops.assign(ok=ops["return_codes"].map(_successes), exc=ops["return_codes"].map(_exceptions))
    exceptions = ops.groupby(SHARD_KEYS)["exc"].sum().rename("exceptions")
    # Intended-<OP> latencies have no return codes and belong to the latency tables.
    shown = ops[~ops["operation"].isin(HIDDEN_OPERATIONS) & ~ops["operation"].str.startswith(INTENDED)]
    ok = shown.pivot_table(index=SHARD_KEYS, columns="operation", values="ok", aggfunc="sum").fillna(0)
    # dropna=False: an operation whose p99 is NULL everywhere still gets its (NaN) column.
    p99 = shown.pivot_table(index=SHARD_KEYS, columns="operation", values="p99_us", aggfunc="max", dropna=False)
    wide = pd.DataFrame(index=exceptions.index)
    # YCSB reports no return codes for READ-MODIFY-WRITE (its read and its
    # update have theirs): unknown, not 0. An <OP>-FAILED has none either,
    # and none of it was OK.
    uncounted = {
        op
        for op in set(shown["operation"]) - set(shown.loc[shown["return_codes"].map(bool), "operation"])
        if not op.endswith(FAILED)
    }
    for op in sorted(shown["operation"].unique()):
        col = ok[op].reindex(wide.index).fillna(0).astype("Int64")
        wide[ok_column(op)] = pd.Series(pd.NA, index=wide.index, dtype="Int64") if op in uncounted else col
        wide[p99_column(op)] = p99[op].reindex(wide.index).astype("float64")
    wide["exceptions"] = exceptions.astype("Int64")
    return wide.reset_index()


def shard_table(data: ExperimentData, planned: pd.DataFrame, kind: str) -> pd.DataFrame:
    """One row per reported (phase, shard) of one kind, with plan facts and operation figures.

    Operation columns come from these shards only, so loading tables show
    INSERT and benchmarking tables show what the workload ran. Rows are in
    plan order, then by shard.
    """
    chosen = reported_shards(data, kind)
    df = chosen.merge(operation_columns(kind_operations(data, kind)), on=SHARD_KEYS, how="left")
    df = df.merge(planned.drop(columns=["configuration", "kind"]), on="phase", how="left")
    df["exceptions"] = df["exceptions"].astype("Int64").fillna(0) + df["status"].ne(RESULT.ok).astype("Int64")
    df["order"] = df["order"].fillna(len(planned))
    return df.sort_values(["order", "phase", "shard"], kind="stable").reset_index(drop=True)


def _op_columns(df: pd.DataFrame) -> list[str]:
    return [c for c in df.columns if c.startswith("[") and not c.startswith("[OVERALL]")]


def _sf_per_hour(sf: float | None, runtime_ms: pd.Series) -> pd.Series:
    """SF/h as bexhoma computes it: the whole SF over the given runtime."""
    hours = runtime_ms.where(runtime_ms > 0) / 3.6e6
    return (sf if sf is not None else float("nan")) / hours


def job_name(shards: pd.DataFrame) -> pd.Series:
    """bexhoma's job: the phase and its run (benchq: the attempt), e.g.
    Redis-64-8-196608-1-1-1 for the first attempt of phase Redis-64-8-196608-1-1."""
    return shards["phase"] + "-" + shards["attempt"].astype(str)


def row_name(shards: pd.DataFrame) -> pd.Series:
    """bexhoma's name of a shard's row: its job and its child (the shard),
    e.g. Redis-64-8-196608-1-1-1-1 (configuration, client, run, child)."""
    return job_name(shards) + "-" + shards["shard"].astype(str)


def loading_per_connection(loading: pd.DataFrame, sf: float | None) -> pd.DataFrame:
    out = _per_connection(loading, {"connection": row_name(loading), "experiment_run": loading["experiment_run"]})
    out["sf"] = sf
    out[SF_PER_HOUR] = _sf_per_hour(sf, loading["runtime_ms"])
    return out


SF_PER_CONNECTION_NOTE = (
    "A connection's sf and Throughput [SF/h] are bexhoma's: the experiment's whole scale factor over that "
    "connection's run time, although each of a phase's pod_count loading connections loaded about "
    "1/pod_count of it; Per Run's Throughput [SF/h] is the phase's own."
)


def per_connection_sf_notes(loading: pd.DataFrame, sf: float | None) -> list[str]:
    """The Per Connection loading table's note, when a phase has several shards (bexhoma's SF/h of a
    connection reads as if it had loaded everything)."""
    if sf is None or loading.empty:
        return []
    return [SF_PER_CONNECTION_NOTE] if loading.groupby("phase")["shard"].nunique().max() > 1 else []


def _per_connection(shards: pd.DataFrame, leading: dict[str, pd.Series]) -> pd.DataFrame:
    """One row a shard: the leading columns, the driver's settings and figures, each operation's."""
    out = pd.DataFrame(
        {
            **leading,
            "threads": shards["threads"],
            "target": shards["target"],
            "pod_count": shards["pods"],
            "exceptions": shards["exceptions"],
            THROUGHPUT: shards["throughput"],
            RUNTIME: shards["runtime_ms"],
        }
    )
    for c in _op_columns(shards):
        out[c] = shards[c]
    return out.reset_index(drop=True)


def _op_order(operation: str) -> tuple[str, bool]:
    """READ, Intended-READ, READ-FAILED, ...: each operation next to its intended twin."""
    intended = operation.startswith(INTENDED)
    return (operation[len(INTENDED) :] if intended else operation, intended)


# How the percentiles of a (phase, operation) were obtained.
MERGED, ONE_SHARD, UPPER_BOUND = "merged", "one shard", "max of shards"
LATENCY_KEYS = ["phase", "configuration", "operation", "shards", "percentiles", *LATENCY_FIGURES]


def phase_latency(ops: pd.DataFrame, planned: pd.DataFrame) -> pd.DataFrame:
    """One row per (phase, operation): the latency figures of all its shards together.

    ``percentiles`` says how: MERGED from the histograms of every shard that
    ran the operation; ONE_SHARD, that shard's own figures (exact, no
    histogram needed); UPPER_BOUND when a shard shipped no histogram: then
    the operation-weighted mean, the maximum of the shards' maxima and the
    maximum of their percentiles (NaN where a shard lacks the figure).
    """
    rows = []
    order = dict(zip(planned["phase"], planned["order"], strict=False))
    configuration = dict(zip(planned["phase"], planned["configuration"], strict=False))
    for (phase, op), g in ops.groupby(["phase", "operation"], sort=False):
        if op in HIDDEN_OPERATIONS:
            continue
        ran = g[g["count"].fillna(0) > 0]
        if len(ran) and ran["histogram"].notna().all():
            source, figures = MERGED, latency.stats(latency.merge(ran["histogram"]))
        else:
            # Shards that ran none of the operation add nothing to its latency.
            source, src = (ONE_SHARD, ran if len(ran) else g) if len(ran) <= 1 else (UPPER_BOUND, ran)
            count = g["count"].sum(skipna=False)
            figures = {k: src[SHARD_FIGURES[k]].max(skipna=False) for k in LATENCY_FIGURES}
            figures["count"] = count
            weighted = (src["count"] * src["avg_us"]).sum(skipna=False)
            figures["mean"] = weighted / count if pd.notna(count) and count else float("nan")
        rows.append(
            {
                "phase": phase,
                "configuration": configuration.get(phase, phase),
                "operation": op,
                "shards": len(g),
                "percentiles": source,
                **figures,
                "_order": (order.get(phase, len(order)), phase, _op_order(op)),
            }
        )
    if not rows:
        return pd.DataFrame(columns=LATENCY_KEYS)
    df = pd.DataFrame(rows).sort_values("_order", kind="stable").drop(columns="_order")
    df["count"] = df["count"].astype("Int64")
    for k in LATENCY_FIGURES:
        if k != "count":
            df[k] = df[k].astype("float64")
    return df.reset_index(drop=True)


def slowest(lat: pd.DataFrame, figure: str) -> pd.Series:
    """Per phase, the highest ``figure`` (a LATENCY_FIGURES title) of a latency table's operations: latency from
    the operation's start, failed operations left out (as -threshold's latency bounds): "the slowest operation"."""
    start = lat["latency from"] == "start"
    rows = lat[start & lat["operation"].map(contracts.counts_operation) & ~lat["operation"].str.endswith(FAILED)]
    return rows.groupby("phase")[figure].max()


def executed(lat: pd.DataFrame) -> pd.Series:
    """Per phase, the operations a latency table's blocks add up to, as YCSB counts them (operation_weight)."""
    rows = lat[lat["latency from"] == "start"]
    weight = rows["operation"].map(contracts.operation_weight)
    return (rows[LATENCY_FIGURES["count"]].astype("float64") * weight).groupby(rows["phase"]).sum(min_count=1)


def latency_table(lat: pd.DataFrame, label: str, source: str) -> pd.DataFrame:
    """The latency figures of every run or phase and operation, in YCSB's names."""
    out = pd.DataFrame(
        {
            label: lat[source],
            "operation": lat["operation"].map(lambda o: o[len(INTENDED) :] if o.startswith(INTENDED) else o),
            "latency from": lat["operation"].map(lambda o: "intended start" if o.startswith(INTENDED) else "start"),
            "shards": lat["shards"].astype("Int64"),
        }
    )
    for k, name in LATENCY_FIGURES.items():
        out[name] = lat[k]
    out["percentiles"] = lat["percentiles"]
    return out.reset_index(drop=True)


def aggregate_notes(lat: pd.DataFrame) -> list[str]:
    """What the percentiles of a Per Run / Per Phase table are, and what its window columns mean."""
    shown = lat[~lat["operation"].str.startswith(INTENDED)]
    notes = [MERGED_NOTE] if shown["percentiles"].eq(MERGED).any() else []
    bounded = sorted(set(shown.loc[shown["percentiles"].eq(UPPER_BOUND), "operation"]))
    if bounded:
        notes.append(UPPER_BOUND_NOTE.format(ops=", ".join(bounded)))
    return [*notes, WINDOW_NOTE]


def latency_notes(lat: pd.DataFrame) -> list[str]:
    return [INTENDED_NOTE] if lat["operation"].str.startswith(INTENDED).any() else []


WINDOW_COLUMNS = ["phase", "window_ops", "window_failed", "window_ms", "skew_ms"]


def phase_windows(data: ExperimentData, kind: str) -> pd.DataFrame:
    """Per phase: its operations, its common window and the start skew of its shards (ms).

    NaN when a shard did not report its first or last operation (a failed
    shard, an older driver): a window that leaves out a shard would be wrong.
    """
    chosen = reported_shards(data, kind)
    if chosen.empty:
        return pd.DataFrame(columns=WINDOW_COLUMNS)
    ops = kind_operations(data, kind)
    counted = ops.assign(weight=ops["operation"].map(contracts.operation_weight)).loc[lambda o: o["weight"] != 0]
    per_phase = (counted["count"] * counted["weight"]).groupby(counted["phase"]).sum()
    failed = counted.loc[counted["operation"].str.endswith(FAILED)].groupby("phase")["count"].sum()
    rows = []
    for phase, g in chosen.groupby("phase", sort=False):
        complete = g["first_op_at"].notna().all() and g["last_op_at"].notna().all() and g["status"].eq(RESULT.ok).all()
        if complete:
            window = (g["last_op_at"].max() - g["first_op_at"].min()).total_seconds() * 1000
            skew = (g["first_op_at"].max() - g["first_op_at"].min()).total_seconds() * 1000
        else:
            window = skew = float("nan")
        rows.append(
            {
                "phase": phase,
                "window_ops": per_phase.get(phase, 0),
                "window_failed": failed.get(phase, 0),
                "window_ms": window,
                "skew_ms": skew,
            }
        )
    return pd.DataFrame(rows, columns=WINDOW_COLUMNS)


def _window_figures(g: pd.DataFrame, windows: pd.DataFrame) -> dict[str, pd.Series]:
    """Common-window throughput and goodput, error share and start skew for the phases of an aggregated table."""
    w = g[["phase"]].merge(windows, on="phase", how="left")
    seconds = w["window_ms"].astype("float64").where(lambda ms: ms > 0) / 1000
    ops = w["window_ops"].astype("float64")
    # A composite operation's failed parts may count twice (names.json): no more failed than executed.
    failed = w["window_failed"].astype("float64").clip(upper=ops)
    return {
        WINDOW_THROUGHPUT: ops / seconds,
        GOODPUT: (ops - failed) / seconds,
        ERROR_SHARE: 100 * failed / ops.where(ops > 0),
        START_SKEW: w["skew_ms"].astype("float64"),
    }


def error_notes(per_phase: pd.DataFrame, label: str, limit: float) -> list[str]:
    """A note for each phase (row ``label``) whose failed operations exceed ``limit`` percent (-max-errors)."""
    if ERROR_SHARE not in per_phase:
        return []
    high = per_phase.loc[per_phase[ERROR_SHARE] > limit]
    return [
        ERROR_NOTE.format(
            phase=r[label],
            share=r[ERROR_SHARE],
            limit=limit,
            throughput=THROUGHPUT,
            window=WINDOW_THROUGHPUT,
            goodput=GOODPUT,
        )
        for _, r in high.iterrows()
    ]


UNSUMMARIZED_NOTE = (
    "{phase}: no shard printed YCSB's summary (the phase was stopped, or failed before its end): its figures are "
    "missing, not 0; what its shards streamed is in the HTML report's plots"
)


def unsummarized_notes(per_phase: pd.DataFrame, label: str) -> list[str]:
    """A note for each phase (row ``label``) without YCSB's throughput: why its row is empty."""
    if THROUGHPUT not in per_phase:
        return []
    return [UNSUMMARIZED_NOTE.format(phase=r[label]) for _, r in per_phase[per_phase[THROUGHPUT].isna()].iterrows()]


def _merged_percentiles(g: pd.DataFrame, lat: pd.DataFrame) -> None:
    """Replace each p99 column of an aggregated table by the phase's latency figure."""
    p99 = {(r.phase, r.operation): r.p99 for r in lat.itertuples(index=False)}
    for c in g.columns:
        if c.startswith("[") and c.endswith("].99thPercentileLatency(us)"):
            op = c[1 : -len("].99thPercentileLatency(us)")]
            g[c] = [p99.get((phase, op), float("nan")) for phase in g["phase"]]


def _aggregate(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Sum what adds up, max what does not (runtime; p99 until replaced by merged figures).

    A NaN among the shards makes the sum or maximum NaN: a total that
    silently skips a failed shard would look complete when it is not.
    """
    ops = _op_columns(df)

    def total(s: pd.Series) -> Any:
        return s.sum(skipna=False)

    def highest(s: pd.Series) -> Any:
        return s.max(skipna=False)

    agg: dict[str, Any] = {
        "experiment_run": "first",
        "pods": "first",
        "configuration": "first",
        "attempt": "max",
        "threads": total,
        "target": total,
        "exceptions": total,
        "throughput": total,
        "runtime_ms": highest,
    }
    for c in ops:
        agg[c] = highest if c.endswith("PercentileLatency(us)") else total
    g = df.groupby(by, sort=False).agg(agg).reset_index()
    for c in ["threads", "target", "exceptions"] + [c for c in ops if c.endswith("Return=OK")]:
        g[c] = g[c].astype("Int64")
    for c in ["throughput", "runtime_ms"]:
        g[c] = g[c].astype("float64")
    return g


def _per_phase(
    shards: pd.DataFrame, lat: pd.DataFrame, windows: pd.DataFrame, leading: Callable[[pd.DataFrame], dict[str, Any]]
) -> pd.DataFrame:
    """The shards added up per phase: the ``leading`` columns, taken from the
    aggregate, then the overall and common-window figures, then each operation's."""
    g = _aggregate(shards, ["phase"])
    _merged_percentiles(g, lat)
    out = pd.DataFrame(
        {**leading(g), THROUGHPUT: g["throughput"], RUNTIME: g["runtime_ms"], **_window_figures(g, windows)}
    )
    for c in _op_columns(shards):
        out[c] = g[c]
    return out


def loading_per_run(loading: pd.DataFrame, sf: float | None, lat: pd.DataFrame, windows: pd.DataFrame) -> pd.DataFrame:
    def leading(g: pd.DataFrame) -> dict[str, Any]:
        return {
            "DBMS": g["configuration"],
            "experiment_run": g["experiment_run"],
            "threads": g["threads"],
            "target": g["target"],
            "pod_count": g["pods"],
            "exceptions": g["exceptions"],
            "sf": sf,
            SF_PER_HOUR: _sf_per_hour(sf, g["runtime_ms"]),
        }

    return _per_phase(loading, lat, windows, leading)


def execution_per_connection(execution: pd.DataFrame) -> pd.DataFrame:
    return _per_connection(
        execution,
        {
            "DBMS": row_name(execution),
            "phase": execution["phase"],
            "job": job_name(execution),
            "configuration": execution["configuration"],
            "experiment_run": execution["experiment_run"],
            "client": execution["client"],
            "benchmark_run": execution["attempt"],
            "child": execution["shard"],
        },
    )


def execution_per_phase(execution: pd.DataFrame, lat: pd.DataFrame, windows: pd.DataFrame) -> pd.DataFrame:
    def leading(g: pd.DataFrame) -> dict[str, Any]:
        return {
            "DBMS": g["phase"],
            "phase": g["phase"],
            "experiment_run": g["experiment_run"],
            "threads": g["threads"],
            "target": g["target"],
            "benchmark_run": g["attempt"],
            "pod_count": g["pods"],
            "exceptions": g["exceptions"],
        }

    return _per_phase(execution, lat, windows, leading)
