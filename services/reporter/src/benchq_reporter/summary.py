"""Turn one experiment's rows into the sections of bexhoma's summary.

Pure: ExperimentData in, Summary out. No database, no printing; render.py
turns a Summary into markdown or JSON. Column names are bexhoma's, so
notebooks written against bexhoma's DataFrames keep working.

Rules that keep every number traceable to a row:
  * a (phase, shard) with several attempts is counted once: the highest
    attempt with status ok, else the highest attempt (then it counts as an
    exception and its missing figures stay NaN);
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

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from . import benchbase as bb
from . import latency
from .model import ExperimentData

THROUGHPUT = "[OVERALL].Throughput(ops/sec)"
RUNTIME = "[OVERALL].RunTime(ms)"
SF_PER_HOUR = "Throughput [SF/h]"
WINDOW_THROUGHPUT = "Throughput common window(ops/sec)"
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
    f"{START_SKEW} = latest - earliest start of a shard's first operation."
)
INTENDED_NOTE = (
    "Latency from 'intended start' (YCSB's Intended-<OP>, with a target rate) is measured from "
    "when the operation was due, so it includes the queueing that coordinated omission hides."
)
# YCSB reports CLEANUP (closing the client) like an operation; bexhoma hides it.
HIDDEN_OPERATIONS = {"CLEANUP", "Intended-CLEANUP"}
INTENDED = "Intended-"
# Pseudo-operations of measurement.trackjvm=true: samples, not operations.
JVM_SAMPLES = {"THREAD_COUNT", "USED_MEM_MB", "SYS_LOAD_AVG", "GCS", "GCS_TIME"}
# Latency statistic (latency.stats) → YCSB's measurement name, in YCSB's order.
LATENCY_FIGURES = {
    "count": "Operations", "mean": "AverageLatency(us)", "p50": "50thPercentileLatency(us)",
    "p95": "95thPercentileLatency(us)", "p99": "99thPercentileLatency(us)",
    "p999": "99.9PercentileLatency(us)", "max": "MaxLatency(us)",
}
# The same statistic of one shard, as stored (shard_operations).
SHARD_FIGURES = {"count": "count", "mean": "avg_us", "p50": "p50_us", "p95": "p95_us",
                 "p99": "p99_us", "p999": "p999_us", "max": "max_us"}
# Info keys in the order bexhoma prints them; the rest follow sorted. A fixed
# order matters because jsonb does not keep the order of the keys it stores.
INFO_ORDER = ["RAM", "CPU", "Cores", "host", "node", "disk", "datadisk", "cpu_list"]


def ok_column(operation: str) -> str:
    return f"[{operation}].Return=OK"


def p99_column(operation: str) -> str:
    return f"[{operation}].99thPercentileLatency(us)"


def counts_operations(operation: str) -> bool:
    """Whether an operation block counts executed operations (as YCSB's throughput does)."""
    return operation != "CLEANUP" and not operation.startswith(INTENDED) and operation not in JVM_SAMPLES


@dataclass(frozen=True)
class Workload:
    """The experiment's settings, as the Workload section states them."""

    benchmark: str
    sf: float | None
    duration_s: float | None  # None while the experiment runs
    code: str
    status: str
    reason: str | None
    workload: str
    recordcount: int | None
    operationcount: int | None
    insert_order: str
    batch_size: int | None
    target_base: int | None
    loading_factors: list[float]
    benchmarking_factors: list[float]
    version: str
    dbms: list[str]
    loading_pods: list[int]
    loading_threads: list[int]
    benchmarking_pods: list[int]
    benchmarking_threads: list[int]
    clients: list[int]
    repetitions: int
    duration_bench_s: float | None = None  # Benchbase: each benchmarking phase's duration
    new_connection: bool = False  # Benchbase -xconn


@dataclass(frozen=True)
class Connection:
    """One SUT configuration as the Connections section lists it."""

    name: str
    dbms: str
    version: str | None
    info: dict[str, Any]  # in print order, version excluded
    failure: str | None


@dataclass(frozen=True)
class Workflow:
    """Pods of the benchmarking phases per configuration base and run.

    ``actual`` and ``planned`` map a configuration base to one list per
    experiment run (runs in ascending order); ``notes`` explain failures
    and re-runs.
    """

    actual: dict[str, list[list[int]]]
    planned: dict[str, list[list[int]]]
    notes: list[str]


@dataclass(frozen=True)
class Test:
    """One result test; ``text`` is already worded for its outcome, as in bexhoma."""

    id: str
    passed: bool
    text: str


@dataclass(frozen=True, eq=False)  # DataFrames do not compare to a bool
class Summary:
    code: str
    workload: Workload
    connections: list[Connection]
    workflow: Workflow
    loading_per_connection: pd.DataFrame
    loading_per_run: pd.DataFrame
    execution_per_connection: pd.DataFrame
    execution_per_phase: pd.DataFrame
    loading_latency: pd.DataFrame
    execution_latency: pd.DataFrame
    tests: list[Test]
    # Notes printed under a table, keyed by its field name.
    notes: dict[str, list[str]] = field(default_factory=dict)
    show_tests: bool = field(default=True)
    # A Benchbase (TPC-C) experiment's Execution and Loading, in bexhoma's
    # layout; its YCSB-shaped tables above are then empty.
    benchbase: bb.BenchbaseSummary | None = None

    @property
    def tests_passed(self) -> bool:
        return all(t.passed for t in self.tests)


def summarize(data: ExperimentData) -> Summary:
    """Build every section of the summary of one experiment."""
    plan = data.plan
    settings = plan.get("settings") or {}
    planned = planned_phases(plan)
    if settings.get("benchmark") == "benchbase":
        return summarize_benchbase(data, planned, settings)
    sf = _float(settings.get("sf"))
    loading = shard_table(data, planned, "load")
    execution = shard_table(data, planned, "run")
    loading_lat = phase_latency(kind_operations(data, "load"), planned)
    execution_lat = phase_latency(kind_operations(data, "run"), planned)
    loading_win = phase_windows(data, "load")
    execution_win = phase_windows(data, "run")
    loading_conn = loading_per_connection(loading, sf)
    execution_conn = execution_per_connection(execution)
    workflow = build_workflow(data, planned)
    return Summary(
        code=data.code,
        workload=build_workload(data),
        connections=build_connections(data),
        workflow=workflow,
        loading_per_connection=loading_conn,
        loading_per_run=loading_per_run(loading, sf, loading_lat, loading_win),
        execution_per_connection=execution_conn,
        execution_per_phase=execution_per_phase(execution, execution_lat, execution_win),
        loading_latency=latency_table(loading_lat, "DBMS", "configuration"),
        execution_latency=latency_table(execution_lat, "phase", "phase"),
        tests=build_tests(loading_conn, execution_conn, execution, workflow),
        notes={
            "loading_per_run": aggregate_notes(loading_lat),
            "execution_per_phase": aggregate_notes(execution_lat),
            "loading_latency": latency_notes(loading_lat),
            "execution_latency": latency_notes(execution_lat),
        },
        show_tests=bool(settings.get("test_results", True)),
    )


def summarize_benchbase(data: ExperimentData, planned: pd.DataFrame, settings: dict[str, Any]) -> Summary:
    """A Benchbase (TPC-C) experiment: bexhoma's Per Pod, Aggregated Parallel and
    Loading tables (benchbase.py), its two result tests."""
    workflow = build_workflow(data, planned)
    s = bb.summarize(bb.shard_rows(data))
    same = _same_workflow(workflow)
    tests = [Test(id, passed, text) for id, passed, text in bb.tests(s)]
    tests.append(Test("workflow", same, "Workflow as planned" if same else "Workflow not as planned"))
    empty = pd.DataFrame()
    return Summary(
        code=data.code, workload=build_workload(data), connections=build_connections(data), workflow=workflow,
        loading_per_connection=empty, loading_per_run=empty, execution_per_connection=empty,
        execution_per_phase=empty, loading_latency=empty, execution_latency=empty,
        tests=tests, show_tests=bool(settings.get("test_results", True)), benchbase=s,
    )


# --- Workload and Connections ---------------------------------------------


def build_workload(data: ExperimentData) -> Workload:
    exp = data.experiment
    plan = data.plan
    s = plan.get("settings") or {}
    begin = exp.get("started_at") or exp.get("planned_at")
    end = exp.get("ended_at")
    duration = (end - begin).total_seconds() if end is not None and begin is not None else None
    return Workload(
        benchmark=s.get("benchmark") or "ycsb",
        sf=_float(s.get("sf")),
        duration_s=duration,
        code=data.code,
        status=exp.get("status") or "unknown",
        reason=exp.get("reason"),
        workload=str(s.get("workload") or ""),
        recordcount=plan.get("recordcount"),
        operationcount=plan.get("operationcount"),
        insert_order=str(s.get("insert_order") or ""),
        batch_size=s.get("batch_size"),
        target_base=s.get("target_base"),
        loading_factors=list(s.get("loading_factors") or []),
        benchmarking_factors=list(s.get("benchmarking_factors") or []),
        # The plan carries no version yet; "dev" says so rather than guessing.
        version=str(plan.get("version") or s.get("version") or "dev"),
        dbms=list(s.get("dbms") or []),
        loading_pods=list(s.get("loading_pods") or []),
        loading_threads=list(s.get("loading_threads") or []),
        benchmarking_pods=list(s.get("benchmarking_pods") or []),
        benchmarking_threads=list(s.get("benchmarking_threads") or []),
        clients=list(s.get("clients") or []),
        repetitions=int(s.get("repetitions") or 1),
        duration_bench_s=_float(s.get("duration_s")),
        new_connection=bool(s.get("new_connection")),
    )


def build_connections(data: ExperimentData) -> list[Connection]:
    order = {c["name"]: i for i, c in enumerate(data.plan.get("configurations") or [])}
    rows = data.configurations.assign(
        _order=data.configurations["name"].map(lambda n: order.get(n, len(order)))
    ).sort_values(["_order", "name"])
    out = []
    for row in rows.itertuples(index=False):
        info = dict(row.info or {})
        version = info.pop("version", None)
        keys = [k for k in INFO_ORDER if k in info] + sorted(k for k in info if k not in INFO_ORDER)
        out.append(Connection(
            name=row.name,
            dbms=row.dbms,
            version=None if version is None else str(version),
            info={k: info[k] for k in keys},
            failure=row.failure,
        ))
    return out


# --- The plan --------------------------------------------------------------

PLANNED_COLUMNS = ["phase", "configuration", "base", "experiment_run", "kind",
                   "client", "pods", "order"]


def planned_phases(plan: dict[str, Any]) -> pd.DataFrame:
    """One row per planned phase, in plan order (the order bexhoma runs them)."""
    rows = []
    for cfg in plan.get("configurations") or []:
        for ph in cfg.get("phases") or []:
            rows.append({
                "phase": ph["name"], "configuration": cfg["name"], "base": cfg.get("base", cfg["name"]),
                "experiment_run": cfg.get("experiment_run", 1), "kind": ph.get("kind"),
                "client": ph.get("client", 0), "pods": ph.get("pods"), "order": len(rows),
            })
    df = pd.DataFrame(rows, columns=PLANNED_COLUMNS)
    return df.astype({"experiment_run": "Int64", "client": "Int64", "pods": "Int64", "order": "Int64"})


# --- Shard results ----------------------------------------------------------


def select_attempts(shards: pd.DataFrame) -> pd.DataFrame:
    """The one reported attempt of each (phase, shard): the highest ok one, else the highest."""
    ranked = shards.assign(_ok=shards["status"].eq("ok")).sort_values(["phase", "shard", "_ok", "attempt"])
    return ranked.groupby(["phase", "shard"], sort=False).tail(1).drop(columns="_ok")


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
    keys = ["phase", "shard", "attempt"]
    if ops.empty:
        return pd.DataFrame(columns=keys + ["exceptions"])
    ops = ops.assign(
        ok=ops["return_codes"].map(_successes),
        exc=ops["return_codes"].map(_exceptions),
    )
    exceptions = ops.groupby(keys)["exc"].sum().rename("exceptions")
    # Intended-<OP> latencies have no return codes and belong to the latency tables.
    shown = ops[~ops["operation"].isin(HIDDEN_OPERATIONS) & ~ops["operation"].str.startswith(INTENDED)]
    ok = shown.pivot_table(index=keys, columns="operation", values="ok", aggfunc="sum").fillna(0)
    # dropna=False: an operation whose p99 is NULL everywhere still gets its (NaN) column.
    p99 = shown.pivot_table(index=keys, columns="operation", values="p99_us", aggfunc="max", dropna=False)
    wide = pd.DataFrame(index=exceptions.index)
    # YCSB reports no return codes for READ-MODIFY-WRITE (its read and its
    # update have theirs): unknown, not 0. An <OP>-FAILED has none either,
    # and none of it was OK.
    uncounted = {op for op in set(shown["operation"]) - set(shown.loc[shown["return_codes"].map(bool), "operation"])
                 if not op.endswith("-FAILED")}
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
    keys = ["phase", "shard", "attempt"]
    chosen = select_attempts(data.shards)
    chosen = chosen[chosen["kind"] == kind]
    ops = data.operations.merge(chosen[keys], on=keys)
    df = chosen.merge(operation_columns(ops), on=keys, how="left")
    df = df.merge(planned.drop(columns=["configuration", "kind"]), on="phase", how="left")
    df["exceptions"] = df["exceptions"].astype("Int64").fillna(0) + df["status"].ne("ok").astype("Int64")
    df["order"] = df["order"].fillna(len(planned))
    return df.sort_values(["order", "phase", "shard"], kind="stable").reset_index(drop=True)


def _op_columns(df: pd.DataFrame) -> list[str]:
    return [c for c in df.columns if c.startswith("[") and not c.startswith("[OVERALL]")]


def _sf_per_hour(sf: float | None, runtime_ms: pd.Series) -> pd.Series:
    """SF/h as bexhoma computes it: the whole SF over the given runtime."""
    hours = runtime_ms.where(runtime_ms > 0) / 3.6e6
    return (sf if sf is not None else float("nan")) / hours


def loading_per_connection(loading: pd.DataFrame, sf: float | None) -> pd.DataFrame:
    ops = _op_columns(loading)
    out = pd.DataFrame({
        "connection": loading["phase"] + "-" + loading["shard"].astype(str),
        "experiment_run": loading["experiment_run"],
        "threads": loading["threads"],
        "target": loading["target"],
        "pod_count": loading["pods"],
        "exceptions": loading["exceptions"],
        THROUGHPUT: loading["throughput"],
        RUNTIME: loading["runtime_ms"],
    })
    for c in ops:
        out[c] = loading[c]
    out["sf"] = sf
    out[SF_PER_HOUR] = _sf_per_hour(sf, loading["runtime_ms"])
    return out.reset_index(drop=True)


def kind_operations(data: ExperimentData, kind: str) -> pd.DataFrame:
    """The operation rows of the reported attempts of one kind's shards."""
    keys = ["phase", "shard", "attempt"]
    chosen = select_attempts(data.shards)
    return data.operations.merge(chosen.loc[chosen["kind"] == kind, keys], on=keys)


def _op_order(operation: str) -> tuple[str, bool]:
    """READ, Intended-READ, READ-FAILED, ...: each operation next to its intended twin."""
    intended = operation.startswith(INTENDED)
    return (operation[len(INTENDED):] if intended else operation, intended)


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
    order = dict(zip(planned["phase"], planned["order"]))
    configuration = dict(zip(planned["phase"], planned["configuration"]))
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
        rows.append({"phase": phase, "configuration": configuration.get(phase, phase), "operation": op,
                     "shards": len(g), "percentiles": source, **figures,
                     "_order": (order.get(phase, len(order)), phase, _op_order(op))})
    if not rows:
        return pd.DataFrame(columns=LATENCY_KEYS)
    df = pd.DataFrame(rows).sort_values("_order", kind="stable").drop(columns="_order")
    df["count"] = df["count"].astype("Int64")
    for k in LATENCY_FIGURES:
        if k != "count":
            df[k] = df[k].astype("float64")
    return df.reset_index(drop=True)


def latency_table(lat: pd.DataFrame, label: str, source: str) -> pd.DataFrame:
    """The latency figures of every run or phase and operation, in YCSB's names."""
    out = pd.DataFrame({
        label: lat[source],
        "operation": lat["operation"].map(lambda o: o[len(INTENDED):] if o.startswith(INTENDED) else o),
        "latency from": lat["operation"].map(lambda o: "intended start" if o.startswith(INTENDED) else "start"),
        "shards": lat["shards"].astype("Int64"),
    })
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
    return notes + [WINDOW_NOTE]


def latency_notes(lat: pd.DataFrame) -> list[str]:
    return [INTENDED_NOTE] if lat["operation"].str.startswith(INTENDED).any() else []


WINDOW_COLUMNS = ["phase", "window_ops", "window_ms", "skew_ms"]


def phase_windows(data: ExperimentData, kind: str) -> pd.DataFrame:
    """Per phase: its operations, its common window and the start skew of its shards (ms).

    NaN when a shard did not report its first or last operation (a failed
    shard, an older driver): a window that leaves out a shard would be wrong.
    """
    chosen = select_attempts(data.shards)
    chosen = chosen[chosen["kind"] == kind]
    if chosen.empty:
        return pd.DataFrame(columns=WINDOW_COLUMNS)
    ops = kind_operations(data, kind)
    counted = ops.loc[ops["operation"].map(counts_operations).astype(bool)]
    per_phase = counted.groupby("phase")["count"].sum()
    rows = []
    for phase, g in chosen.groupby("phase", sort=False):
        complete = g["first_op_at"].notna().all() and g["last_op_at"].notna().all() and g["status"].eq("ok").all()
        if complete:
            window = (g["last_op_at"].max() - g["first_op_at"].min()).total_seconds() * 1000
            skew = (g["first_op_at"].max() - g["first_op_at"].min()).total_seconds() * 1000
        else:
            window = skew = float("nan")
        rows.append({"phase": phase, "window_ops": per_phase.get(phase, 0), "window_ms": window, "skew_ms": skew})
    return pd.DataFrame(rows, columns=WINDOW_COLUMNS)


def _window_figures(g: pd.DataFrame, windows: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Common-window throughput and start skew for the phases of an aggregated table."""
    w = g[["phase"]].merge(windows, on="phase", how="left")
    ms = w["window_ms"].astype("float64")
    throughput = w["window_ops"].astype("float64") / (ms.where(ms > 0) / 1000)
    return throughput, w["skew_ms"].astype("float64")


def _merged_percentiles(g: pd.DataFrame, lat: pd.DataFrame) -> None:
    """Replace each p99 column of an aggregated table by the phase's latency figure."""
    p99 = {(r.phase, r.operation): r.p99 for r in lat.itertuples(index=False)}
    for c in g.columns:
        if c.startswith("[") and c.endswith("].99thPercentileLatency(us)"):
            op = c[1:-len("].99thPercentileLatency(us)")]
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
        "experiment_run": "first", "pods": "first", "configuration": "first", "attempt": "max",
        "threads": total, "target": total, "exceptions": total,
        "throughput": total, "runtime_ms": highest,
    }
    for c in ops:
        agg[c] = highest if c.endswith("PercentileLatency(us)") else total
    g = df.groupby(by, sort=False).agg(agg).reset_index()
    for c in ["threads", "target", "exceptions"] + [c for c in ops if c.endswith("Return=OK")]:
        g[c] = g[c].astype("Int64")
    for c in ["throughput", "runtime_ms"]:
        g[c] = g[c].astype("float64")
    return g


def loading_per_run(loading: pd.DataFrame, sf: float | None, lat: pd.DataFrame,
                    windows: pd.DataFrame) -> pd.DataFrame:
    ops = _op_columns(loading)
    g = _aggregate(loading, ["phase"])
    _merged_percentiles(g, lat)
    window_throughput, skew = _window_figures(g, windows)
    out = pd.DataFrame({
        "DBMS": g["configuration"],
        "experiment_run": g["experiment_run"],
        "threads": g["threads"],
        "target": g["target"],
        "pod_count": g["pods"],
        "exceptions": g["exceptions"],
        "sf": sf,
        SF_PER_HOUR: _sf_per_hour(sf, g["runtime_ms"]),
        THROUGHPUT: g["throughput"],
        RUNTIME: g["runtime_ms"],
        WINDOW_THROUGHPUT: window_throughput,
        START_SKEW: skew,
    })
    for c in ops:
        out[c] = g[c]
    return out


def execution_per_connection(execution: pd.DataFrame) -> pd.DataFrame:
    ops = _op_columns(execution)
    out = pd.DataFrame({
        "DBMS": execution["phase"] + "-" + execution["shard"].astype(str),
        "phase": execution["phase"],
        "job": execution["phase"],
        "configuration": execution["configuration"],
        "experiment_run": execution["experiment_run"],
        "client": execution["client"],
        "benchmark_run": execution["attempt"],
        "child": execution["shard"],
        "threads": execution["threads"],
        "target": execution["target"],
        "pod_count": execution["pods"],
        "exceptions": execution["exceptions"],
        THROUGHPUT: execution["throughput"],
        RUNTIME: execution["runtime_ms"],
    })
    for c in ops:
        out[c] = execution[c]
    return out.reset_index(drop=True)


def execution_per_phase(execution: pd.DataFrame, lat: pd.DataFrame, windows: pd.DataFrame) -> pd.DataFrame:
    ops = _op_columns(execution)
    g = _aggregate(execution, ["phase"])
    _merged_percentiles(g, lat)
    window_throughput, skew = _window_figures(g, windows)
    out = pd.DataFrame({
        "DBMS": g["phase"],
        "phase": g["phase"],
        "experiment_run": g["experiment_run"],
        "threads": g["threads"],
        "target": g["target"],
        "benchmark_run": g["attempt"],
        "pod_count": g["pods"],
        "exceptions": g["exceptions"],
        THROUGHPUT: g["throughput"],
        RUNTIME: g["runtime_ms"],
        WINDOW_THROUGHPUT: window_throughput,
        START_SKEW: skew,
    })
    for c in ops:
        out[c] = g[c]
    return out


# --- Workflow ---------------------------------------------------------------


def build_workflow(data: ExperimentData, planned: pd.DataFrame) -> Workflow:
    runs_planned = planned[planned["kind"] == "run"]
    bases = list(dict.fromkeys(planned["base"]))
    runs_of = {b: sorted(set(planned.loc[planned["base"] == b, "experiment_run"])) for b in bases}

    plan_pods: dict[tuple[str, int], list[int]] = {}
    for row in runs_planned.itertuples(index=False):
        plan_pods.setdefault((row.base, row.experiment_run), []).append(int(row.pods))

    done = data.phases[(data.phases["kind"] == "run") & (data.phases["status"] == "done")]
    done = done.sort_values("attempt").groupby("phase", sort=False).tail(1)
    done = done.merge(planned[["phase", "base", "experiment_run", "pods"]], on="phase", how="left")
    # A phase the plan does not know still shows up, under its configuration's name.
    done["base"] = done["base"].fillna(done["configuration"])
    done["experiment_run"] = done["experiment_run"].fillna(1)
    done["pods"] = done["shards"].fillna(done["pods"])
    done = done.sort_values(["ended_at", "phase"], kind="stable")
    actual_pods: dict[tuple[str, int], list[int]] = {}
    for row in done.itertuples(index=False):
        actual_pods.setdefault((row.base, int(row.experiment_run)), []).append(int(row.pods))
        if row.base not in runs_of:
            bases.append(row.base)
            runs_of[row.base] = []
        if int(row.experiment_run) not in runs_of[row.base]:
            runs_of[row.base] = sorted([*runs_of[row.base], int(row.experiment_run)])

    actual = {b: [actual_pods.get((b, r), []) for r in runs_of[b]] for b in bases}
    plan = {b: [plan_pods.get((b, r), []) for r in runs_of[b]] for b in bases}
    return Workflow(actual=actual, planned=plan, notes=workflow_notes(data))


def workflow_notes(data: ExperimentData) -> list[str]:
    """Failures and re-runs, one line each, so a reader knows which figures to distrust."""
    notes = []
    for row in data.configurations.sort_values("name").itertuples(index=False):
        if row.failure:
            notes.append(f"Configuration {row.name} failed: {row.failure}")
    phases = data.phases.sort_values(["phase", "attempt"])
    for row in phases[phases["status"] == "failed"].itertuples(index=False):
        notes.append(f"Phase {row.phase} failed: {row.reason or 'no reason given'} (attempt {row.attempt})")
    for row in phases[phases["status"] == "skipped"].itertuples(index=False):
        notes.append(f"Phase {row.phase} skipped: {row.reason or 'no reason given'}")
    shards = data.shards.sort_values(["phase", "shard", "attempt"])
    simulated = shards[shards["status"] == "simulated"]
    for phase, g in simulated.groupby("phase", sort=True):
        # The Kubernetes backend on kwok: driver Jobs "complete", nothing ran.
        notes.append(f"Phase {phase} was simulated, not measured: {g['error'].iloc[0] or 'no reason given'} "
                     f"({len(g)} shard(s)); its figures are missing, not zero")
    for row in shards[~shards["status"].isin(["ok", "simulated"])].itertuples(index=False):
        notes.append(
            f"Shard {row.phase}-{row.shard} failed: {row.error or 'no error given'} "
            f"(attempt {row.attempt}, agent {row.agent})"
        )
    attempts = pd.concat([data.phases[["phase", "attempt"]], data.shards[["phase", "attempt"]]])
    rerun = attempts.groupby("phase")["attempt"].nunique()
    reported = select_attempts(data.shards)
    for phase in sorted(rerun[rerun > 1].index):
        used = sorted({int(a) for a in reported.loc[reported["phase"] == phase, "attempt"]})
        if used:
            notes.append(f"Phase {phase} was re-run: its results are from attempt {', '.join(map(str, used))}")
        else:
            notes.append(f"Phase {phase} was re-run: no attempt has results")
    return notes


# --- Tests ------------------------------------------------------------------


def _throughput_test(id: str, label: str, table: pd.DataFrame) -> Test:
    name = f"{label}: {THROUGHPUT}"
    if table.empty:
        return Test(id, False, f"{name} has no values")
    values = table[THROUGHPUT]
    bad = values.isna() | values.eq(0)
    if bad.any():
        return Test(id, False, f"{name} contains 0 or NaN")
    return Test(id, True, f"{name} contains no 0 or NaN")


def build_tests(loading_conn: pd.DataFrame, execution_conn: pd.DataFrame,
                execution: pd.DataFrame, workflow: Workflow) -> list[Test]:
    """bexhoma's result tests (-tr), over the reported figures."""
    same = _same_workflow(workflow)
    failed_ops = [c for c in execution_conn.columns if c.endswith("-FAILED].Return=OK")]
    failed_shards = execution["status"].ne("ok").any() if not execution.empty else False
    return [
        _throughput_test("loading_throughput", "Loading Phase", loading_conn),
        _throughput_test("execution_throughput", "Execution Phase", execution_conn),
        Test("workflow", same, "Workflow as planned" if same else "Workflow not as planned"),
        Test("no_failed", not (failed_ops or failed_shards),
             "Execution Phase: contains FAILED column" if failed_ops or failed_shards
             else "Execution Phase: contains no FAILED column"),
    ]


def _same_workflow(workflow: Workflow) -> bool:
    """bexhoma's "Workflow as planned": the same pod lists per configuration, in any order."""
    return {b: sorted(map(sorted, runs)) for b, runs in workflow.actual.items()} == \
           {b: sorted(map(sorted, runs)) for b, runs in workflow.planned.items()}


# --- helpers ----------------------------------------------------------------


def _float(value: Any) -> float | None:
    return None if value is None else float(value)

