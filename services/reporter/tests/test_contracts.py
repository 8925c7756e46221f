"""The Python side of the shared contracts agrees with the Go side.

contracts/examples/{valid,invalid}/<schema>--<description>.json are run by
both languages (Go: contracts/*_test.go): a case that trips one language
(a trailing newline against a `$` pattern, a timestamp that is not RFC 3339)
goes there, so both are held to it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchq_reporter import contracts
from benchq_reporter.contracts import ContractError, ecma_pattern

SHARED = contracts.find_dir() / "examples"


def examples(verdict: str) -> list:
    files = sorted((SHARED / verdict).glob("*.json"))
    return [pytest.param(f, id=f"{f.parent.parent.name}/{f.name}") for f in files]


def _schema(path: Path) -> str:
    schema, sep, _ = path.stem.partition("--")
    assert sep, f"{path.name}: name must be <schema>--<description>.json"
    return schema


def test_shared_examples_exist():
    assert any(SHARED.glob("valid/*.json")) and any(SHARED.glob("invalid/*.json")), f"no examples in {SHARED}"


@pytest.mark.parametrize("path", examples("valid"))
def test_valid_examples_validate(path):
    contracts.validate(_schema(path), json.loads(path.read_text()))


@pytest.mark.parametrize("path", examples("invalid"))
def test_invalid_examples_are_rejected(path):
    with pytest.raises(ContractError) as err:
        contracts.validate(_schema(path), json.loads(path.read_text()))
    assert err.value.errors


def test_every_schema_loads_and_is_registered_by_id():
    c = contracts.load()
    files = sorted(p.name.removesuffix(".schema.json") for p in (c.directory / "schemas").glob("*.schema.json"))
    assert sorted(c.schemas) == files
    for schema in c.schemas.values():
        assert c.registry.get_or_retrieve(schema["$id"]).value.contents == schema


def test_errors_name_the_field():
    with pytest.raises(ContractError) as err:
        contracts.validate("request", {"schema_version": 1, "dbms": ["Redis"], "loading_pods": [0]})
    assert err.value.errors == ["loading_pods[0]: 0 is less than the minimum of 1"]


def test_unknown_schema_is_an_error():
    with pytest.raises(KeyError, match="unknown schema 'nope'"):
        contracts.validate("nope", {})


def test_date_time_is_asserted():
    """jsonschema skips date-time silently unless rfc3339-validator is installed; Go asserts it."""
    with pytest.raises(ContractError):
        contracts.validate("request", {"schema_version": 1, "dbms": ["Redis"], "ts": "2026-13-45"})


@pytest.mark.parametrize(
    "pattern,expected", [("^[a-z]+$", r"^[a-z]+\Z"), (r"^a\$b$", r"^a\$b\Z"), ("^[$a]+$", r"^[$a]+\Z")]
)
def test_ecma_pattern_anchors_at_the_very_end(pattern, expected):
    assert ecma_pattern(pattern) == expected


def test_subjects_fill_like_go():
    final = contracts.load().names["subjects"]["final"]
    assert contracts.subject(final, code="x", phase="p", shard=2) == "benchq.results.x.p.2.final"
    assert contracts.subject(final) == "benchq.results.*.*.*.final"
    assert contracts.load().subject("phase_done", code="x") == "benchq.exp.x.phase.done"


def test_contracts_dir_from_env(tmp_path):
    (tmp_path / "names.json").write_text("{}")
    assert contracts.find_dir({contracts.ENV_DIR: str(tmp_path)}) == tmp_path
    with pytest.raises(FileNotFoundError):
        contracts.find_dir({contracts.ENV_DIR: str(tmp_path / "missing")})


def test_contracts_dir_found_from_the_repository():
    assert (contracts.find_dir({}) / "names.json").is_file()


@pytest.mark.parametrize(
    "names,path",
    [
        (contracts.RESULT, ("statuses", "result")),
        (contracts.PHASE, ("statuses", "phase")),
        (contracts.EXPERIMENT, ("statuses", "experiment")),
        (contracts.KIND, ("kinds",)),
        (contracts.ACTION, ("actions",)),
        (contracts.BACKEND, ("backends",)),
        (contracts.DURABLE, ("durables",)),
    ],
)
def test_constants_are_names_json(names, path):
    """The constants the reporter compares with are names.json's sections, entry for entry."""
    section = json.loads((contracts.find_dir() / "names.json").read_text())
    for key in path:
        section = section[key]
    section = {k: v for k, v in section.items() if k != "comment"}
    assert section and vars(names) == section


def test_benchmarks_are_the_request_schemas():
    schema = json.loads((contracts.find_dir() / "schemas" / "request.schema.json").read_text())
    enum = schema["properties"]["benchmark"]["enum"]
    assert sorted(vars(contracts.BENCHMARK).values()) == sorted(enum)
    # The three the summary tells apart.
    assert {contracts.BENCHMARK.ycsb, contracts.BENCHMARK.benchbase, contracts.BENCHMARK.tsdb} == set(enum)


def test_constants_are_read_only_and_unknown_names_fail():
    with pytest.raises(AttributeError):
        contracts.PHASE.done = "finished"
    with pytest.raises(AttributeError):
        contracts.PHASE.finished  # noqa: B018 - a name names.json does not have
