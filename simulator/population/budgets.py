"""Budget distributions for personalized local budgets (003, Chen, Cao and Ge, GSPA).

Each distribution is a frozen dataclass registered with the budget registry of
:mod:`simulator.population.base` (the ``distribution`` key of a scenario's ``population.budget``
table). Budgets are drawn independently of the data (the users' values), which is the
assumption under which 003's estimators and the weighted estimators of
:mod:`shufflesim.protocols.estimators.personalized` are unbiased.

Distributions (``distribution = ...``):

* ``uniform``: eps_i ~ U(low, high) i.i.d. (003 Table 2, "Unif 1" and "Unif 2").
* ``groups``: user groups with given ``fractions`` and ``epsilons`` (003 Table 2 "Mixed
  constant"; 003 Sec. "Mean estimation", conservative / moderate / liberal users). With
  ``exact_counts = true`` (default) every repetition has exactly the group sizes of the
  largest-remainder rounding of n * fractions, assigned to uniformly random users; with false,
  each user's group is an i.i.d. draw (multinomial group sizes).
* ``three_groups``: 003's three-group design with named, sweepable parameters
  (conservative / moderate / liberal fractions 0.54 / 0.37 / 0.09, budgets 0.1 / 0.5 / 1.0);
  the moderate fraction is 1 - conservative - liberal.
* ``clipped_normal``: eps_i = min(max(Z, low), high), Z ~ N(mean, std^2), low > 0.
* ``file``: budgets from a column of a CSV or Parquet file (i.i.d. draws from the column, or
  without replacement), optionally with a column of per-user local deltas.
* ``preset``: 003 Table 2's distributions by name (:data:`PRESETS`).

Local deltas. 003 allows (eps_i, delta_i)-LDP users. The randomizers here are pure eps-LDP, so a
local delta only enters 003's mu-GDP bound (q_i = (1 - delta_i) / (1 + e^eps_i)); it is a
``local_delta`` (one value for everyone), per-group ``local_deltas``, or a ``delta_column``.

Reference budget. The randomizer of a scenario is built with ``reference_epsilon``, the largest
budget a user can get: every user is reference_epsilon-LDP. Per-user budgets go to
``randomize(values, rng, epsilon=budgets)``.

Budget profiles. Bounds are computed for one budget multiset, :func:`budget_profile`:
the exact group sizes for ``groups`` (and ``constant``), and the quantile multiset
F^-1((i - 1/2) / n), i = 1..n, for continuous distributions and files (a deterministic
"typical" draw; the multiset of an actual draw differs by sampling noise).
"""


from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from shufflesim.protocols.bounds.personalized.profile import BudgetProfile
from shufflesim.simulator.errors import ScenarioError
from shufflesim.simulator.lazy import lazy_module
from shufflesim.simulator.population.base import BudgetDistribution, register_budget_distribution
from shufflesim.simulator.population.checks import (
    is_real,
    require_finite,
    require_interval,
    require_positive,
)

#: scipy.stats, imported when a budget is drawn (loading a scenario does not; issue 32)
stats = lazy_module("scipy.stats")

FRACTION_TOLERANCE = 1e-9


def _require_local_delta(name: str, value: object) -> None:
    if not is_real(value) or not (0 <= value < 1):
        raise ScenarioError(name, value, "must be a number in [0, 1)")


def shape_of(n) -> tuple[int, ...]:
    return (int(n),) if isinstance(n, (int, np.integer)) else tuple(int(s) for s in n)


def group_counts(fractions: np.ndarray, n: int) -> np.ndarray:
    """Largest-remainder rounding of n * fractions: integers summing to n, each within 1 of
    n * fraction (ties go to the earlier group)."""
    fractions = np.asarray(fractions, dtype=float)
    exact = fractions * n
    counts = np.floor(exact).astype(np.int64)
    short = int(n - counts.sum())
    if short > 0:
        order = np.argsort(-(exact - counts), kind="stable")
        counts[order[:short]] += 1
    return counts


