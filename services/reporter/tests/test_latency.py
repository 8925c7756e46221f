"""Merged HdrHistograms give the percentiles of all shards' samples together.

tests/data/hdr-two-shards.json holds the raw latencies of two deliberately
different shards and the histograms the Go side (internal/ycsb, as the
driver agent) encoded for them; go test ./internal/ycsb -update rewrites it.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest
from rows import experiment, load_tables

from benchq_reporter import contracts
from benchq_reporter.summary import latency, render, summarize
from benchq_reporter.summary.ycsb import MERGED_NOTE, START_SKEW, WINDOW_THROUGHPUT

DATA = Path(__file__).parent / "data"
RUN = "Redis-8-2-65536-1-1"


@pytest.fixture(scope="module")
def shards() -> list[dict]:
    return json.loads((DATA / "hdr-two-shards.json").read_text())["shards"]


def exact(samples: list[int], percentile: float) -> int:
    """Nearest-rank percentile of raw samples (the rank in exact arithmetic: 99.9 % of 5000 is 4995)."""
    s = sorted(samples)
    return s[max(math.ceil(Fraction(str(percentile)) / 100 * len(s)), 1) - 1]


def equivalent(h, a: float, b: float) -> bool:
    return h.values_are_equivalent(int(a), int(b))


def test_merged_p99_is_the_p99_of_the_union_not_a_mean_or_max(shards):
    merged = latency.merge(s["histogram"] for s in shards)
    union = [v for s in shards for v in s["samples"]]
    assert merged.get_total_count() == len(union)
    p99 = latency.value_at_percentile(merged, 99)
    assert equivalent(merged, p99, exact(union, 99))
    per_shard = [latency.value_at_percentile(latency.decode(s["histogram"]), 99) for s in shards]
    for s, p in zip(shards, per_shard, strict=False):
        assert equivalent(merged, p, exact(s["samples"], 99))
    mean, highest = sum(per_shard) / len(per_shard), max(per_shard)
    # Apart by far more than the histogram's precision (3 significant digits).
    assert abs(p99 - mean) > 0.05 * p99 and abs(p99 - highest) > 0.05 * p99
    for name, pct in latency.PERCENTILES.items():
        assert equivalent(merged, latency.stats(merged)[name], exact(union, pct)), name


def test_percentiles_are_ycsbs(tmp_path):
    """A real shard result (Java-recorded, Go-encoded): the same figures YCSB printed."""
    final = json.loads((contracts.find_dir() / "examples" / "valid" / "final--run-histograms.json").read_text())
    for op in final["operations"]:
        st = latency.stats(latency.decode(op["histogram"]))
        assert st["count"] == op["count"], op["name"]
        for name, field in {
            "p50": "p50_us",
            "p95": "p95_us",
            "p99": "p99_us",
            "p999": "p999_us",
            "max": "max_us",
            "min": "min_us",
        }.items():
            assert st[name] == op[field], (op["name"], name)
        assert st["mean"] == pytest.approx(op["avg_us"], rel=1e-12)


def two_shard_run(shards: list[dict]) -> dict:
    """The fixture experiment with its benchmarking phase run by the two shards."""
    tables = load_tables()
    base = next(r for r in tables["shard_results"] if r["phase"] == RUN)
    tables["shard_results"] = [r for r in tables["shard_results"] if r["phase"] != RUN]
    tables["shard_operations"] = [o for o in tables["shard_operations"] if o["phase"] != RUN]
    starts = ["2026-03-02T10:00:13.400Z", "2026-03-02T10:00:13.430Z"]
    ends = ["2026-03-02T10:00:15.400Z", "2026-03-02T10:00:16.400Z"]
    for k, s in enumerate(shards):
        n = len(s["samples"])
        tables["shard_results"].append(
            {
                **base,
                "shard": k + 1,
                "agent": f"agent-{k + 1}",
                "message_id": f"m{k + 1}",
                "threads": 4,
                "target": 32768,
                "throughput": n / 2.0,
                "runtime_ms": 2000.0,
                "first_op_at": starts[k],
                "last_op_at": ends[k],
                "stdout": "",
            }
        )
        h = latency.stats(latency.decode(s["histogram"]))
        tables["shard_operations"].append(
            {
                "phase": RUN,
                "shard": k + 1,
                "attempt": 1,
                "operation": "READ",
                "count": n,
                "avg_us": h["mean"],
                "min_us": h["min"],
                "max_us": h["max"],
                "p50_us": h["p50"],
                "p95_us": h["p95"],
                "p99_us": h["p99"],
                "p999_us": h["p999"],
                "return_codes": {"OK": n},
                "histogram": s["histogram"],
            }
        )
    return tables


def test_per_phase_uses_the_merged_histograms(shards):
    s = summarize(experiment(two_shard_run(shards)))
    phase = s.execution_per_phase.iloc[0]
    union = [v for sh in shards for v in sh["samples"]]
    merged = latency.merge(sh["histogram"] for sh in shards)
    assert phase["[READ].99thPercentileLatency(us)"] == latency.value_at_percentile(merged, 99)
    assert equivalent(merged, phase["[READ].99thPercentileLatency(us)"], exact(union, 99))
    conn = s.execution_per_connection
    assert phase["[READ].99thPercentileLatency(us)"] not in set(conn["[READ].99thPercentileLatency(us)"])

    row = s.execution_latency.iloc[0]
    assert (row["operation"], row["latency from"], row["shards"], row["percentiles"]) == ("READ", "start", 2, "merged")
    assert row["Operations"] == len(union)
    for column, pct in {
        "50thPercentileLatency(us)": 50,
        "95thPercentileLatency(us)": 95,
        "99thPercentileLatency(us)": 99,
        "99.9PercentileLatency(us)": 99.9,
    }.items():
        assert equivalent(merged, row[column], exact(union, pct)), column
    assert equivalent(merged, row["MaxLatency(us)"], max(union))
    # The operation-weighted mean of the shards' means (their histograms' means).
    means = [latency.decode(sh["histogram"]).get_mean_value() for sh in shards]
    weights = [len(sh["samples"]) for sh in shards]
    assert row["AverageLatency(us)"] == pytest.approx(
        sum(m * w for m, w in zip(means, weights, strict=False)) / sum(weights)
    )
    assert MERGED_NOTE in s.notes["execution_per_phase"]


def test_common_window_and_start_skew(shards):
    s = summarize(experiment(two_shard_run(shards)))
    phase = s.execution_per_phase.iloc[0]
    # 5000 operations from 13.400 (first start) to 16.400 (last end): 3 s.
    assert phase[WINDOW_THROUGHPUT] == pytest.approx(5000 / 3.0)
    assert phase[START_SKEW] == pytest.approx(30.0)
    # bexhoma's figure adds up the shards' own rates.
    assert phase["[OVERALL].Throughput(ops/sec)"] == pytest.approx(4500 / 2 + 500 / 2)


def test_intended_latencies_are_listed_apart_and_labelled(shards):
    tables = two_shard_run(shards)
    intended = [
        {**o, "operation": "Intended-READ", "return_codes": {}} for o in tables["shard_operations"] if o["phase"] == RUN
    ]
    tables["shard_operations"] += intended
    s = summarize(experiment(tables))
    assert not any("Intended" in c for c in s.execution_per_phase.columns)
    lat = s.execution_latency
    assert list(zip(lat["operation"], lat["latency from"], strict=False)) == [
        ("READ", "start"),
        ("READ", "intended start"),
    ]
    assert s.notes["execution_latency"] and "coordinated omission" in s.notes["execution_latency"][0]
    # Intended operations are not executed operations: the window counts each read once.
    assert s.execution_per_phase.iloc[0][WINDOW_THROUGHPUT] == pytest.approx(5000 / 3.0)


# --- a real experiment: 2 loading and 2 benchmarking shards, target set ---------


def test_real_experiment_matches_golden(golden):
    golden("summary-redis-hdr.md", render.markdown(summarize(experiment(load_tables("ycsb-redis-hdr.json")))))


def test_real_experiment_figures():
    tables = load_tables("ycsb-redis-hdr.json")
    s = summarize(experiment(tables))
    run = s.execution_per_phase.iloc[0]
    ops = [o for o in tables["shard_operations"] if o["phase"] == run["phase"]]
    for op in ("READ", "INSERT"):
        rows = [o for o in ops if o["operation"] == op]
        assert len(rows) == 2
        # Each shard's histogram gives what YCSB printed for it ...
        for o in rows:
            assert latency.value_at_percentile(latency.decode(o["histogram"]), 99) == o["p99_us"]
        # ... and the phase's p99 is the merged one.
        merged = latency.merge(o["histogram"] for o in rows)
        assert run[f"[{op}].99thPercentileLatency(us)"] == latency.value_at_percentile(merged, 99)
        assert run[f"[{op}].Return=OK"] == sum(o["return_codes"]["OK"] for o in rows)
    shards = [r for r in tables["shard_results"] if r["phase"] == run["phase"]]
    first = [pd.Timestamp(r["first_op_at"]) for r in shards]
    last = [pd.Timestamp(r["last_op_at"]) for r in shards]
    window_s = (max(last) - min(first)).total_seconds()
    assert run[WINDOW_THROUGHPUT] == pytest.approx(100000 / window_s)
    assert run[START_SKEW] == pytest.approx((max(first) - min(first)).total_seconds() * 1000)
    assert set(s.execution_latency["latency from"]) == {"start", "intended start"}
    assert set(s.execution_latency["percentiles"]) == {"merged"}


def test_a_shard_without_histogram_leaves_a_labelled_upper_bound(shards):
    tables = two_shard_run(shards)
    ops = [o for o in tables["shard_operations"] if o["phase"] == RUN]
    ops[1]["histogram"] = None  # an older driver
    s = summarize(experiment(tables))
    row = s.execution_latency.iloc[0]
    assert row["percentiles"] == "max of shards"
    assert row["99thPercentileLatency(us)"] == max(o["p99_us"] for o in ops)
    assert s.execution_per_phase.iloc[0]["[READ].99thPercentileLatency(us)"] == row["99thPercentileLatency(us)"]
    assert any("READ are the maximum over the shards (an upper bound)" in n for n in s.notes["execution_per_phase"])
    assert MERGED_NOTE not in s.notes["execution_per_phase"]
