"""Run every query of benchq's dashboards as Grafana would (docs/grafana.md).

No Grafana server can be installed on the development machines, so this
module does what Grafana does with a panel's query, and runs the result
against the real results database and the real Prometheus:

1. template variables, as the dashboard defines them: each variable's own
   query is run in order (a later one may use an earlier one), ``code`` is
   the experiment under test and every multi-value variable is "All";
2. interpolation as the datasources' frontends do it: for PostgreSQL a
   multi-value variable becomes comma-separated quoted literals and a
   single value is substituted with its quotes doubled; for Prometheus a
   multi-value variable becomes a regex alternation of escaped values;
   ``$__interval`` and ``$__rate_interval`` from the time range;
3. the PostgreSQL datasource's backend macros (``$__time``,
   ``$__timeFilter``, ``$__timeGroup``, ``$__timeGroupAlias``, ...), with
   the output of Grafana's own macro engine (pkg/tsdb/grafana-postgresql-
   datasource/macros.go), including its rule that a ``$__timeGroup``
   followed directly by a comma gets ``AS "time"``;
4. the query itself, and a check of what the panel needs: a time series
   query returns a ``time`` column, sorted, and a numeric value column; a
   table query the columns it names; a Prometheus query succeeds, and each
   series carries the labels its legend uses.

A panel repeated over a variable is run once per value of it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import re
import sys
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg

from . import dashboards

_MACRO = re.compile(r"\$([_a-zA-Z0-9]+)\(([^)]*)\)")
_VARIABLE = re.compile(r"\$(\w+)|\$\{(\w+)(?::(\w+))?\}|\[\[(\w+)\]\]")
_INTERVAL = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


class QueryError(Exception):
    """A panel query Grafana could not run, or whose result its panel cannot use."""


# --- time ------------------------------------------------------------------


def rfc3339nano(t: datetime) -> str:
    """Go's time.RFC3339Nano of a UTC time: trailing zeros of the fraction dropped."""
    t = t.astimezone(UTC)
    frac = f"{t.microsecond:06d}".rstrip("0")
    return t.strftime("%Y-%m-%dT%H:%M:%S") + (f".{frac}" if frac else "") + "Z"


def parse_interval(text: str) -> float:
    """Seconds of a Grafana interval ("2s", "1m", "500ms")."""
    m = _INTERVAL.fullmatch(text.strip())
    if m is None:
        raise QueryError(f"error parsing interval {text}")
    return float(m.group(1)) * _UNIT_SECONDS[m.group(2)]


def go_number(x: float) -> str:
    """A float as Go's %v prints it (2 → "2", 0.5 → "0.5")."""
    return str(int(x)) if float(x).is_integer() else repr(x)


def format_interval(seconds: float) -> str:
    """An interval as Grafana writes $__interval: whole seconds, else ms."""
    return f"{int(seconds)}s" if float(seconds).is_integer() else f"{round(seconds * 1000)}ms"


@dataclass(frozen=True)
class TimeRange:
    start: datetime
    end: datetime

    def interval(self, max_points: int = 1000, minimum: float = 1.0) -> float:
        """$__interval in seconds: the range over the points a panel shows, at least ``minimum``."""
        return max(minimum, math.ceil((self.end - self.start).total_seconds() / max_points))


# --- the PostgreSQL datasource: macros and variables ------------------------


