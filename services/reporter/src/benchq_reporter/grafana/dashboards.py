"""benchq's Grafana dashboards, as code (docs/grafana.md).

Built with grafana-foundation-sdk (pinned in requirements.txt) and written
as JSON to ``grafana/dashboards/``, which Grafana loads through the
provisioning files in ``grafana/provisioning/``. The JSON is committed;
``python -m benchq_reporter.grafana.dashboards --check`` (run by the tests) fails
when regenerating would change it.

Two dashboards:

* **benchq experiment** (uid ``benchq-experiment``; variables: experiment
  code, configuration, phase): the summary's figures, throughput over time
  per shard and in total, latency percentiles over time, the phase windows
  as annotations, CPU and memory per component and the application metrics
  of ended phases from the results database, and the same live from
  Prometheus.
* **benchq overview** (uid ``benchq-overview``): every experiment with its
  status, duration and configurations; throughput and p99 per benchmarking
  phase across experiments.

SQL panels read the results database through its views (``reported_shards``,
``phase_figures``, internal/resultsdb), so a panel and the summary
apply the same rules. Every panel query is run against a real results
database and a real Prometheus by ``grafana_queries`` (tests and e2e).

Template variables are written the way Grafana's PostgreSQL datasource
interpolates them: a single-valued variable is substituted raw (hence
``'$code'``), a multi-valued one as a comma-separated list of quoted
literals (hence ``IN ($configuration)``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from grafana_foundation_sdk.builders import barchart, prometheus, stat, table, timeseries, xychart
from grafana_foundation_sdk.builders import common as widgets
from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.cog import builder as cogbuilder
from grafana_foundation_sdk.cog import encoder, plugins, runtime, variants
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as model
from grafana_foundation_sdk.models import xychart as xymodel

from ..contracts import KIND, PHASE

RESULTS = common.DataSourceRef(type_val="grafana-postgresql-datasource", uid="benchq-results")
PROMETHEUS = common.DataSourceRef(type_val="prometheus", uid="benchq-prometheus")
EXPERIMENT_UID = "benchq-experiment"
OVERVIEW_UID = "benchq-overview"


# --- the SQL query of Grafana's PostgreSQL datasource ----------------------
# The SDK has no builder for it: this is its query model (what Grafana's
# query editor saves in code mode), registered with the SDK's runtime so
# that parse() decodes it like the SDK's own dataqueries.


class SQLQuery(variants.Dataquery):
    def __init__(
        self,
        ref_id: str = "",
        raw_sql: str = "",
        format: str = "time_series",
        datasource: common.DataSourceRef | None = None,
    ) -> None:
        self.ref_id, self.raw_sql, self.format, self.datasource = ref_id, raw_sql, format, datasource

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "refId": self.ref_id,
            "rawSql": self.raw_sql,
            "format": self.format,
            "rawQuery": True,
            "editorMode": "code",
        }
        if self.datasource is not None:
            out["datasource"] = self.datasource
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        ds = common.DataSourceRef.from_json(data["datasource"]) if "datasource" in data else None
        return cls(data.get("refId", ""), data.get("rawSql", ""), data.get("format", "time_series"), ds)


class SQL(cogbuilder.Builder[SQLQuery]):
    """A raw SQL query; format "time_series" (a time column, a metric column, values) or "table"."""

    def __init__(self, sql: str, format: str = "time_series", ref_id: str = "A") -> None:
        self._q = SQLQuery(ref_id, _dedent(sql), format)

    def build(self) -> SQLQuery:
        return self._q


def _dedent(sql: str) -> str:
    lines = [line.rstrip() for line in sql.strip("\n").splitlines()]
    indent = min(len(line) - len(line.lstrip()) for line in lines if line)
    return "\n".join(line[indent:] for line in lines)


def _register_sql_query() -> None:
    plugins.register_default_plugins()
    runtime.register_dataquery_variant(
        runtime.DataqueryConfig(identifier=RESULTS.type_val, from_json_hook=SQLQuery.from_json)
    )


def promql(expr: str, legend: str, ref_id: str = "A") -> prometheus.Dataquery:
    return prometheus.Dataquery().expr(expr).legend_format(legend).range().ref_id(ref_id)


# --- the catalog's metric sets (catalog/metrics/*.json) --------------------


@dataclass(frozen=True)
class Metric:
    set: str
    key: str
    title: str  # with the unit of its reduction: "Processed Commands [per second]"
    name: str  # the Prometheus series it reads
    aggregate: str  # sum | max: how several targets' figures combine
    matchers: str  # fixed label matchers of the query ("" or ',datname="ycsb"')
    counter: bool  # a counter (plotted as its rate per second), else a gauge
    scale: float

    @property
    def series_title(self) -> str:
        """The title of the plotted series: a counter whose set reduces it to an
        increase is plotted per second ("Client Wait Time [s/s]")."""
        if self.counter and "per second" not in self.title and "/sec" not in self.title:
            return re.sub(r"\[(.*)\]$", r"[\1/s]", self.title)
        return self.title


COUNTER_REDUCTIONS = {"increase", "rate_mean", "rate_max"}


def repo_root(start: Path | None = None) -> Path:
    here = (start or Path(__file__)).resolve()
    for parent in [here, *here.parents]:
        if (parent / "catalog" / "metrics").is_dir():
            return parent
    raise FileNotFoundError(f"no catalog/metrics above {here}: run from a benchq checkout")


def metric_sets(root: Path) -> dict[str, list[Metric]]:
    """The catalog's metric sets (name → metrics, in the catalog's order)."""
    sets = {}
    for path in sorted((root / "catalog" / "metrics").glob("*.json")):
        doc = json.loads(path.read_text())
        metrics = []
        for m in doc["metrics"]:
            # The fields catalog.Metric.PromQL renders for the collector, in the same order.
            matchers = "".join(f',{k}="{v}"' for k, v in sorted(m.get("matchers", {}).items()))
            metrics.append(
                Metric(
                    doc["name"],
                    m["key"],
                    m["title"],
                    m["series"],
                    m["aggregate"],
                    matchers,
                    m["reduction"] in COUNTER_REDUCTIONS,
                    float(m["scale"]),
                )
            )
        sets[doc["name"]] = metrics
    return sets


# --- layout ----------------------------------------------------------------


class Board:
    """Panels placed left to right in rows of 24 columns, ids in order."""

    def __init__(self, d: dash.Dashboard) -> None:
        self.d, self.x, self.y, self.row_h, self.next_id = d, 0, 0, 0, 1

    def row(self, title: str) -> None:
        self._newline()
        self.d.with_row(dash.Row(title).id(self._id()).grid_pos(model.GridPos(h=1, w=24, x=0, y=self.y)))
        self.y += 1

    def add(self, panel: Any, w: int, h: int) -> None:
        if self.x + w > 24:
            self._newline()
        panel.id(self._id()).grid_pos(model.GridPos(h=h, w=w, x=self.x, y=self.y))
        self.d.with_panel(panel)
        self.x += w
        self.row_h = max(self.row_h, h)

    def _newline(self) -> None:
        self.y += self.row_h
        self.x, self.row_h = 0, 0

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id - 1


def _series(panel: timeseries.Panel, title: str, unit: str, about: str) -> timeseries.Panel:
    legend = (
        widgets.VizLegendOptions()
        .show_legend(True)
        .display_mode(common.LegendDisplayMode.TABLE)
        .placement(common.LegendPlacement.BOTTOM)
        .calcs(["mean", "max"])
    )
    return (
        panel.title(title)
        .description(about)
        .unit(unit)
        .legend(legend)
        .tooltip(widgets.VizTooltipOptions().mode(common.TooltipDisplayMode.MULTI).sort(common.SortOrder.DESCENDING))
    )


def _stat(title: str, unit: str, sql: str, field: str, about: str, values: bool = False) -> stat.Panel:
    reduce = widgets.ReduceDataOptions().calcs(["lastNotNull"]).fields(f"/^{field}$/").values(values)
    return (
        stat.Panel()
        .title(title)
        .description(about)
        .unit(unit)
        .datasource(RESULTS)
        .with_target(SQL(sql, "table"))
        .reduce_options(reduce)
        .graph_mode(common.BigValueGraphMode.NONE)
    )


def _variable(name: str, label: str, sql: str, multi: bool) -> dash.QueryVariable:
    v = (
        dash.QueryVariable(name)
        .label(label)
        .datasource(RESULTS)
        .query(_dedent(sql))
        .refresh(model.VariableRefresh.ON_DASHBOARD_LOAD)
        .sort(model.VariableSort.DISABLED)
    )
    if multi:
        v = v.multi(True).include_all(True).current(model.VariableOption(selected=True, text=["All"], value=["$__all"]))
    return v


# --- benchq experiment -----------------------------------------------------

# The selected phases, and the intervals of their attempts (live too: an
# interval arrives before its shard's final result).
PHASES = "p.code = '$code' AND p.configuration IN ($configuration) AND p.phase IN ($phase)"
INTERVALS = f"intervals i JOIN phases p USING (code, phase, attempt)\nWHERE {PHASES} AND $__timeFilter(i.at)"
# The status lines that carry a rate: a shard's first (second 0) counts
# nothing yet, and its 0 would halve the first bucket of every phase (the
# HTML report leaves it out too).
RATED_INTERVALS = INTERVALS + " AND i.elapsed_s > 0"
FIGURES = "f.code = '$code' AND f.configuration IN ($configuration) AND f.phase IN ($phase)"
SHARD_NAME = "i.phase || ' #' || i.shard || CASE WHEN i.attempt > 1 THEN ' (attempt ' || i.attempt || ')' ELSE '' END"
# The stored samples of the selected phases, each once: the collector
# stores a sample in every phase whose (widened) window holds it.
SAMPLES = """
    SELECT DISTINCT ON (configuration, component, labels_hash, metric, time)
           time, configuration, component, metric, labels, labels_hash, value
    FROM metrics
    WHERE code = '$code' AND configuration IN ($configuration) AND phase IN ($phase) AND {metric}
      AND $__timeFilter(time)
    ORDER BY configuration, component, labels_hash, metric, time"""


def samples(metric: str) -> str:
    """SAMPLES of one metric condition, indented to stand inside "FROM (" of the panels below."""
    return textwrap.indent(_dedent(SAMPLES.format(metric=metric)), " " * 16).lstrip()


# A counter's rate between consecutive samples of one series.
RATE = "(value - lag(value) OVER w) / nullif(extract(epoch FROM time - lag(time) OVER w), 0)"
SERIES = "WINDOW w AS (PARTITION BY configuration, component, labels_hash, metric ORDER BY time)"
# A live series of the experiment in Prometheus.
LIVE = 'experiment="$code", configuration=~"$configuration"'


def experiment_dashboard(sets: dict[str, list[Metric]]) -> dash.Dashboard:
    d = (
        dash.Dashboard("benchq experiment")
        .uid(EXPERIMENT_UID)
        .tags(["benchq"])
        .editable()
        .description(
            "One benchq experiment: its figures, throughput and latency over time, and what the SUT, "
            "the loaders and the benchmarkers used. Open it with `benchq dashboard -e CODE`."
        )
        .time("now-1h", "now")
        .refresh("")
        .timezone("browser")
        .tooltip(model.DashboardCursorSync.CROSSHAIR)
    )
    d.with_variable(_variable("code", "experiment", "SELECT code FROM experiments ORDER BY planned_at DESC", False))
    d.with_variable(
        _variable(
            "configuration", "configuration", "SELECT name FROM configurations WHERE code = '$code' ORDER BY name", True
        )
    )
    d.with_variable(
        _variable(
            "phase",
            "phase",
            """
        SELECT DISTINCT phase FROM phases
        WHERE code = '$code' AND configuration IN ($configuration) ORDER BY phase""",
            True,
        )
    )
    # Buckets of the total throughput: two status intervals, so that every
    # shard reports at least once in each.
    d.with_variable(
        _variable(
            "bucket",
            "bucket",
            """
        SELECT (2 * coalesce((plan->'settings'->>'status_interval')::int, 10)) || 's'
        FROM experiments WHERE code = '$code'""",
            False,
        ).hide(model.VariableHide.HIDE_VARIABLE)
    )
    d.with_variable(
        _variable(
            "app_metric",
            "application metric",
            """
        SELECT DISTINCT title AS __text, metric AS __value FROM metric_summaries
        WHERE code = '$code' AND section = 'application' ORDER BY 1""",
            True,
        )
    )
    d.annotation(
        dash.AnnotationQuery()
        .name("Phases")
        .datasource(RESULTS)
        .enable(True)
        .icon_color("#5794F2")
        .target(
            SQL(
                """
                     SELECT p.started_at AS time, coalesce(p.ended_at, now()) AS timeend,
                            p.phase || ' (' || p.kind || ', attempt ' || p.attempt || '): ' || p.status
                              || coalesce(' - ' || p.reason, '') AS text,
                            p.configuration AS tags
                     FROM phases p
                     WHERE p.code = '$code' AND p.configuration IN ($configuration) AND p.phase IN ($phase)
                       AND p.started_at IS NOT NULL
                     ORDER BY 1""",
                "table",
            )
        )
    )
    b = Board(d)

    _experiment_row(b)
    _throughput_row(b)
    _saturation_row(b)
    _ingest_row(b)
    _latency_row(b)
    _resources_row(b, sets)
    _live_row(b, sets)
    return d


def _experiment_row(b: Board) -> None:
    """The summary's figures as stat panels and the phase table."""
    b.row("Experiment")
    b.add(
        _stat(
            "Status",
            "none",
            "SELECT status FROM experiments WHERE code = '$code'",
            "status",
            "running, done, failed or cancelled",
        ),
        4,
        4,
    )
    b.add(
        _stat(
            "Duration",
            "s",
            """
        SELECT extract(epoch FROM coalesce(ended_at, now()) - coalesce(started_at, planned_at))::float8 AS duration
        FROM experiments WHERE code = '$code'""",
            "duration",
            "from the start (or planning) to the end, or now",
        ),
        4,
        4,
    )
    b.add(
        _stat(
            "Configurations",
            "none",
            "SELECT count(*) AS configurations FROM configurations WHERE code = '$code'",
            "configurations",
            "SUT configurations of the grid",
        ),
        4,
        4,
    )
    b.add(
        _stat(
            "Failed phases",
            "none",
            f"""
        SELECT count(*) AS failed FROM (
          SELECT DISTINCT ON (phase) status FROM phases WHERE code = '$code' ORDER BY phase, attempt DESC) last
        WHERE status = '{PHASE.failed}'""",
            "failed",
            "phases whose last attempt failed",
        ),
        4,
        4,
    )
    b.add(
        _stat(
            "Benchmarking error share",
            "percentunit",
            f"""
        SELECT sum(f.failed)::float8 / nullif(sum(f.operations), 0) AS error_share
        FROM phase_figures f WHERE {FIGURES} AND f.kind = '{KIND.run}'""",
            "error_share",
            "failed operations / all operations of the selected benchmarking phases",
        ),
        8,
        4,
    )
    b.add(
        _stat(
            "Throughput per benchmarking phase",
            "ops",
            f"""
        SELECT f.phase, f.throughput FROM phase_figures f
        WHERE {FIGURES} AND f.kind = '{KIND.run}' ORDER BY f.phase""",
            "throughput",
            "all operations / the phase's common window (the summary's 'Throughput common window(ops/sec)')",
            values=True,
        ),
        24,
        4,
    )
    b.add(
        table.Panel()
        .title("Phases")
        .datasource(RESULTS)
        .description(
            "One row per phase, from the reported attempt of each shard (view phase_figures). p99_max_us is the "
            "highest p99 of a shard: an upper bound of the phase's p99, exact for one shard; the summary has the "
            "percentiles of the merged histograms."
        )
        .with_target(
            SQL(
                f"""
        SELECT f.configuration, f.phase, f.kind, last.status, f.shards, f.operations, f.failed,
               f.window_s, f.throughput, f.goodput, f.error_share, f.p99_max_us
        FROM phase_figures f
        LEFT JOIN LATERAL (SELECT status FROM phases
                           WHERE code = f.code AND phase = f.phase ORDER BY attempt DESC LIMIT 1) last ON true
        WHERE {FIGURES}
        ORDER BY f.configuration, f.kind, f.phase""",
                "table",
            )
        ),
        24,
        7,
    )


