"""``reporter report``: one experiment as one self-contained HTML file.

The page holds the summary exactly as ``reporter summary`` prints it (its
Markdown tables become HTML tables) and plots drawn by matplotlib as inline
SVG, so it opens without a network and without scripts:

- a timeline of the experiment's phases;
- throughput over time of each phase, loading included: one line per shard,
  their total and the phase's target (the shards' streamed status lines,
  ``intervals``);
- latency percentiles per operation and phase (p50, p95, p99, p99.9 of the
  shards' merged histograms: the summary's Latency tables), on a log axis;
- latency over time: each shard's p99 per status line and operation
  (``interval_operations``: the shards' own interval figures, not merged);
- CPU (cores) and memory (GiB) over time per component (the raw samples,
  ``metrics``), and CPU seconds and RAM per component and phase (the
  Monitoring section's figures);
- for a grid, throughput and p99 per configuration;
- for benchmark tsdb, per phase: points sent and stored per second (the
  database's own count, ``ingest``), the backlog, and the latency of the
  read query sent every second under that load.

Every axis says what it holds; ``unlabelled`` finds one that does not (the
tests use it).

A plot without data (no intervals streamed, no monitoring) is left out and
the page says why. ``--png DIR`` writes the same plots as PNG files for papers.
"""

from __future__ import annotations

import html
import io
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display here, nor anywhere the reporter runs

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..contracts import BENCHMARK, KIND, PHASE
from ..summary import benchbase as bb
from ..summary.build import BenchbaseSummary, YcsbSummary
from ..summary.ycsb import HIDDEN_OPERATIONS, LATENCY_FIGURES, THROUGHPUT, WINDOW_THROUGHPUT, slowest

PERCENTILES = ("p50", "p95", "p99", "p999")
# The Monitoring figures plotted per component, as the axis names them (the
# summary keeps bexhoma's column titles, "CPU [CPUs]" and "Max RAM [Gb]",
# which hold CPU seconds and GiB).
MONITORED = {"cpu_seconds": "CPU [CPU seconds]", "max_ram": "Max RAM [GiB]"}
GIB = 2.0**30


@dataclass(frozen=True)
class Plot:
    slug: str  # file name of --png, id of the figure in the page
    title: str
    figure: Figure


def plots(frames: Mapping[str, pd.DataFrame], summary: object) -> tuple[list[Plot], list[str]]:
    """The plots of one experiment, and a line for each that has no data."""
    out: list[Plot] = []
    missing: list[str] = []
    # A report holds each plot's figure open until its page is written (then close()): a grid or a
    # saturation search has more than matplotlib's 20 without a leak, so its warning would only alarm.
    with matplotlib.rc_context({"figure.max_open_warning": 0}):
        _draw(frames, summary, out, missing)
    return out, missing


def _draw(frames: Mapping[str, pd.DataFrame], summary: object, out: list[Plot], missing: list[str]) -> None:
    for make in (
        _timeline,
        _throughput_over_time,
        _latency_per_phase,
        _latency_over_time,
        _resources_over_time,
        _monitoring,
        _grid,
        _saturation,
        _ingest_over_time,
    ):
        made, why = make(frames, summary)
        out.extend(made)
        if why:
            missing.append(why)


def unlabelled(fig: Figure) -> list[str]:
    """The axes of a figure that do not say what they hold (an empty x or y label)."""
    return [
        f"axes {i}: no {which} label"
        for i, ax in enumerate(fig.axes)
        for which, label in (("x", ax.get_xlabel()), ("y", ax.get_ylabel()))
        if not label.strip()
    ]


def _marker(points: pd.DataFrame | pd.Series) -> str | None:
    """Dots on a line of few points, so that one point still shows."""
    return "." if len(points) < 12 else None


