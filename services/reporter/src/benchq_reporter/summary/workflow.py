"""The Workflow section: the pods of the benchmarking phases, planned and as run.

bexhoma lists, per configuration base and experiment run, the pod counts
of the benchmarking phases that ran; its "Workflow as planned" test
(checks.py) compares them with the plan's. The notes name failures and
re-runs, so a reader knows which figures to distrust.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ..contracts import KIND, PHASE, RESULT
from ..model import ExperimentData
from .attempts import select_attempts


@dataclass(frozen=True)
class Workflow:
    """Pods of the benchmarking phases per configuration base and run.

    ``actual`` and ``planned`` map a configuration base to one list per
    experiment run (runs in ascending order); ``notes`` explain failures
    and re-runs; ``skipped`` names the phases skipped as planned (a loading
    whose data a volume held), which are no failure.
    """

    actual: dict[str, list[list[int]]]
    planned: dict[str, list[list[int]]]
    notes: list[str]
    skipped: list[str] = field(default_factory=list)

    def as_planned(self) -> bool:
        """bexhoma's "Workflow as planned": the same pod lists per configuration, in any order."""
        return {b: sorted(map(sorted, runs)) for b, runs in self.actual.items()} == {
            b: sorted(map(sorted, runs)) for b, runs in self.planned.items()
        }


def build_workflow(data: ExperimentData) -> Workflow:
    planned = data.plan.table()
    runs_planned = planned[planned["kind"] == KIND.run]
    bases = list(dict.fromkeys(planned["base"]))
    runs_of = {b: sorted(set(planned.loc[planned["base"] == b, "experiment_run"])) for b in bases}

    plan_pods: dict[tuple[str, int], list[int]] = {}
    for row in runs_planned.itertuples(index=False):
        plan_pods.setdefault((row.base, row.experiment_run), []).append(int(row.pods))

    done = data.phases[(data.phases["kind"] == KIND.run) & (data.phases["status"] == PHASE.done)]
    done = done.sort_values("attempt").groupby("phase", sort=False).tail(1)
    done = done.merge(planned[["phase", "base", "experiment_run", "pods"]], on="phase", how="left")
    # A phase the plan does not know still shows up, under its configuration's name.
    done["base"] = done["base"].fillna(done["configuration"])
    done["experiment_run"] = done["experiment_run"].fillna(1)
    done["pods"] = done["shards"].fillna(done["pods"])
    done = done.sort_values(["ended_at", "phase"], kind="stable")
    actual_pods: dict[tuple[str, int], list[int]] = {}
    for row in done.itertuples(index=False):
        actual_pods.setdefault((row.base, int(row.experiment_run)), []).append(int(row.pods))
        if row.base not in runs_of:
            bases.append(row.base)
            runs_of[row.base] = []
        if int(row.experiment_run) not in runs_of[row.base]:
            runs_of[row.base] = sorted([*runs_of[row.base], int(row.experiment_run)])

    actual = {b: [actual_pods.get((b, r), []) for r in runs_of[b]] for b in bases}
    plan = {b: [plan_pods.get((b, r), []) for r in runs_of[b]] for b in bases}
    skipped = data.phases[data.phases["status"] == PHASE.skipped].sort_values("phase")
    return Workflow(
        actual=actual,
        planned=plan,
        notes=workflow_notes(data),
        skipped=[f"Phase {r.phase} skipped: {r.reason or 'no reason given'}" for r in skipped.itertuples(index=False)],
    )


def workflow_notes(data: ExperimentData) -> list[str]:
    """Failures and re-runs, one line each."""
    notes = []
    for row in data.configurations.sort_values("name").itertuples(index=False):
        if row.failure:
            notes.append(f"Configuration {row.name} failed: {row.failure}")
    phases = data.phases.sort_values(["phase", "attempt"])
    for row in phases[phases["status"] == PHASE.failed].itertuples(index=False):
        notes.append(f"Phase {row.phase} failed in attempt {row.attempt}: {row.reason or 'no reason given'}")
    shards = data.shards.sort_values(["phase", "shard", "attempt"])
    simulated = shards[shards["status"] == RESULT.simulated]
    for phase, g in simulated.groupby("phase", sort=True):
        # The Kubernetes backend on kwok: driver Jobs "complete", nothing ran.
        notes.append(
            f"Phase {phase} was simulated, not measured: {g['error'].iloc[0] or 'no reason given'} "
            f"({len(g)} shard(s)); its figures are missing, not zero"
        )
    for row in shards[~shards["status"].isin([RESULT.ok, RESULT.simulated])].itertuples(index=False):
        notes.append(
            f"Shard {row.phase}-{row.shard} failed: {row.error or 'no error given'} "
            f"(attempt {row.attempt}, agent {row.agent})"
        )
    attempts = pd.concat([data.phases[["phase", "attempt"]], data.shards[["phase", "attempt"]]])
    rerun = attempts.groupby("phase")["attempt"].nunique()
    reported = select_attempts(data.shards, data.phases)
    for phase in sorted(rerun[rerun > 1].index):
        used = sorted({int(a) for a in reported.loc[reported["phase"] == phase, "attempt"]})
        if used:
            notes.append(f"Phase {phase} was re-run: its results are from attempt {', '.join(map(str, used))}")
        else:
            notes.append(f"Phase {phase} was re-run: no attempt has results")
    return notes