def _throughput_row(b: Board) -> None:
    """Throughput over time, per shard and in total."""
    b.row("Throughput")
    b.add(
        _series(
            timeseries.Panel(),
            "Throughput per shard",
            "ops",
            "each shard's status intervals as the driver reported them",
        )
        .datasource(RESULTS)
        .with_target(
            SQL(f"""
        SELECT $__time(i.at), {SHARD_NAME} AS metric, i.ops_per_sec AS "ops/s"
        FROM {RATED_INTERVALS}
        ORDER BY 1""")
        ),
        12,
        8,
    )
    b.add(
        _series(
            timeseries.Panel(),
            "Throughput in total",
            "ops",
            "per phase: each shard's mean rate over buckets of two status intervals, added up",
        )
        .datasource(RESULTS)
        .with_target(
            SQL(f"""
        SELECT time, phase AS metric, sum(rate) AS "ops/s"
        FROM (SELECT $__timeGroup(i.at, '$bucket') AS time, i.phase, i.shard, avg(i.ops_per_sec) AS rate
              FROM {RATED_INTERVALS}
              GROUP BY 1, 2, 3) per_shard
        GROUP BY 1, 2
        ORDER BY 1""")
        ),
        12,
        8,
    )


def _ingest_row(b: Board) -> None:
    """Benchmark tsdb: points sent against what the database stored, second by second, and the queries under load."""
    b.row("Ingest (benchq tsdb; empty otherwise)")
    b.add(
        _series(
            timeseries.Panel(),
            "Ingest: sent against stored per second",
            "none",
            "points/s per phase: sent is the generators' status lines added up, stored the growth of the database's "
            "own count of stored points between two readings (ingest_readings)",
        )
        .datasource(RESULTS)
        .with_target(
            SQL(f"""
        SELECT $__timeGroup(i.at, '1s') AS time, i.phase || ' sent' AS metric, sum(i.ops_per_sec) AS "points/s"
        FROM {RATED_INTERVALS}
          AND EXISTS (SELECT 1 FROM ingest_readings r WHERE r.code = i.code AND r.phase = i.phase)
        GROUP BY 1, 2
        ORDER BY 1""")
        )
        .with_target(
            SQL(
                """
        SELECT time, metric, "points/s" FROM (
          SELECT r.at AS time, r.phase || ' stored' AS metric,
                 (r.total - lag(r.total) OVER w) / nullif(extract(epoch FROM r.at - lag(r.at) OVER w), 0) AS "points/s"
          FROM ingest_readings r JOIN phases p USING (code, phase, attempt)
          WHERE p.code = '$code' AND p.configuration IN ($configuration) AND p.phase IN ($phase) AND $__timeFilter(r.at)
          WINDOW w AS (PARTITION BY r.phase, r.attempt ORDER BY r.at)) x
        WHERE "points/s" IS NOT NULL
        ORDER BY 1""",
                ref_id="B",
            )
        ),
        12,
        8,
    )
    b.add(
        _series(
            timeseries.Panel(),
            "Ingest: backlog",
            "none",
            "points per phase the database had not stored yet at each reading of its own count: what the generators "
            "had sent by their last status line before it, less the count's growth since its baseline (the HTML "
            "report interpolates between status lines)",
        )
        .datasource(RESULTS)
        .with_target(
            SQL(
                """
        SELECT r.at AS time, r.phase || ' backlog' AS metric,
               (SELECT coalesce(sum(last.operations), 0) FROM (
                  SELECT DISTINCT ON (i.shard) i.operations FROM intervals i
                  WHERE i.code = r.code AND i.phase = r.phase AND i.attempt = r.attempt AND i.at <= r.at
                  ORDER BY i.shard, i.at DESC) last)
               - (r.total - first_value(r.total) OVER (PARTITION BY r.phase, r.attempt ORDER BY r.at)) AS "points"
        FROM ingest_readings r JOIN phases p USING (code, phase, attempt)
        WHERE p.code = '$code' AND p.configuration IN ($configuration) AND p.phase IN ($phase) AND $__timeFilter(r.at)
        ORDER BY 1"""
            )
        ),
        12,
        8,
    )
    b.add(
        _series(
            timeseries.Panel(),
            "Queries under load",
            "ms",
            "the read query the first generator sends every second (a range query over the last minute of one "
            "series): the mean latency of each second",
        )
        .datasource(RESULTS)
        .with_target(
            SQL(f"""
        SELECT $__time(i.at), i.phase AS metric, (i.per_op->'QUERY'->>'Avg')::float8 / 1000 AS "ms"
        FROM {INTERVALS}
          AND i.per_op ? 'QUERY'
        ORDER BY 1""")
        ),
        12,
        8,
    )


