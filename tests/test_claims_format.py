"""The claim format is defined once: the schema checks a file, and the verdict's objects are built from
the checked YAML by their fields (verdict/built.py). These tests fail where the schema and the
dataclasses name different keys, so that neither can drift from the other."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpurepro.hardware import load_hardware
from gpurepro.verdict.built import yaml_keys
from gpurepro.verdict.claims import Claim, Expected
from gpurepro.verdict.evaluate import evaluate
from gpurepro.verdict.loading import load_claims
from gpurepro.verdict.statuses import INFO
from gpurepro.verdict.summary import paper_verdicts
from tests.test_verdict import SCHEMA, claim, hardware_dir, sgemm_table, write_claims

__all__ = ["hardware_dir"]  # the hardware table fixture of test_verdict.py, used here too

# Claim fields the file's top level gives (not keys of a claim), and the claimed figure, built by
# claims._expected from the source's own numbers (a value, computed, a range, across)
GIVEN = {"file", "purpose"}
BUILT_APART = {Expected}


def _resolved(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """A subschema's properties through its $ref and allOf."""
    properties: dict[str, Any] = dict(node.get("properties", {}))
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        properties.update(_resolved(schema, schema["definitions"][name])["properties"])
    for part in node.get("allOf", []):
        properties.update(_resolved(schema, part)["properties"])
    if node.get("type") == "array" and "items" in node:
        return _resolved(schema, node["items"])
    return {"properties": properties}


def _pairs(schema: dict[str, Any], cls: type, node: dict[str, Any], path: str) -> list[tuple[str, set, set]]:
    """(path, the schema's keys, the class's keys) for the class and each class built inside it."""
    properties = _resolved(schema, node)["properties"]
    keys = yaml_keys(cls)
    read = {key.split(".")[0] for key in keys} - (GIVEN if cls is Claim else set())
    found = [(path, set(properties), read)]
    for key, built in keys.items():
        if built is None or built in BUILT_APART or key in GIVEN:
            continue
        sub = properties
        for part in key.split(".")[:-1]:
            sub = _resolved(schema, sub[part])["properties"]
        found += _pairs(schema, built, sub[key.split(".")[-1]], f"{path}.{key}")
    return found


def test_the_schema_and_the_dataclasses_name_the_same_keys() -> None:
    schema = yaml.safe_load(SCHEMA.read_text())
    item = schema["properties"]["claims"]["items"]
    pairs = _pairs(schema, Claim, item, "claims")
    assert len(pairs) > 10  # the nested objects were walked, not just the claim
    for path, allowed, read in pairs:
        if path == "claims":  # the claim's figure and source are read apart (claims._claim)
            assert allowed - read == set(), path
            assert read - allowed == set(), path
        else:
            assert allowed == read, path


def test_text_reads_as_one_line_whatever_its_yaml_block(tmp_path: Path) -> None:
    """A literal block keeps its newlines in YAML; the objects fold every text alike."""
    path = write_claims(tmp_path / "expected", claim(note="first line\nsecond  line\n"))
    (read,) = load_claims([path], SCHEMA)
    assert read.note == "first line second line"


def test_a_figure_not_found_in_its_source_is_shown_and_never_counted(hardware_dir: Path) -> None:
    hardware = load_hardware(hardware_dir)
    missing = claim(source={"not_found": "the abstract and Table 2"})
    (read,) = load_claims([write_claims(hardware_dir.parent / "expected", missing)], SCHEMA, hardware)
    assert (
        read.not_counted == "its figure was not found in the source (looked for in: the abstract and Table 2)"
    )
    tables = {"sgemm": sgemm_table([("torch", 8192, "rate", 50.0)])}
    (outcome,) = evaluate([read], tables, hardware, rules={"sgemm": "sgemm"})
    assert outcome.grade == INFO  # the same reading held where the figure's place is known
    (found,) = evaluate(
        load_claims([write_claims(hardware_dir.parent / "found", claim())], SCHEMA, hardware),
        tables,
        hardware,
        rules={"sgemm": "sgemm"},
    )
    assert found.grade != INFO
    assert paper_verdicts([outcome])[0].headline != paper_verdicts([found])[0].headline


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({}, "key claims.0.source: {} is not any of the allowed forms: where the figure stands"),
        ({"where": "Table 2", "not_found": "x"}, "is valid under each of"),
    ],
)
def test_a_claim_names_where_its_figure_stands_or_where_it_was_looked_for(
    tmp_path: Path, source: dict[str, Any], message: str
) -> None:
    path = write_claims(tmp_path / "expected", claim(source=source))
    with pytest.raises(Exception) as err:
        load_claims([path], SCHEMA)
    assert f"bad claim file {path}" in str(err.value) and message in str(err.value), str(err.value)
    assert "(claim h200-rate)" in str(err.value)


def _dropped(obj: Any, data: dict[str, Any], path: str) -> list[str]:
    """The keys a shipped claim's YAML gives that its object left empty: what a builder that silently
    skips a key would leave (the claimed figure, built apart, is compared by its own tests)."""
    empty: list[str] = []
    for field in dataclasses.fields(obj):
        key = field.metadata.get("key", field.name)
        value: Any = data
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        # a field read through its own function may read nothing on purpose (Scaling.calibrated: None
        # for an uncertainty given as a number)
        own_reading = "read" in field.metadata
        if (
            value is None
            or value in ({}, [])
            or own_reading
            or isinstance(getattr(obj, field.name), Expected)
        ):
            continue
        read = getattr(obj, field.name)
        if read is None or read in ((), {}, ""):
            empty.append(f"{path}.{key}")
        elif dataclasses.is_dataclass(read) and isinstance(value, dict):
            empty += _dropped(read, value, f"{path}.{key}")
        elif isinstance(read, tuple) and read and dataclasses.is_dataclass(read[0]):
            for index, (item, given) in enumerate(zip(read, value, strict=True)):
                empty += _dropped(item, given, f"{path}.{key}.{index}")
    return empty


def test_every_key_of_every_shipped_claim_reaches_its_object() -> None:
    folder = Path(__file__).resolve().parents[1] / "config" / "expected"
    loaded = {claim.id: claim for claim in load_claims([folder], SCHEMA)}
    items = [
        item for path in sorted(folder.glob("*.yaml")) for item in yaml.safe_load(path.read_text())["claims"]
    ]
    assert len(items) == len(loaded) > 40
    for item in items:
        assert _dropped(loaded[item["id"]], item, item["id"]) == []
