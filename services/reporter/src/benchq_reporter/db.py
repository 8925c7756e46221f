"""Read the results database (schema: internal/resultsdb/migrations). I/O only.

Every query takes the connection as an argument: the caller owns it, so a
test can hand in a connection to a throw-away server and nothing lingers in
a module global.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pandas as pd
import psycopg
from psycopg import IsolationLevel, sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row

from .model import COLUMNS, ExperimentData

CONNECT_TIMEOUT_S = 5
# Where the CLI and load() find the results database when no URL is given.
ENV_DB_URL = "BENCHQ_DB_URL"


class DatabaseError(Exception):
    """The results database cannot be used; ``url`` is safe to print (no password)."""

    def __init__(self, url: str, reason: str):
        super().__init__(reason)
        self.url = url
        self.reason = reason


class Unreachable(DatabaseError):
    """No connection could be made (server down, wrong port, bad credentials)."""


def redact(url: str) -> str:
    """The URL or conninfo without its password, for messages."""
    if "://" in url:
        parts = urlsplit(url)
        query = parse_qsl(parts.query)
        if parts.password is None and all(k != "password" for k, _ in query):
            return url  # untouched: urlunsplit would turn postgresql:///db into postgresql:/db
        netloc = parts.netloc
        if parts.password is not None:
            netloc = netloc.rsplit("@", 1)[1]
            netloc = f"{parts.username or ''}@{netloc}"
        kept = urlencode([(k, v) for k, v in query if k != "password"])
        return urlunsplit(parts._replace(netloc=netloc, query=kept))
    try:
        params = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "(unparsable connection string)"
    params.pop("password", None)
    return make_conninfo(**params)


def _first_line(err: Exception) -> str:
    text = str(err).strip().splitlines()
    return " ".join(text[0].split()) if text else type(err).__name__


@contextmanager
def connect(url: str) -> Iterator[psycopg.Connection]:
    """A read-only connection in one REPEATABLE READ snapshot.

    The collector writes while an experiment runs; one snapshot keeps the
    sections of a summary consistent with each other.
    """
    try:
        params = conninfo_to_dict(url)
    except psycopg.ProgrammingError as e:
        raise Unreachable(redact(url), f"not a valid connection URL: {_first_line(e)}") from e
    params.setdefault("connect_timeout", CONNECT_TIMEOUT_S)
    params.setdefault("application_name", "benchq-reporter")
    try:
        conn = psycopg.connect(**params, row_factory=dict_row)
    except psycopg.OperationalError as e:
        raise Unreachable(redact(url), _first_line(e)) from e
    try:
        conn.isolation_level = IsolationLevel.REPEATABLE_READ
        conn.read_only = True
        yield conn
    except psycopg.Error as e:
        raise DatabaseError(redact(url), _first_line(e)) from e
    finally:
        conn.close()


def _select(table: str, order: tuple[str, ...]) -> sql.Composed:
    """SELECT the model's columns of one table for one experiment code."""
    return sql.SQL("SELECT {columns} FROM {table} WHERE code = %(code)s ORDER BY {order}").format(
        columns=sql.SQL(", ").join(map(sql.Identifier, COLUMNS[table])),
        table=sql.Identifier(table),
        order=sql.SQL(", ").join(map(sql.Identifier, order)),
    )


QUERIES = {
    "experiments": _select("experiments", ("code",)),
    "configurations": _select("configurations", ("experiment_run", "name")),
    "phases": _select("phases", ("phase", "attempt")),
    "shard_results": _select("shard_results", ("phase", "shard", "attempt")),
    "shard_operations": _select("shard_operations", ("phase", "shard", "attempt", "operation")),
    # One SELECT for every monitoring section, however many phases and metrics.
    "metric_summaries": _select("metric_summaries", ("phase", "attempt", "component", "section", "position")),
    "saturation_steps": _select("saturation_steps", ("configuration", "step", "attempt")),
    "ingest_readings": _select("ingest_readings", ("phase", "attempt", "at")),
    "ingest_drains": _select("ingest_drains", ("phase", "attempt")),
    # The time series, for the DataFrames (dataframes.py); the summary does not read them.
    "intervals": _select("intervals", ("phase", "shard", "attempt", "elapsed_s")),
    "metrics": _select("metrics", ("configuration", "phase", "component", "metric", "labels", "time")),
}
# What the summary reads (ExperimentData); the time series are fetched on demand.
SUMMARY_TABLES = (
    "experiments",
    "configurations",
    "phases",
    "shard_results",
    "shard_operations",
    "metric_summaries",
    "saturation_steps",
    "ingest_readings",
    "ingest_drains",
)
# Tables a results database may predate (migrations 0003, 0004, 0006, 0009): read only when they exist.
OPTIONAL = {"metric_summaries", "metrics", "saturation_steps", "ingest_readings", "ingest_drains"}


def fetch_tables(
    conn: psycopg.Connection, code: str, tables: Sequence[str] = SUMMARY_TABLES
) -> dict[str, list[dict[str, Any]]] | None:
    """The rows of one experiment in each of ``tables`` (keys of QUERIES), or None when the code is unknown.

    The experiments row is always read (it tells whether the code exists). A
    table in OPTIONAL that the database does not have yet is left out.
    """
    rows: dict[str, list[dict[str, Any]]] = {}
    for table in ("experiments", *(t for t in tables if t != "experiments")):
        if table in OPTIONAL and not _exists(conn, table):
            continue
        rows[table] = conn.execute(QUERIES[table], {"code": code}).fetchall()
        if table == "experiments" and not rows[table]:
            return None
    return rows


def fetch_experiment(conn: psycopg.Connection, code: str) -> ExperimentData | None:
    """Every row of one experiment the summary reads, or None when the code is unknown."""
    rows = fetch_tables(conn, code)
    return None if rows is None else ExperimentData.from_tables(rows)


def _exists(conn: psycopg.Connection, table: str) -> bool:
    return conn.execute("SELECT to_regclass(%s) IS NOT NULL AS found", (table,)).fetchone()["found"]


def list_experiments(conn: psycopg.Connection) -> pd.DataFrame:
    """Every experiment, newest first: code, status, planned_at, duration_s
    (first SUT deployed to the end; missing while it runs), configurations
    (planned), dbms."""
    rows = conn.execute(
        "SELECT code, status, planned_at,"
        " extract(epoch FROM ended_at - coalesce(started_at, planned_at)) AS duration_s,"
        " jsonb_array_length(coalesce(plan -> 'configurations', '[]'::jsonb)) AS configurations,"
        " plan -> 'settings' -> 'dbms' AS dbms"
        " FROM experiments ORDER BY planned_at DESC, code"
    ).fetchall()
    df = pd.DataFrame(rows, columns=["code", "status", "planned_at", "duration_s", "configurations", "dbms"])
    df["planned_at"] = pd.to_datetime(df["planned_at"], utc=True)
    df["duration_s"] = pd.to_numeric(df["duration_s"]).round(0).astype("Int64")
    df["dbms"] = df["dbms"].map(lambda d: ", ".join(d) if isinstance(d, list) else d)
    return df
