"""Print a Summary as bexhoma-style markdown, or as JSON for machines.

All the markdown of the reporter is here. Numbers are rounded here and
only here: tables use tabulate's floatfmt ".2f" like bexhoma, integers
stay integers, missing values print as NaN.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from typing import Any

import pandas as pd

from ..contracts import BENCHMARK, EXPERIMENT
from . import benchbase as bb
from .build import SKIPPED_NOTE, BenchbaseSummary, Summary, YcsbSummary
from .checks import Test
from .monitoring import CPU_NOTE, Monitoring, Section
from .repetitions import NOTE as REPETITIONS_NOTE
from .saturation import NOTE as SATURATION_NOTE
from .saturation import Saturation
from .tsdb import Ingest
from .workload import Workload

NO_DATA = "(no data)"


def table(df: pd.DataFrame) -> str:
    """A DataFrame as a markdown table, or NO_DATA when it has no rows."""
    if df.empty:
        return NO_DATA
    cells = df.astype(object).where(df.notna(), None)
    return cells.to_markdown(index=False, floatfmt=".2f", missingval="NaN")


def number(x: Any) -> str:
    """1.0 → '1', 0.1 → '0.1': settings printed as the user typed them."""
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x)


def numbers(xs: list[Any]) -> str:
    return "[" + ", ".join(number(x) for x in xs) + "]"


def alternatives(xs: list[Any]) -> str:
    words = [number(x) for x in xs]
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


# The Status line's reason at most: a driver's stack trace is kept whole in Failures and re-runs and
# in the JSON summary, not on the Status line too.
REASON_MAX = 240


def short_reason(reason: str) -> str:
    """reason's first line, at most REASON_MAX characters, marked when shortened."""
    whole = reason.strip()
    first = whole.splitlines()[0] if whole else whole
    if first == whole and len(whole) <= REASON_MAX:
        return whole
    return first[:REASON_MAX].rstrip() + " … (shortened: in full under Failures and re-runs and in the JSON summary)"


def workload_lines(s: Summary) -> list[str]:
    w = s.workload
    benchbase = isinstance(s, BenchbaseSummary)
    # No end yet: the Duration line says the experiment is still running.
    duration = EXPERIMENT.running if w.duration_s is None else f"{round(w.duration_s)}s"  # rounded, as benchq list
    if w.estimated_s is not None:
        duration += f" (estimated {round(w.estimated_s)}s)"
    status = w.status if not w.reason else f"{w.status} ({short_reason(w.reason)})"
    runs = "once" if w.repetitions == 1 else f"{w.repetitions} times"
    sf = "?" if w.sf is None else number(w.sf)
    tsdb = w.benchmark == BENCHMARK.tsdb
    if benchbase:
        title, lines = f"Benchbase Workload {w.workload} SF={sf}", _benchbase_workload(w)
    elif tsdb:
        title, lines = "TSDB ingest (haggar's model)", _tsdb_workload(w)
    else:
        title, lines = f"{w.benchmark.upper()} SF={sf}", _ycsb_workload(w)
    return [
        "### Workload",
        title,
        f"* Type: {w.benchmark}",
        f"* Duration: {duration}",
        f"* Code: {w.code}",
        f"* Status: {status}",
        *lines,
        f"  * Experiment uses benchq version {w.version}.",
        *(f"  * {line}" for line in w.monitoring_lines),
        f"  * Experiment is limited to DBMS {w.dbms!r}.",
        f"  * Import is handled by {alternatives(w.loading_pods)} processes (pods).",
        *(f"  * {line}" for line in w.placement_lines),
        f"  * Loading is tested with {numbers(w.loading_threads)} threads, split into {numbers(w.loading_pods)} pods.",
        *(_benchmarking_lines(w) if w.benchmarking else ["  * Benchmarking: none planned (action load)."]),
        f"  * Experiment is run {runs}.",
        *(f"  * {note[0].upper()}{note[1:]}." if not note.endswith(".") else f"  * {note}" for note in w.notes),
    ]


def _benchmarking_lines(w: Workload) -> list[str]:
    return [
        f"  * Benchmarking is tested with {numbers(w.benchmarking_threads)} threads, "
        f"split into {numbers(w.benchmarking_pods)} pods.",
        *([f"  * {w.pooling_line}"] if w.pooling_line else []),
        f"  * Benchmarking is run as {numbers(w.clients)} times the number of benchmarking pods.",
    ]


