"""The ``reporter`` command: argv and env in, payload on stdout, exit status out.

Process state (argv, env, stdout, stderr) is passed in, so tests run the
command in-process. stdout carries only the payload; every error is one
line on stderr starting with "reporter: ".

Exit status, as benchq's own (cmd/benchq/cli.go), which `benchq summary`
passes on unchanged:
  0  success (also --help)
  1  a runtime failure: the results database is unreachable or unusable,
     no such experiment, or (``tests``, ``summary --fail-on-tests``) a result
     test failed
  2  bad usage: unknown command or flag, a missing argument, no database URL
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from enum import IntEnum
from pathlib import Path
from typing import Any, NoReturn, TextIO

import pandas as pd

from . import dataframes, db, version
from .contracts import OUTPUT_FORMATS
from .outputs import compare, export
from .summary import render
from .summary.build import BenchbaseSummary, YcsbSummary, summarize

# fail(status, message) prints the message on stderr and returns the status.
Fail = Callable[["ExitStatus", str], int]

ENV_DB_URL = db.ENV_DB_URL
ENV_CLI = "BENCHQ_CLI"  # "benchq" when benchq runs the reporter: its hints then name benchq
FIX = "start the stack with: benchq up (if it is up and its database died: benchq restart results-db)"


class ExitStatus(IntEnum):
    SUCCESS = 0
    ERROR = 1
    USAGE = 2


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting and prints help to the given stdout."""

    def __init__(self, *args: Any, stdout: TextIO, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stdout = stdout

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)

    def print_help(self, file: object = None) -> None:
        super().print_help(self._stdout)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            raise UsageError(message.strip())
        raise _Exit(status)


class _Exit(Exception):
    def __init__(self, status: int):
        self.status = status


