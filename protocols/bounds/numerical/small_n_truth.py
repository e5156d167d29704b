"""The truth at small n: the exact privacy curve of a shuffled single-message randomizer with a
categorical input and a finite output, over *every* neighbouring dataset pair.

The shuffled output is (a post-processing-equivalent of) the histogram of the n reports (000
Thm 12: the histogram is sufficient for the multiset of reports). Outputs whose columns of the
matrix R(x)(y) are proportional over every input x are merged first: given their total count,
the split between them is the same multinomial whatever the inputs, so the merged histogram is
sufficient too (columns equal to 1e-12 relative count as proportional: the randomizer's own
pmf is computed to about that). For a pair (x0, x1) of user 1's values and a multiset of the
others' values, the others' histogram law Z is built by adding one user at a time (sums of
non-negative terms), and

    P_x(h) = sum_y R(x)(y) Z(h - e_y),   D_{e^eps}(P_x0 || P_x1) = sum_h (P_x0 - e^eps P_x1)_+,

both directions. delta(eps) = the maximum over pairs (x0, x1) (just (0, 1) for a randomizer
symmetric under permutations of its inputs) and over every multiset of the others' values; its
eps(delta) is the maximum of the pairs' crossings, each bracketed by a certified bisection
(:class:`~shufflesim.protocols.bounds.numerical.krr_exact.PairCurve`).

Feasible where (number of multisets) x (number of histograms) is small: n up to ~6-8 for
outputs of size 8-16, n up to ~40 for binary outputs (:data:`MAX_WORK`). Multi-message
randomizers are out of scope (their shuffled output is the histogram of the messages, not of
the users' tuples), as are continuous inputs or outputs.

:func:`small_n_truth_epsilon` is what the tightness table calls for "which side is loose".
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable

import numpy as np

from shufflesim.protocols.bounds.engine.common import U
from shufflesim.protocols.bounds.numerical.krr_exact import PairCurve
from shufflesim.protocols.errors import (
    ParameterError,
    require,
    require_int_at_least,
    require_probability_open,
)
from shufflesim.protocols.randomizers.domains import Categorical

__all__ = ["MAX_WORK", "merged_matrix", "small_n_truth_delta", "small_n_truth_epsilon"]

#: largest (multisets of the others) x (histograms of n reports) evaluated
MAX_WORK = 3_000_000
#: relative error of the randomizer's own pmf entries (a generous bound on exp(log_prob))
REL_PMF = 1e-12


def merged_matrix(randomizer) -> np.ndarray:
    """R(x)(y) with proportional output columns merged (module docstring): (inputs, outputs')."""
    require(isinstance(randomizer.input_domain, Categorical), "randomizer", randomizer.name,
            "the small-n truth needs a categorical input")
    require(not getattr(randomizer, "multi_message", False), "randomizer", randomizer.name,
            "the small-n truth covers single-message randomizers")
    return _merge_columns(np.asarray(randomizer.output_pmf(), dtype=float))


def _histograms(total: int, cells: int) -> list[tuple[int, ...]]:
    """Every histogram of ``total`` reports over ``cells`` outputs."""
    out = []
    for bars in itertools.combinations(range(total + cells - 1), cells - 1):
        edges = (-1, *bars, total + cells - 1)
        out.append(tuple(edges[i + 1] - edges[i] - 1 for i in range(cells)))
    return out


class _Laws:
    """The others' histogram laws, one per multiset (sorted tuple of inputs), built by adding
    one user to the law of the multiset's prefix (memoised)."""

    def __init__(self, matrix: np.ndarray) -> None:
        self.matrix = matrix
        self.cells = matrix.shape[1]
        self.memo: dict[tuple[int, ...], dict[tuple[int, ...], float]] = {
            (): {tuple([0] * self.cells): 1.0}}

    def law(self, others: tuple[int, ...]) -> dict[tuple[int, ...], float]:
        if others in self.memo:
            return self.memo[others]
        prev = self.law(others[:-1])
        row = self.matrix[others[-1]]
        new: dict[tuple[int, ...], float] = {}
        for h, pr in prev.items():
            for y in range(self.cells):
                if row[y] == 0.0:
                    continue
                g = list(h)
                g[y] += 1
                key = tuple(g)
                new[key] = new.get(key, 0.0) + pr * row[y]
        self.memo[others] = new
        return new


def _pairs(randomizer, inputs: int) -> list[tuple[int, int]]:
    if getattr(randomizer, "input_symmetry", None) == "permutation":
        return [(0, 1)]
    return list(itertools.combinations(range(inputs), 2))


def _merge_columns(rows: np.ndarray) -> np.ndarray:
    """``rows`` with output columns proportional over these rows merged (module docstring)."""
    totals = rows.sum(axis=0)
    keep = totals > 0
    rows, totals = rows[:, keep], totals[keep]
    keys = np.round(np.log(np.maximum(rows / totals, 1e-300)), 12)
    _, inverse = np.unique(keys, axis=1, return_inverse=True)
    inverse = np.asarray(inverse).ravel()
    merged = np.zeros((rows.shape[0], int(inverse.max()) + 1))
    np.add.at(merged.T, inverse, rows.T)
    return merged


def _partitions(total: int, parts: int, largest: int | None = None):
    """Non-increasing tuples of at most ``parts`` positive integers summing to ``total``."""
    if total == 0:
        yield ()
        return
    if parts == 0:
        return
    for first in range(min(total, largest or total), 0, -1):
        for tail in _partitions(total - first, parts - 1, first):
            yield (first, *tail)


def _symmetric_datasets(n: int, inputs: int):
    """The others' multisets up to relabelling the values other than x0 = 0 and x1 = 1 (enough
    for a randomizer symmetric under permutations of its inputs): n0 zeros, n1 ones and a
    partition of the rest over the values 2, 3, ..."""
    for n0 in range(n):
        for n1 in range(n - n0):
            for part in _partitions(n - 1 - n0 - n1, inputs - 2):
                rest = tuple(2 + i for i, size in enumerate(part) for _ in range(size))
                yield (0,) * n0 + (1,) * n1 + rest


def _symmetric_curves(randomizer, n: int) -> Iterable[PairCurve]:
    """Permutation-symmetric randomizers: pair (0, 1), the datasets of
    :func:`_symmetric_datasets`, and per dataset the output columns merged over the inputs
    present (lossless for that pair: the users present report the merged outputs in the same
    proportions), which keeps k-RR with a large k at a few cells."""
    full = np.asarray(randomizer.output_pmf(), dtype=float)
    inputs = full.shape[0]
    work = 0
    jobs = []
    for others in _symmetric_datasets(n, inputs):
        present = sorted({0, 1, *others})
        rows = _merge_columns(full[present])
        work += math.comb(n + rows.shape[1] - 1, rows.shape[1] - 1)
        if work > MAX_WORK:
            raise ParameterError("n", n, f"the small-n truth of {randomizer.name} would "
                                 f"evaluate more than {MAX_WORK:.0e} histogram terms")
        where = {x: i for i, x in enumerate(present)}
        jobs.append((tuple(where[x] for x in others), rows))
    for others, rows in jobs:
        yield from _dataset_curves(rows, others, 0, 1, n)


def _dataset_curves(matrix: np.ndarray, others: tuple[int, ...], x0: int, x1: int,
                    n: int) -> Iterable[PairCurve]:
    """Both directions' curves of one dataset pair (rows of ``matrix`` indexed by input)."""
    cells = matrix.shape[1]
    z = _Laws(matrix).law(others)
    outputs = _histograms(n, cells)
    index = {h: i for i, h in enumerate(outputs)}
    rel = REL_PMF * (n + 1) + 4 * U * (n + 1) * (cells + 2)
    p0 = np.zeros(len(outputs))
    p1 = np.zeros(len(outputs))
    for h, pr in z.items():
        for y in range(cells):
            g = list(h)
            g[y] += 1
            i = index[tuple(g)]
            p0[i] += pr * matrix[x0, y]
            p1[i] += pr * matrix[x1, y]
    yield PairCurve(p0, p1, rel)
    yield PairCurve(p1, p0, rel)


def _curves(randomizer, n: int) -> Iterable[PairCurve]:
    """Every (pair, multiset of the others, direction)'s certified curve."""
    require_int_at_least("n", n, 2)
    matrix = merged_matrix(randomizer)
    if getattr(randomizer, "input_symmetry", None) == "permutation":
        yield from _symmetric_curves(randomizer, n)
        return
    inputs, cells = matrix.shape
    multisets = math.comb(n - 1 + inputs - 1, inputs - 1)
    histograms = math.comb(n + cells - 1, cells - 1)
    work = multisets * histograms * len(_pairs(randomizer, inputs))
    if work > MAX_WORK:
        raise ParameterError("n", n, f"the small-n truth of {randomizer.name} would evaluate "
                             f"{work:.3g} (multiset, histogram) terms (limit {MAX_WORK:.0e})")
    for x0, x1 in _pairs(randomizer, inputs):
        for others in itertools.combinations_with_replacement(range(inputs), n - 1):
            yield from _dataset_curves(matrix, others, x0, x1, n)


def small_n_truth_delta(randomizer, n: int, epsilon: float) -> tuple[float, float]:
    """(lower, upper) of the shuffled randomizer's delta(eps) over every neighbouring dataset
    pair of n users (module docstring)."""
    require(isinstance(epsilon, (int, float)) and epsilon >= 0, "epsilon", epsilon,
            "must be a number >= 0")
    lower = upper = 0.0
    for curve in _curves(randomizer, n):
        lo, hi = curve.delta(float(epsilon))
        lower, upper = max(lower, lo), max(upper, hi)
    return lower, upper


def small_n_truth_epsilon(randomizer, n: int, delta: float) -> tuple[float, float]:
    """(lower, upper) of the shuffled randomizer's eps(delta) over every neighbouring dataset
    pair of n users: the maximum over the pairs of their certified crossings (eps0 is an upper
    end: the shuffled output of an eps0-LDP randomizer is eps0-DP)."""
    require_probability_open("delta", delta)
    epsilon0 = float(randomizer.epsilon0)
    lower = upper = 0.0
    for curve in _curves(randomizer, n):
        if upper > 0 and curve.delta(upper)[1] <= delta:
            continue                  # its crossing is <= upper: it cannot raise either end
        lo, hi = curve.epsilon(delta, epsilon0)
        lower, upper = max(lower, lo), max(upper, hi)
    return lower, min(upper, epsilon0)
