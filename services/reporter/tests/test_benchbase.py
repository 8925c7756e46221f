"""bexhoma's Benchbase (TPC-C) sections, pure: shard rows → markdown.

tests/data/benchbase-tpcc.json is a real TPC-C experiment of the embedded
engine (2 warehouses; 1 pod, then 2 pods of 2 terminals). The Benchbase
fixture of internal/benchbase (a real Benchbase run) is read through the
Finals Go made of it, so both engines are shown to fill the same columns.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from rows import experiment, load_tables

from benchq_reporter.summary import benchbase as bb
from benchq_reporter.summary import checks, latency, render

REPO = Path(__file__).resolve().parents[3]
BENCHBASE_FIXTURE = REPO / "internal" / "benchbase" / "testdata"
# The two benchmarking phases as stored, and their rows as bexhoma names them (the
# configuration without its repetition, then the client).
RUN1, RUN2 = "PostgreSQL-2-1-400-1-1", "PostgreSQL-2-1-400-1-2"
ROW1, ROW2 = "PostgreSQL-2-1-400-1", "PostgreSQL-2-1-400-2"


@pytest.fixture
def tpcc() -> dict:
    return load_tables("benchbase-tpcc.json")


def summary_of(tables: dict) -> bb.Tables:
    return bb.summarize(bb.shard_rows(experiment(tables)))


def test_sections_match_golden(tpcc, golden):
    golden("benchbase-tpcc.md", render.benchbase_markdown(summary_of(tpcc)))


def test_column_names_are_bexhomas():
    """As in bexhoma's Benchbase summaries (its PgBouncer/Benchbase example)."""
    latency_cols = [
        "Latency Distribution.95th Percentile Latency (microseconds)",
        "Latency Distribution.Average Latency (microseconds)",
    ]
    assert [
        "DBMS",
        "experiment_run",
        "terminals",
        "target",
        "client",
        "child",
        "time",
        "num_errors",
        "Throughput (requests/second)",
        "Goodput (requests/second)",
        "efficiency",
        *latency_cols,
    ] == bb.PER_POD_COLUMNS
    assert [
        "DBMS",
        "experiment_run",
        "terminals",
        "target",
        "pod_count",
        "time",
        "num_errors",
        "Throughput (requests/second)",
        "Goodput (requests/second)",
        "efficiency",
        *latency_cols,
    ] == bb.AGGREGATED_COLUMNS
    assert bb.LOADING_COLUMNS == ["DBMS", "time_load", "terminals", "pods", "Throughput [SF/h]"]
    md = render.benchbase_markdown(summary_of(load_tables("benchbase-tpcc.json")))
    assert (
        md.index("### Execution")
        < md.index("#### Per Pod")
        < md.index("#### Aggregated Parallel")
        < md.index("### Loading")
    )


def test_aggregated_p95_is_the_merged_histograms_not_max_or_mean(tpcc):
    s = summary_of(tpcc)
    ops = pd.DataFrame(tpcc["shard_operations"])
    alls = ops[(ops["phase"] == RUN2) & (ops["operation"] == bb.ALL)]
    merged = latency.merge(alls["histogram"])
    assert merged.get_total_count() == alls["count"].sum()
    row = s.aggregated.set_index("DBMS").loc[ROW2]
    assert row[bb.P95] == latency.value_at_percentile(merged, 95)
    pods = s.per_pod[s.per_pod["DBMS"].str.startswith(ROW2)][bb.P95]
    assert row[bb.P95] not in (pods.max(), pods.mean())
    # The average is the request-weighted mean (exact), not the mean of the averages.
    assert row[bb.AVG] == pytest.approx((alls["avg_us"] * alls["count"]).sum() / alls["count"].sum())
    # One pod: its own figures.
    one = s.aggregated.set_index("DBMS").loc[ROW1]
    pod = s.per_pod.set_index("DBMS").loc[ROW1 + "-1"]
    assert (one[bb.P95], one[bb.AVG]) == (pod[bb.P95], pod[bb.AVG])


