"""Write an experiment's frames to files and read them back unchanged.

``reporter export -e CODE --format csv|parquet -o DIR`` writes one file per
frame of dataframes.FRAMES (``DIR/shards.csv``, ...) and ``DIR/manifest.json``:
the experiment code, the benchq version that planned it, the reporter's
version, the format, and per frame its file, row count and column dtypes.
``read_export(DIR)`` returns the same DataFrames ``load()`` gave, dtypes
included: parquet keeps them itself; for CSV the manifest's dtypes are
applied, missing values are written as ``\\N`` (PostgreSQL's COPY marker, so
an empty string stays an empty string) and times as ISO 8601 with µs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from .. import version
from ..contracts import OUTPUT_FORMATS

FORMATS = OUTPUT_FORMATS["export"]  # the default first
MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
NA = "\\N"


class ExportError(Exception):
    """The export cannot be written or read; the message says why."""


def write(frames: Mapping[str, pd.DataFrame], directory: Path, fmt: str) -> dict[str, Any]:
    """Write the frames of one experiment into ``directory`` (created if missing); returns the manifest."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown format '{fmt}' (formats: {', '.join(FORMATS)})")
    if fmt == "parquet":
        _need_pyarrow()
    experiment = frames["experiment"]
    directory.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {
        "manifest_version": MANIFEST_VERSION,
        "code": str(experiment["code"].iloc[0]),
        "benchq_version": str(experiment["version"].iloc[0]),
        "reporter_version": version.read(),
        "format": fmt,
        "frames": {},
    }
    for name, df in frames.items():
        file = f"{name}.{fmt}"
        if fmt == "csv":
            df.to_csv(directory / file, index=False, na_rep=NA, date_format="%Y-%m-%dT%H:%M:%S.%fZ")
        else:
            df.to_parquet(directory / file, index=False)
        manifest["frames"][name] = {"file": file, "rows": len(df), "columns": {c: str(t) for c, t in df.dtypes.items()}}
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def read_manifest(directory: Path) -> dict[str, Any]:
    path = Path(directory) / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError as e:
        raise ExportError(f"{path} is missing: not a directory written by reporter export") from e
    except json.JSONDecodeError as e:
        raise ExportError(f"{path} is not JSON: {e}") from e
    if manifest.get("manifest_version") != MANIFEST_VERSION:
        raise ExportError(
            f"{path}: manifest_version {manifest.get('manifest_version')!r}, this reporter reads {MANIFEST_VERSION}"
        )
    return manifest


def read_export(directory: str | Path) -> dict[str, pd.DataFrame]:
    """The frames an export holds, as ``load()`` returned them (same columns, dtypes and rows)."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    if manifest["format"] == "parquet":
        _need_pyarrow()
    frames = {}
    for name, spec in manifest["frames"].items():
        path = directory / spec["file"]
        dtypes = spec["columns"]
        if manifest["format"] == "csv":
            times = [c for c, t in dtypes.items() if t.startswith("datetime64")]
            df = pd.read_csv(
                path, dtype={c: t for c, t in dtypes.items() if c not in times}, keep_default_na=False, na_values=[NA]
            )
            for c in times:
                df[c] = pd.to_datetime(df[c], utc=True, format="ISO8601")
        else:
            df = pd.read_parquet(path)
        if list(df.columns) != list(dtypes):
            raise ExportError(f"{path}: columns {list(df.columns)}, the manifest says {list(dtypes)}")
        if len(df) != spec["rows"]:
            raise ExportError(f"{path}: {len(df)} rows, the manifest says {spec['rows']}")
        frames[name] = df.astype(dtypes)
    return frames


def _need_pyarrow() -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError as e:
        raise ExportError("parquet needs pyarrow: pip install -r services/reporter/requirements.txt") from e
