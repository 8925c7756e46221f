"""Shared test helpers: golden files, the experiment fixture, a throw-away PostgreSQL."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import psycopg
import pytest
from rows import load_tables

TESTS = Path(__file__).parent
GOLDEN = TESTS / "golden"
# The results database is made as the stack makes it: by the collector's
# one-shot migration (resultsdb.Migrate), which also makes the views with
# contracts/names.json's rules written in.
COLLECTOR = Path(os.environ.get("BENCHQ_COLLECTOR", TESTS.parents[2] / ".benchq" / "bin" / "collector"))
PG_BIN = Path(os.environ.get("BENCHQ_PG_BIN", "/usr/lib/postgresql/15/bin"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="rewrite tests/golden/* from the current output instead of comparing",
    )


@pytest.fixture
def golden(request: pytest.FixtureRequest):
    """Compare text with tests/golden/<name>, or rewrite it under --update-goldens."""
    update = request.config.getoption("--update-goldens")

    def check(name: str, actual: str) -> None:
        path = GOLDEN / name
        if update:
            path.write_text(actual)
            return
        assert path.exists(), f"{path} is missing; create it with: pytest --update-goldens"
        assert actual == path.read_text(), f"output differs from {path}; review and run pytest --update-goldens"

    return check


@pytest.fixture
def tables() -> dict[str, list[dict[str, Any]]]:
    return load_tables()


# --- a real PostgreSQL -------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(cmd: list[str], as_postgres: bool) -> None:
    # PostgreSQL refuses to run as root; as root, run it as the postgres user.
    prefix = ["runuser", "-u", "postgres", "--"] if as_postgres else []
    done = subprocess.run(prefix + cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """URL of a fresh database ``benchq`` with the collector's migrations applied.

    initdb into a temp dir, postgres on a free 127.0.0.1 port, stopped and
    removed at the end even when a test fails.
    """
    missing = [b for b in ("initdb", "pg_ctl", "postgres") if not (PG_BIN / b).exists()]
    if missing:
        pytest.skip(f"PostgreSQL binaries not found in {PG_BIN} ({', '.join(missing)}); set BENCHQ_PG_BIN")
    if not COLLECTOR.exists():
        pytest.skip(f"the collector binary {COLLECTOR} is missing (make bootstrap builds it; or set BENCHQ_COLLECTOR)")
    as_postgres = os.geteuid() == 0
    root = Path(tempfile.mkdtemp(prefix="benchq-reporter-pg-"))
    data, sock, log = root / "data", root / "sock", root / "postgres.log"
    started = False
    try:
        sock.mkdir()
        if as_postgres:
            shutil.chown(root, "postgres", "postgres")
            shutil.chown(sock, "postgres", "postgres")
        _run(
            [str(PG_BIN / "initdb"), "-D", str(data), "-U", "benchq", "--auth=trust", "-E", "UTF8", "--no-sync"],
            as_postgres,
        )
        port = _free_port()
        opts = f"-c listen_addresses=127.0.0.1 -p {port} -k {sock} -c fsync=off"
        # pg_ctl -w polls until the server accepts connections.
        _run(
            [str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", opts, "-w", "-t", "60", "start"],
            as_postgres,
        )
        started = True
        with psycopg.connect(f"postgresql://benchq@127.0.0.1:{port}/postgres", autocommit=True) as conn:
            conn.execute("CREATE DATABASE benchq")
        url = f"postgresql://benchq@127.0.0.1:{port}/benchq"
        _run([str(COLLECTOR), "-migrate", "-db", url], False)
        yield url
    finally:
        if started:
            _run([str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"], as_postgres)
        shutil.rmtree(root, ignore_errors=True)
