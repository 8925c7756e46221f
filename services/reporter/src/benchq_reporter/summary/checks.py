"""bexhoma's result tests (-tr), over the reported figures.

Each test's text is already worded for its outcome, as bexhoma prints it
("... contains no 0 or NaN" when it passed, "... contains 0 or NaN" when
not); render.py only adds "TEST passed:" or "TEST failed:".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import pandas as pd

from ..contracts import RESULT
from ..plan import DEFAULT_ERROR_SHARE_LIMIT
from . import benchbase as bb
from . import ycsb
from .monitoring import CPU, Monitoring
from .workflow import Workflow


class Test(NamedTuple):
    id: str
    passed: bool
    text: str


def throughput(id: str, name: str, values: pd.Series, column: str = "") -> Test:
    """Passed when every value of a column is there and not 0; ``column`` names it after bexhoma's "in"."""
    within = f" in {column}" if column else ""
    if values.empty:
        return Test(id, False, f"{name} has no values{within}")
    if (values.isna() | values.eq(0)).any():
        return Test(id, False, f"{name} contains 0 or NaN{within}")
    return Test(id, True, f"{name} contains no 0 or NaN{within}")


def monitoring_tests(m: Monitoring) -> list[Test]:
    """bexhoma's: each system table's CPU seconds are there and not 0 (none without monitoring rows)."""
    empty = pd.Series(dtype="float64")
    return [throughput(f"monitoring_{s.kind}_{s.component}", s.title, s.table.get(CPU, empty), CPU) for s in m.system]


def workflow(w: Workflow) -> Test:
    same = w.as_planned()
    return Test("workflow", same, "Workflow as planned" if same else "Workflow not as planned")


def error_share(
    id: str, name: str, per_phase: pd.DataFrame, label: str, limit: float, skipped: list[str] | None = None
) -> Test:
    """Passed when no phase's failed operations exceed ``limit`` percent of its operations (-max-errors).
    A phase without the figure (it stored no operations: its shards failed before they counted any) has
    not shown it holds: it fails the test, named, rather than passing it unmeasured; so does an
    experiment in which no such phase ran, unless they were skipped (``skipped``: the reasons)."""
    if per_phase.empty:
        if skipped:
            return Test(id, True, f"{name}: skipped, nothing to test ({'; '.join(sorted(set(skipped)))})")
        return Test(id, False, f"{name}: no phase ran, so no failed operations were measured")
    shares = per_phase[ycsb.ERROR_SHARE] if ycsb.ERROR_SHARE in per_phase else pd.Series(dtype="float64")
    high = per_phase.loc[shares > limit]
    if not high.empty:
        worst = ", ".join(f"{r[label]} {r[ycsb.ERROR_SHARE]:.2f} %" for _, r in high.iterrows())
        return Test(id, False, f"{name}: failed operations above {limit:g} % ({worst})")
    unmeasured = per_phase.loc[shares.isna()] if ycsb.ERROR_SHARE in per_phase else per_phase.iloc[0:0]
    if not unmeasured.empty:
        names = ", ".join(str(r[label]) for _, r in unmeasured.iterrows())
        return Test(id, False, f"{name}: failed operations not measured in {names} (no operations stored)")
    return Test(id, True, f"{name}: failed operations at most {limit:g} % in every phase")


def loading_throughput(loading_conn: pd.DataFrame, skipped: list[str]) -> Test:
    """The loading throughput test; when every loading phase was skipped (the database persisted on a
    volume) there is nothing to test, and the test says why instead of failing on the missing rows."""
    if loading_conn.empty and skipped:
        return Test(
            "loading_throughput", True, f"Loading Phase: skipped, nothing to test ({'; '.join(sorted(set(skipped)))})"
        )
    return throughput("loading_throughput", f"Loading Phase: {ycsb.THROUGHPUT}", loading_conn[ycsb.THROUGHPUT])