def _saturation_row(b: Board) -> None:
    """The saturation search's steps (-xsat): the two XY charts and the step table."""
    b.row("Saturation search (-xsat; empty otherwise)")
    steps = "FROM saturation_steps s WHERE s.code = '$code' AND s.configuration IN ($configuration)"
    b.add(
        _steps_chart(
            "Saturation: goodput against the offered load",
            "one point per step of the search (the hold left out): the goodput over its steady window "
            "against the load offered; the knee is where the points leave the diagonal",
            "ops",
            f"""
        SELECT s.offered::float8 AS "offered [ops/s]", s.goodput AS "goodput [ops/s]"
        {steps} AND s.role = 'step'
        ORDER BY 1""",
        ),
        8,
        8,
    )
    b.add(
        _steps_chart(
            "Saturation: p99 against goodput",
            "one point per step: p99 of the shards' merged histograms (from the intended start) "
            "against its goodput; a step without a p99 is left out, never drawn at 0",
            "ms",
            f"""
        SELECT s.goodput AS "goodput [ops/s]", s.p99_ms AS "p99 [ms]"
        {steps} AND s.role = 'step' AND s.p99_ms IS NOT NULL
        ORDER BY 1""",
        ),
        8,
        8,
    )
    b.add(
        table.Panel()
        .title("Saturation steps")
        .datasource(RESULTS)
        .description(
            "the summary's Saturation section: each step as the scheduler judged it, the knee on the step that ended "
            "the search"
        )
        .with_target(
            SQL(
                f"""
        SELECT s.configuration, s.step, s.phase, s.role, s.shards, s.offered, s.goodput, s.error_share, s.p99_ms,
               s.cv, s.verdict, s.why, s.knee->>'sustained' AS knee
        {steps}
        ORDER BY s.configuration, s.step""",
                "table",
            )
        ),
        8,
        8,
    )


