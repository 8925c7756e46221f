"""The summary of one experiment, pure: fixture rows → markdown, no database."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from conftest import GOLDEN
from rows import experiment, load_tables

from benchq_reporter.summary import render, summarize, ycsb
from benchq_reporter.summary.ycsb import MERGED_NOTE, RUNTIME, SF_PER_HOUR, THROUGHPUT, UPPER_BOUND_NOTE

LOAD = "Redis-8-2-65536-1-0"
RUN = "Redis-8-2-65536-1-1"


def test_summary_matches_golden(tables, golden):
    golden("summary-redis.md", render.markdown(summarize(experiment(tables))))


def test_fixture_figures_are_the_ycsb_output_they_came_from(tables):
    """Every figure in the fixture is the YCSB line stored beside it (traceability)."""
    fields = {
        "Operations": "count",
        "AverageLatency(us)": "avg_us",
        "MinLatency(us)": "min_us",
        "MaxLatency(us)": "max_us",
        "95thPercentileLatency(us)": "p95_us",
        "99thPercentileLatency(us)": "p99_us",
    }
    for shard in tables["shard_results"]:
        lines = [[p.strip() for p in line.split(",")] for line in shard["stdout"].splitlines()]
        printed = {(sec.strip("[]"), key): float(val) for sec, key, val in lines}
        assert shard["runtime_ms"] == printed[("OVERALL", "RunTime(ms)")]
        assert shard["throughput"] == printed[("OVERALL", "Throughput(ops/sec)")]
        ops = [
            o
            for o in tables["shard_operations"]
            if (o["phase"], o["shard"], o["attempt"]) == (shard["phase"], shard["shard"], shard["attempt"])
        ]
        assert ops
        for op in ops:
            for key, column in fields.items():
                assert op[column] == printed[(op["operation"], key)]
            for rc, n in op["return_codes"].items():
                assert n == printed[(op["operation"], f"Return={rc}")]


def test_per_run_adds_up_the_shards(tables):
    s = summarize(experiment(tables))
    conn, run = s.loading_per_connection, s.loading_per_run.iloc[0]
    assert len(conn) == 2
    assert run[THROUGHPUT] == pytest.approx(9036.688957166094 + 9442.870632672333)
    assert run[THROUGHPUT] == conn[THROUGHPUT].sum()
    assert run[RUNTIME] == conn[RUNTIME].max() == 5533
    assert run["[INSERT].Return=OK"] == conn["[INSERT].Return=OK"].sum() == 100000
    assert run["[INSERT].99thPercentileLatency(us)"] == max(2551, 1628)
    assert (run["threads"], run["target"], run["pod_count"]) == (8, 65536, 2)
    # bexhoma's SF/h: the whole SF over the slowest shard's runtime.
    assert run[SF_PER_HOUR] == pytest.approx(0.1 / (5533 / 3.6e6))


def test_without_histograms_percentiles_are_labelled_upper_bounds(tables):
    """This fixture predates histograms: its run percentiles are the shards' maximum, and say so."""
    s = summarize(experiment(tables))
    md = render.markdown(s)
    assert md.count(f"* {UPPER_BOUND_NOTE.format(ops='INSERT')}") == 1  # under Loading Per Run: 2 shards
    assert list(s.loading_latency["percentiles"]) == ["max of shards"]
    # One benchmarking shard: its own figures are exact.
    assert list(s.execution_latency["percentiles"]) == ["one shard", "one shard"]
    assert "READ, UPDATE" not in md
    assert MERGED_NOTE not in md


def test_operation_columns_follow_the_phase(tables):
    s = summarize(experiment(tables))
    assert [c for c in s.loading_per_connection.columns if c.startswith(("[IN", "[RE"))] == [
        "[INSERT].Return=OK",
        "[INSERT].99thPercentileLatency(us)",
    ]
    assert "[CLEANUP].Return=OK" not in s.execution_per_connection.columns
    assert list(s.execution_per_phase.columns)[-4:] == [
        "[READ].Return=OK",
        "[READ].99thPercentileLatency(us)",
        "[UPDATE].Return=OK",
        "[UPDATE].99thPercentileLatency(us)",
    ]


def test_all_tests_pass_on_a_clean_experiment(tables):
    s = summarize(experiment(tables))
    assert [t.id for t in s.tests] == [
        "loading_throughput",
        "execution_throughput",
        "workflow",
        "no_failed",
        "loading_errors",
        "execution_errors",
    ]
    assert all(t.passed for t in s.tests)


def _test(s, id):
    return next(t for t in s.tests if t.id == id)


