"""Exact latency statistics across shards, from their HdrHistograms.

Each shard ships every latency it measured, per operation, as an
HdrHistogram (µs; V2 compressed encoding, base64; written by the driver
agent with hdrhistogram-go from YCSB's own histogram logs). Histograms add
up exactly, so the percentiles of a merged histogram are those of the union
of all the shards' samples, to the histogram's precision (3 significant
digits) — which no average or maximum of per-shard percentiles is.

Percentiles are computed as HdrHistogram's Java implementation, and so YCSB,
computes them (nearest rank, the highest value equivalent to it): a single
shard's figures equal what YCSB printed for it. The hdrhistogram package
rounds the rank to the nearest integer instead, so it is used here for
decoding and adding only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from hdrh.histogram import HdrHistogram

# YCSB records int microseconds with 3 significant digits; this range holds
# every value it can record, so adding never drops one.
LOWEST, HIGHEST, DIGITS = 1, 2**31 - 1, 3

# Statistic → percentile, in YCSB's column order.
PERCENTILES = {"p50": 50.0, "p95": 95.0, "p99": 99.0, "p999": 99.9}


def decode(encoded: str) -> HdrHistogram:
    return HdrHistogram.decode(encoded)


def merge(encoded: Iterable[str]) -> HdrHistogram:
    """The sum of the encoded histograms."""
    total = HdrHistogram(LOWEST, HIGHEST, DIGITS)
    for e in encoded:
        total.add(decode(e))
    return total


def _rank(percentile: float, total: int) -> int:
    # Java steps just below the percentile so that float error cannot push an
    # exact rank (99 % of 1000 = 990) one up.
    q = min(max(math.nextafter(percentile, -math.inf), 0.0), 100.0)
    return max(math.ceil(q / 100.0 * total), 1)


def stats(h: HdrHistogram) -> dict[str, float]:
    """count, mean, min, max and PERCENTILES of a histogram (µs; all 0 when empty)."""
    total = h.get_total_count()
    out: dict[str, float] = {
        "count": total,
        "mean": h.get_mean_value(),
        "min": h.get_min_value(),
        "max": h.get_max_value(),
        **{k: 0 for k in PERCENTILES},
    }
    if total == 0:
        return out
    wanted = sorted(((_rank(p, total), k) for k, p in PERCENTILES.items()))
    seen = 0
    for index in range(h.counts_len):
        count = h.get_count_at_index(index)
        if count == 0:
            continue
        seen += count
        while wanted and seen >= wanted[0][0]:
            out[wanted.pop(0)[1]] = h.get_highest_equivalent_value(h.get_value_from_index(index))
        if not wanted:
            break
    return out


def value_at_percentile(h: HdrHistogram, percentile: float) -> int:
    """One percentile, as stats() computes it."""
    total = h.get_total_count()
    if total == 0:
        return 0
    rank, seen = _rank(percentile, total), 0
    for index in range(h.counts_len):
        seen += h.get_count_at_index(index)
        if seen >= rank:
            return h.get_highest_equivalent_value(h.get_value_from_index(index))
    return h.get_max_value()
