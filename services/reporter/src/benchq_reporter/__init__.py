"""benchq reporter: bexhoma-style summaries of benchq experiments.

cli (argv/env/stdio) → db (PostgreSQL rows → ExperimentData) →
summary (pure: sections and DataFrames) → render (markdown / JSON).
contracts reads the message schemas shared with the Go services.
"""
