"""benchq's message contracts, read from the one place they are defined.

contracts/names.json (subjects, streams, KV buckets, statuses, kinds, ...)
and contracts/schemas/*.schema.json are shared with the Go services
(contracts/validate.go); this module reads the same files so both
languages accept and reject the same messages, and so no status or kind
is spelled by hand in Python: RESULT.ok, PHASE.done, KIND.run, ... are
read from names.json when this module is imported. The directory is
$BENCHQ_CONTRACTS_DIR, else the nearest ``contracts/names.json`` above
this file (the repository checkout).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource

ENV_DIR = "BENCHQ_CONTRACTS_DIR"
SCHEMA_SUFFIX = ".schema.json"


class ContractError(ValueError):
    """A message does not match its schema; ``errors`` has one "field: message" per problem."""

    def __init__(self, schema: str, errors: list[str]):
        super().__init__(f"{schema}: " + "; ".join(errors))
        self.schema = schema
        self.errors = errors


def find_dir(env: Mapping[str, str] | None = None, start: Path | None = None) -> Path:
    """The contracts directory: $BENCHQ_CONTRACTS_DIR, else found walking up from ``start``."""
    env = os.environ if env is None else env
    if env.get(ENV_DIR):
        d = Path(env[ENV_DIR])
        if not (d / "names.json").is_file():
            raise FileNotFoundError(f"{ENV_DIR}={d} has no names.json")
        return d
    here = (start or Path(__file__)).resolve()
    for parent in [here, *here.parents]:
        if (parent / "contracts" / "names.json").is_file():
            return parent / "contracts"
    raise FileNotFoundError(f"no contracts/names.json above {here}; set {ENV_DIR}")


# JSON Schema patterns are ECMA-262 regexes, and Go's RE2 follows them in one
# way Python's re does not: "$" matches only at the very end. Python's "$"
# also matches before a final newline, so "abc\n" would pass ^[a-z]+$ here
# and fail in Go. Unescaped "$" outside a character class becomes \Z.
_DOLLAR = re.compile(r"\\.|\[(?:\\.|[^\]\\])*\]|\$")


def ecma_pattern(pattern: str) -> str:
    return _DOLLAR.sub(lambda m: r"\Z" if m.group(0) == "$" else m.group(0), pattern)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any):
    if validator.is_type(instance, "string") and not re.search(ecma_pattern(pattern), instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


Validator = validators.extend(Draft202012Validator, {"pattern": _pattern})


def _field(error: ValidationError) -> str:
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return path.lstrip(".") or "(message)"


@dataclass(frozen=True)
class Contracts:
    """The loaded contracts: names.json and every schema, registered by its $id."""

    directory: Path
    names: dict[str, Any]
    schemas: dict[str, dict[str, Any]]  # schema name (file name without .schema.json) → schema
    registry: Registry

    def validator(self, schema: str) -> Any:
        if schema not in self.schemas:
            raise KeyError(f"unknown schema {schema!r}; known: {', '.join(sorted(self.schemas))}")
        return Validator(
            self.schemas[schema], registry=self.registry, format_checker=Draft202012Validator.FORMAT_CHECKER
        )

    def errors(self, schema: str, obj: Any) -> list[str]:
        """Every problem of ``obj`` as "field: message", sorted; empty when valid."""
        found = self.validator(schema).iter_errors(obj)
        return sorted(f"{_field(e)}: {e.message}" for e in found)

    def validate(self, schema: str, obj: Any) -> None:
        """Raise ContractError when ``obj`` does not match the named schema."""
        errors = self.errors(schema, obj)
        if errors:
            raise ContractError(schema, errors)

    def subject(self, name: str, **values: Any) -> str:
        """The subject named in names.json ("final", "phase_done", ...), filled."""
        return subject(self.names["subjects"][name], **values)


def load(directory: Path | None = None) -> Contracts:
    """The contracts in ``directory`` (default: find_dir()), read once per directory."""
    return _load(Path(directory).resolve() if directory is not None else find_dir().resolve())


@cache
def _load(d: Path) -> Contracts:
    names = _names(d)
    schemas = {}
    for path in sorted((d / "schemas").glob("*" + SCHEMA_SUFFIX)):
        schemas[path.name.removesuffix(SCHEMA_SUFFIX)] = _schema(path)
    for name, schema in schemas.items():
        Draft202012Validator.check_schema(schema)
        if "$id" not in schema:
            raise ValueError(f"schema {name} has no $id")
    registry = Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in schemas.values())
    return Contracts(directory=d, names=names, schemas=schemas, registry=registry)


@cache
def _names(d: Path) -> dict[str, Any]:
    return json.loads((d / "names.json").read_text())


def _schema(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def validate(schema_name: str, obj: Any) -> None:
    """Validate ``obj`` against contracts/schemas/<schema_name>.schema.json; raise ContractError."""
    load().validate(schema_name, obj)


def subject(template: str, code: Any = None, phase: Any = None, shard: Any = None) -> str:
    """Fill a subject template; a missing value becomes "*" so the result is also a filter.

    Mirrors contracts.Subject in Go: subject(final, code="x") is
    "benchq.results.x.*.*.final".
    """

    def token(v: Any) -> str:
        return "*" if v is None or v == "" else str(v)

    return template.replace("{code}", token(code)).replace("{phase}", token(phase)).replace("{shard}", token(shard))


class Names(SimpleNamespace):
    """Contract values as read-only attributes: PHASE.done == "done".

    A section of names.json, or the values a request field may take. A
    name removed from the contract fails where the code uses it, instead
    of a comparison with a stale literal quietly matching nothing.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read from contracts/; it cannot be changed")