def _timeline(frames: Mapping[str, pd.DataFrame], _summary: object) -> tuple[list[Plot], str]:
    """Every phase attempt as a bar from its start to its end, since the experiment's first."""
    ph = frames["phases"].dropna(subset=["started_at"])
    if ph.empty:
        return [], "Phase timeline: no phase started."
    t0 = ph["started_at"].min()
    end = ph["ended_at"].fillna(ph["started_at"].max())
    start_s = (ph["started_at"] - t0).dt.total_seconds()
    length_s = (end - ph["started_at"]).dt.total_seconds()
    labels = ph["phase"] + (" (attempt " + ph["attempt"].astype(str) + ")").where(ph["attempt"] > 1, "")
    colors = ph["kind"].map({KIND.load: "tab:orange", KIND.run: "tab:blue"}).fillna("tab:gray")
    fig, ax = plt.subplots(figsize=(8, 0.8 + 0.35 * len(ph)))
    ax.barh(labels, length_s, left=start_s, color=colors.where(ph["status"] != PHASE.failed, "tab:red"))
    ax.set(
        xlabel="seconds since the first phase started (orange: loading, blue: benchmarking, red: failed)",
        ylabel="phase",
    )
    ax.invert_yaxis()
    return [Plot("timeline", "Phase timeline", fig)], ""


def _targets(frames: Mapping[str, pd.DataFrame]) -> pd.Series:
    """Each phase's target (ops/s; the sum over its reported shards; 0: unthrottled)."""
    sh = frames["shards"]
    sh = sh[sh["reported"].fillna(False).astype(bool)] if "reported" in sh else sh
    return sh.groupby("phase")["target"].sum(min_count=1)


def _throughput_over_time(frames: Mapping[str, pd.DataFrame], _summary: object) -> tuple[list[Plot], str]:
    # The first status line (second 0) counts nothing yet: it is no throughput.
    iv = frames["intervals"].dropna(subset=["ops_per_sec"])
    iv = iv[iv["elapsed_s"] > 0]
    if iv.empty:
        return [], "Throughput over time: no shard streamed status lines (-xli 0, or none ran)."
    targets = _targets(frames)
    # A metrics generator's operations are the points it sent.
    exp = frames.get("experiment", pd.DataFrame())
    unit = "points sent/s" if not exp.empty and (exp["benchmark"] == BENCHMARK.tsdb).all() else "ops/s"
    made = []
    for phase, g in iv.groupby("phase", sort=False):
        kind = "loading" if (g["kind"] == KIND.load).all() else "benchmarking"
        fig, ax = plt.subplots(figsize=(8, 3.2))
        for shard, s in g.groupby("shard"):
            s = s.sort_values("elapsed_s")
            ax.plot(s["elapsed_s"], s["ops_per_sec"], linewidth=1, marker=_marker(s), label=f"shard {shard}")
        if g["shard"].nunique() > 1:
            # Shards print on their own clocks: the total adds each shard's
            # rate at the same second since its start.
            total = g.groupby("elapsed_s")["ops_per_sec"].sum().sort_index()
            ax.plot(total.index, total.values, color="black", linewidth=2, marker=_marker(total), label="total")
        target = targets.get(phase)
        if target is not None and pd.notna(target) and target > 0:
            ax.axhline(
                float(target), color="tab:red", linestyle="--", linewidth=1, label=f"target {int(target):,} ops/s"
            )
        ax.set(xlabel="seconds since the shard started", ylabel=unit)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
        made.append(Plot(f"throughput-{_slug(phase)}", f"Throughput over time: {phase} ({kind})", fig))
    return made, ""


def _latency_over_time(frames: Mapping[str, pd.DataFrame], _summary: object) -> tuple[list[Plot], str]:
    """Each shard's p99 (TPC-C: p95) per status line and operation, for the benchmarking phases."""
    io_ = frames["interval_operations"]
    if io_.empty:
        return [], "Latency over time: no shard streamed latency per status line."
    kinds = frames["intervals"].drop_duplicates("phase").set_index("phase")["kind"]
    made = []
    for phase, g in io_.groupby("phase", sort=False):
        if kinds.get(phase) != KIND.run:
            continue
        column, name = ("p99_us", "p99") if g["p99_us"].notna().any() else ("p95_us", "p95")
        g = g.dropna(subset=[column])
        # CLEANUP (closing the client) is hidden as in the summary's tables.
        g = g[(g["count"].fillna(0) > 0) & (g["elapsed_s"] > 0) & ~g["operation"].isin(HIDDEN_OPERATIONS)]
        if g.empty:
            continue
        fig, ax = plt.subplots(figsize=(8, 3.2))
        for (op, shard), s in g.groupby(["operation", "shard"], sort=False):
            s = s.sort_values("elapsed_s")
            ax.plot(s["elapsed_s"], s[column] / 1000.0, linewidth=1, marker=_marker(s), label=f"{op}, shard {shard}")
        ax.set(xlabel="seconds since the shard started", ylabel=f"{name} [ms], log scale", yscale="log")
        ax.legend(fontsize=8)
        made.append(
            Plot(
                f"latency-time-{_slug(phase)}",
                f"Latency over time: {phase} (each shard's {name} per interval, not merged)",
                fig,
            )
        )
    return made, "" if made else "Latency over time: no benchmarking phase streamed latency per status line."


