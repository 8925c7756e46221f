"""The reporter's version: the tag or commit it was installed from.

scripts/bootstrap.sh writes scripts/version.sh's output (git describe
--tags --always --dirty) into the package's VERSION file, beside the Go
binaries it stamps with the same string, so ``reporter --version`` and
``benchq --version`` agree. A copy installed without the bootstrap (a plain
``pip install``, no git) has no such file and says "unknown" rather than
guessing.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

UNKNOWN = "unknown"


def read(path: Path | None = None) -> str:
    """The version in ``path`` (default: the package's VERSION file), or UNKNOWN."""
    source = path if path is not None else files(__package__) / "VERSION"
    try:
        text = source.read_text().strip()
    except (FileNotFoundError, NotADirectoryError):
        return UNKNOWN
    return text or UNKNOWN