def test_zero_throughput_fails_the_throughput_test(tables):
    tables["shard_results"][1]["throughput"] = 0.0
    s = summarize(experiment(tables))
    t = _test(s, "loading_throughput")
    assert not t.passed
    assert render.tests_markdown(s).splitlines()[1] == (
        "* TEST failed: Loading Phase: [OVERALL].Throughput(ops/sec) contains 0 or NaN"
    )
    assert _test(s, "execution_throughput").passed


def test_loading_skipped_on_a_persisted_volume_is_said_not_failed(tables):
    """Loading skipped (the database persisted on a volume): no loading rows, and the loading test says why
    instead of failing on them; a loading phase that simply has no rows still fails it."""
    reason = "the database is persisted on volume bq-redis-ycsb-1, loaded at 2026-11-25T10:00:00Z by experiment e1"
    load = next(p for p in tables["phases"] if p["kind"] == "load")
    load.update(status="skipped", reason=reason, started_at=None, ended_at=None)
    tables["shard_results"] = [r for r in tables["shard_results"] if r["phase"] != load["phase"]]
    s = summarize(experiment(tables))
    t = _test(s, "loading_throughput")
    assert t.passed and t.text == f"Loading Phase: skipped, nothing to test ({reason})"
    e = _test(s, "loading_errors")
    assert e.passed and e.text == f"Loading Phase: skipped, nothing to test ({reason})"
    assert f"Phase {load['phase']} skipped: {reason}" in s.workflow.skipped
    assert not any("skipped" in n for n in s.workflow.notes)  # a planned skip is no failure
    assert f"#### Skipped\n* Phase {load['phase']} skipped: {reason}\n" in render.markdown(s)
    # The Loading section says why it has no rows, not only "(no data)".
    assert f"#### Per Run\n\n(no data)\n* Loading skipped: {reason}\n" in render.markdown(s)
    load.update(status="done", reason=None)
    assert not _test(summarize(experiment(tables)), "loading_throughput").passed
    assert not _test(summarize(experiment(tables)), "loading_errors").passed


def test_a_metrics_workload_has_no_scale_factor(tables):
    """bexhoma's Loading tables give sf and SF/h; benchq tsdb's loading writes one point a series: no SF."""
    assert not summarize(experiment(tables)).loading_per_run[SF_PER_HOUR].isna().any()
    tables["experiments"][0]["plan"]["settings"]["benchmark"] = "tsdb"
    s = summarize(experiment(tables))
    assert not s.loading_per_run.empty
    assert s.loading_per_run["sf"].isna().all() and s.loading_per_run[SF_PER_HOUR].isna().all()
    assert s.loading_per_connection["sf"].isna().all()


def test_missing_phase_fails_workflow_as_planned(tables):
    tables["phases"] = [p for p in tables["phases"] if p["phase"] != RUN]
    s = summarize(experiment(tables))
    assert not _test(s, "workflow").passed
    assert s.workflow.actual == {"Redis-8-2-65536": [[]]}
    assert s.workflow.planned == {"Redis-8-2-65536": [[1]]}
    assert "* TEST failed: Workflow not as planned" in render.tests_markdown(s)


def test_failed_operation_fails_the_failed_column_test(tables):
    tables["shard_operations"].append(
        {
            "phase": RUN,
            "shard": 1,
            "attempt": 1,
            "operation": "READ-FAILED",
            "count": 3,
            "avg_us": 1200.0,
            "min_us": 900.0,
            "max_us": 2000.0,
            "p95_us": 2000.0,
            "p99_us": 2000.0,
            "return_codes": {},
        }
    )
    read = next(o for o in tables["shard_operations"] if o["phase"] == RUN and o["operation"] == "READ")
    read["return_codes"]["ERROR"] = 3
    s = summarize(experiment(tables))
    t = _test(s, "no_failed")
    assert not t.passed and t.text == "Execution Phase: contains FAILED column"
    assert s.execution_per_phase.iloc[0]["exceptions"] == 3
    assert s.execution_per_phase.iloc[0]["[READ-FAILED].Return=OK"] == 0


def test_a_shard_that_did_not_end_ok_is_named_not_called_a_failed_column(tables):
    """bexhoma's test reads FAILED columns; a stopped or failed shard fails it too, and says which it was."""
    shard = next(r for r in tables["shard_results"] if r["phase"] == RUN)
    shard["status"] = "failed"
    t = _test(summarize(experiment(tables)), "no_failed")
    assert not t.passed and t.text == "Execution Phase: 1 shard did not end ok (see Failures and re-runs)"