def _steps_chart(title: str, about: str, unit: str, sql: str) -> xychart.Panel:
    """An XY chart of the saturation steps, one point per step."""
    return (
        xychart.Panel()
        .title(title)
        .datasource(RESULTS)
        .description(about)
        .mapping(xymodel.SeriesMapping.AUTO)
        .show(xymodel.XYShowMode.POINTS)
        .unit(unit)
        .with_target(SQL(sql, "table"))
    )


def _latency_row(b: Board) -> None:
    """Latency percentiles per operation over time."""
    b.row("Latency")
    for pct, label in (("90", "p90"), ("99", "p99")):
        b.add(
            _series(
                timeseries.Panel(),
                f"Latency {label} per operation",
                "µs",
                "per shard and status interval, as the driver reported it (YCSB's status lines carry "
                "p90, p99, p99.9, p99.99; the summary has p95 and p99 of each phase from the merged "
                "histograms)",
            )
            .datasource(RESULTS)
            .with_target(
                SQL(f"""
            SELECT $__time(i.at), {SHARD_NAME} || ' ' || op.key AS metric, (op.value->>'{pct}')::float8 AS "{label}"
            FROM intervals i JOIN phases p USING (code, phase, attempt)
            CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(i.per_op) = 'object' THEN i.per_op ELSE '{{}}' END) op
            WHERE {PHASES} AND $__timeFilter(i.at)
              AND op.key NOT LIKE 'Intended-%' AND op.value ? '{pct}'
            ORDER BY 1""")
            ),
            12,
            8,
        )


