"""The Connections section: each SUT configuration, its DBMS and host facts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model import ExperimentData

# Info keys in the order bexhoma prints them; the rest follow sorted. A fixed
# order matters because jsonb does not keep the order of the keys it stores.
INFO_ORDER = ["RAM", "CPU", "Cores", "host", "node", "disk", "datadisk", "cpu_list"]


@dataclass(frozen=True)
class Connection:
    """One SUT configuration as the Connections section lists it."""

    name: str
    dbms: str
    version: str | None
    info: dict[str, Any]  # in print order, version excluded
    failure: str | None


def build_connections(data: ExperimentData) -> list[Connection]:
    """The configurations in plan order; one the plan does not know comes last."""
    order = {name: i for i, name in enumerate(data.plan.configurations)}
    rows = data.configurations.assign(
        _order=data.configurations["name"].map(lambda n: order.get(n, len(order)))
    ).sort_values(["_order", "name"])
    out = []
    for row in rows.itertuples(index=False):
        info = dict(row.info or {})
        version = info.pop("version", None)
        keys = [k for k in INFO_ORDER if k in info] + sorted(k for k in info if k not in INFO_ORDER)
        out.append(
            Connection(
                name=row.name,
                dbms=row.dbms,
                version=None if version is None else str(version),
                info={k: info[k] for k in keys},
                failure=row.failure,
            )
        )
    return out