def parser(stdout: TextIO) -> argparse.ArgumentParser:
    p = _Parser(
        prog="reporter", description="Summaries of benchq experiments from the results database.", stdout=stdout
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def command(name: str, help: str) -> argparse.ArgumentParser:
        c = sub.add_parser(name, help=help, description=help, stdout=stdout)
        c.add_argument("--db", metavar="URL", help=f"results database (libpq URL); default ${ENV_DB_URL}")
        return c

    s = command("summary", "print the summary of one experiment")
    s.add_argument("-e", "--experiment", required=True, metavar="CODE")
    s.add_argument("--format", choices=OUTPUT_FORMATS["summary"], default=OUTPUT_FORMATS["summary"][0])
    s.add_argument(
        "--fail-on-tests",
        action="store_true",
        help="exit 1 when the experiment ran with -tr and a result test failed (benchq run uses it)",
    )
    command("list", "list the experiments: code, status, planned_at, duration_s, configurations, dbms")
    t = command("tests", "print only the result tests of one experiment; exit 1 if one failed")
    t.add_argument("-e", "--experiment", required=True, metavar="CODE")

    # --- export: the frames of benchq_reporter.load() as files ---
    x = command("export", "write one experiment's DataFrames to DIR, one file per frame, and a manifest")
    x.add_argument("-e", "--experiment", required=True, metavar="CODE")
    x.add_argument("--format", choices=export.FORMATS, default=export.FORMATS[0])
    x.add_argument("-o", "--output", required=True, metavar="DIR")
    p.add_argument("--version", action=_Version, nargs=0, help="print the reporter's version and exit")
    # --- end export ---
    r = command("report", "write one experiment as a self-contained HTML page: the summary and its plots")
    r.add_argument("-e", "--experiment", required=True, metavar="CODE")
    r.add_argument("-o", "--output", required=True, metavar="FILE", help="the HTML file to write")
    r.add_argument("--png", metavar="DIR", help="also write each plot as DIR/<plot>.png")
    c = command("compare", "benchmarking phases of several experiments side by side, with ratios to the first")
    c.add_argument(
        "-e",
        "--experiment",
        action="append",
        required=True,
        metavar="CODE",
        help="an experiment; give two or more, the first is the baseline",
    )
    c.add_argument("--format", choices=OUTPUT_FORMATS["compare"], default=OUTPUT_FORMATS["compare"][0])
    return p


def main(argv: Sequence[str], env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:
    def fail(status: ExitStatus, message: str) -> int:
        print(f"reporter: {message}", file=stderr)
        return status

    # The program the user typed, for the hints: benchq runs the reporter
    # with BENCHQ_CLI=benchq (benchq summary, report, ...); run directly
    # (compose, Kubernetes, a venv) it is reporter.
    program = "benchq" if env.get(ENV_CLI) == "benchq" else "reporter"
    try:
        args = parser(stdout).parse_args(list(argv))
    except UsageError as e:
        return fail(ExitStatus.USAGE, f"{e} (see: {program} --help)")
    except _Exit as e:
        return e.status
    args.program = program

    url = args.db or env.get(ENV_DB_URL)
    if not url:
        return fail(ExitStatus.USAGE, f"no results database: pass --db URL or set {ENV_DB_URL}")
    if args.command == "export":
        return _export(args, url, stdout, fail)
    if args.command == "compare":
        return _compare(args, url, stdout, fail)
    frames = None
    try:
        with db.connect(url) as conn:
            if args.command == "list":
                stdout.write(render.experiments_markdown(db.list_experiments(conn)))
                return ExitStatus.SUCCESS
            data = db.fetch_experiment(conn, args.experiment)
        if args.command == "report" and data is not None:
            frames = dataframes.load(args.experiment, url)
    except db.Unreachable as e:
        return fail(ExitStatus.ERROR, f"cannot reach the results database at {e.url} ({e.reason}); {FIX}")
    except db.DatabaseError as e:
        return fail(ExitStatus.ERROR, f"cannot read the results database at {e.url} ({e.reason}); {FIX}")

    if data is None:
        return fail(
            ExitStatus.ERROR,
            f"no experiment with code '{args.experiment}' in the results database (list them with: {program} list)",
        )
    summary = summarize(data)
    if args.command == "report":
        assert frames is not None  # loaded above for report
        return _report(args, frames, summary, stdout, fail)
    if args.command == "tests":
        stdout.write(render.tests_markdown(summary))
        return ExitStatus.SUCCESS if summary.tests_passed else ExitStatus.ERROR
    stdout.write(render.json_document(summary) if args.format == "json" else render.markdown(summary, program))
    if args.fail_on_tests and summary.show_tests and not summary.tests_passed:
        failed = [t.text for t in summary.tests if not t.passed]
        return fail(ExitStatus.ERROR, f"{len(failed)} result test(s) failed (-tr): {'; '.join(failed)}")
    return ExitStatus.SUCCESS


# --- export ---
class _Version(argparse.Action):
    """--version on the injected stdout (argparse's own prints to sys.stdout)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> NoReturn:
        assert isinstance(parser, _Parser)
        parser._stdout.write(f"reporter {version.read()}\n")
        raise _Exit(ExitStatus.SUCCESS)


def _export(args: argparse.Namespace, url: str, stdout: TextIO, fail: Fail) -> int:
    """``reporter export``: the written files on stdout, one path a line."""
    try:
        frames = dataframes.load(args.experiment, url)
        manifest = export.write(frames, Path(args.output), args.format)
    except db.Unreachable as e:
        return fail(ExitStatus.ERROR, f"cannot reach the results database at {e.url} ({e.reason}); {FIX}")
    except db.DatabaseError as e:
        return fail(ExitStatus.ERROR, f"cannot read the results database at {e.url} ({e.reason}); {FIX}")
    except dataframes.UnknownExperiment as e:
        return fail(ExitStatus.ERROR, f"{e} (list them with: {args.program} list)")
    except (export.ExportError, OSError) as e:
        return fail(ExitStatus.ERROR, f"cannot export to {args.output}: {e}")
    for spec in manifest["frames"].values():
        stdout.write(f"{Path(args.output) / spec['file']}\n")
    stdout.write(f"{Path(args.output) / export.MANIFEST}\n")
    return ExitStatus.SUCCESS


# --- end export ---


def _report(
    args: argparse.Namespace,
    frames: dict[str, pd.DataFrame],
    summary: YcsbSummary | BenchbaseSummary,
    stdout: TextIO,
    fail: Fail,
) -> int:
    """``reporter report``: the written files on stdout, the page first."""
    from .outputs import report  # only here and in compare: it imports matplotlib (0.7 CPU s)

    made, missing = report.plots(frames, summary)
    try:
        out = Path(args.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(
            report.page(args.experiment, render.markdown(summary, args.program), made, missing), encoding="utf-8"
        )
        pngs = report.write_png(made, Path(args.png)) if args.png else []
    except OSError as e:
        return fail(ExitStatus.ERROR, f"cannot write the report: {e}")
    finally:
        report.close(made)
    for path in (out, *pngs):
        stdout.write(f"{path}\n")
    return ExitStatus.SUCCESS


def _compare(args: argparse.Namespace, url: str, stdout: TextIO, fail: Fail) -> int:
    if len(args.experiment) < 2:
        return fail(ExitStatus.USAGE, "compare needs two experiments or more: -e A -e B (see: reporter --help)")
    twice = sorted({c for c in args.experiment if args.experiment.count(c) > 1})
    if twice:
        return fail(ExitStatus.USAGE, f"compare: give each experiment once ({', '.join(twice)} more than once)")
    tables = []
    try:
        with db.connect(url) as conn:
            for code in args.experiment:
                data = db.fetch_experiment(conn, code)
                if data is None:
                    return fail(
                        ExitStatus.ERROR,
                        f"no experiment with code '{code}' in the results database (list them with: {args.program} list)",
                    )
                tables.append(compare.phases(code, summarize(data), dataframes.load(code, url)))
    except db.Unreachable as e:
        return fail(ExitStatus.ERROR, f"cannot reach the results database at {e.url} ({e.reason}); {FIX}")
    except db.DatabaseError as e:
        return fail(ExitStatus.ERROR, f"cannot read the results database at {e.url} ({e.reason}); {FIX}")
    except compare.NotComparable as e:
        return fail(ExitStatus.ERROR, str(e))
    text = compare.markdown(compare.compare(tables))
    if args.format == "html":
        from .outputs import report

        text = report.html_page("benchq comparison: " + ", ".join(args.experiment), report.markdown_html(text))
    stdout.write(text)
    return ExitStatus.SUCCESS


def run() -> NoReturn:
    """Console-script entry point."""
    sys.exit(main(sys.argv[1:], os.environ, sys.stdout, sys.stderr))