def _resources_row(b: Board, sets: dict[str, list[Metric]]) -> None:
    """CPU, memory and application metrics of ended phases, from the results database."""
    b.row("Resources of ended phases (results database)")
    b.add(
        _series(
            timeseries.Panel(),
            "CPU per component",
            "none",
            "cores in use between consecutive scrapes (container_cpu_usage_seconds_total), per process tree",
        )
        .datasource(RESULTS)
        .with_target(
            SQL(f"""
        SELECT time, configuration || ' ' || component || ' ' || (labels->>'instance') AS metric, cores
        FROM (SELECT time, configuration, component, labels, {RATE} AS cores
              FROM ({samples("metric = 'cpu_seconds'")}) s
              {SERIES}) r
        WHERE cores IS NOT NULL
        ORDER BY 1""")
        ),
        12,
        8,
    )
    b.add(
        _series(
            timeseries.Panel(),
            "Memory per component",
            "bytes",
            "working set (container_memory_working_set_bytes), per process tree",
        )
        .datasource(RESULTS)
        .with_target(
            SQL(f"""
        SELECT time, configuration || ' ' || component || ' ' || (labels->>'instance') AS metric, value AS bytes
        FROM ({samples("metric = 'max_ram'")}) s
        ORDER BY 1""")
        ),
        12,
        8,
    )
    catalog_rows = ",\n".join(
        f"('{m.key}', '{m.series_title}', {str(m.counter).lower()}, {m.scale!r})"
        for name, metrics in sets.items()
        if name != "system"
        for m in metrics
    )
    b.add(
        _series(
            timeseries.Panel(),
            "$app_metric",
            "none",
            "the DBMS's application metric (catalog/metrics): "
            "a counter as its rate per second, scaled to the unit of its title; a metric the catalog "
            "does not name (an older experiment) as stored",
        )
        .datasource(RESULTS)
        .repeat("app_metric")
        .repeat_direction("h")
        .max_per_row(2)
        .with_target(
            SQL(f"""
        WITH catalog (metric, title, counter, scale) AS (VALUES
        {catalog_rows.replace(chr(10), chr(10) + "        ")})
        SELECT time, configuration || ' ' || component || ' ' || title AS metric, value
        FROM (SELECT s.time, s.configuration, s.component, coalesce(c.title, s.metric) AS title,
                     coalesce(c.scale, 1) * CASE WHEN c.counter THEN {RATE} ELSE value END AS value
              FROM ({samples("metric IN ($app_metric)")}) s
              LEFT JOIN catalog c USING (metric)
              {SERIES}) r
        WHERE value IS NOT NULL
        ORDER BY 1""")
        ),
        12,
        8,
    )
    b.add(
        table.Panel()
        .title("Monitoring figures per phase")
        .datasource(RESULTS)
        .description(
            "the summary's Monitoring and Application Metrics figures (metric_summaries); a figure that could not "
            "be collected is empty, with the reason in 'missing', never 0; a phase run again has a row per attempt "
            "(the summary reports one)"
        )
        .with_target(
            SQL(
                """
        SELECT configuration, phase, attempt, component, section, title, value, missing, samples
        FROM metric_summaries
        WHERE code = '$code' AND configuration IN ($configuration) AND phase IN ($phase)
        ORDER BY configuration, phase, attempt, component, section, position""",
                "table",
            )
        ),
        24,
        8,
    )