def _resources_over_time(frames: Mapping[str, pd.DataFrame], _summary: object) -> tuple[list[Plot], str]:
    """CPU cores and memory over the whole experiment per component, from the raw samples."""
    m = frames["metrics"]
    if m.empty:
        return [], "CPU and memory over time: the experiment was not monitored (-m, -mc)."
    t0 = m["time"].min()
    made = []
    cpu = m[m["metric"] == "cpu_seconds"].sort_values("time")
    if not cpu.empty:
        fig, ax = plt.subplots(figsize=(8, 3.2))
        for component, g in cpu.groupby("component", sort=False):
            # A counter per series: its rate between samples, summed over the component's series.
            rates = []
            for _, s in g.groupby("labels", sort=False):
                dt = s["time"].diff().dt.total_seconds()
                rate = (s["value"].diff() / dt).where(dt > 0).clip(lower=0)
                rates.append(pd.DataFrame({"t": (s["time"] - t0).dt.total_seconds(), "cores": rate}))
            r = pd.concat(rates).dropna().groupby("t")["cores"].sum().sort_index()
            ax.plot(r.index, r.values, linewidth=1, label=component)
        ax.set(xlabel="seconds since the first sample", ylabel="CPU [cores]")
        ax.legend(fontsize=8)
        made.append(
            Plot("cpu-time", "CPU over time per component (cores, from the samples of the CPU seconds counter)", fig)
        )
    ram = m[m["metric"] == "max_ram"]
    if not ram.empty:
        fig, ax = plt.subplots(figsize=(8, 3.2))
        for component, g in ram.groupby("component", sort=False):
            total = g.groupby("time")["value"].sum().sort_index()
            ax.plot((total.index - t0).total_seconds(), total.values / GIB, linewidth=1, label=component)
        ax.set(xlabel="seconds since the first sample", ylabel="memory (working set) [GiB]")
        ax.legend(fontsize=8)
        made.append(Plot("memory-time", "Memory over time per component (working set)", fig))
    return made, ""


def _latency_per_phase(_frames: Mapping[str, pd.DataFrame], summary: object) -> tuple[list[Plot], str]:
    if isinstance(summary, BenchbaseSummary):
        return _tpcc_latency(summary.benchbase.aggregated)
    lat = summary.execution_latency if isinstance(summary, YcsbSummary) else None
    if lat is None or lat.empty:
        return [], "Latency per phase: no merged latency figures."
    figures = [LATENCY_FIGURES[p] for p in PERCENTILES if LATENCY_FIGURES[p] in lat.columns]
    made = []
    for op, g in lat.groupby("operation", sort=False):
        # With a target, YCSB measures from the intended start too: a row each.
        label = g["phase"] + (" (from " + g["latency from"] + ")" if "latency from" in g.columns else "")
        g = g.set_index(label)[figures].astype("float64") / 1000.0
        # Percentiles side by side on a log axis, each labelled with its value:
        # a p99.9 far out does not hide the p50 and p95 next to it.
        fig, ax = plt.subplots(figsize=(8, 1.2 + 0.6 * len(g)))
        rows = range(len(g))
        for (name, column), marker in zip(zip(PERCENTILES, figures, strict=False), "o^sD", strict=False):
            values = g[column]
            ax.scatter(values, rows, marker=marker, label=name.replace("p999", "p99.9"), zorder=3)
            for y, v in zip(rows, values, strict=True):
                if pd.notna(v) and v > 0:
                    ax.annotate(f"{v:.3g}", (v, y), textcoords="offset points", xytext=(0, 7), ha="center", fontsize=7)
        ax.set_yticks(list(rows), list(g.index))
        ax.set_ylim(len(g) - 0.5, -0.7)
        ax.set(xscale="log", xlabel="latency [ms], log scale", ylabel="phase")
        ax.grid(axis="x", which="both", alpha=0.3)
        ax.legend(fontsize=8, ncols=len(figures))
        made.append(Plot(f"latency-{_slug(op)}", f"Latency percentiles of {op} per phase (merged histograms)", fig))
    return made, ""


