"""Scenarios: TOML files loaded into validated, frozen dataclasses, and sweep expansion.

A scenario file (stdlib :mod:`tomllib`) has the top-level keys ``name``, ``seed`` and
``repetitions`` and the sections ``[population]``, ``[randomizer]``, ``[estimator]``,
``[batch]`` and ``[sweep]`` (docs/scenarios.md lists every key, type and default). Later modules
add sections such as ``[bounds]``, ``[pipeline]`` or ``[audit]`` with :func:`register_section`;
any other top-level key is an error.

Every error is a :class:`~simulator.errors.ScenarioError` whose key is the dotted path of the
offending entry (``population.data.exponent``); a misspelt key names the closest valid one.

Sweeps. ``[sweep]`` maps dotted keys to arrays of values. The run covers the cartesian product
of the arrays in a deterministic order: keys in file order, the last key varying fastest
(:func:`itertools.product`). Each *point* is the base file with the point's values written over
it, validated like a file of its own. A scenario is therefore a tuple of fully resolved
:class:`SweepPoint`\\ s (one point with no overrides when there is no sweep).
"""

from __future__ import annotations

import dataclasses
import datetime
import difflib
import itertools
import json
import math
import re
import tomllib
import typing
from collections.abc import Callable, Mapping
from copy import deepcopy
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from pathlib import Path
from types import MappingProxyType, UnionType
from typing import Any

from protocols.errors import ParameterError
from protocols.randomizers import (
    Categorical,
    Interval,
    Randomizer,
    make_randomizer,
    randomizer_names,
    randomizer_parameters,
)
from simulator.errors import ScenarioError, UserError
from simulator.population import (
    CATEGORICAL,
    BudgetDistribution,
    DataDistribution,
    budget_distribution_class,
    data_distribution_class,
)

#: Largest number of sweep points a scenario may expand to.
MAX_SWEEP_POINTS = 100_000
_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_TOP_LEVEL_SCALARS = ("name", "seed", "repetitions")
_CORE_SECTIONS = ("population", "randomizer", "estimator", "batch", "sweep")
#: Keys a sweep may not vary.
_NOT_SWEEPABLE = ("name", "seed", "sweep")


# ---------------------------------------------------------------------------------------------
# Options of the batch path
# ---------------------------------------------------------------------------------------------
class BatchPath(StrEnum):
    """How the aggregate of one repetition is produced."""

    #: Per-user reports: sample data, randomize every user, shuffle, aggregate.
    REPORTS = "reports"
    #: Sample the aggregate exactly from the data histogram (randomizer.sample_aggregate).
    AGGREGATE = "aggregate"


class ShuffleMode(StrEnum):
    """Whether the reports path permutes the reports of each repetition."""

    #: Apply a uniform random permutation to each repetition's reports (the shuffler).
    PERFORM = "perform"
    #: Skip it: valid because every estimator reads only the aggregate, which is invariant
    #: under permutations of the reports (the shuffled multiset has the same histogram).
    SKIP = "skip"


@dataclass(frozen=True)
class BatchOptions:
    """The ``[batch]`` section: how the vectorized batch path runs (simulator.batch)."""

    path: BatchPath = BatchPath.REPORTS
    shuffle: ShuffleMode = ShuffleMode.PERFORM
    #: Working-memory budget of one unit of work, in MiB.
    memory_mb: int = 512
    #: Repetitions per unit of work (and per random stream); None: derived from memory_mb.
    chunk_repetitions: int | None = None

    def __post_init__(self) -> None:
        if self.memory_mb < 16:
            raise ScenarioError("memory_mb", self.memory_mb, "must be an integer >= 16")
        if self.chunk_repetitions is not None and self.chunk_repetitions < 1:
            raise ScenarioError(
                "chunk_repetitions", self.chunk_repetitions, "must be an integer >= 1"
            )


@dataclass(frozen=True)
class Population:
    """The ``[population]`` section: n users, their data and their budgets."""

    n: int
    data: DataDistribution
    budget: BudgetDistribution