def _live_row(b: Board, sets: dict[str, list[Metric]]) -> None:
    """The same, live from Prometheus."""
    b.row("Live (Prometheus)")
    b.add(
        _series(timeseries.Panel(), "CPU per component, live", "none", "cores, from Prometheus")
        .datasource(PROMETHEUS)
        .with_target(
            promql(
                f"sum by (configuration, component) (rate(container_cpu_usage_seconds_total{{{LIVE}}}[$__rate_interval]))",
                "{{configuration}} {{component}}",
            )
        ),
        8,
        8,
    )
    b.add(
        _series(timeseries.Panel(), "Memory per component, live", "bytes", "working set, from Prometheus")
        .datasource(PROMETHEUS)
        .with_target(
            promql(
                f"sum by (configuration, component) (container_memory_working_set_bytes{{{LIVE}}})",
                "{{configuration}} {{component}}",
            )
        ),
        8,
        8,
    )
    b.add(
        _series(
            timeseries.Panel(),
            "Throughput of the shards in flight",
            "ops",
            "the driver agents' benchq_agent_ops_per_second over their last status interval: "
            'operation="all", the driver\'s own count (a read-modify-write once)',
        )
        .datasource(PROMETHEUS)
        .with_target(
            # "all" only: the per-operation series add up to it (and to more with
            # workload F, whose read-modify-writes are in READ and UPDATE too).
            promql(
                f'sum by (phase) (benchq_agent_ops_per_second{{{LIVE}, phase=~"$phase", operation="all"}})', "{{phase}}"
            )
        ),
        8,
        8,
    )
    for name, metrics in sets.items():
        if name == "system":
            continue
        p = _series(
            timeseries.Panel(),
            f"{name} application metrics, live",
            "none",
            f"the {name} set of catalog/metrics, from Prometheus; empty unless a configuration uses it",
        ).datasource(PROMETHEUS)
        for i, m in enumerate(metrics):
            p = p.with_target(promql(live_query(m), "{{configuration}} " + m.series_title, ref_id=chr(ord("A") + i)))
        b.add(p, 12, 8)


