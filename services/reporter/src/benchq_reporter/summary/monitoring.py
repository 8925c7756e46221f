"""The Monitoring and Application Metrics sections, from metric_summaries.

The collector reduces each metric of a phase's window to one value per
(phase, attempt, component) (MONSPEC: section 'system' or 'application',
columns in ``position`` order, ``value`` NULL with the reason in
``missing`` when it could not be collected). This module lays those rows
out as bexhoma does: one table per phase kind and component, the DBMS as
rows and the metric titles as columns. A value that could not be collected
stays NaN and is named with its reason: it is never shown as 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ..contracts import KIND
from ..model import ExperimentData
from .attempts import reported_metrics

SYSTEM, APPLICATION = "system", "application"
CPU = "CPU [CPUs]"
CPU_NOTE = (
    "CPU [CPUs] is CPU seconds used in the phase (bexhoma's name); Max CPU is the most CPU cores in use "
    "at once between two samples at least 0.1 s apart (scrapes, and reads at the phase's edges); RAM in GiB; summed over the "
    "component's processes/pods"
)
# bexhoma's order of the components in a phase (its PgBouncer summaries put the pool first).
COMPONENTS = ["pool", "sut", "loader", "benchmarker"]
PHASE_NAMES = {KIND.load: "Loading phase", KIND.run: "Execution phase"}


@dataclass(frozen=True, eq=False)  # DataFrames do not compare to a bool
class Section:
    """One table: a phase kind's metrics of one component."""

    title: str  # "Loading phase: SUT deployment"
    kind: str
    component: str
    table: pd.DataFrame  # DBMS, then one column per metric title
    missing: list[str] = field(default_factory=list)  # "<title> of <DBMS> is missing: <reason>"


@dataclass(frozen=True)
class Monitoring:
    system: list[Section]
    application: list[Section]

    def __bool__(self) -> bool:
        return bool(self.system or self.application)


def section_title(kind: str, component: str) -> str:
    phase = PHASE_NAMES.get(kind, f"{kind} phase")
    return f"{phase}: SUT deployment" if component == "sut" else f"{phase}: component {component}"


def build_monitoring(data: ExperimentData) -> Monitoring:
    rows = _reported(data)
    return Monitoring(system=_sections(rows, SYSTEM), application=_sections(rows, APPLICATION))


def _reported(data: ExperimentData) -> pd.DataFrame:
    """The metric rows of each phase's reported attempt, labelled and ordered like the phase tables."""
    m = data.metrics
    if m.empty:
        return m
    m = m[reported_metrics(m, data.shards, data.phases)]
    # Loading rows are the configuration's (as Per Run), execution rows the phase's (as Per Phase).
    label = m["configuration"].where(m["kind"] == KIND.load, m["phase"])
    order = data.plan.table().set_index("phase")["order"]
    return m.assign(DBMS=label, _order=m["phase"].map(order).astype("float64")).sort_values(
        ["_order", "window_start", "phase"], na_position="last", kind="stable"
    )


def _sections(rows: pd.DataFrame, section: str) -> list[Section]:
    if rows.empty:
        return []
    rows = rows[rows["section"] == section]
    known = {c: i for i, c in enumerate(COMPONENTS)}
    keys = sorted(
        {(k, c) for k, c in zip(rows["kind"], rows["component"], strict=False)},
        key=lambda kc: (kc[0] != KIND.load, known.get(kc[1], len(known)), kc[1]),
    )
    return [_section(rows[(rows["kind"] == k) & (rows["component"] == c)], k, c) for k, c in keys]


def _section(rows: pd.DataFrame, kind: str, component: str) -> Section:
    # Columns in position order; configurations of different DBMS may have different application sets.
    titles = list(dict.fromkeys(rows.sort_values("position", kind="stable")["title"]))
    values: dict[str, dict[str, float]] = {}
    missing = []
    for r in rows.itertuples(index=False):
        cells = values.setdefault(r.DBMS, {})
        if r.title in cells:
            continue  # a second phase under the same label: the first in plan order is shown
        cells[r.title] = r.value
        if pd.isna(r.value):
            missing.append(f"{r.title} of {r.DBMS} is missing: {r.missing or 'no reason given'}")
    for label, cells in values.items():
        missing += [f"{t} of {label} is missing: not in its DBMS's metric set" for t in titles if t not in cells]
    table = pd.DataFrame(
        [{"DBMS": label, **{t: cells.get(t) for t in titles}} for label, cells in values.items()],
        columns=["DBMS", *titles],
    )
    table[titles] = table[titles].astype("float64")
    return Section(title=section_title(kind, component), kind=kind, component=component, table=table, missing=missing)