@dataclass(frozen=True)
class Settings:
    """One fully resolved setting (a sweep point): everything a run of it needs."""

    repetitions: int
    population: Population
    randomizer_name: str
    #: The randomizer parameters as written in the file (after defaults from the data).
    randomizer_params: tuple[tuple[str, Any], ...]
    randomizer: Randomizer = field(compare=False)
    estimator_name: str
    estimator: Any = field(compare=False)
    batch: BatchOptions
    #: Extension sections (``[bounds]``, ``[pipeline]``, ...) by name: their parsed dataclasses.
    sections: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def epsilon0(self) -> float:
        return self.population.budget.reference_epsilon


@dataclass(frozen=True)
class SweepAxis:
    """One ``[sweep]`` entry: a dotted key and the values it takes."""

    key: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class SweepPoint:
    """One point of the sweep grid: its index, the values it writes over the file, and the
    resolved settings."""

    index: int
    overrides: tuple[tuple[str, Any], ...]
    settings: Settings

    def overrides_json(self) -> str:
        """The overrides as a JSON object (keys in sweep order)."""
        return json.dumps(dict(self.overrides), separators=(",", ":"))


@dataclass(frozen=True)
class Scenario:
    """A loaded scenario: identity, seed, the original text and the resolved sweep points."""

    name: str
    seed: int
    text: str
    source: str | None
    sweep: tuple[SweepAxis, ...]
    points: tuple[SweepPoint, ...]

    def with_seed(self, seed: int) -> Scenario:
        """The same scenario with another root seed (the ``--seed`` option)."""
        _check_seed("seed", seed)
        return dataclasses.replace(self, seed=seed)

    @property
    def total_repetitions(self) -> int:
        return sum(point.settings.repetitions for point in self.points)


# ---------------------------------------------------------------------------------------------
# Extension sections
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ParseContext:
    """What a section parser may need besides its table."""

    #: Directory of the scenario file: relative paths in the file are resolved against it.
    base_dir: Path
    #: The whole (override-applied) TOML document, read-only, for cross-section checks.
    document: Mapping[str, Any]


SectionParser = Callable[[Mapping[str, Any], ParseContext], Any]
_SECTIONS: dict[str, SectionParser] = {}


def register_section(name: str, parser: SectionParser) -> None:
    """Register an optional top-level section ``[name]``.

    ``parser(table, context)`` receives the section's table and returns a frozen dataclass (it
    may use :func:`parse_dataclass` and must raise ScenarioError with keys ``name.<key>``). The
    result is available as ``settings.sections[name]`` for every sweep point; the section is
    absent from ``sections`` when the file does not have it. Keys of the section can be swept.
    """
    if name in _TOP_LEVEL_SCALARS or name in _CORE_SECTIONS or name in _SECTIONS:
        raise RuntimeError(f"scenario section {name!r} registered twice")
    _SECTIONS[name] = parser


def section_names() -> list[str]:
    """All valid top-level section names, core and registered."""
    return list(_CORE_SECTIONS) + sorted(_SECTIONS)


