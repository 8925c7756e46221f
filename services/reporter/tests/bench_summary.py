"""The reporter's time for `reporter summary -e` on 64 shards x 1 h.

Not a test (pytest collects only test_*.py): `make bench-monitoring` runs
this file explicitly. It prints the time and never fails on it (goal <= 2 s).
The experiment is the Redis fixture scaled up, inserted into a throwaway
PostgreSQL with the collector's schema: a benchmarking phase of 64 shards
that ran an hour, each with its 3,600 streamed 1-second intervals and its two
operations, and the phase's raw metric samples (the system set of the SUT and
the benchmarker and Redis' application set, 1 s apart) with their
metric_summaries rows.
"""

from __future__ import annotations

import copy
import io
import statistics
import time
from datetime import datetime, timedelta

import psycopg
from psycopg.types.json import Jsonb
from rows import insert, load_tables

from benchq_reporter.cli import main

CODE = "bench-64x1h"
SHARDS, SECONDS = 64, 3600


def synthetic() -> dict:
    t = load_tables("ycsb-redis.json", "metric-summaries-redis.json")
    t["experiments"][0]["code"] = CODE
    plan = t["experiments"][0]["plan"]
    plan["code"] = CODE
    run = plan["configurations"][0]["phases"][1]
    shard = run["shards"][0]
    run["pods"], run["threads"] = SHARDS, SHARDS * shard["threads"]
    run["shards"] = [copy.deepcopy(shard) for _ in range(SHARDS)]
    plan["settings"]["benchmarking_pods"] = [SHARDS]
    phase = next(p for p in t["phases"] if p["kind"] == "run")
    start = datetime.fromisoformat(phase["started_at"].replace("Z", "+00:00"))
    phase["shards"], phase["ended_at"] = SHARDS, (start + timedelta(seconds=SECONDS + 1)).isoformat()
    one = next(r for r in t["shard_results"] if r["kind"] == "run")
    ops = [o for o in t["shard_operations"] if o["phase"] == one["phase"]]
    t["shard_results"] = [r for r in t["shard_results"] if r["kind"] != "run"]
    t["shard_operations"] = [o for o in t["shard_operations"] if o["phase"] != one["phase"]]
    for n in range(1, SHARDS + 1):
        r = copy.deepcopy(one)
        r["shard"], r["message_id"] = n, f"{CODE}.{one['phase']}.{n}.1.final"
        r["started_at"], r["ended_at"] = start.isoformat(), (start + timedelta(seconds=SECONDS)).isoformat()
        r["runtime_ms"] = SECONDS * 1000.0
        t["shard_results"].append(r)
        for o in ops:
            t["shard_operations"].append({**copy.deepcopy(o), "shard": n})
    for s in t["metric_summaries"]:
        if s["kind"] == "run":
            s["window_end"], s["samples"] = phase["ended_at"], SECONDS
    return t, phase, start


def fill_series(url: str, phase: dict, start: datetime, summaries: list[dict]) -> int:
    """COPY the intervals and the raw samples; returns how many rows."""
    n = 0
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        with cur.copy(
            "COPY intervals (code, phase, shard, attempt, elapsed_s, at, operations, ops_per_sec, per_op) FROM STDIN"
        ) as cp:
            for shard in range(1, SHARDS + 1):
                for s in range(1, SECONDS + 1):
                    cp.write_row(
                        (
                            CODE,
                            phase["phase"],
                            shard,
                            1,
                            s,
                            start + timedelta(seconds=s),
                            500 * s,
                            500.0,
                            Jsonb({"READ": {"ops_per_sec": 250.0}, "UPDATE": {"ops_per_sec": 250.0}}),
                        )
                    )
                    n += 1
        series = {(s["component"], s["metric"]) for s in summaries if s["kind"] == "run"}
        cur.execute("SELECT metrics_ensure_partitions(%s, %s)", (start, start + timedelta(seconds=SECONDS + 2)))
        with cur.copy(
            "COPY metrics (time, code, phase, configuration, component, metric, labels, value) FROM STDIN"
        ) as cp:
            for component, metric in sorted(series):
                for s in range(SECONDS + 2):
                    cp.write_row(
                        (
                            start + timedelta(seconds=s),
                            CODE,
                            phase["phase"],
                            phase["configuration"],
                            component,
                            metric,
                            Jsonb({"instance": "127.0.0.1:9121"}),
                            float(s),
                        )
                    )
                    n += 1
    return n


def test_bench_summary_time(postgres_url):
    tables, phase, start = synthetic()
    insert(postgres_url, tables)
    rows = fill_series(postgres_url, phase, start, tables["metric_summaries"])
    times = []
    for _ in range(3):
        out, err = io.StringIO(), io.StringIO()
        began = time.perf_counter()
        status = main(["summary", "-e", CODE], {"BENCHQ_DB_URL": postgres_url}, out, err)
        times.append(time.perf_counter() - began)
        assert status == 0, err.getvalue()  # a broken summary is a failure, not a figure
    print(
        f"\nreporter summary -e of {SHARDS} shards x {SECONDS} s ({rows} interval and metric-sample rows in the database): "
        f"median {statistics.median(times):.2f} s of 3 ({', '.join(f'{x:.2f}' for x in times)}; goal <= 2 s)"
    )