def expand_macros(sql: str, tr: TimeRange, timescaledb: bool = False) -> str:
    """The PostgreSQL datasource's backend macros, as its macro engine writes them."""
    error: list[str] = []

    def evaluate(name: str, args: list[str]) -> str:
        if name == "__time":
            return f'{args[0]} AS "time"'
        if name == "__timeEpoch":
            return f'extract(epoch from {args[0]}) as "time"'
        if name == "__timeFilter":
            return f"{args[0]} BETWEEN '{rfc3339nano(tr.start)}' AND '{rfc3339nano(tr.end)}'"
        if name == "__timeFrom":
            return f"'{rfc3339nano(tr.start)}'"
        if name == "__timeTo":
            return f"'{rfc3339nano(tr.end)}'"
        if name in ("__timeGroup", "__timeGroupAlias"):
            if len(args) < 2:
                raise QueryError(f"macro {name} needs time column and interval and optional fill value")
            s = parse_interval(args[1].strip("'"))
            group = (
                f"time_bucket('{s:.3f}s',{args[0]})"
                if timescaledb
                else f"floor(extract(epoch from {args[0]})/{go_number(s)})*{go_number(s)}"
            )
            return group + (' AS "time"' if name == "__timeGroupAlias" else "")
        if name == "__unixEpochFilter":
            return f"{args[0]} >= {int(tr.start.timestamp())} AND {args[0]} <= {int(tr.end.timestamp())}"
        raise QueryError(f"unknown macro {name!r}")

    def replace(m: re.Match[str]) -> str:
        name = m.group(1)
        # Grafana's pre-5.3 rule: "$__timeGroup(...)," means the aliased form.
        if name == "__timeGroup" and sql[m.end() : m.end() + 1] == ",":
            name = "__timeGroupAlias"
        args = [a.strip(" ") for a in m.group(2).split(",")]
        if name not in ("__timeFrom", "__timeTo") and args == [""]:
            error.append(f"missing time column argument for macro {name}")
            return "macro_error()"
        try:
            return evaluate(name, args)
        except QueryError as e:
            error.append(str(e))
            return "macro_error()"

    out = _MACRO.sub(replace, sql)
    if error:
        raise QueryError(error[0])
    return out


@dataclass
class Variable:
    name: str
    multi: bool  # multi-value or with "All": formatted as a list
    values: list[str]  # the selected values ("All": every option)
    texts: list[str]


def sql_value(var: Variable) -> str:
    if var.multi:
        return ",".join("'" + v.replace("'", "''") + "'" for v in var.values)
    return var.values[0].replace("'", "''") if var.values else ""


def _regex_escape(v: str) -> str:
    v = v.replace("\\", "\\\\\\\\")
    return re.sub(r"[$^*{}\[\]'+?.()|]", lambda m: "\\\\" + m.group(0), v)


def prom_value(var: Variable) -> str:
    if not var.multi:
        return var.values[0].replace("\\", "\\\\").replace("'", "\\'") if var.values else ""
    escaped = [_regex_escape(v) for v in var.values]
    return escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")"


def interpolate(
    text: str, variables: Mapping[str, Variable], fmt: Callable[[Variable], str], builtins: Mapping[str, str]
) -> str:
    """Replace $var, ${var}, ${var:text} and [[var]]; builtins ($__interval, ...) first, longest first."""
    for name in sorted(builtins, key=len, reverse=True):
        text = text.replace(name, builtins[name])

    def replace(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2) or m.group(4)
        if name not in variables:
            return m.group(0)
        var = variables[name]
        if m.group(3) == "text":
            return ", ".join(var.texts)
        return fmt(var)

    return _VARIABLE.sub(replace, text)


# --- running ---------------------------------------------------------------


@dataclass
class Result:
    dashboard: str
    panel: str
    ref_id: str
    datasource: str
    query: str  # as run
    rows: int
    columns: list[str] = field(default_factory=list)

    def line(self) -> str:
        return f"{self.dashboard} / {self.panel} [{self.ref_id}, {self.datasource}]: {self.rows} rows"