def test_throughput_is_over_the_common_window(tpcc):
    s = summary_of(tpcc)
    shards = pd.DataFrame(tpcc["shard_results"]).set_index(["phase", "shard"])
    ops = pd.DataFrame(tpcc["shard_operations"])
    alls = ops[(ops["phase"] == RUN2) & (ops["operation"] == bb.ALL)]
    starts = pd.to_datetime(shards.loc[RUN2, "first_op_at"], utc=True)
    ends = starts + pd.to_timedelta(shards.loc[RUN2, "runtime_ms"], unit="ms")
    window = (ends.max() - starts.min()).total_seconds()
    row = s.aggregated.set_index("DBMS").loc[ROW2]
    assert row["time"] == pytest.approx(window)
    assert row[bb.THROUGHPUT] == pytest.approx(alls["count"].sum() / window)
    assert row[bb.GOODPUT] == pytest.approx(sum(rc["OK"] for rc in alls["return_codes"]) / window)
    assert (row["terminals"], row["target"], row["pod_count"], row["num_errors"]) == (4, 400, 2, 0)
    # With one pod the window is the pod's: the aggregate is the pod's rate.
    one = s.aggregated.set_index("DBMS").loc[ROW1]
    assert one[bb.THROUGHPUT] == pytest.approx(s.per_pod.set_index("DBMS").loc[ROW1 + "-1", bb.THROUGHPUT])
    assert set(s.skew_ms) == {ROW2}


def test_per_pod_goodput_and_loading(tpcc):
    s = summary_of(tpcc)
    pod = s.per_pod.set_index("DBMS").loc[ROW2 + "-2"]
    assert pod[bb.GOODPUT] == pytest.approx(pod[bb.THROUGHPUT])  # no failed request in this run
    assert (pod["client"], pod["child"], pod["time"]) == (2, 2, 10.0)
    load = next(r for r in tpcc["shard_results"] if r["kind"] == "load")
    row = s.loading.iloc[0]
    assert row["time_load"] == load["runtime_ms"] / 1000
    assert (row["terminals"], row["pods"]) == (2, 1)
    assert row[bb.SF_PER_HOUR] == pytest.approx(2 * 3600 / row["time_load"])


def test_without_a_histogram_the_p95_is_an_upper_bound(tpcc):
    for op in tpcc["shard_operations"]:
        if op["phase"] == RUN2 and op["shard"] == 2:
            op["histogram"] = None
    s = summary_of(tpcc)
    pods = s.per_pod[s.per_pod["DBMS"].str.startswith(ROW2)][bb.P95]
    assert s.aggregated.set_index("DBMS").loc[ROW2, bb.P95] == pods.max()
    assert bb.UPPER_BOUND_NOTE.format(phases=ROW2) in s.notes


def test_without_first_request_times_throughput_is_the_sum(tpcc):
    for r in tpcc["shard_results"]:
        if r["phase"] == RUN2:
            r["first_op_at"] = None
    s = summary_of(tpcc)
    pods = s.per_pod[s.per_pod["DBMS"].str.startswith(ROW2)]
    assert s.aggregated.set_index("DBMS").loc[ROW2, bb.THROUGHPUT] == pytest.approx(pods[bb.THROUGHPUT].sum())
    assert bb.SUM_NOTE.format(phases=ROW2) in s.notes


def test_a_failed_pod_counts_as_an_error_and_fails_the_test(tpcc):
    shard = next(r for r in tpcc["shard_results"] if r["phase"] == RUN2 and r["shard"] == 2)
    shard.update(status="failed", error="driver failed", throughput=None)
    tpcc["shard_operations"] = [o for o in tpcc["shard_operations"] if not (o["phase"] == RUN2 and o["shard"] == 2)]
    s = summary_of(tpcc)
    assert s.per_pod.set_index("DBMS").loc[ROW2 + "-2", "num_errors"] == 1
    row = s.aggregated.set_index("DBMS").loc[ROW2]
    assert row["num_errors"] == 1 and pd.isna(row[bb.THROUGHPUT])
    assert checks.benchbase_tests(s) == [("benchbase_throughput", False, f"{bb.THROUGHPUT} contains 0 or NaN")]
    assert checks.benchbase_tests(summary_of(load_tables("benchbase-tpcc.json"))) == [
        ("benchbase_throughput", True, f"{bb.THROUGHPUT} contains no 0 or NaN")
    ]


