"""The Monitoring and Application Metrics sections, pure: fixture rows → summary.

tests/data/metric-summaries-redis.json holds the collector's rows for the
experiment of ycsb-redis.json: one metric that could not be collected per
phase kind, and a benchmarker whose CPU seconds are 0.
"""

from __future__ import annotations

import json

import pytest
from rows import MONITORED, experiment, load_tables, monitored_tables

from benchq_reporter.summary import render, summarize
from benchq_reporter.summary.monitoring import CPU, CPU_NOTE

LOAD = "Redis-8-2-65536-1-0"
RUN = "Redis-8-2-65536-1-1"
CFG = "Redis-8-2-65536-1"
SECTIONS = [
    "Loading phase: SUT deployment",
    "Loading phase: component loader",
    "Execution phase: SUT deployment",
    "Execution phase: component benchmarker",
]


@pytest.fixture
def tables():
    return monitored_tables()


def _rows(tables, **match):
    return [r for r in tables["metric_summaries"] if all(r[k] == v for k, v in match.items())]


def _section(sections, title):
    return next(s for s in sections if s.title == title)


def test_summary_with_monitoring_matches_golden(tables, golden):
    golden("summary-redis-monitoring.md", render.markdown(summarize(experiment(tables))))


def test_sections_are_bexhomas_in_order_between_execution_and_tests(tables):
    md = render.markdown(summarize(experiment(tables)))
    headings = [line for line in md.splitlines() if line.startswith("#")]
    i = headings.index("### Monitoring")
    assert headings[i - 1] == "#### Latency per Phase"
    assert headings[i + 1 :] == [
        *(f"### {t}" for t in SECTIONS),
        "### Application Metrics",
        "#### Loading phase: SUT deployment",
        "#### Execution phase: SUT deployment",
        "### Tests",
    ]


def test_columns_follow_position_and_rows_are_labelled_like_the_phase_tables(tables):
    for r in _rows(tables, section="system"):
        r["position"] = 3 - r["position"]  # the set's order, not the file's, decides
    s = summarize(experiment(tables))
    loading = _section(s.monitoring.system, SECTIONS[0]).table
    assert list(loading.columns) == ["DBMS", "Max RAM Cached [Gb]", "Max RAM [Gb]", "Max CPU", CPU]
    assert list(loading["DBMS"]) == list(s.loading_per_run["DBMS"]) == [CFG]
    execution = _section(s.monitoring.system, SECTIONS[3]).table
    assert list(execution["DBMS"]) == list(s.execution_per_phase["DBMS"]) == [RUN]


def test_missing_is_nan_with_its_reason_never_zero(tables):
    s = summarize(experiment(tables))
    loader = _section(s.monitoring.system, SECTIONS[1])
    assert loader.table["Max RAM Cached [Gb]"].isna().all()
    md = render.markdown(s)
    assert (
        "* Max RAM Cached [Gb] of Redis-8-2-65536-1 is missing: no samples: container_memory_cache was not "
        "exported for the loader's processes"
    ) in md
    assert (
        "* Network Input [MB/sec] of Redis-8-2-65536-1-1 is missing: Prometheus at "
        "http://127.0.0.1:9090 unreachable: connection refused"
    ) in md
    assert md.count(f"* {CPU_NOTE}") == 1
    table = md.split("### Loading phase: component loader")[1].split("\n\n")[1]
    assert table.splitlines()[2].split("|")[-2].strip() == "NaN"


def test_cpu_tests_fail_on_zero_and_on_missing(tables):
    s = summarize(experiment(tables))
    cpu = [t for t in s.tests if t.id.startswith("monitoring_")]
    assert [(t.passed, t.text) for t in cpu] == [
        (True, "Loading phase: SUT deployment contains no 0 or NaN in CPU [CPUs]"),
        (True, "Loading phase: component loader contains no 0 or NaN in CPU [CPUs]"),
        (True, "Execution phase: SUT deployment contains no 0 or NaN in CPU [CPUs]"),
        (False, "Execution phase: component benchmarker contains 0 or NaN in CPU [CPUs]"),
    ]
    assert not s.tests_passed
    # bexhoma's place: after the throughput tests, before the workflow's.
    assert [t.id for t in s.tests][1:3] == ["execution_throughput", "monitoring_load_sut"]
    cpu_row = _rows(tables, phase=LOAD, component="sut", metric="cpu_seconds")[0]
    cpu_row.update(value=None, missing="no samples: exporter not running?")
    s = summarize(experiment(tables))
    assert not next(t for t in s.tests if t.id == "monitoring_load_sut").passed


def test_only_sections_with_rows_appear(tables):
    tables["metric_summaries"] = _rows(tables, section="system", component="sut")
    md = render.markdown(summarize(experiment(tables)))
    assert "### Loading phase: SUT deployment" in md and "### Execution phase: SUT deployment" in md
    assert "component loader" not in md and "component benchmarker" not in md
    assert "### Application Metrics" not in md
    tables["metric_summaries"] = []
    s = summarize(experiment(tables))
    assert not s.monitoring
    assert "### Monitoring" not in render.markdown(s)
    assert [t.id for t in s.tests] == [
        "loading_throughput",
        "execution_throughput",
        "workflow",
        "no_failed",
        "loading_errors",
        "execution_errors",
    ]


