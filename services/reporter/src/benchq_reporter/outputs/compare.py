"""``reporter compare -e A -e B …``: benchmarking phases of several experiments side by side.

One row per benchmarking phase of each experiment, with its throughput over
the common window, the p95 and p99 of its slowest operation (merged
histograms, latency from the operation's start, failed operations left
out) and the SUT's CPU seconds
per million operations (when monitored with -m), each with its ratio to the
baseline: the first experiment's phase of the same name (bexhoma's names
carry the configuration), or, for an experiment that shares no phase name
with it (another DBMS, another grid), the phase at the same position. A
figure that could not be had is "missing", and so is its ratio: never 0.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ..contracts import BENCHMARK, KIND
from ..summary.build import YcsbSummary
from ..summary.ycsb import LATENCY_FIGURES, THROUGHPUT, WINDOW_THROUGHPUT, executed, slowest

MISSING = "missing"
FIGURES = {  # column → (title, lower is better)
    "throughput": ("Throughput(ops/sec)", False),
    "p95_us": ("p95 slowest op (us)", True),
    "p99_us": ("p99 slowest op (us)", True),
    "cpu_per_mops": ("SUT CPU s per 1M ops", True),
}


class NotComparable(ValueError):
    """An experiment without benchmarking phases (a TPC-C one, or none ran)."""


def phases(code: str, summary: object, frames: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The compared figures of one experiment's benchmarking phases, in plan order."""
    if not isinstance(summary, YcsbSummary) or summary.execution_per_phase.empty:
        raise NotComparable(f"experiment {code} has no YCSB benchmarking phase to compare")
    if summary.workload.benchmark != BENCHMARK.ycsb:
        # benchmark tsdb's phases are YCSB-shaped, but their "p95 slowest op" is the query's latency
        # beside points written: its Ingest section compares what matters there.
        raise NotComparable(
            f"experiment {code} is a {summary.workload.benchmark} experiment: compare takes YCSB experiments"
        )
    per = summary.execution_per_phase
    lat = summary.execution_latency
    ops = executed(lat)
    ms = frames["metric_summaries"]
    # The attempt the summary reports, whose figure may be missing: never another attempt's.
    cpu = ms[ms["reported"] & (ms["kind"] == KIND.run) & (ms["component"] == "sut") & (ms["metric"] == "cpu_seconds")]
    cpu = cpu.groupby("phase")["value"].first()
    dbms = frames["phases"][["phase", "configuration"]].drop_duplicates("phase")
    dbms = dbms.merge(frames["configurations"][["configuration", "dbms"]], on="configuration", how="left")
    out = pd.DataFrame(
        {
            "experiment": code,
            "phase": per["phase"].to_numpy(),
            "throughput": per[WINDOW_THROUGHPUT].astype("float64").to_numpy(),
        }
    )
    out["dbms"] = out["phase"].map(dbms.set_index("phase")["dbms"])
    # Shards that reported no measured window (an older agent) leave only
    # YCSB's own figure: used, and said so under the table.
    overall = out["throughput"].isna()
    out.loc[overall, "throughput"] = per.loc[overall.to_numpy(), THROUGHPUT].astype("float64").to_numpy()
    # A phase with neither figure (stopped) is missing, not YCSB's.
    out["window"] = ~overall | out["throughput"].isna()
    out["p95_us"] = out["phase"].map(slowest(lat, LATENCY_FIGURES["p95"]))
    out["p99_us"] = out["phase"].map(slowest(lat, LATENCY_FIGURES["p99"]))
    out["cpu_per_mops"] = out["phase"].map(cpu) / out["phase"].map(ops) * 1e6
    return out


def partners(base: pd.DataFrame, df: pd.DataFrame) -> tuple[list[int | None], bool]:
    """For each row of df, the row of base it is compared with (None: none), and whether by name.

    By name when df shares a phase name with base; else by position."""
    names = {p: i for i, p in enumerate(base["phase"])}
    if any(p in names for p in df["phase"]):
        return [names.get(p) for p in df["phase"]], True
    return [i if i < len(base) else None for i in range(len(df))], False