def test_real_benchbase_fills_the_same_columns():
    """A real Benchbase run (internal/benchbase's fixture), as Go made it a Final: Benchbase's own figures."""
    summary = json.loads((BENCHBASE_FIXTURE / "benchbase-tpcc-pg15" / "summary.json").read_text())
    operations = json.loads((BENCHBASE_FIXTURE / "benchbase-tpcc-pg15.operations.golden.json").read_text())
    tables = load_tables("benchbase-tpcc.json")
    phase = RUN1
    tables["shard_results"] = [
        {
            "phase": phase,
            "shard": 1,
            "attempt": 1,
            "configuration": "PostgreSQL-2-1-400-1",
            "kind": "run",
            "agent": "driver-agent-1",
            "status": "ok",
            "error": None,
            "threads": int(summary["terminals"]),
            "target": 0,
            "started_at": "2026-11-21T11:01:19Z",
            "ended_at": "2026-11-21T11:02:54Z",
            "runtime_ms": summary["Elapsed Time (nanoseconds)"] / 1e6,
            "throughput": summary["Throughput (requests/second)"],
            "message_id": "x",
            "first_op_at": None,
            "last_op_at": None,
        }
    ]
    tables["shard_operations"] = [
        {
            "phase": phase,
            "shard": 1,
            "attempt": 1,
            "operation": op["name"],
            "count": op["count"],
            "return_codes": op.get("return_codes", {}),
            "avg_us": op.get("avg_us"),
            "p95_us": op.get("p95_us"),
            "histogram": None,
        }
        for op in operations
    ]
    s = summary_of(tables)
    pod = s.per_pod.iloc[0]
    dist = summary["Latency Distribution"]
    assert pod[bb.THROUGHPUT] == summary["Throughput (requests/second)"]
    assert pod[bb.GOODPUT] == pytest.approx(summary["Goodput (requests/second)"], rel=1e-12)
    assert pod[bb.P95] == dist["95th Percentile Latency (microseconds)"]
    assert pod[bb.AVG] == dist["Average Latency (microseconds)"]
    assert (pod["terminals"], pod["num_errors"]) == (8, 0)


def test_the_documented_frame_is_enough():
    """summarize needs only SHARD_COLUMNS: rows built by hand, no database tables."""
    h1, h2 = (latency.merge([]), latency.merge([]))
    for v in range(1, 1001):
        h1.record_value(v)
        h2.record_value(10 * v)
    t0 = pd.Timestamp("2026-11-21T12:00:00Z")
    base = {
        "configuration": "c-1",
        "base": "c",
        "kind": "run",
        "experiment_run": 1,
        "client": 1,
        "pods": 2,
        "status": "ok",
        "terminals": 2,
        "target": 0,
        "sf": 1.0,
        "runtime_s": 10.0,
        "errors": 0,
    }
    rows = bb.frame(
        [
            {**base, "phase": "c-load", "kind": "load", "client": 0, "shard": 1, "pods": 1, "runtime_s": 36.0},
            {
                **base,
                "phase": "c-run1",
                "shard": 1,
                "requests": 1000,
                "successes": 990,
                "throughput": 100.0,
                "first_op_at": t0,
                "avg_us": 500.5,
                "p95_us": 950.0,
                "histogram": h1,
            },
            {
                **base,
                "phase": "c-run1",
                "shard": 2,
                "requests": 1000,
                "successes": 1000,
                "throughput": 100.0,
                "first_op_at": t0 + pd.Timedelta(seconds=1),
                "avg_us": 5005.0,
                "p95_us": 9500.0,
                "histogram": h2,
            },
        ]
    )
    s = bb.summarize(rows)
    row = s.aggregated.iloc[0]
    assert row["time"] == 11.0
    assert row[bb.THROUGHPUT] == pytest.approx(2000 / 11) and row[bb.GOODPUT] == pytest.approx(1990 / 11)
    # The 1900th of the 2000 values, 10 × 900, to the histogram's precision.
    assert h2.values_are_equivalent(int(row[bb.P95]), 9000)
    assert row[bb.AVG] == pytest.approx((500.5 + 5005) / 2)
    assert s.loading.iloc[0][bb.SF_PER_HOUR] == 100.0
    assert s.skew_ms == {"c-1": 1000.0}
    # bexhoma's names: the configuration without its repetition, the client, the pod.
    assert list(s.aggregated["DBMS"]) == ["c-1"] and list(s.per_pod["DBMS"]) == ["c-1-1", "c-1-2"]