def _section(*path: str) -> Names:
    section = _names(find_dir().resolve())
    for key in path:
        section = section[key]
    return Names(**{k: v for k, v in section.items() if k != "comment"})


def _request_enum(field: str) -> Names:
    # Values a request field may take are the request schema's: names.json does not repeat them.
    request = _schema(find_dir() / "schemas" / f"request{SCHEMA_SUFFIX}")
    return Names(**{v: v for v in request["properties"][field]["enum"]})


RESULT = _section("statuses", "result")  # a shard's final result
PHASE = _section("statuses", "phase")  # phase events and stored phases
EXPERIMENT = _section("statuses", "experiment")  # the stored state and its end
KIND = _section("kinds")  # of a phase: load or run
ACTION = _section("actions")
BACKEND = _section("backends")
DURABLE = _section("durables")  # JetStream durable consumer names
BENCHMARK = _request_enum("benchmark")  # BENCHMARK.ycsb, BENCHMARK.benchbase
WORKLOAD = _request_enum("workload")  # YCSB's a-f, Benchbase's tpcc

# Which of YCSB's operation blocks count executed operations, and how much
# (names.json's ycsb_operations; Go reads the same rule:
# contracts.CountsOperation, contracts.OperationWeight).
_YCSB_OPERATIONS = _names(find_dir().resolve())["ycsb_operations"]
INTENDED_PREFIX: str = _YCSB_OPERATIONS["intended_prefix"]  # Intended-<OP>: latencies from the intended start
FAILED_SUFFIX: str = _YCSB_OPERATIONS["failed_suffix"]  # <OP>-FAILED: failed operations, counted


# What each output (summary, export, compare) can be written as, the default
# first (names.json's output_formats; Go: contracts.OutputFormats, which the
# CLI checks -format against).
OUTPUT_FORMATS: dict[str, tuple[str, ...]] = {
    output: tuple(formats)
    for output, formats in _names(find_dir().resolve())["output_formats"].items()
    if output != "comment"
}


def counts_operation(name: str) -> bool:
    """Whether YCSB's operation block holds executed operations (failed and composite ones included)."""
    return name not in _YCSB_OPERATIONS["not_operations"] and not name.startswith(INTENDED_PREFIX)


def operation_weight(name: str) -> int:
    """What each operation of YCSB's block adds to its count of executed operations (the count its throughput divides).

    0 for a block that does not count, 1 for an operation, 1 minus its number
    of parts for a composite one (READ-MODIFY-WRITE: -1), whose read and
    update are counted in READ and UPDATE as well.
    """
    if not counts_operation(name):
        return 0
    return 1 - len(_YCSB_OPERATIONS["composite_operations"].get(name, ()))
