"""Which attempt of a shard is reported: one rule for every benchmark.

A (phase, shard) re-run after a failure has several attempts in
shard_results; it is counted once, as the highest attempt with status ok,
else as the highest attempt (then it counts as a failure and its missing
figures stay NaN).
"""

from __future__ import annotations

import pandas as pd

from ..contracts import RESULT
from ..model import ExperimentData

SHARD_KEYS = ["phase", "shard", "attempt"]


def select_attempts(shards: pd.DataFrame) -> pd.DataFrame:
    """The one reported attempt of each (phase, shard): the highest ok one, else the highest."""
    ranked = shards.assign(_ok=shards["status"].eq(RESULT.ok)).sort_values(["phase", "shard", "_ok", "attempt"])
    return ranked.groupby(["phase", "shard"], sort=False).tail(1).drop(columns="_ok")


def reported_shards(data: ExperimentData, kind: str) -> pd.DataFrame:
    """The reported attempts of the shards of one kind of phase (load or run)."""
    chosen = select_attempts(data.shards)
    return chosen[chosen["kind"] == kind]


def kind_operations(data: ExperimentData, kind: str) -> pd.DataFrame:
    """The operation rows of the reported attempts of one kind's shards."""
    return data.operations.merge(reported_shards(data, kind)[SHARD_KEYS], on=SHARD_KEYS)


def phase_attempts(data: ExperimentData) -> pd.Series:
    """The attempt each phase is reported from (phase → attempt): its reported shards' highest.

    Phase-level figures (the monitoring of a phase's window) follow the
    shards, so a re-run phase's CPU seconds belong to the run its
    throughput comes from.
    """
    return select_attempts(data.shards).groupby("phase")["attempt"].max()


def reported_metrics(metrics: pd.DataFrame, shards: pd.DataFrame) -> pd.Series:
    """Which rows of metric_summaries the summary shows (a boolean mask): each phase's reported attempt
    (as phase_attempts), and for a phase without shard results (it failed before any) its latest one."""
    chosen = select_attempts(shards).groupby("phase")["attempt"].max()
    latest = metrics.groupby("phase")["attempt"].transform("max")
    return metrics["attempt"] == metrics["phase"].map(chosen).fillna(latest)