def test_failed_operations_above_one_percent_mark_the_phase(tables):
    """Goodput and the error share beside YCSB's throughput, which counts failed operations."""
    run_ops = [o for o in tables["shard_operations"] if o["phase"] == RUN and o["operation"] in ("READ", "UPDATE")]
    failed = sum(o["count"] for o in run_ops) // 20  # 1/21 of all operations: 4.76 %
    tables["shard_operations"].append(
        {
            "phase": RUN,
            "shard": 1,
            "attempt": 1,
            "operation": "READ-FAILED",
            "count": failed,
            "avg_us": 1200.0,
            "min_us": 900.0,
            "max_us": 2000.0,
            "p95_us": 2000.0,
            "p99_us": 2000.0,
            "return_codes": {},
        }
    )
    for r in tables["shard_results"]:  # a window, so that throughput and goodput are figures
        r["first_op_at"], r["last_op_at"] = r["started_at"], r["ended_at"]
    s = summarize(experiment(tables))
    row = s.execution_per_phase.iloc[0]
    assert row[ycsb.ERROR_SHARE] == pytest.approx(100 / 21)
    assert row[ycsb.GOODPUT] == pytest.approx(row[ycsb.WINDOW_THROUGHPUT] * 20 / 21)
    t = _test(s, "execution_errors")
    assert not t.passed and t.text == f"Execution Phase: failed operations above 1 % ({RUN} 4.76 %)"
    assert _test(s, "loading_errors").passed
    note = f"{RUN}: 4.76 % of its operations failed (more than 1 %)"
    assert any(n.startswith(note) for n in s.notes["execution_per_phase"])
    assert note in render.markdown(s)
    # -max-errors 5: the same phase is within the limit, neither marked nor failed.
    tables["experiments"][0]["plan"]["settings"]["error_share_limit"] = 5.0
    s = summarize(experiment(tables))
    t = _test(s, "execution_errors")
    assert t.passed and t.text == "Execution Phase: failed operations at most 5 % in every phase"
    assert not any("operations failed" in n for n in s.notes["execution_per_phase"])


def test_batched_ok_is_a_success_not_an_exception(tables):
    # YCSB's JDBC binding answers an insert queued into a batch with BATCHED_OK.
    load = [o for o in tables["shard_operations"] if o["phase"] != RUN and o["operation"] == "INSERT"]
    assert load
    for op in load:
        op["return_codes"] = {"BATCHED_OK": op["count"]}
    s = summarize(experiment(tables))
    assert (s.loading_per_connection["exceptions"] == 0).all()
    load[0]["return_codes"]["ERROR"] = 2
    s = summarize(experiment(tables))
    assert s.loading_per_connection["exceptions"].sum() == 2


def test_return_ok_counts_batched_inserts_and_is_unknown_without_codes(tables):
    load = [o for o in tables["shard_operations"] if o["phase"] != RUN and o["operation"] == "INSERT"]
    for op in load:
        op["return_codes"] = {"OK": 4, "BATCHED_OK": op["count"] - 4}
    run = [o for o in tables["shard_operations"] if o["phase"] == RUN and o["operation"] == "UPDATE"]
    for op in run:
        op["operation"], op["return_codes"] = "READ-MODIFY-WRITE", {}
    s = summarize(experiment(tables))
    assert s.loading_per_connection["[INSERT].Return=OK"].sum() == sum(o["count"] for o in load)
    assert s.execution_per_phase["[READ-MODIFY-WRITE].Return=OK"].isna().all()


def test_a_read_modify_write_counts_once_as_in_ycsbs_throughput(tables):
    """Workload F: READ and UPDATE hold the read-modify-writes' parts too, so the composite weighs -1."""
    for r in tables["shard_results"]:  # a window, so that throughput is a figure
        r["first_op_at"], r["last_op_at"] = r["started_at"], r["ended_at"]
    s = summarize(experiment(tables))
    before = s.execution_per_phase.iloc[0][ycsb.WINDOW_THROUGHPUT]
    run = [o for o in tables["shard_operations"] if o["phase"] == RUN and o["operation"] == "UPDATE"]
    assert run
    for o in run:  # every update was a read-modify-write's: as many of them, and as many more reads
        rmw = {**o, "operation": "READ-MODIFY-WRITE", "return_codes": {}}
        tables["shard_operations"].append(rmw)
        read = next(
            r
            for r in tables["shard_operations"]
            if r["phase"] == RUN and r["shard"] == o["shard"] and r["operation"] == "READ"
        )
        read["count"] += o["count"]
        read["return_codes"] = {"OK": read["count"]}
    s = summarize(experiment(tables))
    row = s.execution_per_phase.iloc[0]
    # YCSB's count: the standalone reads and the read-modify-writes, once each, as before.
    assert row[ycsb.WINDOW_THROUGHPUT] == pytest.approx(before)
    assert row[ycsb.ERROR_SHARE] == 0
    # Everything failed (a SUT that is down): each read-modify-write's read and update are two failed
    # blocks' operations, yet no more failed than executed: 100 %, goodput 0, never below.
    for o in tables["shard_operations"]:
        if o["phase"] == RUN and o["operation"] in ("READ", "UPDATE"):
            o["operation"], o["return_codes"] = o["operation"] + "-FAILED", {}
    row = summarize(experiment(tables)).execution_per_phase.iloc[0]
    assert row[ycsb.ERROR_SHARE] == 100 and row[ycsb.GOODPUT] == 0


