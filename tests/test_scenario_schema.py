"""docs/scenario.schema.json (simulator/scenario/schema.py): the committed file is the
generator's output, every scenario in scenarios/ passes it, and typical mistakes (a misspelt
key, an unknown randomizer) fail it. The validator below implements exactly the JSON Schema
keywords the generator emits (no dependency); a keyword it does not know is an error."""

from __future__ import annotations

import json
import math
import re
import tomllib
from pathlib import Path

import pytest
from conftest import scenario_text

from shufflesim.simulator.scenario.schema import DRAFT, render, scenario_schema

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_FILE = ROOT / "docs" / "scenario.schema.json"
SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))

#: Keywords that only annotate (no effect on validity).
ANNOTATIONS = {"$schema", "title", "description", "default"}
TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}


def errors(value, schema: dict, path: str = "$") -> list[str]:
    """Why ``value`` (a TOML document or part of one) fails ``schema``; [] when it passes."""
    unknown = set(schema) - ANNOTATIONS - {
        "type", "enum", "properties", "required", "additionalProperties", "items", "minItems",
        "oneOf", "anyOf", "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum",
        "pattern"}
    if unknown:
        raise AssertionError(f"{path}: keywords the validator does not implement: {unknown}")
    if "type" in schema and not TYPES[schema["type"]](value):
        return [f"{path}: {value!r} is not of type {schema['type']}"]
    found = []
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        for keyword, holds in (("minimum", lambda v, m: v >= m),
                               ("exclusiveMinimum", lambda v, m: v > m),
                               ("maximum", lambda v, m: v <= m),
                               ("exclusiveMaximum", lambda v, m: v < m)):
            if keyword in schema and not (math.isfinite(value) and holds(value, schema[keyword])):
                found.append(f"{path}: {value!r} fails {keyword} {schema[keyword]}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"],
                                                                        value):
        found.append(f"{path}: {value!r} does not match {schema['pattern']}")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                found.append(f"{path}: {key!r} is required")
        for key, item in value.items():
            if key in properties:
                found += errors(item, properties[key], f"{path}.{key}")
            elif schema.get("additionalProperties") is False:
                found.append(f"{path}: unknown key {key!r}")
            elif isinstance(schema.get("additionalProperties"), dict):
                found += errors(item, schema["additionalProperties"], f"{path}.{key}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            found.append(f"{path}: fewer than {schema['minItems']} items")
        if "items" in schema:
            for i, item in enumerate(value):
                found += errors(item, schema["items"], f"{path}[{i}]")
    if "anyOf" in schema:
        arms = [errors(value, arm, path) for arm in schema["anyOf"]]
        if all(arms):
            found.append(f"{path}: matches no alternative ({'; '.join(min(arms, key=len))})")
    if "oneOf" in schema:
        arms = [errors(value, arm, path) for arm in schema["oneOf"]]
        passing = sum(not arm for arm in arms)
        if passing != 1:
            closest = min(arms, key=len)
            found.append(f"{path}: matches {passing} alternatives, not one"
                         + (f" ({'; '.join(closest)})" if passing == 0 else ""))
    return found


def test_the_committed_schema_is_the_generated_one():
    """Regenerate with:
    python -m shufflesim.simulator.scenario.schema > docs/scenario.schema.json"""
    assert SCHEMA_FILE.read_text() == render()
    assert json.loads(SCHEMA_FILE.read_text())["$schema"] == DRAFT


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_every_scenario_file_passes(path):
    assert errors(tomllib.loads(path.read_text()), scenario_schema()) == []


def test_names_come_from_the_registries():
    properties = scenario_schema()["properties"]
    randomizers = [b["properties"]["name"]["enum"][0]
                   for b in properties["randomizer"]["oneOf"]]
    assert {"krr", "brr", "oue", "laplace"} <= set(randomizers)
    assert "frequency" in properties["estimator"]["properties"]["name"]["enum"]
    assert {"audit", "bounds", "pipeline"} <= set(properties)
    assert properties["audit"]["properties"]["attacks"]["items"]["enum"] == [
        "approximate", "count", "lr", "order", "search"]


BASE = scenario_text(seed=None, repetitions=None)


@pytest.mark.parametrize(("edit", "message"), [
    (("exponent = 0.7", "exponet = 0.7"), "unknown key 'exponet'"),
    (('name = "krr"', 'name = "kRR"'), "'kRR' is not one of ['"),
    (('name = "krr"', 'name = "krr"\nepsilon0 = 2.0'), "unknown key 'epsilon0'"),
    (("n = 100", "n = 1"), "fails minimum 2"),
    (('name = "frequency"', 'name = "median"'), "'median' is not one of"),
    (('[estimator]', 'repetitons = 3\n[estimator]'), "unknown key 'repetitons'"),
    (('[estimator]', '[audit]\ntrials = 10\nattacks = ["lrr"]\n[estimator]'),
     "'lrr' is not one of"),
    (('[estimator]', '[pipeline]\nbatch_sise = 10\n[estimator]'), "unknown key 'batch_sise'"),
    (('[estimator]', '[bounds]\ndelta = "1e-6"\n[estimator]'), "matches no alternative"),
    (('distribution = "constant"', 'distribution = "constnat"'), "'constnat' is not one of"),
])
def test_invalid_scenarios_fail(edit, message):
    assert errors(tomllib.loads(BASE), scenario_schema()) == []
    old, new = edit
    assert old in BASE
    found = errors(tomllib.loads(BASE.replace(old, new, 1)), scenario_schema())
    assert found and any(message in e for e in found), found