def _tpcc_latency(aggregated: pd.DataFrame) -> tuple[list[Plot], str]:
    """TPC-C: the average and p95 latency of every request of each benchmarking phase (Aggregated Parallel)."""
    figures = {bb.AVG: "average", bb.P95: "p95"}
    if aggregated.empty or not set(figures) <= set(aggregated.columns):
        return [], "Latency per phase: no TPC-C benchmarking phase with latency figures."
    # bexhoma's row names leave the repetition out (experiment_run): a later run's bar says it.
    label = [bb.with_run(n, r) for n, r in zip(aggregated["DBMS"], aggregated["experiment_run"], strict=True)]
    g = aggregated.set_index(pd.Index(label))[list(figures)].astype("float64").rename(columns=figures) / 1000.0
    fig, ax = plt.subplots(figsize=(8, 1.5 + 0.6 * len(g)))
    g.plot.barh(ax=ax)
    ax.set(xlabel="latency [ms]", ylabel="phase")
    ax.invert_yaxis()
    return [Plot("latency-tpcc", "Latency of all TPC-C requests per phase (p95 of the merged histograms)", fig)], ""


def _monitoring(frames: Mapping[str, pd.DataFrame], _summary: object) -> tuple[list[Plot], str]:
    ms = frames["metric_summaries"]
    ms = ms[ms["reported"] & ms["metric"].isin(list(MONITORED))]
    if ms.empty:
        return [], "CPU and RAM per component: the experiment was not monitored (-m, -mc)."
    made = []
    for metric, title in MONITORED.items():
        m = ms[ms["metric"] == metric]
        if m.empty:
            continue
        # One figure per phase and component (the reported attempt's); a missing one stays NaN: no bar.
        table = m.set_index(["phase", "component"])["value"].unstack("component").reindex(pd.unique(m["phase"]))
        fig, ax = plt.subplots(figsize=(8, 0.8 + 0.5 * len(table)))
        table.plot.barh(ax=ax)
        ax.set(xlabel=title, ylabel="phase")
        ax.invert_yaxis()
        gaps = m[m["value"].isna()]
        if not gaps.empty:  # missing is shown as missing, never as a zero bar
            ax.set_title(f"missing: {len(gaps)} figure(s), see the Monitoring section", fontsize=9)
        made.append(Plot(f"monitoring-{metric}", f"{title} per component and phase", fig))
    return made, ""


def _grid(_frames: Mapping[str, pd.DataFrame], summary: object) -> tuple[list[Plot], str]:
    if not isinstance(summary, YcsbSummary) or summary.execution_per_phase.empty:
        return [], ""
    per = summary.execution_per_phase
    if per["DBMS"].nunique() < 2:
        return [], ""
    worst = slowest(summary.execution_latency, LATENCY_FIGURES["p99"]) / 1000.0
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 0.8 + 0.45 * len(per)), sharey=True)
    column = WINDOW_THROUGHPUT if WINDOW_THROUGHPUT in per.columns else THROUGHPUT
    left.barh(per["DBMS"], per[column].astype("float64"))
    left.set(xlabel="ops/s (common window)", ylabel="configuration and phase")
    right.barh(per["DBMS"], [worst.get(p, float("nan")) for p in per["phase"]])
    right.set(xlabel="p99 of the slowest operation [ms]", ylabel="configuration and phase")
    left.invert_yaxis()
    return [Plot("grid", "Throughput and p99 per configuration and phase", fig)], ""