def test_whole_summary_of_a_benchbase_experiment_in_bexhomas_order(tpcc):
    """`reporter summary` of a TPC-C experiment: bexhoma's Benchbase sections and
    tests, not the YCSB tables (an ALL operation there would count requests twice)."""
    from benchq_reporter.summary import BenchbaseSummary, summarize

    s = summarize(experiment(tpcc))
    assert isinstance(s, BenchbaseSummary) and not hasattr(s, "execution_per_phase")
    md = render.markdown(s)
    heads = [line for line in md.splitlines() if line.startswith("#")]
    assert heads == [
        "## Show Summary",
        "### Workload",
        "### Connections",
        "### Execution",
        "#### Per Pod",
        "#### Aggregated Parallel",
        "### Workflow",
        "#### Actual",
        "#### Planned",
        "### Loading",
        "### Tests",
    ], heads
    assert "* TEST passed: Throughput (requests/second) contains no 0 or NaN" in md
    assert "* TEST passed: Workflow as planned" in md
    assert "[OVERALL].Throughput(ops/sec)" not in md
    assert "Benchbase Workload tpcc SF=" in md and "* Benchbase runs a TPC-C experiment" in md
    assert "YCSB" not in md.split("### Connections")[0]
    doc = json.loads(render.json_document(s))
    assert len(doc["benchbase"]["per_pod"]) == len(s.benchbase.per_pod)


def test_repetitions_share_bexhomas_names_and_differ_in_experiment_run():
    """-nc 2: bexhoma names a Benchbase row without the repetition (PostgreSQL-1-1-1024-2-1)
    and tells the runs apart by experiment_run; the notes name the second run's phase so."""
    t0 = pd.Timestamp("2026-11-21T12:00:00Z")
    rows = []
    for run in (1, 2):
        base = {"configuration": f"c-{run}", "base": "c", "kind": "run", "experiment_run": run, "client": 1, "pods": 2}
        base |= {"status": "ok", "terminals": 2, "target": 0, "sf": 1.0, "runtime_s": 10.0, "errors": 0}
        base |= {"requests": 100, "successes": 100, "throughput": 10.0, "avg_us": 1.0, "p95_us": 2.0}
        rows.append({**base, "phase": f"c-{run}-0", "kind": "load", "client": 0, "shard": 1, "pods": 1})
        for shard in (1, 2):
            rows.append(
                {**base, "phase": f"c-{run}-1", "shard": shard, "first_op_at": t0 + pd.Timedelta(seconds=shard)}
            )
    s = bb.summarize(bb.frame(rows))
    assert list(s.per_pod["DBMS"]) == ["c-1-1", "c-1-2", "c-1-1", "c-1-2"]
    assert list(s.aggregated["DBMS"]) == ["c-1", "c-1"] and list(s.aggregated["experiment_run"]) == [1, 2]
    assert s.skew_ms == {"c-1": 1000.0, "c-1 (experiment_run 2)": 1000.0}
    assert list(s.loading["DBMS"]) == ["c-1", "c-1 (experiment_run 2)"]
