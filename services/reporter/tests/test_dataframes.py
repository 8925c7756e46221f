"""benchq_reporter.load(), reporter export and read_export, the example script, selfcheck_export.

The fixture is one real YCSB experiment on Redis (ycsb-redis.json), its
monitoring (metric-summaries-redis.json) and its time series
(timeseries-redis.json), inserted into a throw-away PostgreSQL with the
collector's migrations.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from rows import FRAMES, experiment, frames_tables, insert, load_tables

import benchq_reporter
from benchq_reporter import dataframes
from benchq_reporter.cli import main
from benchq_reporter.outputs import export
from benchq_reporter.selfcheck import export as selfcheck_export

REPO = Path(__file__).parents[3]
EXAMPLE = REPO / "docs" / "examples" / "dataframes.py"


@pytest.fixture(scope="module")
def db(postgres_url):
    insert(postgres_url, frames_tables())
    plain = load_tables()
    plain["experiments"][0]["code"] = "frames-plain"
    insert(postgres_url, plain)
    return postgres_url


def built():
    tables = frames_tables()
    return dataframes.build(experiment(tables), tables)


def test_every_frame_has_its_columns_dtypes_and_a_unique_key():
    frames = built()
    assert list(frames) == list(dataframes.FRAMES)
    for name, df in frames.items():
        spec = dataframes.FRAMES[name]
        assert {c: str(t) for c, t in df.dtypes.items()} == spec.dtypes, name
        assert (df["code"] == FRAMES).all(), name
        assert not df.duplicated(list(spec.key)).any(), f"{name}: key {spec.key} not unique"
    counts = {n: len(df) for n, df in frames.items()}
    assert counts == {
        "experiment": 1,
        "configurations": 1,
        "phases": 2,
        "shards": 3,
        "operations": 7,
        "intervals": 8,
        "interval_operations": 12,
        "metrics": 117,
        "metric_summaries": 24,
        "ingest": 0,  # a YCSB experiment: no time-series database
    }


def test_frames_relate_by_their_keys():
    f = built()
    shards = f["shards"]
    assert shards["reported"].all()  # one attempt each
    assert set(f["operations"][["phase", "shard", "attempt"]].itertuples(index=False)) <= set(
        shards[["phase", "shard", "attempt"]].itertuples(index=False)
    )
    iv = f["intervals"]
    assert iv["configuration"].eq("Redis-8-2-65536-1").all()
    assert iv.groupby("kind")["phase"].nunique().to_dict() == {"load": 1, "run": 1}
    ops = f["interval_operations"].merge(iv, on=["code", "phase", "shard", "attempt", "elapsed_s", "at"])
    assert len(ops) == len(f["interval_operations"])
    # The status line "[UPDATE: Count=34623, Max=117247, Min=23, Avg=210.72, 90=275, 99=580, ...]".
    update = ops[(ops["operation"] == "UPDATE") & (ops["elapsed_s"] == 2)].iloc[0]
    assert (update["count"], update["max_us"], update["p90_us"], update["p99_us"]) == (34623, 117247.0, 275.0, 580.0)
    assert pd.isna(update["p50_us"]) and pd.isna(update["errors"])
    # The last status line of a shard counts all of its operations.
    last = iv.sort_values("elapsed_s").groupby(["phase", "shard"]).tail(1).set_index(["phase", "shard"])["operations"]
    assert last.sum() == f["operations"].query("operation in ['INSERT', 'READ', 'UPDATE']")["count"].sum()
    labels = f["metrics"].query("component == 'loader'")["labels"].unique()
    assert sorted(json.loads(x)["instance"] for x in labels) == ["127.0.0.1:9101", "127.0.0.1:9102"]
    assert f["metric_summaries"]["value"].isna().sum() == 2
    assert json.loads(f["operations"]["return_codes"].iloc[0]) == load_tables()["shard_operations"][0]["return_codes"]


def test_a_rerun_shard_reports_its_ok_attempt():
    tables = frames_tables()
    failed = dict(tables["shard_results"][2], attempt=2, status="failed", message_id="m-2")
    tables["shard_results"].append(failed)
    frames = dataframes.build(experiment(tables), tables)
    run = frames["shards"].query("kind == 'run'").set_index("attempt")["reported"]
    assert run.to_dict() == {1: True, 2: False}


def test_a_rerun_phase_reports_one_attempt_never_a_mix():
    """Attempt 1 finished shard 1 but failed shard 2, attempt 2 the other way round: neither is whole, so the
    phase is reported from attempt 2 (a failure), never from shard 1 of one run and shard 2 of the other."""
    tables = frames_tables()
    load = [r for r in tables["shard_results"] if r["kind"] == "load"]
    load[1]["status"] = "failed"
    again = [
        dict(r, attempt=2, status="failed" if r["shard"] == 1 else "ok", message_id=f"m-{r['shard']}-2") for r in load
    ]
    tables["shard_results"] += again
    frames = dataframes.build(experiment(tables), tables)
    reported = frames["shards"].query("kind == 'load'").set_index(["shard", "attempt"])["reported"]
    assert reported.to_dict() == {(1, 1): False, (2, 1): False, (1, 2): True, (2, 2): True}
    # With attempt 2 whole, it is reported; with only attempt 1 whole, attempt 1 is.
    again[0]["status"] = "ok"
    frames = dataframes.build(experiment(tables), tables)
    assert frames["shards"].query("kind == 'load' and reported")["attempt"].tolist() == [2, 2]
    again[0]["status"], load[1]["status"], again[1]["status"] = "failed", "ok", "failed"
    frames = dataframes.build(experiment(tables), tables)
    assert frames["shards"].query("kind == 'load' and reported")["attempt"].tolist() == [1, 1]


def test_an_attempt_missing_a_shard_is_not_whole():
    """A shard lost with its agent leaves no row: attempt 1 with shard 2 ok and no row of shard 1 is not
    whole (its phase ran 2 shards), so attempt 2 (shard 1 ok, shard 2 failed) is reported, a failure."""
    tables = frames_tables()
    load = [r for r in tables["shard_results"] if r["kind"] == "load"]
    tables["shard_results"].remove(load[0])
    again = [
        dict(r, attempt=2, status="ok" if r["shard"] == 1 else "failed", message_id=f"m-{r['shard']}-2") for r in load
    ]
    tables["shard_results"] += again
    frames = dataframes.build(experiment(tables), tables)
    assert frames["shards"].query("kind == 'load' and reported")["attempt"].tolist() == [2, 2]


def test_load_equals_the_rows_it_was_built_from(db):
    """The SQL path adds nothing and loses nothing: load() == build() on the fixture's rows."""
    loaded = benchq_reporter.load(FRAMES, db)
    for name, df in built().items():
        pd.testing.assert_frame_equal(loaded[name], df, check_exact=True, obj=name)


