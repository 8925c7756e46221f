"""The Ingest section of benchmark tsdb: sent against the database's own count."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from benchq_reporter.model import ExperimentData
from benchq_reporter.summary.tsdb import build_ingest

CFG = "VictoriaMetrics-4-1-0-1"
RUN = f"{CFG}-1"


def tables(
    readings: list[tuple[str, float, bool]], drained: bool = True, failed: int = 0
) -> dict[str, list[dict[str, Any]]]:
    """One benchmarking phase of 2 generators × 2 agents × 50 metrics (200 series, 1 s flush)."""
    plan = {
        "code": "t1",
        "settings": {
            "benchmark": "tsdb",
            "dbms": ["VictoriaMetrics"],
            "workload": "haggar",
            "tsdb": {"metrics": 50, "flush_interval_ms": 1000},
        },
        "configurations": [{"name": CFG, "phases": [{"name": RUN, "kind": "run", "client": 1, "pods": 2}]}],
    }
    shard = {
        "phase": RUN,
        "attempt": 1,
        "configuration": CFG,
        "kind": "run",
        "agent": "a",
        "status": "ok",
        "threads": 2,
        "started_at": "2026-11-26T10:00:00Z",
        "ended_at": "2026-11-26T10:00:10Z",
        "first_op_at": "2026-11-26T10:00:00Z",
        "last_op_at": "2026-11-26T10:00:10Z",
    }
    return {
        "experiments": [{"code": "t1", "plan": plan, "status": "done", "planned_at": "2026-11-26T09:59:00Z"}],
        "phases": [{"phase": RUN, "attempt": 1, "configuration": CFG, "kind": "run", "status": "done", "shards": 2}],
        "shard_results": [{**shard, "shard": 1}, {**shard, "shard": 2}],
        "shard_operations": [
            {"phase": RUN, "shard": 1, "attempt": 1, "operation": "WRITE", "count": 1000, "return_codes": {"OK": 1000}},
            {
                "phase": RUN,
                "shard": 1,
                "attempt": 1,
                "operation": "WRITE-FAILED",
                "count": failed,
                "return_codes": {"ERROR": failed},
            },
            {"phase": RUN, "shard": 2, "attempt": 1, "operation": "WRITE", "count": 1000, "return_codes": {"OK": 1000}},
            {"phase": RUN, "shard": 1, "attempt": 1, "operation": "QUERY", "count": 10, "return_codes": {"OK": 10}},
        ],
        "ingest_readings": [
            {
                "phase": RUN,
                "attempt": 1,
                "shard": 1,
                "at": at,
                "total": total,
                "after_end": after,
                "counter": 'vm_rows_inserted_total{type="graphite"}',
            }
            for at, total, after in readings
        ],
        "ingest_drains": [{"phase": RUN, "attempt": 1, "ended_at": "2026-11-26T10:00:10Z", "drained": drained}],
    }


def t(s: int, ms: int = 0) -> str:
    return (pd.Timestamp("2026-11-26T10:00:00Z") + pd.Timedelta(seconds=s, milliseconds=ms)).isoformat()


def test_ingest_keeps_up():
    # The counter starts at 200 (the loading phase's points), grows 200 a second, and settles at 2200.
    r = [(t(s), 200 + 200 * s, False) for s in range(10)] + [
        (t(10, 50), 2100, True),
        (t(10, 300), 2200, True),
        (t(11, 400), 2200, True),
    ]
    ing = build_ingest(ExperimentData.from_tables(tables(r)))
    row = ing.table.iloc[0]
    assert row["generators"] == 2 and row["agents"] == 4 and row["series"] == 200
    assert row["offered [points/s]"] == 200
    assert row["sent [points]"] == 2000 and row["sent [points/s]"] == 200
    assert row["ingested [points/s]"] == 200  # (2000 - 200) / 9 s
    assert row["stored [points]"] == 2000 and row["not stored [points]"] == 0
    assert row["backlog at end [points]"] == 100 and row["stored by the end [%]"] == 95
    assert math.isclose(row["drained after [s]"], 0.3)
    assert row["ingest CV [%]"] == 0
    assert any('vm_rows_inserted_total{type="graphite"}' in n for n in ing.notes)
    # A generator that reported no agents: the load offered is unknown, not 0.
    rows = tables(r)
    rows["shard_results"][0]["threads"] = None
    assert math.isnan(build_ingest(ExperimentData.from_tables(rows)).table.iloc[0]["offered [points/s]"])


def test_what_was_not_stored_or_not_read_is_missing_not_zero():
    # Overloaded: half is stored while the generators write, and it never settles.
    r = [(t(s), 100 * s, False) for s in range(10)] + [(t(10, 50), 1000, True), (t(40), 1900, True)]
    ing = build_ingest(ExperimentData.from_tables(tables(r, drained=False, failed=7)))
    row = ing.table.iloc[0]
    assert row["failed [points]"] == 7
    assert row["stored [points]"] == 1900
    assert pd.isna(row["not stored [points]"]) and pd.isna(row["drained after [s]"])
    assert any("still storing" in n for n in ing.notes)
    # Stopped (benchq stop) before the count settled: said so, not "still storing" nor "a generator failed".
    stopped = tables(r[:5], drained=False)
    stopped["experiments"][0]["status"] = "cancelled"
    stopped["shard_results"][0]["status"] = "failed"
    ing = build_ingest(ExperimentData.from_tables(stopped))
    assert any("stopped before the database's count settled" in n for n in ing.notes), ing.notes
    assert any("stopped (the experiment was cancelled)" in n for n in ing.notes), ing.notes
    assert not any("still storing" in n or "a generator failed" in n for n in ing.notes), ing.notes
    # No reading at all: every ingest figure is missing, the generators' are there.
    none = build_ingest(ExperimentData.from_tables(tables([]))).table.iloc[0]
    assert none["sent [points]"] == 2000
    assert all(
        pd.isna(none[c]) for c in ["ingested [points/s]", "stored [points]", "backlog at end [points]", "ingest CV [%]"]
    )


def test_a_phase_read_only_after_its_end_has_no_ingest_rate():
    # A loading phase shorter than a reading: its counter was read only once the generators had stopped.
    r = [(t(10, 50), 0, True), (t(10, 300), 2000, True), (t(11, 400), 2000, True)]
    row = build_ingest(ExperimentData.from_tables(tables(r))).table.iloc[0]
    assert pd.isna(row["ingested [points/s]"])
    assert row["stored [points]"] == 2000


def test_the_report_plots_ingest_and_queries_over_time():
    from benchq_reporter import dataframes
    from benchq_reporter.outputs import report

    r = [(t(s), 200 + 200 * s, False) for s in range(10)] + [(t(10, 50), 2100, True), (t(11, 400), 2200, True)]
    rows = tables(r)
    rows["intervals"] = [
        {
            "phase": RUN,
            "shard": k,
            "attempt": 1,
            "elapsed_s": s,
            "at": t(s),
            "operations": 100 * s,
            "ops_per_sec": 100.0,
            "per_op": {
                "WRITE": {"Count": 100},
                **({"QUERY": {"Count": 1, "Avg": 1500, "Max": 2500}} if k == 1 else {}),
            },
        }
        for k in (1, 2)
        for s in range(1, 11)
    ]
    frames = dataframes.build(ExperimentData.from_tables(rows), rows)
    assert len(frames["ingest"]) == len(r)
    made, _ = report.plots(frames, None)
    slugs = {p.slug: p for p in made}
    assert {"ingest-victoriametrics-4-1-0-1-1", "queries-victoriametrics-4-1-0-1-1"} <= set(slugs), sorted(slugs)
    for p in made:
        assert report.unlabelled(p.figure) == [], p.slug
    # The generators' status lines count points sent, not operations.
    throughput = [p for p in made if p.slug.startswith("throughput-")]
    assert throughput and all(p.figure.axes[0].get_ylabel() == "points sent/s" for p in throughput)
    report.close(made)


def scaled(cfg: str, workers: int, stored: float) -> dict[str, list[dict[str, Any]]]:
    """tables() as configuration cfg with -nw workers, its database storing stored of its 2000 points."""
    run = f"{cfg}-1"
    r = [
        (t(0), 0, False),
        (t(5), stored / 2, False),
        (t(10), stored, False),
        (t(11), stored, True),
        (t(13), stored, True),
    ]
    out = tables(r)
    out["experiments"][0]["plan"]["configurations"][0].update(name=cfg, sut={"workers": workers})
    out["experiments"][0]["plan"]["configurations"][0]["phases"][0]["name"] = run
    for key in ("phases", "shard_results", "shard_operations", "ingest_readings", "ingest_drains"):
        for row in out[key]:
            row["phase"] = run
            if "configuration" in row:
                row["configuration"] = cfg
    return out


def test_the_scaling_table_compares_workers_and_prices_them():
    one, two = scaled("Graphite-4-2-0-nw1-1", 1, 2000), scaled("Graphite-4-2-0-nw2-1", 2, 1500)
    merged = {k: one[k] + (two[k] if k != "experiments" else []) for k in one}
    plan = merged["experiments"][0]["plan"]
    plan["configurations"] += two["experiments"][0]["plan"]["configurations"]
    plan["settings"]["cost_per_hour"] = 0.5
    sc = build_ingest(ExperimentData.from_tables(merged)).scaling
    assert list(sc["configuration"]) == ["Graphite-4-2-0-nw1-1", "Graphite-4-2-0-nw2-1"]
    assert list(sc["nodes"]) == [1, 2]
    # 2000 points sent a phase over 10 s: 200/s; the second stored 3/4 of them.
    assert list(sc["stored [points/s]"]) == [200.0, 150.0]
    # The first stored all it was offered: a load, not a capacity; the second fell short.
    assert list(sc["from"]) == ["offered", "highest phase"]
    assert list(sc["per node [points/s]"]) == [200.0, 75.0]
    assert list(sc["efficiency vs linear"]) == [1.0, 0.375]
    assert list(sc["cost [per hour]"]) == [0.5, 1.0]
    assert [round(v, 2) for v in sc["points per cost unit [M]"]] == [1.44, 0.54]


def test_each_dbms_scales_against_its_own_fewest_nodes():
    """-dbms Graphite,VictoriaMetrics -nw 1,2: VictoriaMetrics' 2 nodes against its own 1, not Graphite's."""
    cfgs = [("Graphite-4-2-0-nw1-1", 1, 2000), ("Graphite-4-2-0-nw2-1", 2, 1500)]
    cfgs += [("VictoriaMetrics-4-2-0-nw1-1", 1, 1000), ("VictoriaMetrics-4-2-0-nw2-1", 2, 1600)]
    parts = [scaled(*c) for c in cfgs]
    merged = {k: [row for p in parts for row in p[k]] for k in parts[0] if k != "experiments"}
    merged["experiments"] = parts[0]["experiments"]
    merged["experiments"][0]["plan"]["configurations"] = [
        c for p in parts for c in p["experiments"][0]["plan"]["configurations"]
    ]
    merged["configurations"] = [{"name": c, "dbms": c.split("-")[0], "experiment_run": 1} for c, _, _ in cfgs]
    sc = build_ingest(ExperimentData.from_tables(merged)).scaling.set_index("configuration")
    assert list(sc["stored [points/s]"]) == [200.0, 100.0, 150.0, 160.0]
    assert sc["efficiency vs linear"].to_dict() == {
        "Graphite-4-2-0-nw1-1": 1.0,
        "VictoriaMetrics-4-2-0-nw1-1": 1.0,
        "Graphite-4-2-0-nw2-1": 0.375,
        "VictoriaMetrics-4-2-0-nw2-1": 0.8,
    }


def test_a_scaling_of_sizes_that_all_kept_up_says_it_measured_no_capacity():
    """The seed adds nodes until the database cannot digest the load: a table of loads would mislead."""
    one, two = scaled("Graphite-4-2-0-nw1-1", 1, 2000), scaled("Graphite-4-2-0-nw2-1", 2, 2000)
    merged = {k: one[k] + (two[k] if k != "experiments" else []) for k in one}
    merged["experiments"][0]["plan"]["configurations"] += two["experiments"][0]["plan"]["configurations"]
    ingest = build_ingest(ExperimentData.from_tables(merged))
    assert list(ingest.scaling["from"]) == ["offered", "offered"]
    assert list(ingest.scaling["efficiency vs linear"]) == [1.0, 0.5]
    assert any(n.startswith("Scaling: no configuration was saturated") for n in ingest.notes)
    # One that fell short is a capacity: no such note.
    two = scaled("Graphite-4-2-0-nw2-1", 2, 1500)
    merged = {k: one[k] + (two[k] if k != "experiments" else []) for k in one}
    merged["experiments"][0]["plan"]["configurations"] += two["experiments"][0]["plan"]["configurations"]
    ingest = build_ingest(ExperimentData.from_tables(merged))
    assert not any(n.startswith("Scaling: no configuration was saturated") for n in ingest.notes)


def test_no_scaling_table_without_a_workers_list():
    r = [(t(0), 0, False), (t(10), 2000, False), (t(11), 2000, True), (t(13), 2000, True)]
    assert build_ingest(ExperimentData.from_tables(tables(r))).scaling.empty


def test_the_workload_section_says_what_the_generators_wrote():
    """Not YCSB's lines (rows to insert, operations, SF): the series, the flush, the protocol."""
    from benchq_reporter.summary.render import workload_lines
    from benchq_reporter.summary.workload import build_workload

    tb = tables([(t(s), 200 + 200 * s, False) for s in range(10)])
    settings = tb["experiments"][0]["plan"]["settings"]
    settings["tsdb"].update(jitter_ms=1000, protocol="carbon", prefix="haggar")
    settings.update(benchmarking_threads=[2], benchmarking_pods=[2], duration_s=20)
    data = ExperimentData.from_tables(tb)
    lines = workload_lines(type("S", (), {"workload": build_workload(data)})())
    text = "\n".join(lines)
    assert lines[1] == "TSDB ingest (haggar's model)"
    assert (
        "Workload is 'haggar': each agent writes 50 series, a point of each every 1000 ms (50 points/s an agent), "
        "jitter 1000 ms, over carbon; series are named haggar<generator>.agent<i>.metric<j>." in text
    )
    assert "Benchmarking runs for 20 seconds." in text
    for ycsb in ("YCSB", "rows to insert", "Number of operations", "SF="):
        assert ycsb not in text, ycsb