# ---------------------------------------------------------------------------------------------
# Generic validation helpers (also for extension parsers)
# ---------------------------------------------------------------------------------------------
def join_key(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def check_keys(table: Mapping[str, Any], allowed: typing.Iterable[str], prefix: str) -> None:
    """Unknown keys are errors that suggest the closest allowed key."""
    allowed = list(allowed)
    for key, value in table.items():
        if key not in allowed:
            raise ScenarioError(join_key(prefix, key), value, _unknown_key_hint(key, allowed))


def _unknown_key_hint(key: str, allowed: list[str]) -> str:
    close = closest(key, allowed)
    hint = f"unknown key; did you mean {close!r}?" if close else "unknown key"
    return f"{hint} (valid keys: {', '.join(allowed) if allowed else 'none'})"


def closest(word: str, candidates: typing.Iterable[str]) -> str | None:
    """The candidate most similar to ``word`` (difflib ratio >= 0.6, or for short words an
    edit distance of at most max(1, len // 3)); None when nothing is close."""
    candidates = list(candidates)
    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    if close:
        return close[0]
    scored = sorted((_edit_distance(word, c), c) for c in candidates)
    if scored and scored[0][0] <= max(1, len(word) // 3):
        return scored[0][1]
    return None


def _edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (small strings: keys of a scenario)."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def require_table(document: Mapping[str, Any], key: str, prefix: str = "") -> Mapping[str, Any]:
    """``document[key]`` as a table (required)."""
    if key not in document:
        raise ScenarioError(join_key(prefix, key), None, "is required")
    value = document[key]
    if not isinstance(value, Mapping):
        raise ScenarioError(join_key(prefix, key), value, "must be a table")
    return value


def rekey(error: ParameterError | ScenarioError, prefix: str, suffix: str = "") -> ScenarioError:
    """A ScenarioError for an error raised on a field, with the key path ``prefix.field``."""
    if isinstance(error, ScenarioError):
        key, requirement = error.key, error.requirement
    else:
        key, requirement = error.field, error.requirement
    if prefix and not (key == prefix or key.startswith(prefix + ".")):
        key = join_key(prefix, key)
    return ScenarioError(key, error.value, requirement + suffix)


def parse_dataclass(
    cls: type,
    table: Mapping[str, Any],
    prefix: str,
    context: ParseContext | None = None,
    exclude: tuple[str, ...] = (),
) -> Any:
    """Build the frozen dataclass ``cls`` from a TOML table, checking keys and value types.

    Fields are matched by name (``exclude`` lists keys handled by the caller, e.g. a
    ``distribution`` tag); unknown keys, missing required keys and wrong types are errors
    keyed ``prefix.key``. Accepted types: bool, int, float (ints accepted), str, Enum subclasses
    (by value), ``tuple[T, ...]`` (from arrays) and ``X | None``. Errors raised by the class's
    own validation (ScenarioError or ParameterError naming a field) are re-keyed under
    ``prefix``. Fields named in ``cls.path_fields`` are resolved against the scenario directory.
    """
    hints = typing.get_type_hints(cls)
    init_fields = [f for f in dataclasses.fields(cls) if f.init]
    names = [f.name for f in init_fields if not f.name.startswith("_")]
    check_keys({k: v for k, v in table.items() if k not in exclude}, names, prefix)
    kwargs = {}
    for f in init_fields:
        key = join_key(prefix, f.name)
        if f.name not in table:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ScenarioError(key, None, "is required")
            continue
        value = _coerce(table[f.name], hints[f.name], key)
        if f.name in getattr(cls, "path_fields", ()) and context is not None:
            path = Path(value).expanduser()
            value = str(path if path.is_absolute() else context.base_dir / path)
        kwargs[f.name] = value
    try:
        return cls(**kwargs)
    except (ScenarioError, ParameterError) as error:
        raise rekey(error, prefix) from None


def _coerce(value: Any, annotation: Any, key: str) -> Any:
    """Check ``value`` against a field annotation (see :func:`parse_dataclass`)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, UnionType):
        arms = [a for a in typing.get_args(annotation) if a is not type(None)]
        errors = []
        for arm in arms:
            try:
                return _coerce(value, arm, key)
            except ScenarioError as error:
                errors.append(error.requirement)
        raise ScenarioError(key, value, " or ".join(errors))
    if origin is tuple:
        args = typing.get_args(annotation)
        if not isinstance(value, list):
            raise ScenarioError(key, value, "must be an array")
        return tuple(_coerce(v, args[0], f"{key}[{i}]") for i, v in enumerate(value))
    if annotation is Any:
        return value
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        choices = [m.value for m in annotation]
        if value not in choices:
            raise ScenarioError(key, value, f"must be one of {choices}")
        return annotation(value)
    if annotation is bool:
        if not isinstance(value, bool):
            raise ScenarioError(key, value, "must be true or false")
        return value
    if annotation is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise ScenarioError(key, value, "must be an integer")
        return value
    if annotation is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ScenarioError(key, value, "must be a number")
        return value
    if annotation is str:
        if not isinstance(value, str):
            raise ScenarioError(key, value, "must be a string")
        return value
    return value


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------
def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file; errors name the file, key and value."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"scenario file not found: {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"cannot read scenario file {path}: {error}") from None
    return parse_scenario(text, base_dir=path.resolve().parent, source=str(path))


def parse_scenario(text: str, base_dir: Path | str = ".", source: str | None = None) -> Scenario:
    """Validate scenario TOML text (``base_dir`` resolves relative paths in the file)."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        where = f"{source}: " if source else ""
        raise UserError(f"{where}invalid TOML: {error}") from None
    base_dir = Path(base_dir)
    if not document:
        where = f"{source}" if source else "the scenario"
        raise UserError(f"{where} is empty: it needs at least name, [population], [randomizer] "
                        "and [estimator] (docs/scenarios.md; scenarios/quickstart.toml is an "
                        "example)")
    check_keys(document, list(_TOP_LEVEL_SCALARS) + section_names(), "")
    name = document.get("name")
    if name is None:
        raise ScenarioError("name", None, "is required")
    if not isinstance(name, str) or not _NAME_PATTERN.match(name):
        raise ScenarioError(
            "name", name, "must be a non-empty string of letters, digits, '_', '-' or '.' "
            "starting with a letter or digit (it names the results directory)",
        )
    seed = document.get("seed", 0)
    _check_seed("seed", seed)
    axes = _parse_sweep(document.get("sweep", {}))
    n_points = math.prod(len(axis.values) for axis in axes)
    if n_points > MAX_SWEEP_POINTS:
        raise ScenarioError("sweep", n_points, f"expands to more than {MAX_SWEEP_POINTS} points")
    points = []
    combos = itertools.product(*(axis.values for axis in axes))
    for index, combo in enumerate(combos):
        overrides = tuple(zip((axis.key for axis in axes), combo, strict=True))
        point_document = _apply_overrides(document, overrides)
        suffix = f" (sweep point {index}: {json.dumps(dict(overrides))})" if overrides else ""
        try:
            settings = _parse_settings(point_document, ParseContext(base_dir, point_document))
        except ScenarioError as error:
            if overrides and _fails_without_sweep(document, base_dir, error):
                suffix = ""  # the file is wrong whatever the sweep point
            raise rekey(error, "", suffix) from None
        points.append(SweepPoint(index=index, overrides=overrides, settings=settings))
    return Scenario(
        name=name, seed=seed, text=text, source=source, sweep=axes, points=tuple(points)
    )


def _fails_without_sweep(document, base_dir: Path, error: ScenarioError) -> bool:
    """Whether the file without its sweep fails with the same error (key and value)."""
    base = _apply_overrides(document, ())
    try:
        _parse_settings(base, ParseContext(base_dir, base))
    except ScenarioError as other:
        return other.key == error.key and repr(other.value) == repr(error.value)
    return False


def _check_seed(key: str, seed: object) -> None:
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ScenarioError(key, seed, "must be an integer >= 0")


def _parse_sweep(table: object) -> tuple[SweepAxis, ...]:
    if not isinstance(table, Mapping):
        raise ScenarioError("sweep", table, "must be a table of dotted keys to arrays")
    axes = []
    for key, values in _flatten_sweep(table, ""):
        label = f"sweep.{key!r}" if "." in key else f"sweep.{key}"
        head = key.split(".")[0]
        if head in _NOT_SWEEPABLE:
            raise ScenarioError(label, values, f"{head!r} cannot be swept")
        valid_heads = [k for k in list(_TOP_LEVEL_SCALARS) + section_names()
                       if k not in _NOT_SWEEPABLE]
        if head not in valid_heads:
            raise ScenarioError(label, values, _unknown_key_hint(head, valid_heads))
        if not isinstance(values, list) or not values:
            raise ScenarioError(label, values, "must be a non-empty array of values")
        for value in values:
            if _contains_datetime(value):
                raise ScenarioError(label, value, "dates and times cannot be swept")
        axes.append(SweepAxis(key=key, values=tuple(values)))
    return tuple(axes)


def _flatten_sweep(table: Mapping[str, Any], prefix: str):
    """Dotted keys may be quoted ("a.b" = [...]) or written as nested tables (a.b = [...])."""
    for key, value in table.items():
        path = join_key(prefix, key)
        if isinstance(value, Mapping):
            yield from _flatten_sweep(value, path)
        else:
            yield path, value


def _contains_datetime(value: Any) -> bool:
    if isinstance(value, (datetime.date, datetime.time)):
        return True
    if isinstance(value, list):
        return any(_contains_datetime(v) for v in value)
    if isinstance(value, Mapping):
        return any(_contains_datetime(v) for v in value.values())
    return False


def _apply_overrides(document: Mapping[str, Any], overrides) -> dict[str, Any]:
    """A copy of the document with each dotted key set to its value."""
    out = deepcopy(dict(document))
    out.pop("sweep", None)
    for key, value in overrides:
        parts = key.split(".")
        node = out
        for depth, part in enumerate(parts[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                where = ".".join(parts[: depth + 1])
                raise ScenarioError(f"sweep.{key!r}", value, f"{where} is not a table")
            node = child
        node[parts[-1]] = deepcopy(value)
    return out


# ---------------------------------------------------------------------------------------------
# One resolved setting
# ---------------------------------------------------------------------------------------------
def _parse_settings(document: Mapping[str, Any], context: ParseContext) -> Settings:
    repetitions = document.get("repetitions", 1)
    if not isinstance(repetitions, int) or isinstance(repetitions, bool) or repetitions < 1:
        raise ScenarioError("repetitions", repetitions, "must be an integer >= 1")
    population = _parse_population(require_table(document, "population"), context)
    randomizer_name, params, randomizer = _parse_randomizer(
        require_table(document, "randomizer"), population
    )
    estimator_name, estimator = _parse_estimator(require_table(document, "estimator"), randomizer)
    batch_table = document.get("batch", {})
    if not isinstance(batch_table, Mapping):
        raise ScenarioError("batch", batch_table, "must be a table")
    batch = parse_dataclass(BatchOptions, batch_table, "batch", context)
    _check_batch(batch, population, randomizer)
    if estimator_name == "frequency" and not population.budget.is_constant:
        raise ScenarioError("estimator.name", estimator_name,
                            "is biased with per-user budgets (its support probabilities are "
                            "those of one eps0); use gspa_frequency or weighted_frequency")
    if getattr(estimator, "uses_budgets", False):
        # Personalized-budget estimators reduce (report, budget) pairs on the reports path.
        if batch.path is BatchPath.AGGREGATE:
            raise ScenarioError("batch.path", batch.path.value,
                                f"estimator {estimator_name} needs per-user reports and budgets "
                                "(the reports path)")
        if "pipeline" in document:
            raise ScenarioError("estimator.name", estimator_name,
                                "runs on the batch path only (not with [pipeline])")
    sections = {}
    for name, parser in _SECTIONS.items():
        if name in document:
            table = document[name]
            if not isinstance(table, Mapping):
                raise ScenarioError(name, table, "must be a table")
            sections[name] = parser(table, context)
    return Settings(
        repetitions=repetitions,
        population=population,
        randomizer_name=randomizer_name,
        randomizer_params=params,
        randomizer=randomizer,
        estimator_name=estimator_name,
        estimator=estimator,
        batch=batch,
        sections=MappingProxyType(sections),
    )


def _parse_population(table: Mapping[str, Any], context: ParseContext) -> Population:
    check_keys(table, ("n", "data", "budget"), "population")
    n = table.get("n")
    if not isinstance(n, int) or isinstance(n, bool) or n < 2:
        raise ScenarioError("population.n", n, "must be an integer >= 2 (users shuffled "
                            "together; bounds and audits need at least two)")
    data_table = require_table(table, "data", "population")
    data = _parse_tagged(data_table, "population.data", data_distribution_class, context)
    try:
        data.check_sample_size(n)
    except ScenarioError as error:
        raise rekey(error, "population.data") from None
    budget_table = require_table(table, "budget", "population")
    budget = _parse_tagged(budget_table, "population.budget", budget_distribution_class, context)
    return Population(n=n, data=data, budget=budget)


def _parse_tagged(table, prefix: str, lookup, context: ParseContext):
    """A ``{ distribution = "<name>", ...params }`` table."""
    tag = table.get("distribution")
    if tag is None:
        raise ScenarioError(f"{prefix}.distribution", None, "is required")
    try:
        cls = lookup(tag)
    except ScenarioError as error:
        raise rekey(error, prefix) from None
    return parse_dataclass(cls, table, prefix, context, exclude=("distribution",))


def _parse_randomizer(table: Mapping[str, Any], population: Population):
    name = table.get("name")
    if name is None:
        raise ScenarioError("randomizer.name", None, "is required")
    if not isinstance(name, str) or name not in randomizer_names():
        close = closest(str(name), randomizer_names())
        hint = f"did you mean {close!r}? " if close else ""
        raise ScenarioError(
            "randomizer.name", name, f"unknown randomizer; {hint}choose one of {randomizer_names()}"
        )
    allowed = [p for p in randomizer_parameters(name) if p != "epsilon0"]
    params = {k: v for k, v in table.items() if k != "name"}
    if "epsilon0" in params:
        raise ScenarioError(
            "randomizer.epsilon0", params["epsilon0"],
            "the local budget comes from population.budget (e.g. epsilon0 there)",
        )
    check_keys(params, ["name"] + allowed, "randomizer")
    data = population.data
    if "domain_size" in allowed and "domain_size" not in params:
        if data.kind != CATEGORICAL:
            raise _numeric_data_for_categorical(data, name)
        params["domain_size"] = data.domain_size
    try:
        randomizer = make_randomizer(
            name, epsilon0=population.budget.reference_epsilon, **params
        )
    except (ParameterError, ScenarioError) as error:
        if getattr(error, "field", None) == "epsilon0":
            raise rekey(error, "population.budget") from None
        raise rekey(error, "randomizer") from None
    except (TypeError, ValueError) as error:  # e.g. a wrong type reaching numpy
        raise ScenarioError("randomizer", dict(table), f"invalid parameters: {error}") from None
    _check_data_fits(data, randomizer, name)
    if not population.budget.is_constant and not randomizer.supports_personalized:
        raise ScenarioError(
            "population.budget.distribution", population.budget.name,
            f"per-user budgets need a randomizer that supports them; {name} does not",
        )
    return name, tuple(sorted(params.items())), randomizer


def _numeric_data_for_categorical(data: DataDistribution, name: str) -> ScenarioError:
    return ScenarioError(
        "population.data.distribution", data.name,
        f"numeric data cannot feed the categorical randomizer {name} "
        "(give the data a domain_size or choose a numeric randomizer)",
    )


def _check_data_fits(data: DataDistribution, randomizer: Randomizer, name: str) -> None:
    """The data must lie in the randomizer's input domain."""
    domain = randomizer.input_domain
    if isinstance(domain, Categorical):
        if data.kind != CATEGORICAL:
            raise _numeric_data_for_categorical(data, name)
        if data.domain_size > domain.size:
            raise ScenarioError(
                "population.data.domain_size", data.domain_size,
                f"exceeds the input domain size {domain.size} of randomizer {name}",
            )
    elif isinstance(domain, Interval):
        low, high = data.support()
        if low < domain.low or high > domain.high:
            raise ScenarioError(
                "population.data", f"values in [{low}, {high}]",
                f"must lie in the input interval [{domain.low}, {domain.high}] of randomizer "
                f"{name}",
            )


def _parse_estimator(table: Mapping[str, Any], randomizer: Randomizer):
    check_keys(table, ("name",), "estimator")
    name = table.get("name")
    if name is None:
        raise ScenarioError("estimator.name", None, "is required")
    if not isinstance(name, str):
        raise ScenarioError("estimator.name", name, "must be a string")
    from simulator.batch import target_names  # the metrics the batch path can compute

    try:
        from protocols.estimators import make_estimator
    except ImportError:
        raise ScenarioError("estimator.name", name, "no estimators are installed") from None
    if name not in target_names():
        close = closest(name, target_names())
        hint = f"did you mean {close!r}? " if close else ""
        raise ScenarioError(
            "estimator.name", name, f"unknown estimator; {hint}choose one of {target_names()}"
        )
    try:
        estimator = make_estimator(name, randomizer)
    except (ParameterError, ScenarioError) as error:
        raise rekey(error, "estimator") from None
    return name, estimator


def _check_batch(batch: BatchOptions, population: Population, randomizer: Randomizer) -> None:
    if batch.path is BatchPath.AGGREGATE:
        if not randomizer.has_aggregate_sampler:
            raise ScenarioError(
                "batch.path", batch.path.value,
                f"randomizer {randomizer.name} has no sufficient-statistic sampler",
            )
        if population.data.kind != CATEGORICAL:
            raise ScenarioError("batch.path", batch.path.value, "needs categorical data")
        if not population.budget.is_constant:
            raise ScenarioError("batch.path", batch.path.value, "needs a constant budget")


# Sections shipped with the package register themselves on import; they import this module,
# hence the imports at its end.
from simulator import bounds_section as _bounds_section  # noqa: E402, F401
from simulator.audit import section as _audit_section  # noqa: E402, F401
from simulator.pipeline import section as _pipeline_section  # noqa: E402, F401
