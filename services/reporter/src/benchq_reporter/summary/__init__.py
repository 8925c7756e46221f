"""The summary: bexhoma's sections computed from an experiment's rows.

db (rows) → plan (the stored plan) → attempts (which attempt is reported)
→ ycsb or benchbase (the tables), latency (merged histograms), workload,
connections, workflow, monitoring, saturation → checks (the result tests)
→ build (a YcsbSummary or a BenchbaseSummary) → render (Markdown, JSON).
"""

from .build import BenchbaseSummary, Summary, YcsbSummary, summarize

__all__ = ["BenchbaseSummary", "Summary", "YcsbSummary", "summarize"]