def test_simulated_phase_is_said_plainly_and_fails_the_tests(tables):
    # kwok: the scheduler records the driver Job's shards as simulated, no operations.
    reason = "simulated on kwok: the driver pods did not run YCSB, no measurements (driver Job bq-x)"
    for r in tables["shard_results"]:
        if r["phase"] == RUN:
            r.update(status="simulated", error=reason, runtime_ms=0, throughput=0, threads=0, target=0)
    tables["shard_operations"] = [o for o in tables["shard_operations"] if o["phase"] != RUN]
    s = summarize(experiment(tables))
    assert any(n.startswith(f"Phase {RUN} was simulated, not measured: {reason}") for n in s.workflow.notes)
    assert not any("failed" in n for n in s.workflow.notes)
    assert not _test(s, "execution_throughput").passed


def test_missing_percentile_stays_nan(tables):
    for op in tables["shard_operations"]:
        if op["operation"] == "UPDATE":
            op["p99_us"] = None
    phase = summarize(experiment(tables)).execution_per_phase.iloc[0]
    assert math.isnan(phase["[UPDATE].99thPercentileLatency(us)"])
    assert phase["[UPDATE].Return=OK"] == 100207


def test_failed_shard_is_an_exception_and_fails_the_tests(tables):
    """A shard without the driver's summary: its runtime and rate are missing, as is the phase's sum.

    The collector stores both as NULL (a shard stopped or killed before YCSB printed its summary).
    """
    shard = tables["shard_results"][2]
    shard.update(status="failed", error="ycsb exited 1", runtime_ms=None, throughput=None)
    tables["shard_operations"] = [o for o in tables["shard_operations"] if o["phase"] != RUN]
    s = summarize(experiment(tables))
    assert s.execution_per_connection.iloc[0]["exceptions"] == 1
    assert math.isnan(s.execution_per_connection.iloc[0][THROUGHPUT])
    assert math.isnan(s.execution_per_phase.iloc[0][THROUGHPUT])
    assert math.isnan(s.execution_per_phase.iloc[0]["[OVERALL].RunTime(ms)"])
    assert not _test(s, "execution_throughput").passed
    assert not _test(s, "no_failed").passed
    assert f"Shard {RUN}-1 failed: ycsb exited 1 (attempt 1, agent agent-vm-1)" in s.workflow.notes
    # The empty Per Phase row says why, under the table.
    assert any(n.startswith(f"{RUN}: no shard printed YCSB's summary") for n in s.notes["execution_per_phase"])


def rerun_tables():
    """The benchmarking phase failed once (attempt 1) and was re-run (attempt 2)."""
    tables = load_tables()
    ok = next(r for r in tables["shard_results"] if r["phase"] == RUN)
    phase = next(p for p in tables["phases"] if p["phase"] == RUN)
    failed_phase = {
        **phase,
        "status": "failed",
        "reason": "shard 1 failed: connection reset",
        "started_at": "2026-03-02T10:00:11.000Z",
        "ended_at": "2026-03-02T10:00:12.000Z",
    }
    phase.update(attempt=2, started_at="2026-03-02T10:00:13.300Z", ended_at="2026-03-02T10:00:18.700Z")
    failed = {
        **ok,
        "attempt": 1,
        "status": "failed",
        "error": "connection reset by peer",
        "runtime_ms": 812.0,
        "throughput": 24012.5,
        "message_id": f"ycsb-redis-1.{RUN}.1.1.final",
    }
    ok.update(
        attempt=2,
        message_id=f"ycsb-redis-1.{RUN}.1.2.final",
        started_at="2026-03-02T10:00:13.305Z",
        ended_at="2026-03-02T10:00:18.612Z",
    )
    partial = []
    for op in tables["shard_operations"]:
        if op["phase"] == RUN:
            op["attempt"] = 2
            if op["operation"] != "CLEANUP":
                partial.append({**op, "attempt": 1, "count": 9000, "return_codes": {"OK": 9000}})
    tables["phases"].append(failed_phase)
    tables["shard_results"].append(failed)
    tables["shard_operations"] += partial
    tables["experiments"][0]["ended_at"] = "2026-03-02T10:00:22Z"
    return tables