def ycsb_tests(
    loading_conn: pd.DataFrame,
    execution_conn: pd.DataFrame,
    execution: pd.DataFrame,
    loading_run: pd.DataFrame,
    execution_phase: pd.DataFrame,
    w: Workflow,
    m: Monitoring,
    skipped_loading: list[str] | None = None,
    error_limit: float = DEFAULT_ERROR_SHARE_LIMIT,
    benchmarking_planned: bool = True,
) -> list[Test]:
    """A YCSB experiment's: loading and execution throughput, their error shares, monitoring, the workflow,
    no FAILED operation. ``skipped_loading`` are the reasons of loading phases skipped, ``error_limit`` the
    plan's error_share_limit (percent); without ``benchmarking_planned`` (action load) the execution tests
    pass, saying there was nothing to test, rather than fail a load that went well."""
    if not benchmarking_planned:
        nothing = "Execution Phase: no benchmarking phase was planned (action load), nothing to test"
        return [
            loading_throughput(loading_conn, skipped_loading or []),
            *monitoring_tests(m),
            workflow(w),
            error_share("loading_errors", "Loading Phase", loading_run, "DBMS", error_limit, skipped_loading),
            Test("execution_throughput", True, nothing),
        ]
    failed_ops = [c for c in execution_conn.columns if c.endswith("-FAILED].Return=OK")]
    failed_shards = int(execution["status"].ne(RESULT.ok).sum()) if not execution.empty else 0
    if execution.empty:
        no_failed = Test("no_failed", False, "Execution Phase: no phase ran, so none could show a FAILED column")
    elif failed_ops:
        no_failed = Test("no_failed", False, "Execution Phase: contains FAILED column")
    elif failed_shards:
        # bexhoma's test reads the FAILED columns only; a shard that did not end ok fails it too, named as such.
        s = "s" if failed_shards != 1 else ""
        no_failed = Test(
            "no_failed", False, f"Execution Phase: {failed_shards} shard{s} did not end ok (see Failures and re-runs)"
        )
    else:
        no_failed = Test("no_failed", True, "Execution Phase: contains no FAILED column")
    return [
        loading_throughput(loading_conn, skipped_loading or []),
        throughput("execution_throughput", f"Execution Phase: {ycsb.THROUGHPUT}", execution_conn[ycsb.THROUGHPUT]),
        *monitoring_tests(m),
        workflow(w),
        no_failed,
        # Ours, after bexhoma's: YCSB's throughput counts failed operations.
        error_share("loading_errors", "Loading Phase", loading_run, "DBMS", error_limit, skipped_loading),
        error_share("execution_errors", "Execution Phase", execution_phase, "phase", error_limit),
    ]


# A threshold's figure (contracts.Threshold) in the summary's tables: a
# latency in the merged-histogram latency figures (µs), a rate or the error
# share in the Per Phase table.
LATENCY_KEY = {"p50": "p50", "p95": "p95", "p99": "p99", "p99.9": "p999", "avg": "mean", "max": "max"}
PHASE_COLUMN = {"throughput": ycsb.WINDOW_THROUGHPUT, "goodput": ycsb.GOODPUT, "error_share": ycsb.ERROR_SHARE}
COMPARE = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def _shown(figure: str, v: float) -> str:
    if figure in LATENCY_KEY:
        return f"{v / 1000:.3g} ms" if v >= 1000 else f"{v:.3g} µs"
    if figure == "error_share":
        return f"{v:.3g} %"
    return f"{v:.6g} ops/s"


def threshold_tests(thresholds: list[Mapping[str, Any]], lat: pd.DataFrame, per_phase: pd.DataFrame) -> list[Test]:
    """-threshold: each bound holds in every benchmarking phase (a latency for every counted
    operation, or the one named, from the merged histograms); a figure that is missing fails it.
    The text names the figure, the limit and each measured value that breaks it."""
    out = []
    for i, t in enumerate(thresholds):
        figure, op, value = t["figure"], t["op"], float(t["value"])
        measured: list[tuple[str, float, float]] = []  # (where, measured, limit)
        if figure in LATENCY_KEY:
            rows = lat[~lat["operation"].str.startswith(ycsb.INTENDED) & ~lat["operation"].str.endswith(ycsb.FAILED)]
            if t.get("operation"):
                rows = rows[rows["operation"] == t["operation"]]
            for r in rows.itertuples(index=False):
                measured.append((f"{r.phase} {r.operation}", float(getattr(r, LATENCY_KEY[figure])), value))
        else:
            for _, r in per_phase.iterrows():
                target = float(r["target"]) if pd.notna(r["target"]) else math.nan
                if t.get("of_target") and not target > 0:
                    # No target to compare with (not a bound of 0 that always holds): unthrottled, or a
                    # shard's target unknown.
                    why = "unthrottled, no target" if target == 0 else "target unknown"
                    measured.append((f"{r['phase']} ({why})", math.nan, math.nan))
                    continue
                limit = value * target if t.get("of_target") else value
                measured.append((str(r["phase"]), float(r.get(PHASE_COLUMN[figure], math.nan)), limit))
        name = f"Threshold {t['text']}"
        if not measured:
            out.append(Test(f"threshold_{i}", False, f"{name}: no benchmarking phase measured {figure}"))
            continue
        broken = [m for m in measured if math.isnan(m[1]) or not COMPARE[op](m[1], m[2])]
        if broken:
            detail = "; ".join(
                f"{where}: {figure} missing"
                if math.isnan(v)
                else f"{where}: {figure} {_shown(figure, v)}, limit {op} {_shown(figure, lim)}"
                for where, v, lim in broken
            )
            out.append(Test(f"threshold_{i}", False, f"{name} not met ({detail})"))
        else:
            worst = max(measured, key=lambda m: m[1]) if op.startswith("<") else min(measured, key=lambda m: m[1])
            out.append(
                Test(
                    f"threshold_{i}",
                    True,
                    f"{name} met in every benchmarking phase (closest: {worst[0]}, {_shown(figure, worst[1])})",
                )
            )
    return out


def benchbase_tests(tables: bb.Tables) -> list[Test]:
    """A Benchbase experiment's own test: the pods' throughput (monitoring and workflow tests follow it)."""
    return [throughput("benchbase_throughput", bb.THROUGHPUT, tables.per_pod[bb.THROUGHPUT])]
