"""The Grafana dashboards (docs/grafana.md): generated, valid, and
every SQL query run, as Grafana would, against the collector's schema.

The e2e Redis experiment runs the same queries, Prometheus' included,
against a real experiment of the stack (e2e/experiment_test.go).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from rows import experiment, frames_tables, insert, load_tables

from benchq_reporter.grafana import dashboards
from benchq_reporter.grafana import queries as gq
from benchq_reporter.summary import summarize
from benchq_reporter.summary.ycsb import WINDOW_THROUGHPUT

CODE = "grafana-frames"
ROOT = dashboards.repo_root()
BOARDS = sorted((ROOT / "grafana" / "dashboards").glob("*.json"))


def test_committed_dashboards_are_what_the_generator_writes():
    assert [p.name for p in BOARDS] == ["benchq-experiment.json", "benchq-overview.json"]
    assert dashboards.main(["--check"]) == 0, "run `make dashboards` and commit grafana/dashboards"


@pytest.mark.parametrize("path", BOARDS, ids=lambda p: p.name)
def test_dashboard_json_holds_only_what_the_sdk_types_hold(path):
    """Decoded into grafana-foundation-sdk's types and encoded again, the JSON is unchanged."""
    text = path.read_text()
    assert dashboards.roundtrip(text) == text