def live_query(m: Metric) -> str:
    """A catalog metric as PromQL for the live panels: a counter as its rate, scaled."""
    series = f"{m.name}{{{LIVE}{m.matchers}}}"
    if m.counter:
        series = f"rate({series}[$__rate_interval])"
    query = f"{m.aggregate} by (configuration) ({series})"
    return query if m.scale == 1 else f"{query} * {m.scale!r}"


# --- benchq overview -------------------------------------------------------


def overview_dashboard() -> dash.Dashboard:
    d = (
        dash.Dashboard("benchq overview")
        .uid(OVERVIEW_UID)
        .tags(["benchq"])
        .editable()
        .description(
            "Every benchq experiment planned in the time range; the benchmarking phases of the "
            "selected ones side by side."
        )
        .time("now-7d", "now")
        .refresh("")
        .timezone("browser")
    )
    d.with_variable(
        _variable(
            "experiments",
            "experiments",
            """
        SELECT code FROM experiments WHERE $__timeFilter(planned_at) ORDER BY planned_at DESC""",
            True,
        )
    )
    b = Board(d)
    b.row("Experiments")
    link = dash.DashboardLink("benchq experiment").url(
        f"/d/{EXPERIMENT_UID}/benchq-experiment?var-code=${{__value.raw}}&${{__url_time_range}}"
    )
    b.add(
        table.Panel()
        .title("Experiments")
        .datasource(RESULTS)
        .description("planned in the time range; a code opens its benchq experiment dashboard")
        .data_links([link])
        .with_target(
            SQL(
                """
        SELECT e.code, e.status, e.planned_at, e.started_at, e.ended_at,
               extract(epoch FROM coalesce(e.ended_at, now()) - coalesce(e.started_at, e.planned_at))::float8
                 AS duration_s,
               count(c.name) AS configurations, string_agg(DISTINCT c.dbms, ', ') AS dbms, e.reason
        FROM experiments e LEFT JOIN configurations c USING (code)
        WHERE $__timeFilter(e.planned_at)
        GROUP BY e.code
        ORDER BY e.planned_at DESC""",
                "table",
            )
        ),
        24,
        9,
    )
    b.row("Benchmarking phases of the selected experiments")
    per_phase = f"""
        SELECT f.code || ' ' || f.phase AS phase, f.{{column}}
        FROM phase_figures f JOIN experiments e USING (code)
        WHERE f.code IN ($experiments) AND f.kind = '{KIND.run}'
        ORDER BY e.planned_at, f.phase"""
    b.add(
        barchart.Panel()
        .title("Throughput per configuration")
        .datasource(RESULTS)
        .unit("ops")
        .description("all operations / the phase's common window")
        .with_target(SQL(per_phase.format(column="throughput"), "table")),
        12,
        9,
    )
    b.add(
        barchart.Panel()
        .title("p99 per configuration (highest shard)")
        .datasource(RESULTS)
        .unit("µs")
        .description(
            "the highest p99 of a shard: an upper bound of the phase's p99, exact for one shard; "
            "`reporter compare` has the merged figures"
        )
        .with_target(SQL(per_phase.format(column="p99_max_us"), "table")),
        12,
        9,
    )
    b.add(
        table.Panel()
        .title("Benchmarking phases")
        .datasource(RESULTS)
        .with_target(
            SQL(
                f"""
        SELECT f.code, f.configuration, f.phase, f.shards, f.operations, f.failed, f.window_s,
               f.throughput, f.goodput, f.error_share, f.p99_max_us
        FROM phase_figures f JOIN experiments e USING (code)
        WHERE f.code IN ($experiments) AND f.kind = '{KIND.run}'
        ORDER BY e.planned_at, f.configuration, f.phase""",
                "table",
            )
        ),
        24,
        8,
    )
    return d


