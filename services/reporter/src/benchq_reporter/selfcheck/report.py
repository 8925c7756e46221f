"""Check the HTML report of a real experiment in headless Chromium.

    python -m benchq_reporter.selfcheck.report --db URL -e CODE [-o FILE] [--screenshot PNG]

For the end-to-end tests and the docs' screenshot (docs/report.png):
``reporter report`` writes the page, then Debian's ``chromium`` opens it
headless from the file, without network. Checks: the page loads and logs
nothing to the console (the page has no script, so any message is a fault);
every plot the reporter made is in the rendered DOM as an SVG figure; the
page asks for nothing over the network; the screenshot is not blank.

Prints one line per check. Exit status: 0 all passed, 1 one failed (stderr
names it), 2 usage.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from .. import cli

CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--enable-logging=stderr",
    "--v=0",
    "--hide-scrollbars",
]
FETCHES = re.compile(r"""(?:src|href)\s*=\s*["']\s*(?:https?:)?//""", re.IGNORECASE)


class CheckFailed(Exception):
    pass


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    raise CheckFailed("no chromium on PATH (scripts/bootstrap.sh installs Debian's)")


def browse(page: Path, *args: str) -> tuple[str, str]:
    """Chromium's stdout and stderr for page opened with args."""
    with tempfile.TemporaryDirectory(prefix="benchq-chromium-") as profile:
        done = subprocess.run(
            [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, page.resolve().as_uri()],
            capture_output=True,
            text=True,
            timeout=120,
        )
    if done.returncode != 0:
        raise CheckFailed(f"chromium exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return done.stdout, done.stderr


def check_page(page: Path, plots: int, screenshot: Path) -> list[str]:
    """The checks on a written page that should show ``plots`` plots; raises CheckFailed."""
    text = page.read_text(encoding="utf-8")
    if m := FETCHES.search(text):
        raise CheckFailed(f"the page fetches from the network: {text[m.start() : m.start() + 80]!r}")
    dom, log = browse(page, "--dump-dom")
    console = [line for line in log.splitlines() if ":CONSOLE" in line]
    if console:
        raise CheckFailed(f"console messages while loading: {console[0]}")
    rendered = len(re.findall(r'<figure class="plot"[^>]*>\s*<figcaption>.*?</figcaption>\s*<svg', dom, re.S))
    if rendered != plots or plots == 0:
        raise CheckFailed(f"{rendered} plots rendered as SVG in the DOM, the reporter made {plots}")
    browse(page, f"--screenshot={screenshot.resolve()}", "--window-size=1280,2400")
    blank = blank_share(screenshot)
    if blank > 0.995:
        raise CheckFailed(f"the screenshot {screenshot} is blank ({100 * blank:.1f} % one colour)")
    return [
        f"page {page}: loads with no console message, asks nothing of the network",
        f"plots: {rendered} rendered as SVG",
        f"screenshot {screenshot}: {100 * (1 - blank):.1f} % of its pixels differ from the background",
    ]


def blank_share(png: Path) -> float:
    """The share of pixels of the most common colour."""
    import matplotlib.image as mpimg  # only here: importing it is slow
    import numpy as np

    img = mpimg.imread(str(png))[..., :3]
    flat = (img.reshape(-1, 3) * 255).astype("uint8")
    _, counts = np.unique(flat, axis=0, return_counts=True)
    return counts.max() / len(flat)


def main(argv: Sequence[str], stdout: TextIO, stderr: TextIO) -> int:
    p = argparse.ArgumentParser(prog="selfcheck_report", description=__doc__.splitlines()[0])
    p.add_argument("--db", required=True, metavar="URL")
    p.add_argument("-e", "--experiment", required=True, metavar="CODE")
    p.add_argument("-o", "--output", metavar="FILE", help="keep the page here (default: a temp dir)")
    p.add_argument("--screenshot", metavar="PNG", help="keep the screenshot here (default: a temp dir)")
    try:
        args = p.parse_args(list(argv))
    except SystemExit as e:
        return int(e.code or 0)
    with tempfile.TemporaryDirectory(prefix="benchq-report-") as tmp:
        page = Path(args.output or Path(tmp) / "report.html")
        shot = Path(args.screenshot or Path(tmp) / "report.png")
        out, err = io.StringIO(), io.StringIO()
        status = cli.main(
            ["report", "--db", args.db, "-e", args.experiment, "-o", str(page), "--png", str(Path(tmp) / "png")],
            os.environ,
            out,
            err,
        )
        if status != 0:
            print(f"selfcheck_report: reporter report failed: {err.getvalue().strip()}", file=stderr)
            return 1
        pngs = [line for line in out.getvalue().splitlines() if line.endswith(".png")]
        try:
            for line in check_page(page, len(pngs), shot):
                print(line, file=stdout)
        except (CheckFailed, subprocess.TimeoutExpired) as e:
            print(f"selfcheck_report: {e}", file=stderr)
            return 1
    print(f"png: {len(pngs)} plots written", file=stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], sys.stdout, sys.stderr))