class Runner:
    """Runs a dashboard's queries for one experiment and time range."""

    def __init__(
        self,
        conn: psycopg.Connection,
        prometheus_url: str | None,
        code: str,
        tr: TimeRange,
        scrape_interval: float = 15.0,
    ) -> None:
        self.conn, self.prometheus_url, self.code, self.tr = conn, prometheus_url, code, tr
        self.scrape_interval = scrape_interval

    def builtins(self, min_interval: float = 1.0) -> dict[str, str]:
        interval = self.tr.interval(minimum=min_interval)
        rate = max(interval + self.scrape_interval, 4 * self.scrape_interval)
        return {
            "$__interval_ms": str(int(interval * 1000)),
            "$__interval": format_interval(interval),
            "$__rate_interval": format_interval(rate),
            "$__range": format_interval((self.tr.end - self.tr.start).total_seconds()),
        }

    # SQL
    def sql_rows(self, raw: str, variables: Mapping[str, Variable]) -> tuple[str, list[str], list[tuple]]:
        sql = expand_macros(interpolate(raw, variables, sql_value, self.builtins()), self.tr)
        try:
            with self.conn.cursor() as cur:
                cur.execute(sql.encode())
                columns = [c.name for c in cur.description or []]
                rows = cur.fetchall()
        except psycopg.Error as e:
            self.conn.rollback()
            raise QueryError(f"{e.__class__.__name__}: {str(e).strip()}\n--- query as run:\n{sql}") from e
        self.conn.rollback()
        return sql, columns, rows

    def variables(self, board: dict[str, Any]) -> dict[str, Variable]:
        """Each variable of the dashboard, resolved in order: code = the experiment, multi-value = All."""
        out: dict[str, Variable] = {}
        for v in board.get("templating", {}).get("list", []):
            _, columns, rows = self.sql_rows(v["query"], out)
            if "__value" in columns:
                values = [str(r[columns.index("__value")]) for r in rows]
                texts = [str(r[columns.index("__text")]) for r in rows] if "__text" in columns else values
            else:
                values = texts = [str(r[0]) for r in rows]
            multi = bool(v.get("multi") or v.get("includeAll"))
            if v["name"] == "code":
                if self.code not in values:
                    raise QueryError(f"variable code: {self.code!r} is not among its options {values[:10]}")
                values = texts = [self.code]
            elif not multi:
                values, texts = values[:1], texts[:1]
            out[v["name"]] = Variable(v["name"], multi, values, texts)
        return out

    def run_sql(self, where: tuple[str, str], target: dict[str, Any], variables: Mapping[str, Variable]) -> Result:
        sql, columns, rows = self.sql_rows(target["rawSql"], variables)
        result = Result(where[0], where[1], target["refId"], "postgres", sql, len(rows), columns)
        if target.get("format") == "time_series":
            check_time_series(columns, rows, sql)
        return result

    # Prometheus
    def run_promql(self, where: tuple[str, str], target: dict[str, Any], variables: Mapping[str, Variable]) -> Result:
        if not self.prometheus_url:
            raise QueryError("no Prometheus URL to run the query against")
        b = self.builtins()
        expr = interpolate(target["expr"], variables, prom_value, b)
        params = urllib.parse.urlencode(
            {
                "query": expr,
                "start": self.tr.start.timestamp(),
                "end": self.tr.end.timestamp(),
                "step": b["$__interval"],
            }
        )
        try:
            with urllib.request.urlopen(f"{self.prometheus_url}/api/v1/query_range?{params}", timeout=30) as r:
                doc = json.load(r)
        except urllib.error.HTTPError as e:
            raise QueryError(
                f"Prometheus: {e.code} {e.read().decode(errors='replace')[:500]}\n--- query: {expr}"
            ) from None
        if doc.get("status") != "success":
            raise QueryError(f"Prometheus: {doc}\n--- query: {expr}")
        series = doc["data"]["result"]
        legend = re.findall(r"\{\{\s*(\w+)\s*\}\}", target.get("legendFormat", ""))
        for s in series:
            missing = [label for label in legend if label not in s["metric"]]
            if missing:
                raise QueryError(f"series {s['metric']} lacks the legend's labels {missing}\n--- query: {expr}")
        return Result(
            where[0],
            where[1],
            target["refId"],
            "prometheus",
            expr,
            sum(len(s["values"]) for s in series),
            sorted({k for s in series for k in s["metric"]}),
        )

    def run(self, board: dict[str, Any]) -> list[Result]:
        """Every query of a dashboard: panels (each repetition of a repeated one) and annotations."""
        variables = self.variables(board)
        title = board["title"]
        out = []
        for a in board.get("annotations", {}).get("list", []):
            if "target" in a:
                out.append(self.run_sql((title, "annotation " + a["name"]), a["target"], variables))
        for panel in board.get("panels", []):
            for p in [panel, *panel.get("panels", [])]:
                for values in self._repetitions(p, variables):
                    name = p.get("title", "")
                    if p.get("repeat"):
                        name = f"{name} ({p['repeat']}={values[p['repeat']].values[0]})"
                    for target in p.get("targets", []):
                        kind = (target.get("datasource") or p.get("datasource") or {}).get("type")
                        if kind == dashboards.PROMETHEUS.type_val:
                            out.append(self.run_promql((title, name), target, values))
                        else:
                            out.append(self.run_sql((title, name), target, values))
        return out

    @staticmethod
    def _repetitions(panel: dict[str, Any], variables: dict[str, Variable]) -> Iterator[dict[str, Variable]]:
        name = panel.get("repeat")
        if not name:
            yield variables
            return
        var = variables[name]
        for value, text in zip(var.values, var.texts, strict=False):
            yield {**variables, name: Variable(name, var.multi, [value], [text])}