# --- output ----------------------------------------------------------------


def dashboards(root: Path) -> dict[str, str]:
    """file name → the dashboard's JSON text, as committed in grafana/dashboards."""
    sets = metric_sets(root)
    built: dict[str, Callable[[], dash.Dashboard]] = {
        f"{EXPERIMENT_UID}.json": lambda: experiment_dashboard(sets),
        f"{OVERVIEW_UID}.json": overview_dashboard,
    }
    return {
        name: json.dumps(make().build(), cls=encoder.JSONEncoder, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        for name, make in built.items()
    }


def parse(text: str) -> model.Dashboard:
    """A dashboard's JSON decoded into the SDK's types (raises on what they cannot hold)."""
    _register_sql_query()
    return model.Dashboard.from_json(json.loads(text))


def roundtrip(text: str) -> str:
    """The JSON again from the SDK's types: equal to ``text`` when every field is one the SDK knows."""
    return json.dumps(parse(text), cls=encoder.JSONEncoder, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchq_reporter.grafana.dashboards",
        description="Generate benchq's Grafana dashboards into grafana/dashboards.",
    )
    p.add_argument("--check", action="store_true", help="fail if the committed JSON differs from a regeneration")
    args = p.parse_args(argv)
    root = repo_root()
    out = root / "grafana" / "dashboards"
    stale = []
    for name, text in dashboards(root).items():
        path = out / name
        if args.check:
            if not path.is_file() or path.read_text() != text:
                stale.append(str(path))
        else:
            out.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path}")
    if stale:
        print(
            f"dashboards: {', '.join(stale)} differ from a regeneration: run `make dashboards` and commit",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
