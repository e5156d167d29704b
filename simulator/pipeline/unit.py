"""Scenario runs through the pipeline: one unit of work = a block of repetitions of one sweep
point, each repetition a full :func:`~simulator.pipeline.run.run_pipeline` run.

Per repetition: the data of the n clients are drawn from the population (as on the batch path:
a categorical sample is its Multinomial histogram laid out in sorted order, which does not
matter since arrival times, dropouts and colluders are drawn independently of the client
index), per-client budgets when the budget distribution is not constant, then the pipeline runs
with its own SeedSequence child. The estimate (all rounds pooled) gives the same utility
metrics as the batch path, against the whole sampled data (``empirical``: dropped-out clients
and thresholded batches are part of the error) and the population. Repetitions are a Python
loop: each is a sequential SimPy simulation whose per-message work is vectorized.

Per-batch epsilon. Every released batch gets a finite central epsilon, and the columns
``bound``, ``delta``, ``epsilon_source`` and ``epsilon_reason`` say where it comes from:

* ``pipeline.bound`` set: ``catalogue.evaluate(bound, randomizer, honest_size, delta)``, capped at
  the local budget: an eps0-LDP randomizer's shuffled output is eps0-DP whatever n
  (post-processing), so the minimum of the two upper bounds is one. Where the bound does not
  apply (e.g. an honest size below its regime, or below 2) the batch gets the local budget;
  ``epsilon_source`` says which applied (``bound`` or ``local``).
* no ``pipeline.bound`` but a central delta (``pipeline.delta``, else the smallest delta of the
  ``[bounds]`` section): the best *proven* upper bound, i.e. the smallest epsilon over every
  catalogue bound of kind upper whose evaluation has status ``proven`` and no caveat, again
  capped at the local budget; ``bound`` names the bound that gave the value. To keep runs fast,
  honest sizes above 64 are rounded down to a grid of 16 sizes per doubling (at most 4.4% fewer
  users) before the evaluation. This is conservative: a batch with one more honest user is a
  post-processing of the smaller batch (add an independent report, shuffle), so the central
  epsilon never grows with the honest size.
* no delta anywhere: the local budget with ``delta = 0`` (pure DP, post-processing);
  ``epsilon_reason`` says that a delta would give the amplified epsilon.

Dropped batches (thresholding) release nothing: their epsilon is null and ``epsilon_reason`` says
so. With per-client budgets the bounds are evaluated as if every client had the largest budget of
the run, and the local budget is that largest budget (assumption: the bound is non-decreasing in
every client's budget).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
import pyarrow as pa

from shufflesim.protocols.bounds import catalogue
from shufflesim.protocols.bounds.result import BoundKind, BoundStatus
from shufflesim.protocols.errors import ParameterError
from shufflesim.simulator.batch.run import sorted_values
from shufflesim.simulator.batch.targets import DataStats, Target, target_for
from shufflesim.simulator.errors import ScenarioError
from shufflesim.simulator.pipeline.analyzer import BATCHES_SCHEMA, BatchRow
from shufflesim.simulator.pipeline.clients import messages_per_client
from shufflesim.simulator.pipeline.config import SECTION, PipelineConfig
from shufflesim.simulator.pipeline.lifetime import TABLE as USERS_TABLE
from shufflesim.simulator.pipeline.lifetime import (
    USERS_SCHEMA,
    grid_sizes,
    lifetime_columns,
    users_table,
)
from shufflesim.simulator.pipeline.run import run_pipeline
from shufflesim.simulator.pipeline.section import PipelineSection
from shufflesim.simulator.population.base import CATEGORICAL
from shufflesim.simulator.results.records import Record
from shufflesim.simulator.results.tables import register_table_schema
from shufflesim.simulator.scenario.model import SweepPoint

TABLE = "batches"
PATH_LABEL = "pipeline"
#: Most repetitions in one unit of work.
MAX_UNIT_REPETITIONS = 64

@dataclass(frozen=True)
class _RepetitionColumns(Record):
    point: Annotated[int, pa.int32()]
    overrides: str
    repetition: Annotated[int, pa.int32()]


@dataclass(frozen=True)
class _EpsilonColumns(Record):
    epsilon_source: str | None
    bound: str | None
    delta: float | None
    epsilon_reason: str


@dataclass(frozen=True)
class BatchesRow(_EpsilonColumns, BatchRow, _RepetitionColumns):
    """batches.parquet: one row per released or dropped batch of every repetition of every
    point (columns in order: the repetition's, the analyzer's BatchRow, the epsilon's)."""


BATCHES_TABLE_SCHEMA = BatchesRow.schema()
register_table_schema(TABLE, BATCHES_TABLE_SCHEMA)
register_table_schema(USERS_TABLE, USERS_SCHEMA)


def has_pipeline(point: SweepPoint) -> bool:
    """Whether this sweep point runs through the pipeline (its scenario has ``[pipeline]``)."""
    return SECTION in point.settings.sections


@dataclass(frozen=True)
class PipelineSetup:
    """Everything a unit of pipeline work needs for one sweep point."""

    point: int
    overrides: str
    n: int
    data: Any
    budget: Any
    randomizer: Any
    estimator: Any
    target: Target
    config: PipelineConfig
    bound: str | None
    delta: float | None
    unit_repetitions: int
    path_label: str = PATH_LABEL
    #: where ``delta`` comes from: "pipeline.delta", "bounds.delta" or "" (no delta: pure DP)
    delta_source: str = "pipeline.delta"

    @classmethod
    def from_point(cls, point: SweepPoint) -> PipelineSetup:
        settings = point.settings
        section: PipelineSection = settings.sections[SECTION]
        population = settings.population
        if settings.batch.chunk_repetitions is not None:
            unit = settings.batch.chunk_repetitions
        else:
            unit = MAX_UNIT_REPETITIONS
        delta, delta_source = section.delta, "pipeline.delta"
        bounds_section = settings.sections.get("bounds")
        if delta is None and bounds_section is not None:
            delta, delta_source = float(min(bounds_section.delta)), "bounds.delta"
        elif delta is None:
            delta_source = ""
        setup = cls(
            point=point.index, overrides=point.overrides_json(), n=population.n,
            data=population.data, budget=population.budget, randomizer=settings.randomizer,
            estimator=settings.estimator, target=target_for(settings.estimator_name),
            config=section.config, bound=section.bound, delta=delta,
            unit_repetitions=unit, delta_source=delta_source,
        )
        if setup.bound is not None:
            setup._check_bound_applies()
        return setup

    def _check_bound_applies(self) -> None:
        spec = catalogue.get_bound(self.bound)
        if not spec.applies_to(self.randomizer):
            raise ScenarioError(
                f"{SECTION}.bound", self.bound,
                f"does not apply to randomizer {self.randomizer.name}",
            )

    def run_unit(
        self, repetitions: int, rng: np.random.Generator, first_repetition: int = 0
    ) -> tuple[dict[tuple[str, str], np.ndarray], dict[str, pa.Table]]:
        """Run ``repetitions`` repetitions: (utility metrics as on the batch path,
        {"batches": rows})."""
        values, stats = self._sample_data(repetitions, rng)
        budgets = None
        if not self.budget.is_constant:
            budgets = self.budget.sample_budgets(values.shape, rng)
        epsilon_functions: dict[float, Callable] = {}
        estimates, tables, users = [], [], []
        lifetime = self.accounts_users
        for i, child in enumerate(rng.spawn(repetitions)):  # one SimPy run per repetition
            eps = None if budgets is None else budgets[i]
            local = self.randomizer.epsilon0 if eps is None else float(eps.max())
            if local not in epsilon_functions:
                epsilon_functions[local] = self._batch_epsilon(local)
            result = run_pipeline(
                self.randomizer, values[i], self.config, child, epsilons=eps,
                estimator=self.estimator, batch_epsilon=epsilon_functions[local].value,
                track_clients=lifetime,
            )
            estimates.append(result.estimate)
            tables.append(
                self._rows(result.batches, first_repetition + i, epsilon_functions[local])
            )
            if lifetime:
                columns = lifetime_columns(
                    result.member_sizes, result.colluding, epsilon_functions[local].randomizer,
                    epsilon_functions[local].local, self.delta,
                    multi_message=messages_per_client(self.randomizer) > 1)
                users.append(users_table(self.point, self.overrides, first_repetition + i,
                                         columns))
        metrics = self._metrics(estimates, stats)
        out = {TABLE: pa.concat_tables(tables)}
        if lifetime:
            out[USERS_TABLE] = pa.concat_tables(users)
        return metrics, out

    @property
    def accounts_users(self) -> bool:
        """Whether units write users.parquet rows: runs with ``pipeline.rounds`` > 1
        (simulator/pipeline/lifetime.py)."""
        return self.config.rounds > 1

    # -- pieces ---------------------------------------------------------------------------
    def _sample_data(self, repetitions: int, rng) -> tuple[np.ndarray, DataStats]:
        n = self.n
        domain = getattr(self.randomizer.input_domain, "size", None)
        if self.data.kind == CATEGORICAL:
            counts = self.data.sample_counts(n, repetitions, rng).astype(np.int64)
            values = sorted_values(counts)
            sums = counts @ np.arange(counts.shape[1], dtype=np.int64)
            if domain is None:
                values = values.astype(np.float64)
                return values, DataStats(counts=counts, sums=sums)
            padded = np.pad(counts, ((0, 0), (0, domain - counts.shape[1])))
            return values, DataStats(counts=padded, sums=sums)
        values = self.data.sample((repetitions, n), rng)  # planar points: complex x + iy
        values = np.asarray(values, np.complex128 if np.iscomplexobj(values) else np.float64)
        return values, DataStats(counts=None, sums=values.sum(axis=-1))

    def _batch_epsilon(self, local: float) -> _BatchEpsilon:
        randomizer = self.randomizer
        if self.delta is not None and local != randomizer.epsilon0:
            randomizer = dataclasses.replace(randomizer, epsilon0=local)
        # a multi-message randomizer's epsilon0 is a design target: its LDP level is log p
        level = float(getattr(randomizer, "local_epsilon", local))
        return _BatchEpsilon(self.bound, self.delta, randomizer, level, self.delta_source)

    def _rows(self, batches, repetition: int, epsilon: _BatchEpsilon) -> pa.Table:
        rows = len(batches)
        columns = {
            "point": pa.array(np.full(rows, self.point, dtype=np.int32)),
            "overrides": pa.array([self.overrides] * rows, type=pa.string()),
            "repetition": pa.array(np.full(rows, repetition, dtype=np.int32)),
        }
        for field in BATCHES_SCHEMA:
            column = batches[field.name]
            if field.name == "epsilon":
                columns[field.name] = pa.array(column.astype(object).where(column.notna(), None)
                                               .tolist(), type=pa.float64())
            elif field.name == "reason":
                columns[field.name] = pa.array(column.astype(str).tolist(), type=pa.string())
            else:
                columns[field.name] = pa.array(column.to_numpy(), type=field.type)
        m = messages_per_client(self.randomizer)  # m > 1: eps in users (pipeline.analyzer)
        sizes = batches["honest_size"] if m == 1 else batches["honest_blanket"] // (m - 1)
        pairs = list(zip(batches["dropped"], sizes, strict=True))
        columns["epsilon_source"] = pa.array(
            [None if d else epsilon.source(h) for d, h in pairs], type=pa.string())
        columns["bound"] = pa.array(
            [self.bound if d else epsilon.bound_name(h) for d, h in pairs], type=pa.string())
        columns["delta"] = pa.array([epsilon.delta_column] * rows, type=pa.float64())
        users = "" if m == 1 else " [multi-message: n = {} users = honest blanket messages // {}]"
        columns["epsilon_reason"] = pa.array(
            [DROPPED_REASON if d else epsilon.reason(h) + users.format(h, m - 1)
             for d, h in pairs], type=pa.string())
        return BatchesRow.from_columns(columns)

    def _metrics(self, estimates: list, stats: DataStats) -> dict[tuple[str, str], np.ndarray]:
        repetitions = len(estimates)
        domain = getattr(self.randomizer.input_domain, "size", None)
        shape = self.target.population(self.data, self.n, domain).shape
        estimate = np.stack([
            np.full(shape, np.nan) if e is None  # planar estimates stay complex (x + iy)
            else np.asarray(e, dtype=complex if np.iscomplexobj(e) else float)
            for e in estimates
        ])
        truths = {
            "empirical": self.target.empirical(stats, self.n),
            "population": self.target.population(self.data, self.n, domain),
        }
        out = {}
        for reference, truth in truths.items():
            for metric, values in self.target.metrics(estimate, truth).items():
                out[(metric, reference)] = np.broadcast_to(values, (repetitions,)).astype(float)
        return out


DROPPED_REASON = "batch dropped (below pipeline.min_batch): nothing released"
#: Honest sizes up to this are evaluated exactly by the best-proven default; larger ones are
#: rounded down to a grid of GRID_STEPS sizes per doubling (see the module docstring).
EXACT_UP_TO = 64
GRID_STEPS = 16


def grid_size(honest_size: int) -> int:
    """The largest grid size <= honest_size (the size itself up to EXACT_UP_TO): the per-batch
    case of the users' grid (simulator.pipeline.lifetime.grid_sizes)."""
    return int(grid_sizes(np.array([honest_size]), EXACT_UP_TO, GRID_STEPS)[0])


#: (randomizer repr, delta, size) -> (epsilon or None, bound name or None): best proven bound.
_BEST_CACHE: dict[tuple[str, float, int], tuple[float | None, str | None]] = {}


def best_proven_bound(randomizer, size: int, delta: float) -> tuple[float | None, str | None]:
    """The smallest epsilon of every catalogue upper bound whose evaluation at (size, delta) is
    ``proven`` without caveat, and its name; (None, None) when none gives a finite value."""
    key = (repr(randomizer), float(delta), int(size))
    if key not in _BEST_CACHE:
        best: tuple[float | None, str | None] = (None, None)
        for spec in catalogue.applicable_bounds(randomizer):
            if spec.kind is not BoundKind.UPPER or spec.scope == "personalized" or spec.also:
                continue
            if spec.status is not BoundStatus.PROVEN:
                continue
            try:
                evaluation = catalogue.evaluate(spec.name, randomizer, int(size), float(delta))
            except ParameterError:
                continue
            result = evaluation.result
            if result is None or result.status is not BoundStatus.PROVEN:
                continue
            eps = float(result.epsilon)
            if math.isfinite(eps) and (best[0] is None or eps < best[0]):
                best = (eps, spec.name)
        _BEST_CACHE[key] = best
    return _BEST_CACHE[key]


class _BatchEpsilon:
    """honest size -> per-batch central epsilon, its source, bound and reason (see the module
    docstring), memoized."""

    def __init__(self, bound: str | None, delta: float | None, randomizer, local: float,
                 delta_source: str = "pipeline.delta") -> None:
        self.bound, self.delta, self.randomizer, self.local = bound, delta, randomizer, local
        self.delta_source = delta_source
        self._cache: dict[int, tuple[float, str, str | None, str]] = {}

    @property
    def delta_column(self) -> float:
        """The delta of every value: the central delta, or 0 (pure DP) without one."""
        return 0.0 if self.delta is None else float(self.delta)

    def _evaluate(self, honest_size: int) -> tuple[float, str, str | None, str]:
        """(epsilon, source, bound name, reason)."""
        if honest_size in self._cache:
            return self._cache[honest_size]
        local = f"the local budget eps0 = {self.local:g}"
        if self.delta is None:
            entry = (self.local, "local", None,
                     f"no central delta (set pipeline.delta, or a [bounds] section): {local}, "
                     "pure DP (delta = 0) by post-processing")
        elif self.bound is not None:
            entry = (self.local, "local", self.bound,
                     f"pipeline.bound gives no value below {local} at this honest size")
            if honest_size >= 2:
                try:  # an evaluation without result: outside the bound's regime
                    result = catalogue.evaluate(self.bound, self.randomizer, honest_size,
                                                self.delta).result
                except ParameterError:
                    result = None
                eps = None if result is None else result.epsilon
                if eps is not None and math.isfinite(eps) and eps < self.local:
                    entry = (float(eps), "bound", self.bound, "")
        else:
            where = f"delta from {self.delta_source}"
            entry = (self.local, "local", None,
                     f"pipeline.bound not set ({where}); no proven upper bound is below {local} "
                     "at this honest size")
            if honest_size >= 2:
                size = grid_size(honest_size)
                eps, name = best_proven_bound(self.randomizer, size, self.delta)
                if eps is not None and eps < self.local:
                    rounded = f", evaluated at {size} users" if size != honest_size else ""
                    entry = (eps, "bound", name,
                             f"pipeline.bound not set ({where}): the best proven upper bound"
                             f"{rounded}")
        self._cache[honest_size] = entry
        return entry

    def value(self, honest_size: int) -> float:
        return self._evaluate(honest_size)[0]

    def source(self, honest_size: int) -> str:
        return self._evaluate(honest_size)[1]

    def bound_name(self, honest_size: int) -> str | None:
        return self._evaluate(honest_size)[2]

    def reason(self, honest_size: int) -> str:
        return self._evaluate(honest_size)[3]
