"""The vectorized batch path: repetitions of data -> randomize -> shuffle -> aggregate ->
estimate, and their error metrics.

One *unit* of work runs a block of repetitions of one setting with one random generator; every
step is vectorized over (repetitions, users). Two paths produce the aggregate:

* ``reports``: per-user reports. Categorical data are drawn as the histogram of n i.i.d. draws
  (Multinomial(n, p)) laid out in sorted order (``np.repeat``); numeric data as an (r, n) array.
  Every user is randomized independently; with ``shuffle = "perform"`` the reports of each
  repetition are then permuted uniformly (the shuffler), so the report *sequence* has exactly
  the shuffle model's distribution although the data were laid out sorted. The aggregate reduces
  the user axis.
* ``aggregate``: the sufficient statistic sampled directly from the data histogram with
  ``randomizer.sample_aggregate`` (e.g. per-bit counts of unary encodings are sums of binomials).

Shuffle. Every estimator reads only the aggregate (support counts or sums), which is invariant
under permutations of the reports, so the permutation does not change any estimate: it is
performed by default (the batch path then realises the shuffle model literally and its cost is
part of the measured throughput) and ``shuffle = "skip"`` omits it. When one repetition's
reports do not fit in the memory budget the users are processed in slices whose aggregates are
added (support counts and sums are additive over users); a permutation of all reports is then
impossible, so this requires ``shuffle = "skip"``. The data of a repetition stay whole, so when
they alone exceed half the budget the setup is refused (simulator.batch.memory says which change
works, e.g. ``path = "aggregate"``); both are checked when the setup is built.

Metrics (one value per repetition) compare the estimate with two references:
``empirical`` (the sampled data's frequencies, mean or sum) and ``population`` (the data
distribution's probabilities, or its mean; for sums, n times the mean).

* frequency: ``l2`` = ||f_hat - f||_2, ``linf`` = max_v |f_hat_v - f_v|,
  ``mse`` = (1/d) sum_v (f_hat_v - f_v)^2, ``mae`` = (1/d) sum_v |f_hat_v - f_v|, over the d
  values of the randomizer's input domain.
* mean and sum: ``error`` = estimate - truth, ``mse`` = error^2, ``mae`` = |error| (the
  frequency metrics' mean over the estimated coordinates, here one).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import pickle
import tracemalloc
from dataclasses import dataclass
from typing import Any

import numpy as np

from shufflesim.protocols.randomizers import Categorical, Randomizer
from shufflesim.simulator.batch.memory import check_batch_setup, check_domain
from shufflesim.simulator.batch.shuffling import shuffle_reports
from shufflesim.simulator.batch.targets import DataStats, Target, target_for
from shufflesim.simulator.batch.threads import child_generators, run_all
from shufflesim.simulator.population.base import CATEGORICAL, BudgetDistribution, DataDistribution
from shufflesim.simulator.scenario.model import BatchPath, Settings, ShuffleMode

#: Most repetitions in one unit of work when the memory budget allows more.
MAX_UNIT_REPETITIONS = 256
REFERENCES = ("empirical", "population")



# ---------------------------------------------------------------------------------------------
# Setup and memory plan
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BatchSetup:
    """Everything a unit of the batch path needs for one setting, with its memory plan."""

    n: int
    data: DataDistribution
    budget: BudgetDistribution
    randomizer: Randomizer
    estimator: Any
    target: Target
    path: BatchPath
    shuffle: ShuffleMode
    memory_bytes: int
    #: Estimated peak working bytes per (repetition, user) on the reports path.
    bytes_per_user: int
    #: Repetitions of one unit of work (one random stream).
    unit_repetitions: int

    @classmethod
    def from_settings(cls, settings: Settings) -> BatchSetup:
        population = settings.population
        memory = settings.batch.memory_mb * 2**20
        setup = cls(
            n=population.n, data=population.data, budget=population.budget,
            randomizer=settings.randomizer, estimator=settings.estimator,
            target=target_for(settings.estimator_name), path=settings.batch.path,
            shuffle=settings.batch.shuffle, memory_bytes=memory, bytes_per_user=0,
            unit_repetitions=1,
        )
        check_domain(setup, settings.batch.memory_mb)  # before the probe allocates it
        per_user = 0 if setup.path is BatchPath.AGGREGATE else measure_bytes_per_user(setup)
        setup = dataclasses.replace(setup, bytes_per_user=per_user)
        per_repetition = setup.bytes_per_repetition
        if settings.batch.chunk_repetitions is not None:
            unit = settings.batch.chunk_repetitions
        else:
            unit = max(1, min(MAX_UNIT_REPETITIONS, memory // per_repetition))
        # A repetition that cannot fit the budget is refused here, with a remedy that works
        # (simulator.batch.memory), instead of failing in numpy.
        check_batch_setup(setup, settings.batch.memory_mb)
        return dataclasses.replace(setup, unit_repetitions=unit)

    @property
    def bytes_per_repetition(self) -> int:
        """Estimated peak working memory of one repetition."""
        if self.path is BatchPath.AGGREGATE:
            return 64 * (self.domain_size or 1) + 64
        return self.n * self.bytes_per_user

    @property
    def domain_size(self) -> int | None:
        return _domain_size(self.randomizer)


def _domain_size(randomizer: Randomizer) -> int | None:
    domain = randomizer.input_domain
    return domain.size if isinstance(domain, Categorical) else None


#: Users of the two memory probes, and the safety factor applied to the measured slope.
PROBE_USERS = (1024, 4096)
PROBE_SAFETY = 1.25


def measure_bytes_per_user(setup: BatchSetup) -> int:
    """Working memory per user of the reports path, measured once per setup.

    The peak memory of one repetition is measured under :mod:`tracemalloc` (numpy reports its
    buffers to it) for 1024 and 4096 users, each after a warm-up run so that lazy imports and
    caches do not count; the slope between the two (bytes per additional user) times
    PROBE_SAFETY is the estimate, which leaves out fixed buffers that do not grow with n. When
    n <= 4096 the peak at n itself, divided by n, is used. The estimate is rounded up to the
    grid 2^(j/4): allocation sizes are a function of the shapes and the rounding absorbs small
    differences, so the memory plan, and with it the random streams, depend only on the
    scenario and the code. tracemalloc also counts other threads' allocations (a Dask client's
    event loop, for one), so the first measurement of a setup is kept for the process's life:
    later runs of the same setup in the process reuse it whatever threads run by then.
    """
    key = hashlib.sha256(pickle.dumps(dataclasses.replace(setup, bytes_per_user=0,
                                                           unit_repetitions=1))).hexdigest()
    if key not in _MEASURED:
        if len(_MEASURED) >= _MEASURED_MAX:
            _MEASURED.clear()
        _MEASURED[key] = _measure(setup)
    return _MEASURED[key]


#: Measured bytes per user by setup (see measure_bytes_per_user).
_MEASURED: dict[str, int] = {}
_MEASURED_MAX = 4096


def _measure(setup: BatchSetup) -> int:
    small, large = PROBE_USERS
    if setup.n <= large:
        per_user = _probe_peak(setup, setup.n) / setup.n
    else:
        per_user = (_probe_peak(setup, large) - _probe_peak(setup, small)) / (large - small)
    per_user = max(PROBE_SAFETY * per_user, 1.0)
    return math.ceil(2 ** (math.ceil(4 * math.log2(per_user)) / 4))


def _probe_peak(setup: BatchSetup, users: int) -> int:
    """Peak bytes allocated by one repetition of ``users`` users (after a warm-up run)."""
    probe = dataclasses.replace(setup, n=users, memory_bytes=2**62, bytes_per_user=1)
    _reports_path(probe, 1, np.random.default_rng(0))  # warm-up: imports, caches
    already = tracemalloc.is_tracing()
    if not already:
        tracemalloc.start()
    try:
        start, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        _reports_path(probe, 1, np.random.default_rng(0))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if not already:
            tracemalloc.stop()
    return max(peak - start, 0)


# ---------------------------------------------------------------------------------------------
# One unit of work
# ---------------------------------------------------------------------------------------------
def run_unit(
    setup: BatchSetup, repetitions: int, rng: np.random.Generator
) -> dict[tuple[str, str], np.ndarray]:
    """Run ``repetitions`` repetitions; returns {(metric, reference): values (repetitions,)}.

    Repetitions are processed in memory-bounded blocks, sequentially from ``rng``; the block
    sizes depend only on the setup, so the result is a function of (setup, repetitions, rng).
    """
    block = max(1, min(repetitions, setup.memory_bytes // setup.bytes_per_repetition))
    parts: list[dict[tuple[str, str], np.ndarray]] = []
    for start in range(0, repetitions, block):  # a loop over memory blocks, not repetitions
        size = min(block, repetitions - start)
        parts.append(_run_block(setup, size, rng))
    return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}


def _run_block(setup: BatchSetup, repetitions: int, rng: np.random.Generator):
    if setup.path is BatchPath.AGGREGATE:
        aggregate, stats = _aggregate_path(setup, repetitions, rng)
    else:
        aggregate, stats = _reports_path(setup, repetitions, rng)
    estimate = setup.estimator.estimate(aggregate, setup.n)
    truths = {
        "empirical": setup.target.empirical(stats, setup.n),
        "population": setup.target.population(setup.data, setup.n, setup.domain_size),
    }
    out = {}
    for reference, truth in truths.items():
        for metric, values in setup.target.metrics(estimate, truth).items():
            out[(metric, reference)] = np.broadcast_to(values, (repetitions,)).astype(float)
    return out


def _padded_counts(setup: BatchSetup, repetitions: int, rng) -> np.ndarray:
    counts = setup.data.sample_counts(setup.n, repetitions, rng).astype(np.int64)
    return np.pad(counts, ((0, 0), (0, setup.domain_size - counts.shape[1])))


def _stats_from_counts(counts: np.ndarray) -> DataStats:
    return DataStats(counts=counts, sums=counts @ np.arange(counts.shape[1], dtype=np.int64))


def _aggregate_path(setup: BatchSetup, repetitions: int, rng):
    counts = _padded_counts(setup, repetitions, rng)
    aggregate = setup.randomizer.sample_aggregate(counts, rng)
    return aggregate, _stats_from_counts(counts)


def _reports_path(setup: BatchSetup, repetitions: int, rng):
    n = setup.n
    if setup.data.kind == CATEGORICAL:
        counts = setup.data.sample_counts(n, repetitions, rng).astype(np.int64)
        values = sorted_values(counts)
        if setup.domain_size is None:  # categories fed to an interval randomizer
            values = values.astype(np.float64)
            stats = _stats_from_counts(counts)
        else:
            stats = _stats_from_counts(
                np.pad(counts, ((0, 0), (0, setup.domain_size - counts.shape[1])))
            )
    else:
        values = setup.data.sample((repetitions, n), rng)  # planar points: complex x + iy
        values = np.asarray(values, np.complex128 if np.iscomplexobj(values) else np.float64)
        stats = DataStats(counts=None, sums=values.sum(axis=-1))
    budgets = None if setup.budget.is_constant else setup.budget.sample_budgets(values.shape, rng)
    per_slice = max(1, setup.memory_bytes // (repetitions * setup.bytes_per_user))
    if per_slice < n:  # the block's data (and budgets) stay in memory beside each slice
        kept = values.nbytes + (0 if budgets is None else budgets.nbytes)
        per_slice = max(1, (setup.memory_bytes - kept) // (repetitions * setup.bytes_per_user))
    aggregate = None
    for start in range(0, n, per_slice):  # user slices only when one repetition is too big
        stop = min(n, start + per_slice)
        eps = None if budgets is None else budgets[:, start:stop]
        reports = randomize_in_pieces(setup, values[:, start:stop], eps, rng)
        if getattr(setup.estimator, "uses_budgets", False):
            # Personalized-budget estimators (protocols.estimators.personalized) reduce the
            # (report, budget) pairs; their statistic is a sum over pairs, invariant under the
            # shuffler's joint permutation of the pairs, so it is taken before the shuffle.
            part = setup.estimator.aggregate(reports, eps)
        if setup.shuffle is ShuffleMode.PERFORM:
            reports = shuffle_reports(reports, rng)
        if not getattr(setup.estimator, "uses_budgets", False):
            part = setup.randomizer.aggregate(reports)
        aggregate = part if aggregate is None else aggregate + part
    return aggregate, stats


#: Working memory of one piece when users are randomized concurrently in threads.
PIECE_BYTES = 32 << 20


def randomize_in_pieces(setup: BatchSetup, values: np.ndarray, epsilon: np.ndarray | None,
                        rng: np.random.Generator) -> np.ndarray:
    """``setup.randomizer.randomize(values, ...)`` over (r, n) values, cut along the users
    into pieces of about ``PIECE_BYTES`` of working memory that run concurrently in threads,
    each with its own generator (``simulator.batch.threads``). Users are randomized independently,
    so the reports have the same distribution as from one call; small inputs are one call."""
    r, n = values.shape[:2]
    width = max(1, PIECE_BYTES // (r * setup.bytes_per_user))
    if n <= width:
        return setup.randomizer.randomize(values, rng, epsilon=epsilon)
    starts = list(range(0, n, width))
    generators = child_generators(rng, len(starts))

    def piece(start: int, generator: np.random.Generator) -> np.ndarray:
        stop = min(n, start + width)
        eps = None if epsilon is None else epsilon[:, start:stop]
        return setup.randomizer.randomize(values[:, start:stop], generator, epsilon=eps)

    first = piece(0, generators[0])
    out = np.empty((r, n) + first.shape[2:], dtype=first.dtype)
    out[:, :width] = first

    def fill(start: int, generator: np.random.Generator) -> None:
        out[:, start:start + width] = piece(start, generator)

    run_all(fill, starts[1:], generators[1:])
    return out


def sorted_values(counts: np.ndarray) -> np.ndarray:
    """The (r, n) data whose rows have the histograms ``counts`` (r, d), in sorted order.

    Users are exchangeable (i.i.d. data, independent randomization), so the layout of the data
    does not change the distribution of the aggregate, and after the shuffle not even that of
    the report sequence. (int64: randomizers mix the values with int64 arrays, and mixed-dtype
    arithmetic is several times slower than int64 throughout.)
    """
    r, d = counts.shape
    n = int(counts[0].sum())
    labels = np.tile(np.arange(d, dtype=np.int64), r)
    return np.repeat(labels, counts.ravel()).reshape(r, n)
