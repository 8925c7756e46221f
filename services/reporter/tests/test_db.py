"""Pure parts of db.py (the queries run in test_integration_pg.py)."""

import pytest

from benchq_reporter.db import redact


@pytest.mark.parametrize(
    "url,shown",
    [
        ("postgresql://benchq:pw@127.0.0.1:5433/benchq", "postgresql://benchq@127.0.0.1:5433/benchq"),
        (
            "postgresql://benchq@127.0.0.1:5433/benchq?password=pw&sslmode=disable",
            "postgresql://benchq@127.0.0.1:5433/benchq?sslmode=disable",
        ),
        ("postgresql://u:p@[::1]:5/d", "postgresql://u@[::1]:5/d"),
        ("postgresql:///benchq", "postgresql:///benchq"),
        ("host=x password=y dbname=z", "dbname=z host=x"),
    ],
)
def test_redact_drops_the_password(url, shown):
    assert redact(url) == shown