def check_time_series(columns: list[str], rows: list[tuple], sql: str) -> None:
    """What Grafana's SQL datasource needs of a time series result."""
    if "time" not in columns:
        raise QueryError(f"time series query without a 'time' column (columns: {columns})\n--- query:\n{sql}")
    t = columns.index("time")
    values = [i for i, c in enumerate(columns) if c not in ("time", "metric")]
    if not values:
        raise QueryError(f"time series query without a value column (columns: {columns})\n--- query:\n{sql}")
    times = [r[t] for r in rows]
    if any(a > b for a, b in itertools.pairwise(times)):
        raise QueryError(f"time series rows not sorted by time\n--- query:\n{sql}")
    for r in rows:
        for i in values:
            if r[i] is not None and not isinstance(r[i], (int, float, Decimal)):
                raise QueryError(f"value column {columns[i]!r} holds {r[i]!r}, not a number\n--- query:\n{sql}")


def experiment_range(conn: psycopg.Connection, code: str, margin: timedelta = timedelta(seconds=10)) -> TimeRange:
    """The experiment's time, widened by a margin: the range `benchq dashboard` opens."""
    row = conn.execute(
        "SELECT coalesce(started_at, planned_at), coalesce(ended_at, now()) FROM experiments WHERE code = %s", (code,)
    ).fetchone()
    conn.rollback()
    if row is None:
        raise QueryError(f"no experiment with code {code!r} in the results database")
    return TimeRange(row[0] - margin, row[1] + margin)


def run_all(
    db_url: str, prometheus_url: str | None, code: str, scrape_interval: float = 15.0, root: Path | None = None
) -> list[Result]:
    """Every query of the committed dashboards (grafana/dashboards/*.json) for one experiment."""
    folder = (root or dashboards.repo_root()) / "grafana" / "dashboards"
    with psycopg.connect(db_url) as conn:
        runner = Runner(conn, prometheus_url, code, experiment_range(conn, code), scrape_interval)
        return [r for path in sorted(folder.glob("*.json")) for r in runner.run(json.loads(path.read_text()))]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchq_reporter.grafana.queries",
        description="Run every panel query of benchq's dashboards for one experiment.",
    )
    p.add_argument("--db", required=True, metavar="URL")
    p.add_argument("--prometheus", metavar="URL")
    p.add_argument(
        "--scrape-interval",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help="the Prometheus datasource's scrape interval ($__rate_interval); Grafana's default 15",
    )
    p.add_argument("-e", "--experiment", required=True, metavar="CODE")
    p.add_argument(
        "--require-rows",
        action="store_true",
        help="fail when a query returns no rows (but those of --may-be-empty panels)",
    )
    p.add_argument(
        "--may-be-empty",
        action="append",
        default=[],
        metavar="PANEL",
        help="a panel (title) whose queries may return nothing, with --require-rows",
    )
    p.add_argument(
        "--rows-in",
        action="append",
        default=[],
        metavar="PANEL",
        help="fail unless this panel's queries return rows (any other may be empty)",
    )
    args = p.parse_args(argv)
    try:
        results = run_all(args.db, args.prometheus, args.experiment, args.scrape_interval)
    except QueryError as e:
        print(f"grafana_queries: {e}", file=sys.stderr)
        return 1
    for r in results:
        print(r.line())
    if args.require_rows or args.rows_in:
        empty = [
            f"{r.dashboard} / {r.panel} [{r.ref_id}]"
            for r in results
            if r.rows == 0 and r.panel not in args.may_be_empty and (args.require_rows or r.panel in args.rows_in)
        ]
        missing = set(args.rows_in) - {r.panel for r in results}
        if missing:
            print(f"grafana_queries: no panel {', '.join(sorted(missing))}", file=sys.stderr)
            return 1
        if empty:
            print(f"grafana_queries: no rows for {', '.join(empty)}", file=sys.stderr)
            return 1
    print(f"{len(results)} queries run, {sum(r.rows > 0 for r in results)} with rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