def _saturation(_frames: Mapping[str, pd.DataFrame], summary: object) -> tuple[list[Plot], str]:
    """A saturation search's steps: goodput against the offered load, and p99 against goodput."""
    if not isinstance(summary, YcsbSummary) or not summary.saturation:
        return [], ""
    steps = summary.saturation.steps
    steps = steps[steps["role"] == "step"]
    fig, ax = plt.subplots(figsize=(6, 4))
    top = float(max(steps["offered [ops/s]"].max(), steps["goodput [ops/s]"].max()))
    ax.plot([0, top], [0, top], linestyle="--", color="grey", linewidth=1, label="goodput = offered")
    _steps_by_verdict(ax, steps, "offered [ops/s]", "goodput [ops/s]")
    ax.set(xlabel="offered load [ops/s]", ylabel="goodput [ops/s] (steady window)")
    made = [Plot("saturation-throughput", "Saturation: goodput against the offered load, one point per step", fig)]
    p99 = steps.dropna(subset=["p99 [ms]"])
    if p99.empty:
        return made, "Saturation: latency against throughput: no step has a p99 (no histograms)"
    fig, ax = plt.subplots(figsize=(6, 4))
    _steps_by_verdict(ax, p99, "goodput [ops/s]", "p99 [ms]")
    ax.set(xlabel="goodput [ops/s] (steady window)", ylabel="p99 [ms] (merged histograms)", yscale="log")
    return [*made, Plot("saturation-latency", "Saturation: p99 latency against goodput, one point per step", fig)], ""


def _ingest_over_time(frames: Mapping[str, pd.DataFrame], _summary: object) -> tuple[list[Plot], str]:
    """Benchmark tsdb: sent against stored per second, the backlog, and the queries' latency, per phase."""
    readings = frames.get("ingest", pd.DataFrame())
    if readings is None or readings.empty:
        return [], ""
    iv = frames["intervals"]
    ops = frames["interval_operations"]
    shards = frames["shards"]
    made = []
    for (phase, attempt), r in readings.sort_values("at").groupby(["phase", "attempt"], sort=False):
        mine = shards[(shards["phase"] == phase) & (shards["attempt"] == attempt)]
        t0 = mine["first_op_at"].min()
        if pd.isna(t0) or len(r) < 2:
            continue
        secs = (r["at"] - t0).dt.total_seconds()
        stored = r["total"].diff() / r["at"].diff().dt.total_seconds()
        lines = iv[(iv["phase"] == phase) & (iv["attempt"] == attempt)].copy()
        lines["second"] = ((lines["at"] - t0).dt.total_seconds()).round()
        sent = lines.groupby("second")["ops_per_sec"].sum().sort_index()
        # The backlog at each reading: what the generators had sent by then
        # (each shard's cumulative points, linear between its lines) minus
        # what the database had counted since its baseline.
        cum = pd.Series(0.0, index=r.index)
        for _, sh in lines.groupby("shard"):
            sh = sh.sort_values("at")
            x = (sh["at"] - t0).dt.total_seconds().to_numpy()
            cum += pd.Series(
                np.interp(
                    secs.to_numpy(),
                    np.concatenate(([0.0], x)),
                    np.concatenate(([0.0], sh["operations"].to_numpy(dtype=float))),
                ),
                index=r.index,
            )
        backlog = cum - (r["total"] - r["total"].iloc[0])
        fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 4.8), sharex=True)
        top.plot(sent.index, sent.values, linewidth=1.5, marker=_marker(sent), label="sent (generators)")
        top.plot(secs, stored, linewidth=1, marker=_marker(r), label="stored (the database's count)")
        top.set(xlabel="seconds since the generators started", ylabel="points/s")
        top.set_ylim(bottom=0)
        top.legend(fontsize=8)
        bottom.plot(secs, backlog, color="tab:red", linewidth=1, marker=_marker(r))
        ended = r.loc[r["after_end"].astype(bool), "at"]
        if not ended.empty:
            bottom.axvline(float((ended.min() - t0).total_seconds()), color="grey", linestyle=":", linewidth=1)
        bottom.set(xlabel="seconds since the generators started (dotted: they stopped)", ylabel="backlog [points]")
        made.append(
            Plot(
                f"ingest-{_slug(phase)}", f"Ingest over time: {phase}, sent and stored per second, and the backlog", fig
            )
        )
        q = ops[(ops["phase"] == phase) & (ops["attempt"] == attempt) & (ops["operation"] == "QUERY")].dropna(
            subset=["avg_us"]
        )
        if not q.empty:
            x = (q["at"] - t0).dt.total_seconds()
            fig, ax = plt.subplots(figsize=(8, 3))
            ax.plot(x, q["avg_us"] / 1000, marker=_marker(q), linewidth=1, label="mean of the second")
            ax.plot(x, q["max_us"] / 1000, marker=_marker(q), linewidth=1, label="slowest of the second")
            ax.set(xlabel="seconds since the generators started", ylabel="query latency [ms], log scale", yscale="log")
            ax.legend(fontsize=8)
            made.append(
                Plot(f"queries-{_slug(phase)}", f"Queries under load: {phase}, a range query every second", fig)
            )
    return made, ""


