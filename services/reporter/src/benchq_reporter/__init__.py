"""benchq reporter: bexhoma-style summaries of benchq experiments.

cli (argv/env/stdio) → db (PostgreSQL rows → ExperimentData) →
summary/ (pure: a YCSB or Benchbase summary, from plan, attempts, ycsb or
benchbase, workflow, checks; render: markdown / JSON). outputs/ writes the
HTML report, comparisons and exports; grafana/ the dashboards as code;
selfcheck/ is what the end-to-end tests run on a real experiment.
contracts reads the message schemas shared with the Go services.

For notebooks: ``load(code)`` gives the experiment's rows as pandas
DataFrames (dataframes.py, docs/dataframes.md); ``read_export(dir)`` reads
back what ``reporter export`` wrote (outputs/export.py).
"""

from .dataframes import UnknownExperiment, load
from .outputs.export import read_export

__all__ = ["UnknownExperiment", "load", "read_export"]