def test_load_takes_the_url_from_the_environment(db, monkeypatch):
    monkeypatch.setenv("BENCHQ_DB_URL", db)
    assert benchq_reporter.load(FRAMES)["experiment"]["code"].tolist() == [FRAMES]
    monkeypatch.delenv("BENCHQ_DB_URL")
    with pytest.raises(ValueError, match="BENCHQ_DB_URL"):
        benchq_reporter.load(FRAMES)
    with pytest.raises(benchq_reporter.UnknownExperiment, match="'nope'"):
        benchq_reporter.load("nope", db)


@pytest.mark.parametrize("fmt", export.FORMATS)
def test_export_reads_back_equal(db, tmp_path, fmt):
    out, err = io.StringIO(), io.StringIO()
    status = main(["export", "-e", FRAMES, "--format", fmt, "-o", str(tmp_path / "x")], {"BENCHQ_DB_URL": db}, out, err)
    assert (status, err.getvalue()) == (0, "")
    assert out.getvalue().splitlines() == [str(tmp_path / "x" / f"{n}.{fmt}") for n in dataframes.FRAMES] + [
        str(tmp_path / "x" / "manifest.json")
    ]
    manifest = json.loads((tmp_path / "x" / "manifest.json").read_text())
    assert (manifest["code"], manifest["format"], manifest["benchq_version"]) == (FRAMES, fmt, "dev")
    assert manifest["frames"]["metrics"]["rows"] == 117
    loaded = benchq_reporter.load(FRAMES, db)
    back = benchq_reporter.read_export(tmp_path / "x")
    assert list(back) == list(loaded)
    for name, df in loaded.items():
        pd.testing.assert_frame_equal(back[name], df, check_exact=True, obj=name)


def test_csv_keeps_empty_strings_missing_values_and_odd_text(tmp_path):
    frames = built()
    shards = frames["shards"]
    shards.loc[0, "error"] = ""
    shards.loc[1, "error"] = 'NA, "quoted"\nsecond line \\ NULL'
    export.write(frames, tmp_path, "csv")
    back = export.read_export(tmp_path)["shards"]
    assert (
        back.loc[0, "error"] == "" and back.loc[1, "error"] == shards.loc[1, "error"] and pd.isna(back.loc[2, "error"])
    )
    pd.testing.assert_frame_equal(back, shards, check_exact=True)


