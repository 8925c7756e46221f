"""reporter compare: phases of several experiments side by side, with ratios to the first."""

from __future__ import annotations

import io
import math

import pandas as pd
import pytest
from rows import frames_tables, insert, load_tables

from benchq_reporter.cli import main
from benchq_reporter.outputs import compare


@pytest.fixture(scope="module")
def db(postgres_url):
    for code in ("cmp-a", "cmp-b"):
        tables = frames_tables()  # monitored with -m -mc -ma
        tables["experiments"][0]["code"] = code
        insert(postgres_url, tables)
    plain = load_tables()  # the same run, not monitored
    plain["experiments"][0]["code"] = "cmp-plain"
    insert(postgres_url, plain)
    tsdb = load_tables()  # YCSB-shaped phases, as benchmark tsdb's are
    tsdb["experiments"][0]["code"] = "cmp-tsdb"
    tsdb["experiments"][0]["plan"]["settings"]["benchmark"] = "tsdb"
    insert(postgres_url, tsdb)
    return postgres_url


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), {}, out, err), out.getvalue(), err.getvalue()


def test_the_same_run_twice_compares_at_one(db):
    status, out, err = run("compare", "--db", db, "-e", "cmp-a", "-e", "cmp-b")
    assert status == 0, err
    rows = [line for line in out.splitlines() if line.startswith("| cmp-")]
    assert len(rows) == 2
    cells = [c.strip() for c in rows[1].strip("|").split("|")]
    # experiment, phase, then each figure and its ratio
    assert cells[0] == "cmp-b" and cells[3::2] == ["1.000"] * 4, cells


def test_a_figure_that_was_not_measured_is_missing_not_zero(db):
    status, out, err = run("compare", "--db", db, "-e", "cmp-a", "-e", "cmp-plain")
    assert status == 0, err
    plain = next(line for line in out.splitlines() if line.startswith("| cmp-plain"))
    cells = [c.strip() for c in plain.strip("|").split("|")]
    assert cells[-2:] == ["missing", "missing"], cells  # SUT CPU per 1M ops and its ratio
    assert cells[3] == "1.000"


def test_ratios_are_to_the_phase_of_the_same_name():
    """bexhoma's phase names carry the configuration: a grid of other lists pairs its phases by name."""
    a = pd.DataFrame({"experiment": "a", "phase": ["Redis-1-1", "Redis-2-1"], "throughput": [100.0, 200.0]})
    b = pd.DataFrame({"experiment": "b", "phase": ["Redis-2-1", "Redis-3-1"], "throughput": [300.0, 50.0]})
    for df in (a, b):
        df["p95_us"], df["p99_us"], df["cpu_per_mops"], df["dbms"] = 1.0, 1.0, 1.0, "Redis"
    table = compare.compare([a, b])
    got = table.set_index(["experiment", "phase"])
    assert got.loc[("b", "Redis-2-1"), "throughput_ratio"] == 1.5  # with a's Redis-2-1, not a's first phase
    assert math.isnan(got.loc[("b", "Redis-3-1"), "throughput_ratio"])
    assert compare.pairing_notes(table) == [
        "* b is compared with the baseline's phase of the same name; 1 of its phases have none "
        "(their × is missing: Redis-3-1); 1 of the baseline's have no partner in it."
    ]


def test_ratios_are_to_the_phase_at_the_same_position_without_a_name_in_common():
    a = pd.DataFrame(
        {
            "experiment": "a",
            "phase": ["p1", "p2"],
            "throughput": [100.0, 200.0],
            "p95_us": [10.0, 20.0],
            "p99_us": [30.0, float("nan")],
            "cpu_per_mops": [4.0, 0.0],
        }
    )
    b = pd.DataFrame(
        {
            "experiment": "b",
            "phase": ["q1", "q2", "q3"],
            "throughput": [150.0, 100.0, 1.0],
            "p95_us": [5.0, 20.0, 1.0],
            "p99_us": [60.0, 1.0, 1.0],
            "cpu_per_mops": [2.0, 1.0, 1.0],
        }
    )
    a["dbms"], b["dbms"] = "Redis", ["Redis", "PgBouncer", "Redis"]
    table = compare.compare([a, b])
    got = table.set_index(["experiment", "phase"])
    assert got.loc[("b", "q1"), "throughput_ratio"] == 1.5
    assert got.loc[("b", "q1"), "p99_us_ratio"] == 2.0
    assert math.isnan(got.loc[("b", "q2"), "p99_us_ratio"])  # no baseline figure
    assert math.isnan(got.loc[("b", "q2"), "cpu_per_mops_ratio"])  # a 0 baseline gives no ratio
    assert math.isnan(got.loc[("b", "q3"), "throughput_ratio"])  # the baseline has no third phase
    # The pairing by position, and what it could not match, is said under the table.
    assert compare.pairing_notes(table) == [
        "* b is compared with the baseline's phase at the same position (no phase name in common); "
        "1 of its phases have none (their × is missing: q3).",
        "* b: 1 of its phases are compared with a phase of another DBMS (e.g. q2, PgBouncer, with p2, Redis).",
    ]
    assert compare.pairing_notes(compare.compare([a, a.assign(experiment="c")])) == []
    # A phase whose DBMS is not known is not said to be another's.
    assert compare.pairing_notes(compare.compare([a, a.assign(experiment="c", dbms=float("nan"))])) == []


def test_html_format(db):
    status, out, _ = run("compare", "--db", db, "-e", "cmp-a", "-e", "cmp-b", "--format", "html")
    assert status == 0 and out.startswith("<!DOCTYPE html>") and "<th>SUT CPU s per 1M ops</th>" in out


@pytest.mark.parametrize(
    "argv, status, says",
    [
        (["-e", "cmp-a"], 2, "two experiments or more"),
        (["-e", "cmp-a", "-e", "nope"], 1, "no experiment with code 'nope'"),
        (["-e", "cmp-a", "-e", "cmp-b", "-e", "cmp-a"], 2, "give each experiment once (cmp-a more than once)"),
        (
            ["-e", "cmp-a", "-e", "cmp-tsdb"],
            1,
            "experiment cmp-tsdb is a tsdb experiment: compare takes YCSB experiments",
        ),
    ],
)
def test_compare_errors(db, argv, status, says):
    got, _, err = run("compare", "--db", db, *argv)
    assert got == status and says in err