def test_rerun_reports_the_ok_attempt_once(golden):
    s = summarize(experiment(rerun_tables()))
    phase = s.execution_per_phase.iloc[0]
    assert len(s.execution_per_connection) == 1
    assert phase["benchmark_run"] == 2
    assert phase["[READ].Return=OK"] == 99793  # attempt 1's 9000 not added
    assert phase[THROUGHPUT] == pytest.approx(37686.074995289244)
    assert f"Phase {RUN} was re-run: its results are from attempt 2" in s.workflow.notes
    assert f"Phase {RUN} failed in attempt 1: shard 1 failed: connection reset" in s.workflow.notes
    assert _test(s, "workflow").passed
    golden("summary-rerun.md", render.markdown(s))


def test_running_experiment_without_results_prints_no_data(tables, golden):
    only = {"experiments": tables["experiments"]}
    only["experiments"][0].update(status="running", ended_at=None)
    s = summarize(experiment(only))
    md = render.markdown(s)
    assert "* Duration: running" in md
    assert md.count("(no data)") == 7  # Connections, the four tables and the two latency tables
    assert not _test(s, "loading_throughput").passed
    # Nothing ran: the tests of failed operations do not pass unmeasured.
    for id in ("no_failed", "loading_errors", "execution_errors"):
        assert not _test(s, id).passed, id
    assert "TEST failed: Execution Phase: no phase ran" in md
    golden("summary-running.md", md)


def test_tests_section_only_when_requested(tables):
    tables["experiments"][0]["plan"]["settings"]["test_results"] = False
    md = render.markdown(summarize(experiment(tables)))
    assert "### Tests" not in md
    assert md.endswith("To see the summary again run: reporter summary -e ycsb-redis-1\n")


def test_hints_name_the_command_typed(tables):
    """`benchq summary` runs the reporter with BENCHQ_CLI=benchq (cli.main): the user never typed `reporter`."""
    md = render.markdown(summarize(experiment(tables)), "benchq")
    assert md.endswith("To see the summary again run: benchq summary -e ycsb-redis-1\n")


def test_repetitions_are_planned_per_run(tables):
    plan = tables["experiments"][0]["plan"]
    plan["settings"]["repetitions"] = 2
    second = json.loads(json.dumps(plan["configurations"][0]).replace("65536-1", "65536-2"))
    second["experiment_run"] = 2
    plan["configurations"].append(second)
    s = summarize(experiment(tables))
    assert s.workflow.planned == {"Redis-8-2-65536": [[1], [1]]}
    assert s.workflow.actual == {"Redis-8-2-65536": [[1], []]}
    assert not _test(s, "workflow").passed
    assert "  * Experiment is run 2 times." in render.markdown(s)


def test_json_format_has_the_tables_as_records(tables):
    doc = json.loads(render.json_document(summarize(experiment(tables))))
    run = doc["loading"]["per_run"][0]
    assert run["DBMS"] == "Redis-8-2-65536-1"
    assert run[THROUGHPUT] == pytest.approx(18479.559589838427)
    assert doc["execution"]["per_connection"][0]["[READ].Return=OK"] == 99793
    assert doc["execution"]["per_connection"][0]["[READ].99thPercentileLatency(us)"] == 467.0
    assert doc["tests_passed"] is True
    assert doc["workload"]["duration_s"] == 19.0


