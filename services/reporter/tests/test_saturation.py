"""The Saturation section (-xsat): steps as the scheduler judged them."""

from __future__ import annotations

from typing import Any

from rows import experiment, load_tables

from benchq_reporter.summary import render, summarize

CFG = "Redis-8-2-65536-1"


def step(
    n: int,
    phase: str,
    offered: int,
    goodput: float,
    verdict: str,
    role: str = "step",
    knee: dict[str, Any] | None = None,
    p99: float | None = 1.5,
) -> dict[str, Any]:
    return {
        "configuration": CFG,
        "phase": phase,
        "attempt": 1,
        "step": n,
        "role": role,
        "offered": offered,
        "shards": 1,
        "threads": 8,
        "steady_from": "2026-11-20T10:00:03Z",
        "steady_to": "2026-11-20T10:00:20Z",
        "seconds": 17,
        "achieved": goodput,
        "goodput": goodput,
        "error_share": 0.0,
        "p95_ms": 1.0,
        "p99_ms": p99,
        "cv": 1.2,
        "worst_second": goodput * 0.97,
        "busy": 20.0,
        "verdict": verdict,
        "why": "w",
        "next": "n",
        "knee": knee,
    }


def saturation_tables() -> dict[str, list[dict[str, Any]]]:
    """ycsb-redis.json with a search: run1 (planned) passed, run2 (added by the search) failed, run3 held the knee."""
    tables = load_tables()
    run = tables["phases"][-1]
    for k in (2, 3):
        tables["phases"].append({**run, "phase": f"{CFG}-{k}"})
    knee = {"offered": 2000, "goodput": 1990.0, "sustained": 1990.0, "p99_ms": 1.5, "step": 1, "first_bad": 4000}
    tables["saturation_steps"] = [
        step(1, f"{CFG}-1", 2000, 1990.0, "pass"),
        step(2, f"{CFG}-2", 4000, 2600.0, "fail", p99=None),
        step(3, f"{CFG}-3", 2000, 1985.0, "stable", role="hold", knee=knee),
    ]
    return tables


def test_the_search_extends_the_plan():
    data = experiment(saturation_tables())
    names = [p.name for p in data.plan.phases]
    assert names == [f"{CFG}-0", f"{CFG}-1", f"{CFG}-2", f"{CFG}-3"]
    assert [p.client for p in data.plan.phases] == [0, 1, 2, 3]
    # The phases the search added were planned by it: the workflow is as planned.
    assert summarize(data).workflow.as_planned()


def test_the_saturation_section():
    s = summarize(experiment(saturation_tables()))
    md = render.markdown(s)
    assert "### Saturation" in md
    assert (
        f"* {CFG}: maximum sustainable throughput 1,990 ops/s (offered 2,000 ops/s, step 1, p99 1.50 ms); "
        "the first failing load: 4,000 ops/s"
    ) in md
    assert (
        f"* {CFG}: stable — 2,000 ops/s offered for 17 s: goodput 1,985 ops/s, CV 1.2 %, worst second 1,925 ops/s" in md
    )
    steps = s.saturation.steps
    assert list(steps["verdict"]) == ["pass", "fail", "stable"]
    # Not measured: missing, never 0.
    assert steps["p99 [ms]"].isna().tolist() == [False, True, False]
    assert steps["SUT CPU [s]"].isna().all()


def test_no_search_no_section():
    s = summarize(experiment(load_tables()))
    assert not s.saturation
    assert "### Saturation" not in render.markdown(s)


def test_the_saturation_plots():
    """Goodput against the offered load and p99 against goodput, a point per step (the hold left out)."""
    from benchq_reporter.outputs import report

    s = summarize(experiment(saturation_tables()))
    made, missing = report._saturation({}, s)
    try:
        assert [p.slug for p in made] == ["saturation-throughput", "saturation-latency"] and missing == ""
        points = sorted(tuple(o) for c in made[0].figure.axes[0].collections for o in c.get_offsets())
        assert points == [(2000.0, 1990.0), (4000.0, 2600.0)]
        # The failed step has no p99: one point, never a 0.
        assert sum(len(c.get_offsets()) for c in made[1].figure.axes[0].collections) == 1
    finally:
        report.close(made)


def test_repetitions_say_whether_their_knees_agree():
    """-nc 2: each repetition searches; the summary says whether their knees agree within the precision."""
    from benchq_reporter.summary.saturation import agreement_line

    assert agreement_line("Redis-4-1-500", [4866.0, 4789.0], 5) == (
        "Redis-4-1-500: the 2 repetitions' knees (4,866, 4,789 ops/s) differ by 1.6 %: they agree within the 5 % precision"
    )
    assert "do NOT agree within the 5 % precision" in agreement_line("PostgreSQL-4-1-500", [72000.0, 67287.0], 5)
    # One repetition: nothing to compare.
    assert summarize(experiment(saturation_tables())).saturation.agreement == []
