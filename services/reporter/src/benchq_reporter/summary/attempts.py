"""Which attempt of a phase is reported: one rule for every benchmark.

A phase re-run after a failure has several attempts in shard_results. Its
reported attempt is its highest whole one — every shard it was to run
(``phases.shards`` of that attempt, else the most shards any attempt of
the phase has rows for) finished ok — else its highest (then the phase
counts as failed and its missing figures stay NaN). A shard lost with its
agent leaves no row, so an attempt is whole only with all its shards'. The
shards of one attempt are reported together: a shard of another attempt
ran at another time, against other shards, and is never mixed in. The
results database's view ``reported_shards``
(internal/resultsdb/views/reported_shards.sql) is the same rule.
"""

from __future__ import annotations

import pandas as pd

from ..contracts import RESULT
from ..model import ExperimentData

SHARD_KEYS = ["phase", "shard", "attempt"]


def chosen_attempts(shards: pd.DataFrame, phases: pd.DataFrame | None = None) -> pd.Series:
    """The reported attempt of each phase (phase → attempt): its highest whole one, else its highest."""
    if shards.empty:
        return pd.Series(dtype="Int64", name="attempt")
    per = (
        shards.assign(_ok=shards["status"].eq(RESULT.ok))
        .groupby(["phase", "attempt"], as_index=False)
        .agg(_ok=("_ok", "all"), _n=("shard", "nunique"))
    )
    expected = per.groupby("phase")["_n"].transform("max").astype("float64")
    if phases is not None and not phases.empty:
        planned = per[["phase", "attempt"]].merge(
            phases[["phase", "attempt", "shards"]], on=["phase", "attempt"], how="left"
        )
        given = pd.to_numeric(planned["shards"], errors="coerce").astype("float64")
        expected = given.where(given > 0, expected.to_numpy())
    per["_whole"] = per["_ok"] & (per["_n"].to_numpy() >= expected.to_numpy())
    return per.sort_values(["phase", "_whole", "attempt"]).groupby("phase").tail(1).set_index("phase")["attempt"]


def select_attempts(shards: pd.DataFrame, phases: pd.DataFrame | None = None) -> pd.DataFrame:
    """The rows of each phase's reported attempt (see chosen_attempts), in phase and shard order."""
    if shards.empty:
        return shards
    chosen = shards["attempt"] == shards["phase"].map(chosen_attempts(shards, phases))
    return shards[chosen].sort_values(["phase", "shard"], kind="stable")


def reported_shards(data: ExperimentData, kind: str) -> pd.DataFrame:
    """The reported attempts of the shards of one kind of phase (load or run)."""
    chosen = select_attempts(data.shards, data.phases)
    return chosen[chosen["kind"] == kind]


def kind_operations(data: ExperimentData, kind: str) -> pd.DataFrame:
    """The operation rows of the reported attempts of one kind's shards."""
    return data.operations.merge(reported_shards(data, kind)[SHARD_KEYS], on=SHARD_KEYS)


def phase_attempts(data: ExperimentData) -> pd.Series:
    """The attempt each phase is reported from (phase → attempt).

    Phase-level figures (the monitoring of a phase's window) follow the
    shards, so a re-run phase's CPU seconds belong to the run its
    throughput comes from.
    """
    return chosen_attempts(data.shards, data.phases)


def reported_metrics(metrics: pd.DataFrame, shards: pd.DataFrame, phases: pd.DataFrame | None = None) -> pd.Series:
    """Which rows of metric_summaries the summary shows (a boolean mask): each phase's reported attempt
    (as phase_attempts), and for a phase without shard results (it failed before any) its latest one."""
    chosen = chosen_attempts(shards, phases)
    latest = metrics.groupby("phase")["attempt"].transform("max")
    return metrics["attempt"] == metrics["phase"].map(chosen).fillna(latest)