def test_workload_says_what_bexhoma_says(tables):
    """bexhoma's lines on monitoring, placement, storage and pooling, in its
    order (experiments/base.py); what was not applied; the estimate beside
    the duration."""
    plan = tables["experiments"][0]["plan"]
    plan["estimated_s"] = 19.6
    plan["settings"].update(
        monitoring={"sut": True, "cluster": True, "application": True},
        nodes={"sut": "cl-worker20", "loading": "cl-worker13", "benchmarking": "cl-worker13"},
        storage={"class": "shared", "size": "50Gi", "remove": True},
        pool_pods=[4],
        pool_inbound=[128],
        pool_outbound=[64],
        notes=["-rnn, -rnl, -rnb ignored: the local backend runs everything on this machine"],
    )
    for row in tables["configurations"]:
        row["backend"] = "kubernetes"
    md = render.markdown(summarize(experiment(tables)))
    lines = [line.strip() for line in md.split("\n")]
    want = [
        "* Experiment uses benchq version dev.",
        "* System metrics are monitored by a cluster-wide installation.",
        "* Application metrics are monitored by sidecar containers.",
        "* Experiment is limited to DBMS ['Redis'].",
        "* Import is handled by 2 processes (pods).",
        "* Loading is fixed to cl-worker13.",
        "* Benchmarking is fixed to cl-worker13.",
        "* SUT is fixed to cl-worker20.",
        "* Database is persisted to disk of type shared and size 50Gi. Persistent storage is removed at experiment start.",
        "* Loading is tested with [8] threads, split into [2] pods.",
        "* Benchmarking is tested with [8] threads, split into [1] pods.",
        "* Pooling is done with [4] pods having [128] inbound and [64] outbound connections in total.",
        "* Benchmarking is run as [1] times the number of benchmarking pods.",
        "* Experiment is run once.",
        "* -rnn, -rnl, -rnb ignored: the local backend runs everything on this machine.",
    ]
    start = lines.index(want[0])
    assert lines[start : start + len(want)] == want
    assert any(line.startswith("* Duration: ") and line.endswith("s (estimated 20s)") for line in lines), md
    # On the local backend the SUT's monitors are processes, not sidecars.
    for row in tables["configurations"]:
        row["backend"] = "local"
    plan["settings"]["monitoring"] = {"sut": True, "application": True}
    md = render.markdown(summarize(experiment(tables)))
    assert "  * System metrics are monitored by the deployer's process exporter." in md
    assert "  * Application metrics are monitored by exporter processes beside the SUT." in md
    # A local volume is a directory: no size claimed (the notes say -rss was ignored).
    assert (
        "  * Database is persisted to a volume of type shared. Persistent storage is removed at experiment start." in md
    )


def test_connections_list_workers_args_and_resources(tables):
    """bexhoma's Connections: the image on Kubernetes, args, requests and
    limits, a block per cluster worker; a local server's version names its
    product once."""
    row = tables["configurations"][0]
    row["dbms"] = "RedisCluster"
    row["info"] = {
        "version": "Redis 7.0.15",
        "RAM": 1,
        "args": ["--appendonly", "yes"],
        "requests_cpu": "4",
        "limits_memory": "64Gi",
        "workers": 3,
        "worker_replicas": 1,
        "nodes": "127.0.0.1:1,127.0.0.1:2",
        "worker_nodes": [
            {"worker": 0, "addr": "127.0.0.1:1", "pid": 11, "role": "master", "slots": "0-8191"},
            {"worker": 1, "addr": "127.0.0.1:2", "pid": 12, "role": "replica", "master": "127.0.0.1:1"},
        ],
    }
    md = render.markdown(summarize(experiment(tables)))
    start = md.index("### Connections")
    want = """### Connections
* Redis-8-2-65536-1 uses RedisCluster (Redis 7.0.15)
  * RAM:1
  * args:["--appendonly","yes"]
  * requests_cpu:4
  * limits_memory:64Gi
  * worker_replicas:1
  * workers:3
  * worker 0
    * addr:127.0.0.1:1
    * role:master
    * slots:0-8191
    * pid:11
  * worker 1
    * addr:127.0.0.1:2
    * role:replica
    * master:127.0.0.1:1
    * pid:12
  * eval_parameters
"""
    assert md[start : start + len(want)] == want
    row["info"] = {"version": "7.0.15", "image": "redis:7.0.15"}
    assert "* Redis-8-2-65536-1 uses docker image redis:7.0.15\n" in render.markdown(summarize(experiment(tables)))


