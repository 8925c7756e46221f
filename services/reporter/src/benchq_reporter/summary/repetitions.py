"""Across the repetitions (-nc ≥ 2): each figure's mean, standard deviation
and 95 % confidence interval over the repetitions of the same configuration
and phase.

A repetition is a fresh SUT running the same phases again; its figures are
independent samples of the same setup, so the interval is Student's t:
mean ± t(0.975, n-1) · s / √n, with s the sample standard deviation. A
figure missing in a repetition is left out of that figure's n (and said by
n), never counted as 0.
"""

from __future__ import annotations

import math

import pandas as pd

from . import ycsb

# Student's t, two-sided 95 % (t(0.975, df)) for df = 1..30; beyond, t975
# expands it around the normal's quantile (cmd/bench has the same rule).
T975 = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
]  # fmt: skip
COLUMNS = ["DBMS", "phase", "figure", "n", "mean", "std", "ci95 low", "ci95 high"]
NOTE = (
    "Across the -nc repetitions (each on a fresh SUT): mean, sample standard deviation and the 95 % confidence "
    "interval of the mean (Student's t: mean ± t(0.975, n-1)·std/√n); n counts the repetitions that have the figure. "
    "With few repetitions t is large (12.7 for n = 2, 4.3 for n = 3), so a low bound can fall below 0 for a figure "
    "that cannot: the repetitions do not bound it there; more of them (-nc) narrow it."
)


Z975 = 1.959964  # the normal's 0.975 quantile


def t975(df: int) -> float:
    """t(0.975, df): the table to 30, then the Cornish-Fisher expansion in 1/df
    (Abramowitz & Stegun 26.7.5; within 0.001 of the exact value from df 31)."""
    if df <= len(T975):
        return T975[df - 1]
    z = Z975
    return (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )


def _stats(values: pd.Series) -> tuple[int, float, float, float, float]:
    v = values.dropna().astype("float64")
    n = len(v)
    if n == 0:
        return 0, math.nan, math.nan, math.nan, math.nan
    mean = float(v.mean())
    if n == 1:
        return 1, mean, math.nan, math.nan, math.nan
    std = float(v.std(ddof=1))
    half = t975(n - 1) * std / math.sqrt(n)
    return n, mean, std, mean - half, mean + half


def _figures(table: pd.DataFrame) -> list[str]:
    """The figures of a Per Run / Per Phase table worth a spread: the rates, the error share, each p99."""
    wanted = [ycsb.WINDOW_THROUGHPUT, ycsb.GOODPUT, ycsb.THROUGHPUT, ycsb.ERROR_SHARE]
    return [c for c in wanted if c in table.columns] + [
        c for c in table.columns if c.endswith("99thPercentileLatency(us)")
    ]


def across(table: pd.DataFrame, planned: pd.DataFrame, label: str) -> pd.DataFrame:
    """One row per configuration (its base), phase (its client: 0 loads) and figure over the
    repetitions of a Per Run (``label`` DBMS: the configuration) or Per Phase (``label`` phase) table."""
    if table.empty or planned.empty:
        return pd.DataFrame(columns=COLUMNS)
    key = planned.drop_duplicates("phase").set_index("phase")
    by_cfg = planned.drop_duplicates("configuration").set_index("configuration")
    if label == "phase":
        base = table["phase"].map(key["base"])
        client = table["phase"].map(key["client"])
    else:
        base = table["DBMS"].map(by_cfg["base"])
        client = pd.Series(0, index=table.index)
    rows = []
    for (b, c), g in table.assign(_base=base, _client=client).groupby(["_base", "_client"], sort=False):
        if g["experiment_run"].nunique() < 2:
            continue
        for figure in _figures(table):
            n, mean, std, low, high = _stats(g[figure])
            rows.append(
                {
                    "DBMS": b,
                    "phase": "loading" if c == 0 else f"benchmarking {c}",
                    "figure": figure,
                    "n": n,
                    "mean": mean,
                    "std": std,
                    "ci95 low": low,
                    "ci95 high": high,
                }
            )
    out = pd.DataFrame(rows, columns=COLUMNS)
    out["n"] = out["n"].astype("Int64")
    return out
