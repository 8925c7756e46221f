"""What a notebook does with a benchq experiment's DataFrames (docs/dataframes.md).

    BENCHQ_DB_URL=postgresql://benchq@127.0.0.1:5433/benchq .venv/bin/python docs/examples/dataframes.py CODE

Prints the benchmarking throughput per configuration, the p99 latency per
operation and phase, a throughput-over-time series resampled from the
shards' status lines, and the CPU seconds per million operations.
services/reporter/tests/test_dataframes.py runs it against its fixture
database, so it keeps working.
"""

import sys

import pandas as pd

import benchq_reporter
from benchq_reporter import contracts

REPORTED = ["code", "phase", "shard", "attempt"]


def _measured(ops: pd.DataFrame) -> pd.DataFrame:
    """The operations a workload asked for: not YCSB's CLEANUP, not the Intended- duplicates, not the JVM samples."""
    return ops[ops["operation"].map(contracts.operation_weight) != 0]


def throughput_per_configuration(f: dict[str, pd.DataFrame]) -> pd.Series:
    """bexhoma's [OVERALL].Throughput of the benchmarking phases: the shards' rates, summed per phase."""
    runs = f["shards"].query("reported and kind == 'run'")
    # min_count=1: a phase no shard reported a throughput for (stopped) is missing, not 0.
    per_phase = runs.groupby(["configuration", "phase"])["throughput"].sum(min_count=1)
    return per_phase.groupby("configuration").mean().rename("throughput [ops/s]")


def p99_per_operation(f: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """p99 per operation and phase, in ms: the largest shard's p99 (the summary merges the histograms)."""
    ops = f["operations"].merge(f["shards"].query("reported")[REPORTED + ["kind"]], on=REPORTED)
    return (_measured(ops).groupby(["operation", "phase"])["p99_us"].max() / 1000).rename("p99 [ms]").to_frame()


def throughput_over_time(f: dict[str, pd.DataFrame], every: str = "2s") -> pd.DataFrame:
    """Operations per second of each phase, all shards together, in bins of ``every``, or of the
    shards' status interval (-xli) when that is longer.

    A status line carries the shard's cumulative operations: the difference
    to its previous line (the shard's start for its first) is what it did
    in between, counted in the bin of the interval's start. A line at
    second 0 spans no time and counts nothing: it is left out, not taken
    for a rate of 0. A bin shorter than the interval would get all of an
    interval's operations or none (a rate of 0 that is not one), so the
    bins are at least one interval long, and a bin without a line is
    missing, not 0.
    """
    iv = f["intervals"].sort_values(["phase", "shard", "attempt", "elapsed_s"])
    by_shard = iv.groupby(["phase", "shard", "attempt"])
    length = iv["elapsed_s"] - by_shard["elapsed_s"].shift().fillna(0)
    done = by_shard["operations"].diff().fillna(iv["operations"]).astype("float64")
    iv = iv.assign(done=done, start=iv["at"] - pd.to_timedelta(length, unit="s"))[length > 0]
    step = length[length > 0].median()
    seconds = max(pd.Timedelta(every).total_seconds(), 0 if pd.isna(step) else float(step))
    binned = iv.set_index("start").groupby("phase")["done"].resample(f"{seconds:g}s").sum(min_count=1) / seconds
    return binned.rename("ops/s").reset_index()


def cpu_per_million_operations(f: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """CPU seconds of each component per million operations of the phase (monitored experiments)."""
    cpu = f["metric_summaries"].query("reported and metric == 'cpu_seconds'")
    ops = _measured(f["operations"].merge(f["shards"].query("reported")[REPORTED], on=REPORTED))
    # As YCSB counts: a READ-MODIFY-WRITE once, though its read and update are in READ and UPDATE too.
    weighed = ops["count"] * ops["operation"].map(contracts.operation_weight)
    ops = weighed.groupby(ops["phase"]).sum().rename("operations")
    out = cpu.merge(ops, on="phase")[["phase", "component", "value", "operations"]]
    return out.assign(**{"CPU s per 1M ops": out["value"] / out["operations"] * 1e6}).drop(columns="value")


def main(code: str) -> None:
    f = benchq_reporter.load(code)  # the results database of $BENCHQ_DB_URL
    with pd.option_context("display.width", 120, "display.float_format", "{:.2f}".format):
        print(f"## {code}: {f['experiment'].loc[0, 'benchmark']} on {f['experiment'].loc[0, 'dbms']}\n")
        print(throughput_per_configuration(f).to_string(), end="\n\n")
        print(p99_per_operation(f).to_string(), end="\n\n")
        print("throughput over time")
        print(throughput_over_time(f).to_string(index=False), end="\n\n")
        print(cpu_per_million_operations(f).to_string(index=False))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: dataframes.py CODE   (with BENCHQ_DB_URL set)")
    main(sys.argv[1])