class Budget(BudgetDistribution):
    """Shared code: non-constant budgets, profiles, local deltas."""

    @property
    def is_constant(self) -> bool:
        return False

    def quantile_budgets(self, n: int) -> np.ndarray:
        """The quantile multiset F^-1((i - 1/2) / n), i = 1..n (sorted)."""
        raise NotImplementedError

    def profile_arrays(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(budgets, local deltas) of the representative multiset of n users (the local delta
        is the distribution's ``local_delta``, 0 when it has none)."""
        eps = self.quantile_budgets(n)
        return eps, np.full(eps.shape, float(getattr(self, "local_delta", 0.0)))


def _require_range(member) -> None:
    """A bounded member's budgets [low, high] (0 < low < high) and its ``local_delta``."""
    _require_budget_interval(member.low, member.high)
    _require_local_delta("local_delta", member.local_delta)


#: ``reference_epsilon`` of a member whose budgets are bounded by ``high``.
_RANGE_TOP = property(lambda member: float(member.high), doc="The largest budget: ``high``.")


def _require_budget_interval(low: float, high: float) -> None:
    """0 < low < high (the budgets' range)."""
    require_positive("low", low)
    require_positive("high", high)
    require_interval(low, high)

@register_budget_distribution
@dataclass(frozen=True)
class ConstantBudget(BudgetDistribution):
    """Every user randomizes with the same local budget ``epsilon0``."""

    epsilon0: float

    name = "constant"

    def __post_init__(self) -> None:
        require_positive("epsilon0", self.epsilon0)

    @property
    def is_constant(self) -> bool:
        return True

    @property
    def reference_epsilon(self) -> float:
        return float(self.epsilon0)

    def sample_budgets(self, n, rng):
        return np.full(n, float(self.epsilon0))



# -- uniform -----------------------------------------------------------------------------------
@register_budget_distribution
@dataclass(frozen=True)
class UniformBudget(Budget):
    """eps_i ~ U(low, high), i.i.d. (003 Table 2: Unif 1 = U(0.01, 1), Unif 2 = U(0.01, 2))."""

    low: float
    high: float
    local_delta: float = 0.0

    name = "uniform"

    def __post_init__(self) -> None:
        _require_range(self)

    reference_epsilon = _RANGE_TOP

    def sample_budgets(self, n, rng):
        return rng.uniform(float(self.low), float(self.high), size=shape_of(n))

    def quantile_budgets(self, n):
        u = (np.arange(n) + 0.5) / n
        return float(self.low) + (float(self.high) - float(self.low)) * u


# -- groups ------------------------------------------------------------------------------------
@register_budget_distribution
@dataclass(frozen=True)
class GroupBudget(Budget):
    """Groups of users with budgets ``epsilons`` in proportions ``fractions`` (module doc)."""

    fractions: tuple[float, ...]
    epsilons: tuple[float, ...]
    exact_counts: bool = True
    local_deltas: tuple[float, ...] | None = None

    name = "groups"

    def __post_init__(self) -> None:
        if not isinstance(self.fractions, tuple) or len(self.fractions) == 0:
            raise ScenarioError("fractions", self.fractions, "must be a non-empty array")
        if not isinstance(self.epsilons, tuple) or len(self.epsilons) != len(self.fractions):
            raise ScenarioError("epsilons", self.epsilons,
                                f"must be an array of {len(self.fractions)} budgets "
                                "(one per fraction)")
        for i, f in enumerate(self.fractions):
            if not is_real(f) or not (0 <= f <= 1):
                raise ScenarioError(f"fractions[{i}]", f, "must be a number in [0, 1]")
        total = math.fsum(float(f) for f in self.fractions)
        if abs(total - 1.0) > FRACTION_TOLERANCE:
            raise ScenarioError("fractions", self.fractions,
                                f"must sum to 1 (they sum to {total!r})")
        for i, e in enumerate(self.epsilons):
            require_positive(f"epsilons[{i}]", e)
        if not isinstance(self.exact_counts, bool):
            raise ScenarioError("exact_counts", self.exact_counts, "must be true or false")
        if self.local_deltas is not None:
            if len(self.local_deltas) != len(self.fractions):
                raise ScenarioError("local_deltas", self.local_deltas,
                                    f"must have {len(self.fractions)} entries (one per group)")
            for i, d in enumerate(self.local_deltas):
                _require_local_delta(f"local_deltas[{i}]", d)

    @property
    def fraction_array(self) -> np.ndarray:
        return np.asarray(self.fractions, dtype=float)

    @property
    def epsilon_array(self) -> np.ndarray:
        return np.asarray(self.epsilons, dtype=float)

    @property
    def reference_epsilon(self) -> float:
        present = self.fraction_array > 0
        return float(self.epsilon_array[present].max())

    def counts(self, n: int) -> np.ndarray:
        """Group sizes of n users (largest-remainder rounding of n * fractions)."""
        return group_counts(self.fraction_array, n)

    def sample_budgets(self, n, rng):
        shape = shape_of(n)
        eps = self.epsilon_array
        if not self.exact_counts:
            groups = rng.choice(eps.size, size=shape, p=self.fraction_array)
            return eps[groups]
        users = shape[-1]
        multiset = np.repeat(eps, self.counts(users))
        rows = np.broadcast_to(multiset, shape)
        # An independent uniformly random assignment of the fixed multiset in every row.
        return rng.permuted(rows, axis=-1) if users > 1 else np.array(rows, dtype=float)

    def quantile_budgets(self, n):
        return np.repeat(self.epsilon_array, self.counts(n))

    def profile_arrays(self, n):
        """The exact group sizes (largest-remainder rounding), with each group's local delta."""
        counts = self.counts(n)
        deltas = (np.zeros(counts.size) if self.local_deltas is None
                  else np.asarray(self.local_deltas, dtype=float))
        return np.repeat(self.epsilon_array, counts), np.repeat(deltas, counts)


@register_budget_distribution
@dataclass(frozen=True)
class ThreeGroupBudget(Budget):
    """003's conservative / moderate / liberal users (003 Sec. "Mean estimation", after
    Acquisti and Grossklags 2005): fractions f_c, 1 - f_c - f_l, f_l with budgets eps_C, eps_M,
    eps_L (defaults 0.54 / 0.37 / 0.09 and 0.1 / 0.5 / 1.0). 003 sweeps f_c from 0.01 to 0.5 with
    f_l = 0.09 fixed, and eps_C with the others fixed."""

    conservative_fraction: float = 0.54
    liberal_fraction: float = 0.09
    conservative_epsilon: float = 0.1
    moderate_epsilon: float = 0.5
    liberal_epsilon: float = 1.0
    exact_counts: bool = True
    _groups: GroupBudget = field(default=None, init=False, repr=False, compare=False)

    name = "three_groups"

    def __post_init__(self) -> None:
        for key in ("conservative_fraction", "liberal_fraction"):
            value = getattr(self, key)
            if not is_real(value) or not (0 <= value <= 1):
                raise ScenarioError(key, value, "must be a number in [0, 1]")
        moderate = 1.0 - float(self.conservative_fraction) - float(self.liberal_fraction)
        if moderate < -FRACTION_TOLERANCE:
            raise ScenarioError(
                "conservative_fraction", self.conservative_fraction,
                f"leaves a negative moderate fraction with liberal_fraction = "
                f"{self.liberal_fraction} (need conservative + liberal <= 1)")
        for key in ("conservative_epsilon", "moderate_epsilon", "liberal_epsilon"):
            require_positive(key, getattr(self, key))
        groups = GroupBudget(
            fractions=(float(self.conservative_fraction), max(moderate, 0.0),
                       float(self.liberal_fraction)),
            epsilons=(float(self.conservative_epsilon), float(self.moderate_epsilon),
                      float(self.liberal_epsilon)),
            exact_counts=self.exact_counts,
        )
        object.__setattr__(self, "_groups", groups)

    @property
    def groups(self) -> GroupBudget:
        return self._groups

    @property
    def reference_epsilon(self) -> float:
        return self._groups.reference_epsilon

    def sample_budgets(self, n, rng):
        return self._groups.sample_budgets(n, rng)

    def quantile_budgets(self, n):
        return self._groups.quantile_budgets(n)

    def profile_arrays(self, n):
        return self._groups.profile_arrays(n)


# -- clipped normal ----------------------------------------------------------------------------
@register_budget_distribution
@dataclass(frozen=True)
class ClippedNormalBudget(Budget):
    """eps_i = min(max(Z, low), high) with Z ~ N(mean, std^2), i.i.d.; 0 < low < high."""

    mean: float
    std: float
    low: float
    high: float
    local_delta: float = 0.0

    name = "clipped_normal"

    def __post_init__(self) -> None:
        require_finite("mean", self.mean)
        require_positive("std", self.std)
        _require_range(self)

    reference_epsilon = _RANGE_TOP

    def sample_budgets(self, n, rng):
        z = rng.normal(float(self.mean), float(self.std), size=shape_of(n))
        return np.clip(z, float(self.low), float(self.high))

    def quantile_budgets(self, n):
        u = (np.arange(n) + 0.5) / n
        z = stats.norm.ppf(u, loc=float(self.mean), scale=float(self.std))
        return np.clip(z, float(self.low), float(self.high))



# -- presets -----------------------------------------------------------------------------------
#: 003 Table 2 (and the three-group default of 003's experiments) as named presets.
PRESETS: dict[str, BudgetDistribution] = {
    "gspa-unif1": UniformBudget(low=0.01, high=1.0),
    "gspa-unif2": UniformBudget(low=0.01, high=2.0),
    # 003 Sec. "Utility of GSPA" (Fig. 4): "Unif 3 ... U(0.5, 1)".
    "gspa-unif3": UniformBudget(low=0.5, high=1.0),
    "gspa-constant": ConstantBudget(epsilon0=0.5),
    "gspa-mixed": GroupBudget(fractions=(0.5, 0.5), epsilons=(0.5, 0.01)),
    "gspa-three-groups": ThreeGroupBudget(),
}


@register_budget_distribution
@dataclass(frozen=True)
class PresetBudget(BudgetDistribution):
    """One of :data:`PRESETS` by name (``preset = "gspa-unif1"`` ...)."""

    preset: str
    _inner: BudgetDistribution = field(default=None, init=False, repr=False, compare=False)

    name = "preset"

    def __post_init__(self) -> None:
        if self.preset not in PRESETS:
            raise ScenarioError("preset", self.preset,
                                f"unknown budget preset; choose one of {sorted(PRESETS)}")
        object.__setattr__(self, "_inner", PRESETS[self.preset])

    @property
    def inner(self) -> BudgetDistribution:
        return self._inner

    @property
    def is_constant(self) -> bool:
        return self._inner.is_constant

    @property
    def reference_epsilon(self) -> float:
        return self._inner.reference_epsilon

    def sample_budgets(self, n, rng):
        return self._inner.sample_budgets(n, rng)


# -- profiles ----------------------------------------------------------------------------------
def budget_arrays(budget: BudgetDistribution, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(budgets, local deltas) of the representative multiset of n users (module docstring)."""
    if isinstance(budget, PresetBudget):
        budget = budget.inner
    if isinstance(budget, ConstantBudget):
        return np.full(n, float(budget.epsilon0)), np.zeros(n)
    if isinstance(budget, Budget):
        return budget.profile_arrays(n)
    raise ScenarioError("population.budget.distribution", getattr(budget, "name", budget),
                        "has no representative budget multiset for the bounds")


def budget_profile(budget: BudgetDistribution, n: int):
    """The :class:`protocols.bounds.personalized.bounds.BudgetProfile` of :func:`budget_arrays`."""
    eps, deltas = budget_arrays(budget, n)
    return BudgetProfile.from_budgets(eps, deltas)

