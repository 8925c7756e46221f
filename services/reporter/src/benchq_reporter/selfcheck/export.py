"""Check the DataFrames, the export and the version against a real experiment.

    python -m benchq_reporter.selfcheck.export --db URL -e CODE

For the end-to-end tests (e2e/experiment_test.go): load() the experiment,
export it as CSV and as parquet into a temp dir, read both back and compare
with what load() gave (pandas.testing.assert_frame_equal, dtypes included).
It also fails when shards, phases or intervals are empty, when a monitored
experiment (-m, -mc, -ma) has no metrics or metric_summaries, and when the
plan's benchq version is not the reporter's (both are stamped by the same
scripts/bootstrap.sh, from scripts/version.sh) or is not a real one.

Prints one line per check on stdout. Exit status: 0 every check passed,
1 one failed (the line on stderr names the frame or the check), 2 usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

import pandas as pd

from .. import dataframes, db, version
from ..outputs import export

NOT_A_VERSION = {version.UNKNOWN, "dev", ""}


class CheckFailed(Exception):
    pass


def compare(expected: Mapping[str, pd.DataFrame], actual: Mapping[str, pd.DataFrame], what: str) -> None:
    """Raise CheckFailed naming the first frame of ``expected`` that ``actual`` lacks or differs in."""
    for name, df in expected.items():
        if name not in actual:
            raise CheckFailed(f"{what}: frame {name} is missing")
        try:
            pd.testing.assert_frame_equal(actual[name], df, check_exact=True)
        except AssertionError as e:
            detail = " ".join(str(e).split())
            raise CheckFailed(f"{what}: frame {name} differs from load(): {detail}") from e
    if extra := sorted(set(actual) - set(expected)):
        raise CheckFailed(f"{what}: frames load() does not have: {', '.join(extra)}")


def check(frames: Mapping[str, pd.DataFrame], out: TextIO) -> None:
    """Every check but the database read; raises CheckFailed at the first that fails."""
    experiment = frames["experiment"].iloc[0]
    plan = json.loads(experiment["plan"])
    monitoring = (plan.get("settings") or {}).get("monitoring") or {}
    must_have = ["phases", "shards", "intervals"]
    if any(monitoring.values()):
        must_have += ["metrics", "metric_summaries"]
    for name in must_have:
        if frames[name].empty:
            raise CheckFailed(
                f"frame {name} is empty" + (" for a monitored experiment" if name.startswith("metric") else "")
            )
    out.write("frames: " + ", ".join(f"{n} {len(df)}" for n, df in frames.items()) + " rows\n")

    with tempfile.TemporaryDirectory(prefix="benchq-export-") as tmp:
        for fmt in export.FORMATS:
            directory = Path(tmp) / fmt
            manifest = export.write(frames, directory, fmt)
            counts = {n: spec["rows"] for n, spec in manifest["frames"].items()}
            if counts != {n: len(df) for n, df in frames.items()}:
                raise CheckFailed(f"{fmt}: manifest row counts {counts} differ from the frames'")
            compare(frames, export.read_export(directory), f"{fmt} round trip")
            out.write(f"{fmt}: the export reads back equal to load()\n")

    planned, reporter = str(experiment["version"]), version.read()
    if planned in NOT_A_VERSION or planned != reporter:
        raise CheckFailed(
            f"version: the plan says benchq version {planned!r}, the reporter is {reporter!r}; "
            "both should be the build's (scripts/version.sh via scripts/bootstrap.sh)"
        )
    out.write(f"version: {planned}\n")


def main(argv: Sequence[str], env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:
    p = argparse.ArgumentParser(prog="python -m benchq_reporter.selfcheck.export", description=__doc__.split("\n")[0])
    p.add_argument("--db", metavar="URL", help=f"results database; default ${db.ENV_DB_URL}")
    p.add_argument("-e", "--experiment", required=True, metavar="CODE")
    try:
        args = p.parse_args(list(argv))
    except SystemExit as e:
        return int(e.code or 0)
    url = args.db or env.get(db.ENV_DB_URL)
    if not url:
        print(f"selfcheck_export: no results database: pass --db URL or set {db.ENV_DB_URL}", file=stderr)
        return 2
    try:
        check(dataframes.load(args.experiment, url), stdout)
    except (CheckFailed, db.DatabaseError, dataframes.UnknownExperiment, export.ExportError) as e:
        print(f"selfcheck_export: {args.experiment}: {e}", file=stderr)
        return 1
    stdout.write(f"selfcheck_export: {args.experiment}: ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], os.environ, sys.stdout, sys.stderr))