def _ycsb_workload(w: Workload) -> list[str]:
    return [
        "* YCSB driver runs the experiment.",
        "* This experiment compares run time and resource consumption of YCSB queries.",
        f"  * Workload is '{w.workload.upper()}'.",
        f"  * Number of rows to insert is {w.recordcount}.",
        f"  * Ordering of inserts is {w.insert_order}.",
        f"  * Number of operations is {w.operationcount}.",
        f"  * Batch size is '{'' if w.batch_size is None else w.batch_size}'.",
        f"  * Target is based on multiples of '{w.target_base}'.",
        f"  * Factors for loading are {numbers(w.loading_factors)}.",
        f"  * Factors for benchmarking are {numbers(w.benchmarking_factors)}.",
    ]


def _tsdb_workload(w: Workload) -> list[str]:
    """What the generators wrote (the plan's tsdb settings); SF, rows and operations do not apply."""
    t = w.tsdb
    metrics, flush_ms = t.get("metrics"), t.get("flush_interval_ms")
    per_agent = f"{number(metrics * 1000 / flush_ms)} points/s" if metrics and flush_ms else "? points/s"
    d = w.duration_bench_s
    runs_for = "until its points are sent" if d is None else f"{number(d)} seconds"
    return [
        "* benchq's metrics generators (haggar's model) write into a time-series database.",
        "* This experiment measures the points per second the database ingests and stores, "
        "and its query latency under that load.",
        f"  * Workload is 'haggar': each agent writes {metrics} series, a point of each every {flush_ms} ms "
        f"({per_agent} an agent), jitter {t.get('jitter_ms')} ms, over {t.get('protocol')}; "
        f"series are named {t.get('prefix')}<generator>.agent<i>.metric<j>.",
        f"  * Agents per generator are {numbers(w.benchmarking_threads)}, generators (pods) {numbers(w.benchmarking_pods)}; "
        "loading writes one point of each series.",
        f"  * Benchmarking runs for {runs_for}.",
    ]


def _benchbase_workload(w: Workload) -> list[str]:
    """bexhoma's Benchbase lines; the engine is ours (internal/tpcc), not Benchbase's jar."""
    sf = "?" if w.sf is None else number(w.sf)
    d = w.duration_bench_s
    runs_for = "? minutes" if d is None else f"{number(d / 60)} minutes" if d % 60 == 0 else f"{number(d)} seconds"
    reconnect = " There is a reconnect for each transaction." if w.new_connection else ""
    return [
        "* Benchbase runs a TPC-C experiment (benchq's TPC-C engine on go-tpc, Benchbase's transaction mix and outcomes).",
        "* This experiment compares run time and resource consumption of Benchbase queries in different DBMS.",
        "  * Benchbase data is generated and loaded using "
        + ("several threads." if max(w.loading_threads or [0]) > 1 else "one thread."),
        f"  * Benchmark is '{w.workload}'. Scaling factor is {sf}. Target is based on multiples of "
        f"'{w.target_base}'. Factors for benchmarking are {numbers(w.benchmarking_factors)}.{reconnect} "
        f"Benchmarking runs for {runs_for}.",
    ]


def _info_value(v: Any) -> str:
    return json.dumps(v, separators=(",", ":")) if isinstance(v, (dict, list)) else str(v)


def connection_lines(s: Summary) -> list[str]:
    lines = ["### Connections"]
    if not s.connections:
        return [*lines, NO_DATA]
    for c in s.connections:
        lines.append(f"* {c.name} {c.uses()}")
        lines += [f"  * {k}:{_info_value(v)}" for k, v in c.info.items()]
        for i, w in enumerate(c.workers):
            lines.append(f"  * worker {w['worker'] if w['worker'] is not None else i}")
            lines += [f"    * {k}:{_info_value(v)}" for k, v in w.items() if k != "worker"]
        if c.failure:
            lines.append(f"  * failure:{c.failure}")
        lines += ["  * eval_parameters", f"    * code:{s.code}"]
    return lines


def _pods(runs: dict[str, list[list[int]]]) -> list[str]:
    return [f"* DBMS {base} - Pods {pods}" for base, pods in runs.items()] or [NO_DATA]


def workflow_lines(s: Summary) -> list[str]:
    lines = [
        "### Workflow",
        "",
        "#### Actual",
        *_pods(s.workflow.actual),
        "",
        "#### Planned",
        *_pods(s.workflow.planned),
    ]
    if s.workflow.skipped:
        lines += ["", "#### Skipped", *[f"* {n}" for n in s.workflow.skipped]]
    if s.workflow.notes:
        lines += ["", "#### Failures and re-runs", *[f"* {n}" for n in s.workflow.notes]]
    return lines