def compare(experiments: list[pd.DataFrame]) -> pd.DataFrame:
    """The experiments' phases stacked, each figure with its ratio to the baseline's."""
    base = experiments[0].reset_index(drop=True)
    rows = []
    for df in experiments:
        df = df.reset_index(drop=True)
        pairs, _ = partners(base, df)
        for col in FIGURES:
            ref = pd.Series(
                [float("nan") if j is None else base[col].iloc[j] for j in pairs], index=df.index, dtype="float64"
            )
            df[f"{col}_ratio"] = (df[col] / ref).where(ref > 0)
        rows.append(df)
    return pd.concat(rows, ignore_index=True)


def pairing_notes(table: pd.DataFrame) -> list[str]:
    """How each experiment was paired with the baseline, what found no partner, and partners of another DBMS."""
    codes = list(dict.fromkeys(table["experiment"]))
    base = table[table["experiment"] == codes[0]].reset_index(drop=True)
    notes = []
    for code in codes[1:]:
        df = table[table["experiment"] == code].reset_index(drop=True)
        pairs, by_name = partners(base, df)
        alone = [df["phase"].iloc[i] for i, j in enumerate(pairs) if j is None]
        unmatched = [p for i, p in enumerate(base["phase"]) if i not in pairs]
        if not by_name or alone or unmatched:
            how = (
                "the baseline's phase of the same name"
                if by_name
                else "the baseline's phase at the same position (no phase name in common)"
            )
            line = f"* {code} is compared with {how}"
            if alone:
                line += f"; {len(alone)} of its phases have none (their × is missing: {', '.join(alone)})"
            if unmatched:
                line += f"; {len(unmatched)} of the baseline's have no partner in it"
            notes.append(line + ".")
        other = [
            (i, j)
            for i, j in enumerate(pairs)
            if j is not None
            and pd.notna(df["dbms"].iloc[i])
            and pd.notna(base["dbms"].iloc[j])
            and df["dbms"].iloc[i] != base["dbms"].iloc[j]
        ]
        if other:
            i, j = other[0]
            notes.append(
                f"* {code}: {len(other)} of its phases are compared with a phase of another DBMS "
                f"(e.g. {df['phase'].iloc[i]}, {df['dbms'].iloc[i]}, with {base['phase'].iloc[j]}, {base['dbms'].iloc[j]})."
            )
    return notes


def markdown(table: pd.DataFrame) -> str:
    """The comparison as Markdown (cells are text: tabulate must not reformat "1.000")."""
    cols: dict[str, pd.Series] = {"experiment": table["experiment"], "phase": table["phase"]}
    for col, (title, _) in FIGURES.items():
        cols[title] = table[col].map(lambda v: MISSING if pd.isna(v) else f"{v:,.2f}")
        cols["×"] = table[f"{col}_ratio"].map(lambda v: MISSING if pd.isna(v) else f"{v:.3f}")
        cols[f"{title} ×"] = cols.pop("×")
    lines = [
        "## Comparison",
        "",
        pd.DataFrame(cols).to_markdown(index=False, disable_numparse=True),
        "",
        f"* × is the ratio to the baseline, {table['experiment'].iloc[0]}: its phase of the same name, or at the same "
        "position for an experiment that shares no phase name with it.",
        "* Throughput: all shards' operations over the phase's common window (the earliest first operation of a shard to the "
        "latest end of one: the summary's Throughput common window, not the shards' rates summed); p95/p99 of its slowest operation from the shards' "
        "merged histograms, the latency from the operation's start (the Saturation section's p99 is from its intended "
        "start, queueing included); SUT CPU seconds (-m) per million operations. Lower is better but for throughput.",
    ]
    lines += pairing_notes(table)
    if not table["window"].all():
        lines.append(
            "* No common window for "
            + ", ".join(table.loc[~table["window"], "phase"])
            + ": their throughput is YCSB's [OVERALL].Throughput(ops/sec), summed over the shards."
        )
    return "\n".join(lines) + "\n"
