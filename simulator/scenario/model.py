"""The scenario's data model: frozen dataclasses of a loaded scenario (its sweep points and
their resolved settings) and the options of the batch path. Built by simulator.scenario.loader."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from shufflesim.protocols.randomizers import Randomizer
from shufflesim.simulator.errors import ScenarioError
from shufflesim.simulator.population.base import BudgetDistribution, DataDistribution


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
    """The ``[batch]`` section: how the vectorized batch path runs (simulator.batch.run)."""

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
        check_seed("seed", seed)
        return dataclasses.replace(self, seed=seed)

    @property
    def total_repetitions(self) -> int:
        return sum(point.settings.repetitions for point in self.points)

    def points_with(self, section: str) -> Iterator[tuple[SweepPoint, Any]]:
        """(point, its parsed ``section``) for every point whose settings have that section, in
        sweep order: the loop of every section's table producer."""
        for point in self.points:
            parsed = point.settings.sections.get(section)
            if parsed is not None:
                yield point, parsed


def check_seed(key: str, seed: object) -> None:
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ScenarioError(key, seed, "must be an integer >= 0")

