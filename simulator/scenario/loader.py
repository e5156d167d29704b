"""Scenarios: TOML files loaded into validated, frozen dataclasses, and sweep expansion.

A scenario file (stdlib :mod:`tomllib`) has the top-level keys ``name``, ``seed`` and
``repetitions`` and the sections ``[population]``, ``[randomizer]``, ``[estimator]``,
``[batch]`` and ``[sweep]`` (docs/scenarios.md lists every key, type and default). Later modules
add sections such as ``[bounds]``, ``[pipeline]`` or ``[audit]`` (simulator.scenario.sections);
any other top-level key is an error.

Every error is a :class:`~simulator.errors.ScenarioError` whose key is the dotted path of the
offending entry (``population.data.exponent``); a misspelt key names the closest valid one.

Sweeps. ``[sweep]`` maps dotted keys to arrays of values. The run covers the cartesian product
of the arrays in a deterministic order: keys in file order, the last key varying fastest
(:func:`itertools.product`). Each *point* is the base file with the point's values written over
it, validated like a file of its own. A scenario is therefore a tuple of fully resolved
:class:`~simulator.scenario.model.SweepPoint`\\ s (one point with no overrides when there is
no sweep).
"""

from __future__ import annotations

import itertools
import json
import math
import re
import tomllib
from pathlib import Path

from shufflesim.simulator.errors import ScenarioError, UserError
from shufflesim.simulator.scenario.convert import ParseContext, check_keys, rekey
from shufflesim.simulator.scenario.core import parse_settings
from shufflesim.simulator.scenario.model import Scenario, SweepPoint, check_seed
from shufflesim.simulator.scenario.sections import TOP_LEVEL_SCALARS, section_names
from shufflesim.simulator.scenario.sweep import MAX_SWEEP_POINTS, apply_overrides, parse_sweep

_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file; errors name the file, key and value."""
    path, text = _read(path)
    return parse_scenario(text, base_dir=path.resolve().parent, source=str(path))


def check_outline(path: str | Path) -> None:
    """The first checks of :func:`load_scenario`, which need none of the sections' modules:
    the file, its TOML, its top-level keys, name, seed and sweep (the same errors, in the same
    order). ``shufflesim run`` makes them before it starts worker processes (issue 32)."""
    path, text = _read(path)
    _outline(text, str(path))


def _read(path: str | Path) -> tuple[Path, str]:
    path = Path(path)
    if not path.is_file():
        raise UserError(f"scenario file not found: {path}")
    try:
        return path, path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"cannot read scenario file {path}: {error}") from None


def parse_scenario(text: str, base_dir: Path | str = ".", source: str | None = None) -> Scenario:
    """Validate scenario TOML text (``base_dir`` resolves relative paths in the file)."""
    document, name, seed, axes = _outline(text, source)
    base_dir = Path(base_dir)
    points = []
    combos = itertools.product(*(axis.values for axis in axes))
    for index, combo in enumerate(combos):
        overrides = tuple(zip((axis.key for axis in axes), combo, strict=True))
        point_document = apply_overrides(document, overrides)
        suffix = f" (sweep point {index}: {json.dumps(dict(overrides))})" if overrides else ""
        try:
            settings = parse_settings(point_document, ParseContext(base_dir, point_document))
        except ScenarioError as error:
            if overrides and _fails_without_sweep(document, base_dir, error):
                suffix = ""  # the file is wrong whatever the sweep point
            raise rekey(error, "", suffix) from None
        points.append(SweepPoint(index=index, overrides=overrides, settings=settings))
    return Scenario(
        name=name, seed=seed, text=text, source=source, sweep=axes, points=tuple(points)
    )


def _outline(text: str, source: str | None) -> tuple[dict, str, int, tuple]:
    """The document of scenario TOML text with its top-level checks made: (document, name,
    seed, sweep axes)."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        where = f"{source}: " if source else ""
        raise UserError(f"{where}invalid TOML: {error}") from None
    if not document:
        where = f"{source}" if source else "the scenario"
        raise UserError(f"{where} is empty: it needs at least name, [population], [randomizer] "
                        "and [estimator] (docs/scenarios.md; scenarios/quickstart.toml is an "
                        "example)")
    check_keys(document, list(TOP_LEVEL_SCALARS) + section_names(), "")
    name = document.get("name")
    if name is None:
        raise ScenarioError("name", None, "is required")
    if not isinstance(name, str) or not _NAME_PATTERN.match(name):
        raise ScenarioError(
            "name", name, "must be a non-empty string of letters, digits, '_', '-' or '.' "
            "starting with a letter or digit (it names the results directory)",
        )
    seed = document.get("seed", 0)
    check_seed("seed", seed)
    axes = parse_sweep(document.get("sweep", {}))
    n_points = math.prod(len(axis.values) for axis in axes)
    if n_points > MAX_SWEEP_POINTS:
        raise ScenarioError("sweep", n_points, f"expands to more than {MAX_SWEEP_POINTS} points")
    return document, name, seed, axes


def _fails_without_sweep(document, base_dir: Path, error: ScenarioError) -> bool:
    """Whether the file without its sweep fails with the same error (key and value)."""
    base = apply_overrides(document, ())
    try:
        parse_settings(base, ParseContext(base_dir, base))
    except ScenarioError as other:
        return other.key == error.key and repr(other.value) == repr(error.value)
    return False