def test_thresholds_are_result_tests(tables):
    """-threshold: each bound is a test over every benchmarking phase, naming the figure, the limit
    and the measured value; latency from the phase's merged figures; a missing figure fails."""
    tables["experiments"][0]["plan"]["settings"]["thresholds"] = [
        {"text": "p99<1ms", "figure": "p99", "op": "<", "value": 1000},
        {"text": "p99[READ]<400us", "figure": "p99", "operation": "READ", "op": "<", "value": 400},
        {"text": "goodput>=0.95*target", "figure": "goodput", "op": ">=", "value": 0.95, "of_target": True},
        {"text": "error_share<0.1%", "figure": "error_share", "op": "<", "value": 0.1},
    ]
    s = summarize(experiment(tables))
    got = {t.id: (t.passed, t.text) for t in s.tests if t.id.startswith("threshold_")}
    assert got == {
        "threshold_0": (
            True,
            "Threshold p99<1ms met in every benchmarking phase (closest: Redis-8-2-65536-1-1 READ, 467 µs)",
        ),
        "threshold_1": (
            False,
            "Threshold p99[READ]<400us not met (Redis-8-2-65536-1-1 READ: p99 467 µs, limit < 400 µs)",
        ),
        "threshold_2": (False, "Threshold goodput>=0.95*target not met (Redis-8-2-65536-1-1: goodput missing)"),
        "threshold_3": (
            True,
            "Threshold error_share<0.1% met in every benchmarking phase (closest: Redis-8-2-65536-1-1, 0 %)",
        ),
    }
    assert not s.tests_passed
    assert "* TEST failed: Threshold p99[READ]<400us not met" in render.markdown(s)
    # An unthrottled phase (an experiment planned before -xtb 0 was refused with it) has no target to compare with.
    for r in tables["shard_results"]:
        r["first_op_at"], r["last_op_at"], r["target"] = r["started_at"], r["ended_at"], 0
    s = summarize(experiment(tables))
    t = next(t for t in s.tests if t.id == "threshold_2")
    assert not t.passed and "(unthrottled, no target): goodput missing" in t.text, t.text


def test_repetitions_give_mean_std_and_ci(tables):
    """-nc 2: each figure's mean, sample std and Student's 95 % interval over the repetitions."""
    plan = tables["experiments"][0]["plan"]
    plan["settings"]["repetitions"] = 2
    second = json.loads(json.dumps(plan["configurations"][0]).replace("65536-1", "65536-2"))
    second["experiment_run"] = 2
    plan["configurations"].append(second)
    for name in ("configurations", "phases", "shard_results", "shard_operations"):
        for row in list(tables[name]):
            copy = json.loads(json.dumps(row).replace("65536-1", "65536-2"))
            if name == "configurations":
                copy["experiment_run"] = 2
            if name == "shard_results":
                copy["throughput"] = row["throughput"] * 1.1
            if name == "shard_operations" and row.get("p99_us") is not None:
                copy["p99_us"] = row["p99_us"] * 2
            tables[name].append(copy)
    s = summarize(experiment(tables))
    r = s.repetitions.set_index(["phase", "figure"])
    one = s.execution_per_phase[ycsb.THROUGHPUT].iloc[0]
    got = r.loc[("benchmarking 1", ycsb.THROUGHPUT)]
    values = [one, one * 1.1]
    mean = sum(values) / 2
    std = math.sqrt(sum((v - mean) ** 2 for v in values))  # n - 1 = 1
    half = 12.706 * std / math.sqrt(2)
    assert got["DBMS"] == "Redis-8-2-65536" and got["n"] == 2
    assert math.isclose(got["mean"], mean) and math.isclose(got["std"], std)
    assert math.isclose(got["ci95 low"], mean - half) and math.isclose(got["ci95 high"], mean + half)
    p99 = r.loc[("benchmarking 1", "[READ].99thPercentileLatency(us)")]
    assert math.isclose(p99["mean"], 467 * 1.5)
    assert ("loading", ycsb.THROUGHPUT) in r.index
    md = render.markdown(s)
    assert "### Across Repetitions" in md and "Student's t" in md


def test_t975_beyond_the_table_is_within_a_thousandth():
    """Past 30 degrees of freedom t(0.975, df) is expanded, not the normal's 1.96 (exact values from R's qt)."""
    from benchq_reporter.summary.repetitions import t975

    assert t975(30) == 2.042
    for df, exact in {31: 2.0395, 39: 2.0227, 60: 2.0003, 120: 1.9799, 1000: 1.9623}.items():
        assert abs(t975(df) - exact) < 0.001, df


