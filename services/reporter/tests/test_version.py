"""reporter --version: the version scripts/bootstrap.sh wrote (scripts/version.sh), else "unknown"."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest

from benchq_reporter import version
from benchq_reporter.cli import main

SCRIPT = Path(__file__).parents[3] / "scripts" / "version.sh"


def test_read(tmp_path):
    assert version.read(tmp_path / "VERSION") == "unknown"  # a plain pip install: no file
    (tmp_path / "VERSION").write_text("v1.2.3-4-gabcdef0-dirty\n")
    assert version.read(tmp_path / "VERSION") == "v1.2.3-4-gabcdef0-dirty"
    (tmp_path / "VERSION").write_text("\n")
    assert version.read(tmp_path / "VERSION") == "unknown"


def test_the_command_prints_it(monkeypatch):
    monkeypatch.setattr(version, "read", lambda: "v9.9.9")
    out, err = io.StringIO(), io.StringIO()
    assert main(["--version"], {}, out, err) == 0  # no database needed
    assert (out.getvalue(), err.getvalue()) == ("reporter v9.9.9\n", "")


def test_the_script_prints_git_describe_in_a_checkout():
    if (
        shutil.which("git") is None
        or subprocess.run(["git", "-C", str(SCRIPT.parent), "rev-parse"], capture_output=True).returncode != 0
    ):
        pytest.skip("not a git checkout")
    want = subprocess.run(
        ["git", "describe", "--tags", "--always", "--dirty"],
        cwd=SCRIPT.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert subprocess.run([str(SCRIPT)], capture_output=True, text=True, check=True).stdout == want


def test_the_script_says_unknown_outside_a_checkout(tmp_path):
    (tmp_path / "scripts").mkdir()
    shutil.copy(SCRIPT, tmp_path / "scripts" / "version.sh")
    done = subprocess.run(
        [str(tmp_path / "scripts" / "version.sh")],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "GIT_CEILING_DIRECTORIES": str(tmp_path)},
    )
    assert done.stdout == "unknown\n"
