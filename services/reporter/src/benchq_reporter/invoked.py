"""The command that reached the reporter, for the hints it prints.

``benchq summary`` (and report, compare, export, list) run the reporter with
``BENCHQ_CLI=benchq``, so its hints name the command the user typed; run
directly (compose, Kubernetes, a venv) it is ``reporter``.
"""

from __future__ import annotations

import os


def command() -> str:
    """``benchq`` when the benchq CLI ran the reporter, else ``reporter``."""
    return "benchq" if os.environ.get("BENCHQ_CLI") == "benchq" else "reporter"