def test_workload_is_the_seeds(tables):
    """The Workload section of bexhoma's PgBouncer YCSB example (bexhoma-pgbouncer-benchbase.txt,
    tests/golden/seed-pgbouncer-ycsb-workload.md) from the same settings, line for line. What
    differs is listed: the measured lines (duration, code), the tool's name and version,
    benchq's Status line, and the DBMS as the catalog spells it (bexhoma keeps the user's)."""
    seed = (GOLDEN / "seed-pgbouncer-ycsb-workload.md").read_text().rstrip("\n").splitlines()
    plan = tables["experiments"][0]["plan"]
    plan["recordcount"] = plan["operationcount"] = 16_000_000
    plan["settings"].update(
        sf=16,
        workload="c",
        target_base=16384,
        loading_factors=[11],
        benchmarking_factors=[11],
        loading_pods=[16],
        loading_threads=[64],
        benchmarking_pods=[16],
        benchmarking_threads=[128],
        clients=[1],
        repetitions=1,
        dbms=["PgBouncer"],
        batch_size=None,
        monitoring={"sut": True, "cluster": True},
        nodes={"sut": "cl-worker14", "loading": "cl-worker19", "benchmarking": "cl-worker19"},
        pool_pods=[4],
        pool_inbound=[128],
        pool_outbound=[64],
    )
    for row in tables["configurations"]:
        row["backend"] = "kubernetes"  # where the seed ran: its monitoring lines are bexhoma's
    ours = render.workload_lines(summarize(experiment(tables)))[1:]  # without "### Workload"
    differs = {
        "* Duration: 1917s ": "* Duration: ",
        "* Code: 1773394772": "* Code: ",
        "  * Experiment uses bexhoma version 0.9.3.": "  * Experiment uses benchq version ",
        "  * Experiment is limited to DBMS ['PGBouncer'].": "  * Experiment is limited to DBMS ['PgBouncer'].",
    }
    ours = [line for line in ours if not line.startswith("* Status: ")]
    assert len(ours) == len(seed), "\n".join(ours)
    for want, got in zip(seed, ours, strict=True):
        assert got.startswith(differs.get(want, want)), (want, got)


def test_error_share_not_measured_fails_the_test():
    # A loading phase whose shards failed before they stored an operation has no error share: the
    # test names it and fails, rather than passing it unmeasured (a test that could not fail).
    from benchq_reporter.summary.checks import error_share

    per_run = pd.DataFrame({"DBMS": ["pgb-16-1-4-2-1", "pgb-16-1-8-2-1"], ycsb.ERROR_SHARE: [float("nan"), 0.0]})
    t = error_share("loading_errors", "Loading Phase", per_run, "DBMS", 1.0)
    assert not t.passed
    assert t.text == "Loading Phase: failed operations not measured in pgb-16-1-4-2-1 (no operations stored)"
    t = error_share("loading_errors", "Loading Phase", per_run.iloc[1:], "DBMS", 1.0)
    assert t.passed


def test_status_reason_is_shortened_to_its_first_line():
    trace = "driver exited before READY (exit status 1): FATAL: no more connections allowed\n" + "\tat x.y\n" * 40
    short = render.short_reason(trace)
    assert short.startswith(
        "driver exited before READY (exit status 1): FATAL: no more connections allowed … (shortened"
    )
    assert "\n" not in short
    assert render.short_reason("SUT failed: port in use") == "SUT failed: port in use"
    assert render.short_reason("SUT failed: port in use\n") == "SUT failed: port in use"  # nothing cut: not marked
    assert len(render.short_reason("x" * 1000)) < 340


def test_monitoring_lines_say_what_monitors_where_the_suts_ran(tables):
    """bexhoma's words on Kubernetes; on the local backend what monitors there (no sidecars, no
    cluster-wide installation); where no SUT came up (the backend unknown), only what was
    monitored."""
    from benchq_reporter.summary.workload import Settings, monitoring_lines

    s = Settings.__new__(Settings)
    object.__setattr__(s, "monitoring", {"sut": True, "cluster": True, "application": True})
    kube, local, unknown = (monitoring_lines(s, b) for b in ("kubernetes", "local", None))
    assert kube == [
        "System metrics are monitored by a cluster-wide installation.",
        "Application metrics are monitored by sidecar containers.",
    ]
    assert not any("sidecar" in line or "cluster-wide" in line for line in local + unknown), local + unknown
    assert unknown == ["System metrics are monitored.", "Application metrics are monitored."]


def test_a_load_only_experiment_passes_its_execution_tests():
    """Action load plans no benchmarking phase: the execution tests say there was nothing to test (they
    failed a load that went well: "no phase ran")."""
    tables = load_tables()
    for c in tables["experiments"][0]["plan"]["configurations"]:
        c["phases"] = [p for p in c["phases"] if p["kind"] == "load"]
    runs = {p["phase"] for p in tables["phases"] if p["kind"] == "run"}
    for name in ("phases", "shard_results", "shard_operations"):
        tables[name] = [r for r in tables[name] if r["phase"] not in runs]
    s = summarize(experiment(tables))
    t = _test(s, "execution_throughput")
    assert t.passed and "nothing to test" in t.text
    assert [x.text for x in s.tests if not x.passed] == []
    md = render.markdown(s)
    assert "  * Benchmarking: none planned (action load)." in md and "Benchmarking is tested with" not in md
