"""The Saturation section (docs/saturation.md): a saturation search's steps.

The scheduler judges each step when its phase ends (internal/saturation)
and the collector keeps the judgement in saturation_steps; the step's
shards, seconds and histograms are the experiment's raw results, so the
Execution tables above show each step's phase as any other (its Per Phase
throughput and merged percentiles). This module shows the steps in one
table, the knee as one figure, and the hold's stability.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..contracts import BENCHMARK
from ..model import ExperimentData

# The step table's columns, in order.
STEP_COLUMNS = [
    "step",
    "phase",
    "role",
    "shards",
    "threads",
    "offered [ops/s]",
    "achieved [ops/s]",
    "goodput [ops/s]",
    "error share [%]",
    "p95 [ms]",
    "p99 [ms]",
    "CV [%]",
    "worst second [ops/s]",
    "busy [%]",
    "SUT CPU [s]",
    "verdict",
    "why",
    "next",
]

NOTE = (
    "achieved and goodput are operations per second over each step's steady window (after the warm-up, "
    "within every shard's window), summed over the shards; goodput counts successful operations only. "
    "p95/p99 come from the shards' merged histograms, from the intended start when a target is set. "
    "CV and worst second are of the per-second throughput; busy is the share of the drivers' thread "
    "time in operations (Little's law). SUT CPU is CPU seconds in the step's phase (-m), missing when "
    "not monitored."
)


TSDB_NOTE = (
    "benchmark tsdb (docs/tsdb.md): ops/s are points per second. offered is what the step's agents make, "
    "achieved what the generators sent, goodput what the database stored by its own count; threads are agents, "
    "shards generators. A step passes when the generators sent 95 % (min_achieved) of the offered load and the "
    "database stored 99 % of what they sent over the steady window (its backlog did not grow); the knee's "
    "throughput is points stored per second."
)


@dataclass(frozen=True, eq=False)  # DataFrames do not compare to a bool
class Saturation:
    """The steps of every configuration's search, and one line per knee and hold."""

    steps: pd.DataFrame
    knees: list[str] = field(default_factory=list)
    holds: list[str] = field(default_factory=list)
    # Per configuration base with repetitions (-nc): whether their knees agree.
    agreement: list[str] = field(default_factory=list)
    # What the figures mean for this benchmark, when not YCSB's (tsdb).
    notes: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return not self.steps.empty


def _ms(v: Any) -> str:
    return "missing" if v is None or pd.isna(v) else f"{float(v):.2f} ms"


def sustained(knee: dict[str, Any]) -> float:
    """A knee's maximum sustainable throughput: its sustained rate, or its goodput where it has none."""
    return float(knee.get("sustained", knee["goodput"]))


def knee_line(configuration: str, knee: dict[str, Any]) -> str:
    """The knee as one figure, with what bounds it."""
    if not knee.get("offered"):
        return f"{configuration}: no load passed ({knee.get('note') or 'no step passed'})"
    value = sustained(knee)
    line = (
        f"{configuration}: maximum sustainable throughput {value:,.0f} ops/s "
        f"(offered {int(knee['offered']):,} ops/s, step {knee['step']}, p99 {_ms(knee.get('p99_ms'))})"
    )
    if float(knee["goodput"]) > value:
        line += (
            f"; its goodput, {float(knee['goodput']):,.0f} ops/s, was above the offered load: "
            "the drivers caught up on a backlog from the warm-up"
        )
    if knee.get("first_bad"):
        line += f"; the first failing load: {int(knee['first_bad']):,} ops/s"
    if knee.get("note"):
        line += f" — {knee['note']}"
    return line


def _sut_cpu(data: ExperimentData) -> dict[str, Any]:
    """SUT CPU seconds per phase (its latest attempt), when monitored."""
    m = data.metrics
    if m.empty:
        return {}
    rows = m.loc[(m["component"] == "sut") & (m["metric"] == "cpu_seconds")]
    rows = rows.sort_values("attempt").groupby("phase").tail(1)
    return {r.phase: (None if r.missing else r.value) for r in rows.itertuples(index=False)}


def build_saturation(data: ExperimentData) -> Saturation:
    s = data.saturation
    if s.empty:
        return Saturation(steps=pd.DataFrame(columns=STEP_COLUMNS))
    s = s.sort_values(["configuration", "step", "attempt"]).groupby(["configuration", "phase"], sort=False).tail(1)
    cpu = _sut_cpu(data)
    steps = pd.DataFrame(
        {
            "step": s["step"],
            "phase": s["phase"],
            "role": s["role"],
            "shards": s["shards"],
            "threads": s["threads"],
            "offered [ops/s]": s["offered"],
            "achieved [ops/s]": s["achieved"],
            "goodput [ops/s]": s["goodput"],
            "error share [%]": s["error_share"],
            "p95 [ms]": s["p95_ms"],
            "p99 [ms]": s["p99_ms"],
            "CV [%]": s["cv"],
            "worst second [ops/s]": s["worst_second"],
            "busy [%]": s["busy"],
            "SUT CPU [s]": s["phase"].map(lambda p: cpu.get(p)).astype("float64"),
            "verdict": s["verdict"],
            "why": s["why"],
            "next": s["next"],
        },
        columns=STEP_COLUMNS,
    ).reset_index(drop=True)
    knees, holds = [], []
    by_base: dict[str, list[float]] = {}
    base = {p.configuration: p.base for p in data.plan.phases}
    for row in s.itertuples(index=False):
        if row.knee is not None:
            knees.append(knee_line(row.configuration, row.knee))
            if row.knee.get("offered"):
                value = sustained(row.knee)
                by_base.setdefault(base.get(row.configuration, row.configuration), []).append(value)
        if row.role == "hold":
            holds.append(
                f"{row.configuration}: {row.verdict} — {int(row.offered):,} ops/s offered for {int(row.seconds)} s: "
                f"goodput {float(row.goodput):,.0f} ops/s, CV {float(row.cv):.1f} %, "
                f"worst second {float(row.worst_second):,.0f} ops/s"
            )
    precision = float(
        ((data.experiment.get("plan") or {}).get("settings") or {}).get("saturation", {}).get("precision") or 5
    )
    notes = []
    if data.plan.settings.benchmark == BENCHMARK.tsdb:
        notes.append(TSDB_NOTE)
    return Saturation(
        steps=steps,
        knees=knees,
        holds=holds,
        agreement=[agreement_line(b, values, precision) for b, values in by_base.items() if len(values) > 1],
        notes=notes,
    )


def agreement_line(base: str, knees: list[float], precision: float) -> str:
    """Whether the knees of a configuration's repetitions agree within the search's precision."""
    spread = 100 * (max(knees) - min(knees)) / max(knees)
    verdict = "agree" if spread <= precision else "do NOT agree"
    return (
        f"{base}: the {len(knees)} repetitions' knees ({', '.join(f'{k:,.0f}' for k in knees)} ops/s) "
        f"differ by {spread:.1f} %: they {verdict} within the {precision:g} % precision"
    )