def test_export_errors(db, tmp_path):
    out, err = io.StringIO(), io.StringIO()
    assert main(["export", "-e", "nope", "-o", str(tmp_path)], {"BENCHQ_DB_URL": db}, out, err) == 1
    assert err.getvalue() == (
        "reporter: no experiment with code 'nope' in the results database (list them with: reporter list)\n"
    )
    err = io.StringIO()
    assert main(["export", "-e", FRAMES, "--format", "xlsx", "-o", str(tmp_path)], {"BENCHQ_DB_URL": db}, out, err) == 2
    assert "invalid choice: 'xlsx'" in err.getvalue()
    with pytest.raises(export.ExportError, match=r"manifest\.json is missing"):
        export.read_export(tmp_path)


def test_the_schema_reference_in_docs_is_current():
    doc = (REPO / "docs" / "dataframes.md").read_text()
    assert dataframes.schema_markdown() in doc, (
        "docs/dataframes.md is stale: paste dataframes.schema_markdown() into it"
    )


def test_the_example_script_runs_against_the_database(db):
    env = {**os.environ, "BENCHQ_DB_URL": db}
    done = subprocess.run([sys.executable, str(EXAMPLE), FRAMES], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # Throughput per configuration: the run phase's one shard, as YCSB reported it.
    assert "Redis-8-2-65536-1   37686.07" in lines
    # p99 per operation and phase (one shard each: YCSB's own figure, 467 µs).
    assert "READ      Redis-8-2-65536-1-1      0.47" in lines
    # Resampled from the cumulative counts, a 2 s bin equals YCSB's "33927 current ops/sec" of the line
    # that ends it (10:00:12), binned by the interval's start.
    assert "Redis-8-2-65536-1-1 2026-03-02 10:00:10+00:00 33927.00" in lines
    # 2.97 CPU seconds of the SUT for 200,000 operations.
    assert "Redis-8-2-65536-1-1         sut      200000             14.85" in lines


def test_the_examples_throughput_over_time_has_no_false_zeros():
    # Status lines every 10 s (YCSB's default -xli) in 2 s bins would give one bin all of an interval's
    # operations and four a rate of 0: the bins are one interval long instead.
    import importlib.util

    spec = importlib.util.spec_from_file_location("dataframes_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    start = pd.Timestamp("2026-03-02 10:00:00", tz="UTC")
    iv = pd.DataFrame(
        {
            "phase": "p-1",
            "shard": 1,
            "attempt": 1,
            "elapsed_s": [10, 20, 30],
            "at": [start + pd.Timedelta(seconds=s) for s in (10, 20, 30)],
            "operations": [80_000, 160_000, 240_000],
        }
    )
    out = example.throughput_over_time({"intervals": iv})
    assert list(out["ops/s"]) == [8000.0, 8000.0, 8000.0]


def selfcheck(url, code):
    out, err = io.StringIO(), io.StringIO()
    return selfcheck_export.main(["--db", url, "-e", code], {}, out, err), out.getvalue(), err.getvalue()


def test_selfcheck_rejects_a_plan_without_a_build_version(db, monkeypatch):
    monkeypatch.setattr(selfcheck_export.version, "read", lambda: "dev")
    status, _out, err = selfcheck(db, FRAMES)
    assert status == 1 and "version: the plan says benchq version 'dev'" in err  # "dev" is no build's version
    monkeypatch.setattr(selfcheck_export.version, "read", lambda: "v1.2.3")
    assert "the reporter is 'v1.2.3'" in selfcheck(db, FRAMES)[2]


def test_selfcheck_with_a_real_version(db, postgres_url, monkeypatch):
    tables = frames_tables()
    tables["experiments"][0]["code"] = "frames-versioned"
    tables["experiments"][0]["plan"]["version"] = "v1.2.3-4-gabcdef0"
    insert(postgres_url, tables)
    monkeypatch.setattr(selfcheck_export.version, "read", lambda: "v1.2.3-4-gabcdef0")
    status, out, err = selfcheck(db, "frames-versioned")
    assert (status, err) == (0, ""), err
    assert out.splitlines()[1:] == [
        "csv: the export reads back equal to load()",
        "parquet: the export reads back equal to load()",
        "version: v1.2.3-4-gabcdef0",
        "selfcheck_export: frames-versioned: ok",
    ]


def test_selfcheck_fails_on_missing_series(db):
    status, _, err = selfcheck(db, "frames-plain")
    assert status == 1
    assert err == "selfcheck_export: frames-plain: frame intervals is empty\n"
    status, _, err = selfcheck(db, "nope")
    assert status == 1 and "no experiment with code 'nope'" in err
    assert selfcheck_export.main(["-e", "x"], {}, io.StringIO(), io.StringIO()) == 2


def test_selfcheck_names_the_frame_that_differs():
    frames = built()
    changed = dict(frames, intervals=frames["intervals"].assign(ops_per_sec=frames["intervals"]["ops_per_sec"] + 1e-9))
    with pytest.raises(selfcheck_export.CheckFailed, match=r"^csv round trip: frame intervals differs from load"):
        selfcheck_export.compare(frames, changed, "csv round trip")