def test_a_pool_gets_its_own_sections_first(tables):
    pool = [{**r, "component": "pool"} for r in _rows(tables, component="sut")]
    tables["metric_summaries"] += pool
    s = summarize(experiment(tables))
    assert [x.title for x in s.monitoring.system] == [
        "Loading phase: component pool",
        SECTIONS[0],
        SECTIONS[1],
        "Execution phase: component pool",
        SECTIONS[2],
        SECTIONS[3],
    ]
    assert [x.title for x in s.monitoring.application] == [
        "Loading phase: component pool",
        "Loading phase: SUT deployment",
        "Execution phase: component pool",
        "Execution phase: SUT deployment",
    ]
    assert "* TEST passed: Execution phase: component pool contains no 0 or NaN in CPU [CPUs]" in render.markdown(s)


def test_the_reported_attempt_is_the_shards(tables):
    """A re-run phase's monitoring follows the attempt its throughput comes from."""
    rerun = [{**r, "attempt": 2, "value": 99.0, "missing": None} for r in _rows(tables, phase=RUN)]
    tables["metric_summaries"] += rerun
    s = summarize(experiment(tables))
    assert _section(s.monitoring.system, SECTIONS[2]).table[CPU].tolist() == [2.97]
    for r in tables["shard_results"] + tables["shard_operations"]:
        if r["phase"] == RUN:
            r["attempt"] = 2
    s = summarize(experiment(tables))
    assert _section(s.monitoring.system, SECTIONS[2]).table[CPU].tolist() == [99.0]


def test_a_metric_outside_a_dbms_set_is_named_not_zero(tables):
    """Two DBMS in one experiment may have different application sets: a cell one lacks is said so."""
    other = [
        {**r, "phase": "PostgreSQL-8-2-65536-1-1", "configuration": "PostgreSQL-8-2-65536-1"}
        for r in _rows(tables, phase=RUN, section="application")
        if r["metric"] != "replies_sent"
    ]
    tables["metric_summaries"] += other
    s = summarize(experiment(tables))
    run = _section(s.monitoring.application, "Execution phase: SUT deployment")
    assert list(run.table["DBMS"]) == [RUN, "PostgreSQL-8-2-65536-1-1"]
    assert run.table["Replies Sent [count]"].isna().tolist() == [False, True]
    assert "Replies Sent [count] of PostgreSQL-8-2-65536-1-1 is missing: not in its DBMS's metric set" in run.missing


def test_json_carries_the_monitoring_tables(tables):
    doc = json.loads(render.json_document(summarize(experiment(tables))))
    assert doc["code"] == MONITORED
    m = doc["monitoring"]
    assert [s["title"] for s in m["system"]] == SECTIONS
    loader = m["system"][1]
    assert loader["rows"] == [
        {"DBMS": CFG, "CPU [CPUs]": 8.95, "Max CPU": 1.83, "Max RAM [Gb]": 0.5213, "Max RAM Cached [Gb]": None}
    ]
    assert loader["missing"][0].startswith("Max RAM Cached [Gb] of Redis-8-2-65536-1 is missing: no samples")
    assert m["note"] == CPU_NOTE
    assert m["application"][1]["rows"][0]["Network Input [MB/sec]"] is None
    failed = [t for t in doc["tests"] if not t["passed"]]
    assert [t["id"] for t in failed] == ["monitoring_run_benchmarker"]


def test_json_without_monitoring_has_no_monitoring_key(tables):
    tables["metric_summaries"] = []
    assert "monitoring" not in json.loads(render.json_document(summarize(experiment(tables))))


def test_a_benchbase_summary_has_the_sections_before_its_tests(tables):
    tpcc = load_tables("benchbase-tpcc.json")
    phases = {LOAD: "PostgreSQL-2-1-400-1-0", RUN: "PostgreSQL-2-1-400-1-1"}
    tpcc["metric_summaries"] = [
        {**r, "phase": phases[r["phase"]], "configuration": "PostgreSQL-2-1-400-1"}
        for r in _rows(tables, section="system")
    ]
    s = summarize(experiment(tpcc))
    headings = [line for line in render.markdown(s).splitlines() if line.startswith("### ")]
    assert headings[-7:] == ["### Loading", "### Monitoring", *(f"### {t}" for t in SECTIONS), "### Tests"]
    assert [t.id for t in s.tests] == [
        "benchbase_throughput",
        "monitoring_load_sut",
        "monitoring_load_loader",
        "monitoring_run_sut",
        "monitoring_run_benchmarker",
        "workflow",
    ]


def test_a_phase_without_shard_results_shows_its_latest_attempt(tables):
    """A phase that failed before any shard reported still has its window's metrics."""
    tables["metric_summaries"] += [{**r, "attempt": 2, "value": 7.0, "missing": None} for r in _rows(tables, phase=RUN)]
    tables["shard_results"] = [r for r in tables["shard_results"] if r["phase"] != RUN]
    tables["shard_operations"] = [r for r in tables["shard_operations"] if r["phase"] != RUN]
    s = summarize(experiment(tables))
    assert _section(s.monitoring.system, SECTIONS[2]).table[CPU].tolist() == [7.0]
    assert _section(s.monitoring.system, SECTIONS[0]).table[CPU].tolist() == [3.42]