def test_roundtrip_catches_what_the_sdk_does_not_know():
    board = json.loads(BOARDS[0].read_text())
    board["panels"][1]["gridPosition"] = {"h": 1}  # a misspelt field is dropped by the types
    text = json.dumps(board, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert dashboards.roundtrip(text) != text


def test_every_catalog_metric_has_a_live_query():
    sets = dashboards.metric_sets(ROOT)
    assert {"system", "redis", "postgresql", "pgbouncer", "dragonfly"} <= set(sets)
    redis = {m.key: m for m in sets["redis"]}
    assert dashboards.live_query(redis["redis_commands"]) == (
        'sum by (configuration) (rate(redis_commands_processed_total{experiment="$code", '
        'configuration=~"$configuration"}[$__rate_interval]))'
    )
    assert dashboards.live_query(redis["redis_memory"]).endswith(") * 9.313225746154785e-10")
    pgb = {m.key: m for m in sets["pgbouncer"]}
    assert pgb["pgb_client_wait"].series_title == "Client Wait Time [s/s]"


# --- Grafana's semantics: macros and variables ------------------------------

RANGE = gq.TimeRange(datetime(2018, 4, 12, 18, 0, tzinfo=UTC), datetime(2018, 4, 12, 18, 5, 0, 123000, tzinfo=UTC))


@pytest.mark.parametrize(
    "sql, want",
    [
        ("select $__time(time_column)", 'select time_column AS "time"'),
        ("select $__timeEpoch(time)", 'select extract(epoch from time) as "time"'),
        (
            "WHERE $__timeFilter(time_column)",
            "WHERE time_column BETWEEN '2018-04-12T18:00:00Z' AND '2018-04-12T18:05:00.123Z'",
        ),
        ("select $__timeFrom(), $__timeTo()", "select '2018-04-12T18:00:00Z', '2018-04-12T18:05:00.123Z'"),
        ("GROUP BY $__timeGroup(time_column,'5m')", "GROUP BY floor(extract(epoch from time_column)/300)*300"),
        (
            "SELECT $__timeGroupAlias(time_column, '1.5s')",
            'SELECT floor(extract(epoch from time_column)/1.5)*1.5 AS "time"',
        ),
        # Grafana's pre-5.3 rule: $__timeGroup followed by a comma is aliased.
        (
            "SELECT $__timeGroup(time_column,'5m'), value",
            'SELECT floor(extract(epoch from time_column)/300)*300 AS "time", value',
        ),
        ("WHERE $__unixEpochFilter(t)", "WHERE t >= 1523556000 AND t <= 1523556300"),
    ],
)
def test_postgres_macros_as_grafana_writes_them(sql, want):
    assert gq.expand_macros(sql, RANGE) == want


def test_timescaledb_time_group():
    assert gq.expand_macros("$__timeGroup(t, '5m')", RANGE, timescaledb=True) == "time_bucket('300.000s',t)"


@pytest.mark.parametrize(
    "sql, error",
    [
        ("$__nosuch(x)", "unknown macro '__nosuch'"),
        ("$__timeGroup(x)", "needs time column and interval"),
        ("$__timeGroup(x, 'soon')", "error parsing interval soon"),
        ("$__timeFilter()", "missing time column argument"),
    ],
)
def test_bad_macros_are_errors(sql, error):
    with pytest.raises(gq.QueryError, match=error):
        gq.expand_macros(sql, RANGE)


def test_variables_are_formatted_as_each_datasource_does():
    single = gq.Variable("code", False, ["it's"], ["it's"])
    multi = gq.Variable("configuration", True, ["a'b", "c.d"], ["a'b", "c.d"])
    variables = {"code": single, "configuration": multi}
    sql = gq.interpolate(
        "code = '$code' AND c IN ($configuration) AND x = [[code]] ${configuration:text}", variables, gq.sql_value, {}
    )
    assert sql == "code = 'it''s' AND c IN ('a''b','c.d') AND x = it''s a'b, c.d"
    promql = gq.interpolate('{experiment="$code", configuration=~"${configuration}"}', variables, gq.prom_value, {})
    assert promql == '{experiment="it\\\'s", configuration=~"(a\\\\\'b|c\\\\.d)"}'
    assert (
        gq.interpolate(
            "$__rate_interval $__interval $nosuch", {}, gq.sql_value, {"$__interval": "2s", "$__rate_interval": "8s"}
        )
        == "8s 2s $nosuch"
    )


def test_interval_helpers():
    assert gq.rfc3339nano(datetime(2026, 1, 2, 3, 4, 5, 120000, tzinfo=UTC)) == "2026-01-02T03:04:05.12Z"
    assert [gq.parse_interval(x) for x in ("2s", "1m", "500ms", "1.5s")] == [2, 60, 0.5, 1.5]
    assert (gq.go_number(300.0), gq.go_number(1.5)) == ("300", "1.5")
    long = gq.TimeRange(RANGE.start, RANGE.start + timedelta(hours=2))
    assert (RANGE.interval(), long.interval()) == (1, 8)


# --- every SQL query against the collector's schema --------------------------


@pytest.fixture(scope="module")
def db(postgres_url):
    tables = frames_tables()
    tables["experiments"][0]["code"] = CODE
    # The saturation panels read saturation_steps: one judged step and the
    # knee (the rows test_saturation.py's summary reads), on this fixture's run phase.
    run = next(p for p in tables["phases"] if p["kind"] == "run")
    tables["saturation_steps"] = [
        {
            "configuration": run["configuration"],
            "phase": run["phase"],
            "attempt": run["attempt"],
            "step": 1,
            "role": "step",
            "offered": 2000,
            "shards": 1,
            "threads": 8,
            "seconds": 17,
            "achieved": 1990.0,
            "goodput": 1990.0,
            "error_share": 0.0,
            "p99_ms": 1.5,
            "cv": 1.2,
            "worst_second": 1930.0,
            "busy": 20.0,
            "verdict": "pass",
            "why": "w",
            "next": "the search is over",
            "knee": {"offered": 2000, "goodput": 1990.0, "sustained": 1990.0, "step": 1},
        }
    ]
    # The ingest panels (benchq tsdb) read the database's count around the
    # run phase and its status lines' QUERY block: three readings, and the
    # first line given a query.
    lines = sorted((i for i in tables["intervals"] if i["phase"] == run["phase"]), key=lambda i: i["at"])
    tables["ingest_readings"] = [
        {
            "phase": run["phase"],
            "attempt": 1,
            "shard": 1,
            "at": line["at"],
            "total": 1000.0 * k,
            "after_end": False,
            "counter": 'vm_rows_inserted_total{type="graphite"}',
        }
        for k, line in enumerate(lines[:3])
    ]
    lines[0]["per_op"] = {**(lines[0]["per_op"] or {}), "QUERY": {"Count": 1, "Avg": 1500, "Max": 2500}}
    insert(postgres_url, tables)
    return postgres_url


def _run_sql(db):
    with psycopg.connect(db) as conn:
        runner = gq.Runner(conn, None, CODE, gq.experiment_range(conn, CODE))
        results = []
        for path in BOARDS:
            board = json.loads(path.read_text())
            # Without Prometheus: its panels are run by the e2e experiment.
            for p in board["panels"]:
                p["targets"] = [t for t in p.get("targets", []) if "rawSql" in t]
            results.extend(runner.run(board))
        return results


def test_every_sql_query_runs_and_gives_its_panel_rows(db):
    results = _run_sql(db)
    assert len(results) >= 17
    empty = [r.panel for r in results if r.rows == 0]
    assert empty == [], f"no rows for {empty}"
    by_panel = {r.panel: r for r in results}
    assert by_panel["Throughput per shard"].columns == ["time", "metric", "ops/s"]
    assert {"configuration", "phase", "throughput", "error_share", "p99_max_us"} <= set(by_panel["Phases"].columns)
    repeated = [r.panel for r in results if r.panel.startswith("$app_metric (")]
    assert len(repeated) >= 1, "the application metric panel is repeated per metric"


def test_phase_figures_give_the_summarys_throughput(postgres_url):
    """The view the panels read gives the summary's common-window throughput of every phase."""
    tables = load_tables("ycsb-redis-hdr.json")  # its shards report their first and last operation
    tables["experiments"][0]["code"] = "grafana-hdr"
    insert(postgres_url, tables)
    summary = summarize(experiment(tables))
    want = {
        **dict(zip(summary.loading_per_run["DBMS"] + "-0", summary.loading_per_run[WINDOW_THROUGHPUT], strict=False)),
        **dict(zip(summary.execution_per_phase["phase"], summary.execution_per_phase[WINDOW_THROUGHPUT], strict=False)),
    }
    with psycopg.connect(postgres_url) as conn:
        got = dict(conn.execute("SELECT phase, throughput FROM phase_figures WHERE code = 'grafana-hdr'").fetchall())
    assert sorted(got) == sorted(want)
    for phase, throughput in got.items():
        assert throughput == pytest.approx(want[phase], rel=1e-12), phase


def test_a_query_grafana_could_not_plot_is_an_error(db):
    with psycopg.connect(db) as conn:
        runner = gq.Runner(conn, None, CODE, gq.experiment_range(conn, CODE))
        with pytest.raises(gq.QueryError, match="without a 'time' column"):
            runner.run_sql(("t", "p"), {"refId": "A", "format": "time_series", "rawSql": "SELECT 1 AS value"}, {})
        with pytest.raises(gq.QueryError, match="not sorted by time"):
            runner.run_sql(
                ("t", "p"),
                {
                    "refId": "A",
                    "format": "time_series",
                    "rawSql": "SELECT * FROM (VALUES (2, 1.0), (1, 2.0)) v(time, value)",
                },
                {},
            )
        with pytest.raises(gq.QueryError, match="UndefinedTable"):
            runner.run_sql(("t", "p"), {"refId": "A", "format": "table", "rawSql": "SELECT * FROM nosuch"}, {})
