"""benchq reporter: bexhoma-style summaries of benchq experiments.

cli (argv/env/stdio) → db (PostgreSQL rows → ExperimentData) →
summary (pure: a YCSB or Benchbase summary, from plan, attempts, ycsb or
benchbase, workflow, checks) → render (markdown / JSON).
contracts reads the message schemas shared with the Go services.
"""