def _noted_table(s: YcsbSummary, name: str) -> list[str]:
    """A table of the summary with the notes that belong under it."""
    df = getattr(s, name)
    if name == "execution_per_phase":
        # The DBMS column names each row by its phase, as bexhoma's Execution table does; the frame's
        # "phase" column (what the JSON output and the other tables join on) would repeat it.
        df = df.drop(columns="phase")
    notes = s.notes.get(name, [])
    if df.empty:
        # A note can say why there is none (a loading phase skipped: its database was on a volume).
        return [NO_DATA, *[f"* {n}" for n in notes if n.startswith(SKIPPED_NOTE)]]
    return [table(df), *([""] if notes else []), *[f"* {n}" for n in notes]]


def _monitoring_table(sec: Section, heading: str) -> list[str]:
    """One monitoring table; each missing value (NaN, never 0) is named with its reason under it."""
    return [
        heading + " " + sec.title,
        "",
        table(sec.table),
        *([""] if sec.missing else []),
        *[f"* {n}" for n in sec.missing],
    ]


def monitoring_lines(m: Monitoring) -> list[str]:
    """bexhoma's Monitoring and Application Metrics sections; only the tables that have rows."""
    lines: list[str] = []
    if m.system:
        lines += ["### Monitoring"]
        for sec in m.system:
            lines += ["", *_monitoring_table(sec, "###")]
        lines += ["", f"* {CPU_NOTE}"]
    if m.application:
        lines += [*([""] if lines else []), "### Application Metrics"]
        for sec in m.application:
            lines += ["", *_monitoring_table(sec, "####")]
    return lines


def test_lines(tests: list[Test]) -> list[str]:
    return ["### Tests", *[f"* TEST {'passed' if t.passed else 'failed'}: {t.text}" for t in tests]]


def markdown(s: YcsbSummary | BenchbaseSummary, program: str = "reporter") -> str:
    """The whole summary, bexhoma's section order, ending with how to see it again (with ``program``)."""
    if isinstance(s, BenchbaseSummary):
        # bexhoma puts Workflow between a Benchbase experiment's Execution and Loading.
        parts = [
            ["## Show Summary"],
            workload_lines(s),
            connection_lines(s),
            benchbase_execution_lines(s.benchbase),
            workflow_lines(s),
            benchbase_loading_lines(s.benchbase),
        ]
    else:
        parts = _ycsb_parts(s)
    if s.monitoring:
        parts.append(monitoring_lines(s.monitoring))
    if s.show_tests:
        parts.append(test_lines(s.tests))
    parts.append([f"To see the summary again run: {program} summary -e {s.code}"])
    return "\n\n".join("\n".join(p) for p in parts) + "\n"


def _ycsb_parts(s: YcsbSummary) -> list[list[str]]:
    return [
        ["## Show Summary"],
        workload_lines(s),
        connection_lines(s),
        workflow_lines(s),
        [
            "### Loading",
            "",
            "#### Per Connection",
            "",
            *_noted_table(s, "loading_per_connection"),
            "",
            "#### Per Run",
            "",
            *_noted_table(s, "loading_per_run"),
            "",
            "#### Latency per Run",
            "",
            *_noted_table(s, "loading_latency"),
        ],
        [
            "### Execution",
            "",
            "#### Per Connection",
            "",
            table(s.execution_per_connection),
            "",
            "#### Per Phase",
            "",
            *_noted_table(s, "execution_per_phase"),
            "",
            "#### Latency per Phase",
            "",
            *_noted_table(s, "execution_latency"),
        ],
        *([saturation_lines(s.saturation)] if s.saturation else []),
        *([ingest_lines(s.ingest)] if s.ingest else []),
        *(
            [["### Across Repetitions", "", table(s.repetitions), "", f"* {REPETITIONS_NOTE}"]]
            if not s.repetitions.empty
            else []
        ),
    ]


def ingest_lines(ingest: Ingest) -> list[str]:
    """The Ingest section of benchmark tsdb: sent against what the database stored."""
    lines = ["### Ingest", "", table(ingest.table), ""]
    if not ingest.scaling.empty:
        lines += ["#### Scaling", "", table(ingest.scaling), ""]
    return [*lines, *[f"* {n}" for n in ingest.notes]]


def saturation_lines(sat: Saturation) -> list[str]:
    """The Saturation section: the knee first, then every step, then the hold."""
    lines = [
        "### Saturation",
        "",
        *[f"* {k}" for k in sat.knees],
        *[f"* {a}" for a in sat.agreement],
        *[f"* {n}" for n in sat.notes],
    ]
    if sat.holds:
        lines += ["", "#### Hold", "", *[f"* {h}" for h in sat.holds]]
    return [*lines, "", "#### Steps", "", table(sat.steps), "", SATURATION_NOTE]


