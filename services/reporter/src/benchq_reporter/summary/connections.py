"""The Connections section: each SUT configuration, its DBMS and host facts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model import ExperimentData

# Info keys in the order bexhoma prints them; the rest follow sorted. A fixed
# order matters because jsonb does not keep the order of the keys it stores.
INFO_ORDER = [
    "RAM", "CPU", "Cores", "host", "node", "disk", "datadisk", "cpu_list", "args",
    "requests_cpu", "requests_memory", "limits_cpu", "limits_memory",
]  # fmt: skip
# A worker's facts in print order (the local backend's cluster nodes).
WORKER_ORDER = ["addr", "role", "slots", "master", "pid", "node"]


@dataclass(frozen=True)
class Connection:
    """One SUT configuration as the Connections section lists it."""

    name: str
    dbms: str
    version: str | None
    info: dict[str, Any]  # in print order; version, image and workers excluded
    failure: str | None
    image: str | None = None  # the container image (Kubernetes)
    workers: tuple[dict[str, Any], ...] = ()  # a cluster's nodes, masters first, facts in print order

    def uses(self) -> str:
        """bexhoma's "uses docker image redis:7.4.2"; a local server's version
        names its product once ("uses Redis 7.0.15", not "Redis Redis")."""
        if self.image:
            return f"uses docker image {self.image}"
        if not self.version:
            return f"uses {self.dbms}"
        product = self.version.split()[0]
        if product == self.dbms:
            return f"uses {self.version}"
        if product != self.version:
            return f"uses {self.dbms} ({self.version})"
        return f"uses {self.dbms} {self.version}"


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
        image = info.pop("image", None)
        workers = info.pop("worker_nodes", None) or []
        if workers:
            info.pop("nodes", None)  # the same addresses, said per worker
        keys = [k for k in INFO_ORDER if k in info] + sorted(k for k in info if k not in INFO_ORDER)
        out.append(
            Connection(
                name=row.name,
                dbms=row.dbms,
                version=None if version is None else str(version),
                info={k: info[k] for k in keys},
                failure=row.failure,
                image=None if image is None else str(image),
                workers=tuple(_ordered(w) for w in workers if isinstance(w, dict)),
            )
        )
    return out


def _ordered(worker: dict[str, Any]) -> dict[str, Any]:
    keys = [k for k in WORKER_ORDER if k in worker] + sorted(
        k for k in worker if k not in WORKER_ORDER and k != "worker"
    )
    return {"worker": worker.get("worker"), **{k: worker[k] for k in keys}}
