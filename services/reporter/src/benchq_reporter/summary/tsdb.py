"""The Ingest section of benchmark tsdb (docs/tsdb.md): what the generators
sent against what the time-series database says it stored.

The generators' side is their WRITE operation (points the SUT took: the
socket for carbon, a 2xx answer for remote write) over their common
window. The database's side is its own counter of stored points
(ingest_readings), read by each phase's first generator before GO, every
second while the generators wrote, and after they stopped until the
counter stopped growing (the drain). So the section reads as the
DalmatinerDB benchmark does: per-second ingest from the benchmarked system
itself, beside what was offered and sent.

A figure that cannot be computed (no reading, a shard without a window)
is missing, never 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..contracts import BENCHMARK, EXPERIMENT, KIND, RESULT
from ..model import ExperimentData
from .attempts import phase_attempts, select_attempts
from .saturation import sustained

COLUMNS = [
    "phase",
    "kind",
    "generators",
    "agents",
    "series",
    "offered [points/s]",
    "sent [points/s]",
    "ingested [points/s]",
    "stored by the end [%]",
    "backlog at end [points]",
    "drained after [s]",
    "sent [points]",
    "failed [points]",
    "stored [points]",
    "not stored [points]",
    "ingest CV [%]",
]

NOTE = (
    "sent counts the points the database took (carbon: its socket; remote write: a 2xx answer) over the "
    "generators' common window; failed the points whose write failed. ingested is the database's own counter "
    "of stored points ({counter}) from GO to its last reading before the generators' end, per second; stored by "
    "the end is its share of sent at its first reading after the end, and the backlog what it still had to store "
    "then (a flush between those two readings counts in the second only: on a phase of a few seconds ingested "
    "can be a flush lower). After the end the counter is read until it stops "
    "growing (drained after) or for at most 30 s: stored is its growth over the whole phase, not stored = "
    "sent − stored. ingest CV is the coefficient of variation of the per-second ingest (the counter's growth "
    "between readings a second apart) while the generators ran (the seed's 'stable load'); with few agents "
    "flushing once a second near the reading instants, a flush falls on either side of a reading (no flush in "
    "one second, two in the next), which raises the CV without the database varying. A loading phase writes "
    "one point of each series."
)


SCALING_COLUMNS = [
    "configuration",
    "nodes",
    "stored [points/s]",
    "from",
    "per node [points/s]",
    "efficiency vs linear",
    "cost [per hour]",
    "points per cost unit [M]",
]

SCALING_NOTE = (
    "Scaling (-nw 1,2,3): one row per configuration. stored is its knee (the search's maximum sustainable "
    "throughput, -xsat) or else its highest benchmarking phase's stored rate (sent/s × stored/sent; from "
    "'offered' when it stored 99 % of what that phase offered: a load, not a capacity); nodes are "
    "its workers (1 for a single server). efficiency vs linear = stored / (nodes / the fewest nodes × the "
    "stored of the fewest), the fewest of the same DBMS and repetition. cost = nodes × -cost-per-hour; points per cost unit = stored × 3600 / cost, in "
    "millions; both missing without -cost-per-hour."
)

UNSATURATED_NOTE = (
    "Scaling: no configuration was saturated: each stored all it was offered, so stored is the offered load, "
    "not a capacity, and efficiency vs linear compares one load spread over more nodes. -xsat searches each "
    "size's capacity, the seed's way."
)


@dataclass(frozen=True, eq=False)  # DataFrames do not compare to a bool
class Ingest:
    """One row per reported phase, the scaling table (-nw lists), and notes."""

    table: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    scaling: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=SCALING_COLUMNS))

    def __bool__(self) -> bool:
        return not self.table.empty


def _cv(rates: list[float]) -> float:
    if len(rates) < 2:
        return math.nan
    s = pd.Series(rates)
    return float(s.std(ddof=0) / s.mean() * 100) if s.mean() > 0 else math.nan


def phase_row(
    data: ExperimentData, phase: str, attempt: int, shards: pd.DataFrame, notes: list[str], stopped: bool = False
) -> dict[str, Any]:
    """The figures of one phase from its reported shards and its readings (stopped: the experiment was cancelled)."""
    t = data.plan.settings.tsdb
    kind = str(shards["kind"].iloc[0])
    agents = int(shards["threads"].fillna(0).sum())
    series = agents * int(t.get("metrics") or 0)
    flush_ms = float(t.get("flush_interval_ms") or 0)
    ops = data.operations.merge(shards[["phase", "shard", "attempt"]], on=["phase", "shard", "attempt"])
    sent = int(ops.loc[ops["operation"] == "WRITE", "count"].sum())
    failed = int(ops.loc[ops["operation"] == "WRITE-FAILED", "count"].sum())
    start, end = shards["first_op_at"].min(), shards["last_op_at"].max()
    window = (end - start).total_seconds() if pd.notna(start) and pd.notna(end) else math.nan
    row: dict[str, Any] = {
        "phase": phase,
        "kind": kind,
        "generators": len(shards),
        "agents": agents,
        "series": series,
        # A generator that reported no agents leaves the load offered unknown, not 0.
        "offered [points/s]": series * 1000 / flush_ms
        if kind == KIND.run and flush_ms > 0 and shards["threads"].notna().all()
        else math.nan,
        "sent [points/s]": sent / window if window and window > 0 else math.nan,
        "sent [points]": sent,
        "failed [points]": failed,
    }
    r = data.ingest[(data.ingest["phase"] == phase) & (data.ingest["attempt"] == attempt)].sort_values("at")
    drains = data.ingest_drains[(data.ingest_drains["phase"] == phase) & (data.ingest_drains["attempt"] == attempt)]
    if r.empty or drains.empty:
        notes.append(f"{phase}: the database's counter was not read (no readings stored): ingest figures are missing")
        return row
    ended_at = drains["ended_at"].iloc[0]
    drained = bool(drains["drained"].iloc[0])
    base = r.iloc[0]
    during = r[~r["after_end"].astype(bool)]
    after = r[r["after_end"].astype(bool)]
    if not during.empty:
        last_during = during.iloc[-1]
        # The count stands still from the baseline (before READY) to GO.
        began = max(base["at"], start) if pd.notna(start) else base["at"]
        span = (last_during["at"] - began).total_seconds()
        if span > 0:
            row["ingested [points/s]"] = (last_during["total"] - base["total"]) / span
    if not after.empty:
        at_end = after.iloc[0]["total"] - base["total"]
        row["backlog at end [points]"] = sent - at_end
        row["stored by the end [%]"] = at_end / sent * 100 if sent else math.nan
    final = r.iloc[-1]["total"]
    row["stored [points]"] = final - base["total"]
    if drained:
        settled = r[r["total"] == final].iloc[0]["at"]
        row["drained after [s]"] = max(0.0, (settled - ended_at).total_seconds())
        row["not stored [points]"] = sent - row["stored [points]"]
    elif stopped:
        notes.append(f"{phase}: the experiment was stopped before the database's count settled: not stored is missing")
    else:
        notes.append(
            f"{phase}: the database was still storing 30 s after the generators stopped: not stored is missing"
        )
    deltas = during["total"].diff().iloc[1:]
    seconds = during["at"].diff().dt.total_seconds().iloc[1:]
    rates = [float(d / s) for d, s in zip(deltas, seconds, strict=True) if s > 0]
    row["ingest CV [%]"] = _cv(rates)
    return row


def build_ingest(data: ExperimentData) -> Ingest:
    """The Ingest section of a tsdb experiment; empty for the others."""
    if data.plan.settings.benchmark != BENCHMARK.tsdb or data.shards.empty:
        return Ingest(table=pd.DataFrame(columns=COLUMNS))
    chosen = select_attempts(data.shards, data.phases)
    attempts = phase_attempts(data)
    order = {p.name: i for i, p in enumerate(data.plan.phases)}
    notes: list[str] = []
    rows = []
    stopped = data.experiment.get("status") == EXPERIMENT.cancelled
    for phase in sorted(attempts.index, key=lambda p: order.get(p, len(order))):
        shards = chosen[chosen["phase"] == phase]
        if (shards["status"] != RESULT.ok).any():
            if stopped:
                notes.append(
                    f"{phase}: stopped (the experiment was cancelled): its figures count what was sent until then"
                )
            else:
                notes.append(f"{phase}: a generator failed; its figures count what the others sent")
        rows.append(phase_row(data, phase, int(attempts[phase]), shards, notes, stopped))
    counters = sorted(set(data.ingest["counter"].dropna()))
    table = pd.DataFrame(rows, columns=COLUMNS)
    scaling = build_scaling(data, table)
    return Ingest(
        table=table,
        notes=[*notes, NOTE.format(counter=", ".join(counters) or "its ingest counter")]
        + ([SCALING_NOTE] if not scaling.empty else [])
        + ([UNSATURATED_NOTE] if not scaling.empty and scaling["from"].eq("offered").all() else []),
        scaling=scaling,
    )


def _capacity(data: ExperimentData, table: pd.DataFrame) -> dict[str, tuple[float, str]]:
    """Per configuration: its knee when a search ran, else its best benchmarking phase's stored rate.

    The source of the latter is "highest phase", or "offered" when that phase stored at least 99 % of
    the load it was offered (then it is no capacity).
    """
    out: dict[str, tuple[float, str]] = {}
    sat = data.saturation
    if not sat.empty:
        last = sat.sort_values(["configuration", "step", "attempt"]).groupby(["configuration", "phase"]).tail(1)
        for row in last.itertuples(index=False):
            if row.knee is not None and row.knee.get("offered"):
                out[row.configuration] = (sustained(row.knee), "knee")
    configuration = {p.name: p.configuration for p in data.plan.phases}
    for row in table[table["kind"] == KIND.run].to_dict("records"):
        cfg = configuration.get(row["phase"])
        sent, stored, rate = row["sent [points]"], row["stored [points]"], row["sent [points/s]"]
        if cfg is None or (cfg in out and out[cfg][1] == "knee") or not sent or pd.isna(stored) or pd.isna(rate):
            continue
        value = float(rate) * float(stored) / float(sent)
        if cfg not in out or value > out[cfg][0]:
            offered = row["offered [points/s]"]
            out[cfg] = (value, "offered" if pd.notna(offered) and value >= 0.99 * float(offered) else "highest phase")
    return out


def build_scaling(data: ExperimentData, table: pd.DataFrame) -> pd.DataFrame:
    """The scaling table: empty unless the configurations differ in their workers (-nw 1,2,3)."""
    workers = data.plan.workers
    if len({workers.get(c, 0) for c in data.plan.configurations}) < 2:
        return pd.DataFrame(columns=SCALING_COLUMNS)
    capacity = _capacity(data, table)
    price = data.plan.settings.cost_per_hour
    rows = []
    for cfg in data.plan.configurations:
        nodes = max(workers.get(cfg, 0), 1)
        stored, source = capacity.get(cfg, (math.nan, "missing"))
        cost = nodes * price if price else math.nan
        rows.append(
            {
                "configuration": cfg,
                "nodes": nodes,
                "stored [points/s]": stored,
                "from": source,
                "per node [points/s]": stored / nodes,
                "cost [per hour]": cost,
                "points per cost unit [M]": stored * 3600 / cost / 1e6 if cost == cost and cost > 0 else math.nan,
            }
        )
    df = pd.DataFrame(rows, columns=SCALING_COLUMNS)
    # Each configuration against the fewest nodes of its own DBMS and repetition (-nc): another
    # database's or another repetition's figure is no baseline.
    cfgs = data.configurations.set_index("name")
    group = [(cfgs["dbms"].get(c), cfgs["experiment_run"].get(c)) for c in df["configuration"]]
    for _, g in df.groupby(pd.Series(group, index=df.index).astype(str), sort=False):
        fewest = g.loc[g["nodes"] == g["nodes"].min(), "stored [points/s]"]
        base = float(fewest.iloc[0]) / g["nodes"].min()
        df.loc[g.index, "efficiency vs linear"] = g["stored [points/s]"] / (g["nodes"] * base)
    return df.sort_values(["nodes", "configuration"], kind="stable").reset_index(drop=True)
