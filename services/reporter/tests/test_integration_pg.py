"""The command against a real PostgreSQL holding the collector's schema.

The same fixture rows as the pure tests go into the database, so the
summary read back must equal the same golden file: the SQL path adds
nothing and loses nothing.
"""

from __future__ import annotations

import io
import json

import psycopg
import pytest
from rows import MONITORED, insert, load_tables, monitored_tables

from benchq_reporter.cli import main

CODE = "ycsb-redis-1"


def run(url, *argv):
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), {"BENCHQ_DB_URL": url}, out, err)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def db(postgres_url):
    """The database with the clean experiment and one whose loading shard reported 0 ops/s."""
    insert(postgres_url, load_tables())
    broken = load_tables()
    broken["experiments"][0]["code"] = "ycsb-redis-broken"
    broken["shard_results"][0]["throughput"] = 0.0
    insert(postgres_url, broken)
    insert(postgres_url, load_tables("ycsb-redis-hdr.json"))
    insert(postgres_url, monitored_tables())
    return postgres_url


def test_summary_from_the_database_equals_the_golden(db, golden):
    status, out, err = run(db, "summary", "-e", CODE)
    assert (status, err) == (0, "")
    golden("summary-redis.md", out)


def test_summary_with_histograms_from_the_database_equals_the_golden(db, golden):
    """Histograms, percentiles and windows survive the collector's schema (migration 0002)."""
    status, out, err = run(db, "summary", "-e", "fx-redis-d")
    assert (status, err) == (0, "")
    golden("summary-redis-hdr.md", out)


def test_unknown_code(db):
    status, out, err = run(db, "summary", "-e", "nope")
    assert (status, out) == (1, "")
    assert err == "reporter: no experiment with code 'nope' in the results database (list them with: reporter list)\n"


def test_hints_through_benchq(db):
    """benchq runs the reporter with BENCHQ_CLI=benchq: the hints name benchq."""
    env = {"BENCHQ_DB_URL": db, "BENCHQ_CLI": "benchq"}
    out, err = io.StringIO(), io.StringIO()
    assert main(["summary", "-e", "nope"], env, out, err) == 1
    assert err.getvalue().endswith("(list them with: benchq list)\n")
    out, err = io.StringIO(), io.StringIO()
    assert main(["summary", "-e", CODE], env, out, err) == 0
    assert out.getvalue().endswith(f"To see the summary again run: benchq summary -e {CODE}\n")


def test_list(db):
    status, out, err = run(db, "list")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    header = [c.strip() for c in lines[0].split("|")[1:-1]]
    assert header == ["code", "status", "planned_at", "duration_s", "configurations", "dbms"]
    row = next(line for line in lines if "| ycsb-redis-1 " in line)
    assert [c.strip() for c in row.split("|")[1:-1]] == [
        "ycsb-redis-1",
        "done",
        "2026-03-02T10:00:00Z",
        "19",
        "1",
        "Redis",
    ]


def test_tests_exit_status(db):
    status, out, err = run(db, "tests", "-e", CODE)
    assert (status, err) == (0, "")
    assert out.startswith("### Tests\n* TEST passed: Loading Phase")
    status, out, _ = run(db, "tests", "-e", "ycsb-redis-broken")
    assert status == 1
    assert "* TEST failed: Loading Phase: [OVERALL].Throughput(ops/sec) contains 0 or NaN" in out


def test_summary_fail_on_tests(db):
    """benchq run's --fail-on-tests: the summary is printed either way; exit 1 names the failed test."""
    status, out, err = run(db, "summary", "-e", CODE, "--fail-on-tests")
    assert (status, err) == (0, "") and "### Tests" in out
    status, out, err = run(db, "summary", "-e", "ycsb-redis-broken", "--fail-on-tests")
    assert status == 1 and "### Tests" in out
    assert err == (
        "reporter: 1 result test(s) failed (-tr): Loading Phase: [OVERALL].Throughput(ops/sec) contains 0 or NaN\n"
    )
    status, _, err = run(db, "summary", "-e", "ycsb-redis-broken")
    assert (status, err) == (0, "")


def test_summary_json(db):
    status, out, _ = run(db, "summary", "-e", CODE, "--format", "json")
    assert status == 0
    doc = json.loads(out)
    assert doc["execution"]["per_phase"][0]["[UPDATE].Return=OK"] == 100207
    assert doc["connections"][0]["info"]["RAM"] == 25276514304


def test_database_without_the_schema(postgres_url):
    status, out, err = run(postgres_url.rsplit("/", 1)[0] + "/postgres", "list")
    assert (status, out) == (1, "")
    assert err.startswith("reporter: cannot read the results database at postgresql://benchq@")
    assert 'relation "experiments" does not exist' in err


def test_summary_with_monitoring_from_the_database_equals_the_golden(db, golden):
    """metric_summaries rows (NULL values with their reasons, a 0) read back through the one SELECT."""
    with psycopg.connect(db) as conn:
        stored = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE value IS NULL) FROM metric_summaries WHERE code = %s", (MONITORED,)
        ).fetchone()
    assert stored == (len(monitored_tables()["metric_summaries"]), 2)
    status, out, err = run(db, "summary", "-e", MONITORED)
    assert (status, err) == (0, "")
    golden("summary-redis-monitoring.md", out)
    status, out, _ = run(db, "tests", "-e", MONITORED)
    assert status == 1  # the benchmarker's 0 CPU seconds
    assert "* TEST failed: Execution phase: component benchmarker contains 0 or NaN in CPU [CPUs]" in out
    status, out, _ = run(db, "summary", "-e", MONITORED, "--format", "json")
    loader = json.loads(out)["monitoring"]["system"][1]
    assert loader["rows"][0]["Max RAM Cached [Gb]"] is None and loader["rows"][0]["CPU [CPUs]"] == 8.95


def test_a_database_before_metric_summaries_still_reads(db, golden):
    """A results database the collector has not migrated to 0004 yet: the summary as before."""
    old = db.rsplit("/", 1)[0] + "/benchq_0003"
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("CREATE DATABASE benchq_0003 TEMPLATE benchq")
    with psycopg.connect(old, autocommit=True) as conn:
        conn.execute("DROP TABLE metric_summaries")
    status, out, err = run(old, "summary", "-e", CODE)
    assert (status, err) == (0, "")
    golden("summary-redis.md", out)