def benchbase_execution_lines(t: bb.Tables) -> list[str]:
    """A Benchbase experiment's Execution section: Per Pod, Aggregated Parallel and its notes."""
    notes = [*t.notes]
    if t.skew_ms:
        skews = ", ".join(f"{phase} {ms:.1f} ms" for phase, ms in t.skew_ms.items())
        notes.append(f"Start skew (latest - earliest first request of a phase's pods): {skews}.")
    return [
        "### Execution",
        "",
        "#### Per Pod",
        "",
        table(t.per_pod),
        "",
        "#### Aggregated Parallel",
        "",
        table(t.aggregated),
        *([""] if notes else []),
        *[f"* {n}" for n in notes],
    ]


def benchbase_loading_lines(t: bb.Tables) -> list[str]:
    return ["### Loading", "", table(t.loading)]


def benchbase_markdown(t: bb.Tables) -> str:
    """A Benchbase experiment's Execution and Loading sections alone."""
    return "\n\n".join("\n".join(p) for p in (benchbase_execution_lines(t), benchbase_loading_lines(t))) + "\n"


def tests_markdown(s: Summary) -> str:
    return "\n".join(test_lines(s.tests)) + "\n"


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """DataFrame rows as JSON-ready dicts; NaN and NA become null."""
    return [{k: _plain(v) for k, v in row.items()} for row in df.to_dict("records")]


def _plain(v: Any) -> Any:
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, pd.Timestamp):
        return v.isoformat()
    if hasattr(v, "item"):  # numpy scalars
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def json_document(s: YcsbSummary | BenchbaseSummary) -> str:
    """The summary's data unrounded, with the same column names as the markdown tables.

    A Benchbase summary has the YCSB keys too, empty, and its own under
    "benchbase": every document has the same layout.
    """
    ycsb = s if isinstance(s, YcsbSummary) else None

    def rows(name: str) -> list[dict[str, Any]]:
        return records(getattr(ycsb, name)) if ycsb is not None else []

    doc = {
        "code": s.code,
        "workload": asdict(s.workload),
        "connections": [asdict(c) for c in s.connections],
        "workflow": asdict(s.workflow),
        "loading": {
            "per_connection": rows("loading_per_connection"),
            "per_run": rows("loading_per_run"),
            "latency": rows("loading_latency"),
        },
        "execution": {
            "per_connection": rows("execution_per_connection"),
            "per_phase": rows("execution_per_phase"),
            "latency": rows("execution_latency"),
        },
        "repetitions": rows("repetitions"),
        "notes": ycsb.notes if ycsb is not None else {},
        "saturation": {
            "knees": ycsb.saturation.knees,
            "holds": ycsb.saturation.holds,
            "agreement": ycsb.saturation.agreement,
            "steps": records(ycsb.saturation.steps),
        }
        if ycsb is not None and ycsb.saturation
        else {},
        **(
            {"ingest": {"phases": records(ycsb.ingest.table), "notes": ycsb.ingest.notes}}
            if ycsb is not None and ycsb.ingest
            else {}
        ),
        **({"monitoring": monitoring_document(s.monitoring)} if s.monitoring else {}),
        "tests": [t._asdict() for t in s.tests],
        **(
            {
                "benchbase": {
                    "per_pod": records(s.benchbase.per_pod),
                    "aggregated_parallel": records(s.benchbase.aggregated),
                    "loading": records(s.benchbase.loading),
                    "notes": s.benchbase.notes,
                }
            }
            if isinstance(s, BenchbaseSummary)
            else {}
        ),
        "tests_passed": s.tests_passed,
    }
    return json.dumps(doc, indent=2, default=_plain) + "\n"


def monitoring_document(m: Monitoring) -> dict[str, Any]:
    """The monitoring tables unrounded; a missing value is null with its reason in "missing"."""

    def sections(secs: list[Section]) -> list[dict[str, Any]]:
        return [
            {
                "title": sec.title,
                "kind": sec.kind,
                "component": sec.component,
                "rows": records(sec.table),
                "missing": sec.missing,
            }
            for sec in secs
        ]

    return {"system": sections(m.system), "application": sections(m.application), "note": CPU_NOTE}


def experiments_markdown(df: pd.DataFrame) -> str:
    """The experiments list (code, status, planned_at, duration_s, configurations, dbms)."""
    if df.empty:
        return NO_DATA + "\n"
    shown = df.assign(
        planned_at=df["planned_at"].map(
            lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ") if t is not None and not pd.isna(t) else None
        )
    )
    return table(shown) + "\n"