# A saturation step's colour by its verdict.
_VERDICT_COLOUR = {"pass": "tab:green", "fail": "tab:red", "driver-limited": "tab:orange"}


def _steps_by_verdict(ax: Axes, steps: pd.DataFrame, x: str, y: str) -> None:
    """One point per step, coloured by its verdict, with the legend."""
    for verdict, g in steps.groupby("verdict"):
        ax.scatter(
            g[x].astype("float64"),
            g[y].astype("float64"),
            color=_VERDICT_COLOUR.get(str(verdict), "black"),
            label=verdict,
            zorder=3,
        )
    ax.legend(loc="upper left", fontsize="small")


def svg(fig: Figure) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    return text[text.index("<svg") :]  # the XML prolog and doctype do not belong inside HTML


def write_png(made: list[Plot], directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for p in made:
        path = directory / f"{p.slug}.png"
        p.figure.savefig(path, format="png", dpi=150, bbox_inches="tight")
        paths.append(path)
    return paths


def page(code: str, markdown: str, made: list[Plot], missing: list[str]) -> str:
    """The HTML page: plots first, then the summary."""
    figures = "\n".join(
        f'<figure class="plot" id="{p.slug}"><figcaption>{html.escape(p.title)}</figcaption>{svg(p.figure)}</figure>'
        for p in made
    )
    notes = "".join(f"<li>{html.escape(m)}</li>" for m in missing)
    body = f"""<h2>Plots</h2>
{figures}
{f"<ul class='missing'>{notes}</ul>" if notes else ""}
<h2>Summary</h2>
{markdown_html(markdown)}"""
    return html_page(f"benchq experiment {code}", body)


def html_page(title: str, body: str) -> str:
    """A whole page around body, with the report's style."""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{html.escape(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.85em; display: block; max-width: 100%; overflow-x: auto; }}
th, td {{ border: 1px solid #ccc; padding: 2px 6px; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
figure.plot {{ margin: 1em 0; }} figure.plot svg {{ max-width: 100%; height: auto; }}
figcaption {{ font-weight: bold; }}
</style></head>
<body>
<h1>{html.escape(title)}</h1>
{body}
</body></html>
"""


def markdown_html(text: str) -> str:
    """The summary's Markdown (headings, pipe tables, bullets, lines) as HTML."""
    return "\n".join(_blocks(text.splitlines()))


_NUMBER = re.compile(r"^-?[\d,]*\.?\d+(e[+-]?\d+)?$")


def _blocks(lines: list[str]) -> Iterator[str]:
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        if line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append([c.strip() for c in lines[i].strip().strip("|").split("|")])
                i += 1
            yield _table(rows)
            continue
        i += 1
        if not line:
            continue
        if m := re.match(r"^(#{1,6}) (.*)", line):
            level = min(len(m.group(1)) + 1, 6)  # the page's own title is the h1
            yield f"<h{level}>{html.escape(m.group(2))}</h{level}>"
        elif line.lstrip().startswith("* "):
            indent = len(line) - len(line.lstrip())
            yield f'<p style="margin-left: {indent}em">&bull; {html.escape(line.lstrip()[2:])}</p>'
        else:
            yield f"<p>{html.escape(line)}</p>"


def _table(rows: list[list[str]]) -> str:
    head, body = rows[0], [r for r in rows[1:] if not all(set(c) <= set(":-") for c in r)]
    th = "".join(f"<th>{html.escape(c)}</th>" for c in head)
    trs = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{html.escape(c)}</td>' if _NUMBER.match(c) else f"<td>{html.escape(c)}</td>" for c in r
        )
        + "</tr>"
        for r in body
    )
    return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", s).strip("-").lower()


def close(made: list[Plot]) -> None:
    for p in made:
        plt.close(p.figure)
