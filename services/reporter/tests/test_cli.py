"""The command in-process: exit status, stdout only the payload, one-line errors.

Exit status (README): 0 success, 1 a runtime failure, 2 bad usage, as
benchq's own, which `benchq summary` passes on.
"""

from __future__ import annotations

import io
import socket

import pytest

from benchq_reporter.cli import main


def run(argv, env=None):
    out, err = io.StringIO(), io.StringIO()
    status = main(argv, env or {}, out, err)
    return status, out.getvalue(), err.getvalue()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again on return: nothing listens there


def test_unreachable_database_names_the_url_without_password_and_the_fix():
    port = closed_port()
    status, out, err = run(
        ["summary", "-e", "x"], {"BENCHQ_DB_URL": f"postgresql://benchq:s3cret@127.0.0.1:{port}/benchq"}
    )
    assert status == 1
    assert out == ""
    assert err.count("\n") == 1
    url = f"postgresql://benchq@127.0.0.1:{port}/benchq"
    assert err.startswith(f"reporter: cannot reach the results database at {url} (")
    assert err.endswith(
        "; start the stack with: benchq up (if it is up and its database died: benchq restart results-db)\n"
    )
    assert "s3cret" not in err


def test_db_flag_wins_over_env():
    port = closed_port()
    status, _, err = run(
        ["list", "--db", f"postgresql://flag@127.0.0.1:{port}/benchq"],
        {"BENCHQ_DB_URL": "postgresql://env@127.0.0.1:1/benchq"},
    )
    assert status == 1 and "postgresql://flag@" in err


def test_missing_database_url_is_a_usage_error():
    status, out, err = run(["list"])
    assert (status, out) == (2, "")
    assert err == "reporter: no results database: pass --db URL or set BENCHQ_DB_URL\n"


def test_bad_arguments_are_one_line():
    status, out, err = run(["summary"])
    assert (status, out) == (2, "")
    assert err == "reporter: the following arguments are required: -e/--experiment (see: reporter --help)\n"
    status, _, err = run(["summary", "-e", "x", "--format", "yaml"])
    assert status == 2 and err.count("\n") == 1


@pytest.mark.parametrize(
    ("output", "argv", "formats"),
    [
        ("summary", ["summary", "-e", "x"], ("markdown", "json")),
        ("export", ["export", "-e", "x", "-o", "d"], ("csv", "parquet")),
        ("compare", ["compare", "-e", "x", "-e", "y"], ("markdown", "html")),
    ],
)
def test_format_choices_are_the_contracts(output, argv, formats):
    # The CLI (Go) checks -format against the same list: names.json's
    # output_formats, the default first.
    from benchq_reporter.contracts import OUTPUT_FORMATS

    assert OUTPUT_FORMATS[output] == formats
    status, _, err = run([*argv, "--format", "xlsx"])
    assert status == 2 and "choose from " + ", ".join(repr(f) for f in formats) in err


@pytest.mark.parametrize(
    "argv",
    [
        [],  # no command
        ["report"],  # unknown command
        ["tests"],  # no -e
        ["list", "--bogus"],  # unknown flag
        ["summary", "-e"],  # -e without its value
    ],
)
def test_usage_errors_exit_2_before_touching_the_database(argv):
    # The URL points nowhere: a usage error must not get as far as connecting (that would be 1).
    status, out, err = run(argv, {"BENCHQ_DB_URL": f"postgresql://x@127.0.0.1:{closed_port()}/benchq"})
    assert (status, out) == (2, "")
    assert err.startswith("reporter: ") and err.endswith(" (see: reporter --help)\n") and err.count("\n") == 1


def test_help_goes_to_stdout():
    status, out, err = run(["--help"])
    assert (status, err) == (0, "")
    assert "summary" in out and "tests" in out


@pytest.mark.parametrize("command", ["summary", "list", "tests"])
def test_every_command_has_help_that_exits_0(command):
    for flag in ("-h", "--help"):
        status, out, err = run([command, flag])
        assert (status, err) == (0, "")
        assert out.startswith(f"usage: reporter {command}")
