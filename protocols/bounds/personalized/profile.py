"""Budget multisets (:class:`BudgetProfile`) and the laws of counts of users that drew from the
common blanket (:class:`CountLaw`: binomial and Poisson-binomial laws with bounded window tails
and an entry-wise relative error bound), for the personalized bounds of
protocols.bounds.personalized.bounds (whose module docstring derives them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.bounds.engine.common import REL_SPECIAL, U
from shufflesim.protocols.distributions import binom
from shufflesim.protocols.errors import ParameterError, require

#: Largest number of users with distinct budgets for the exact Poisson-binomial law.
MAX_DISTINCT_USERS = 40_000
#: Mass left outside the windows of Poisson-binomial and binomial laws (bounded, not dropped).
TAIL_MASS = 1e-40
#: Relative error allowed for log-space terms (lgamma / logsumexp over ~1e5 terms).
REL_LOG = 1e-9
# ----------------------------------------------------------------------------------------------
# Budget multisets
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BudgetProfile:
    """A multiset of n local budgets: distinct (epsilon, local delta) pairs and their counts.

    ``epsilons`` and ``deltas`` are aligned 1-D arrays sorted by (epsilon, delta); ``counts``
    are positive integers. Build it with :meth:`from_budgets` (one entry per user) or
    :meth:`from_groups`.
    """

    epsilons: np.ndarray
    counts: np.ndarray
    deltas: np.ndarray

    def __post_init__(self) -> None:
        eps = np.asarray(self.epsilons, dtype=float).reshape(-1)
        counts = np.asarray(self.counts).reshape(-1)
        deltas = np.asarray(self.deltas, dtype=float).reshape(-1)
        require(eps.size >= 1 and eps.shape == counts.shape == deltas.shape, "budgets",
                (eps.size, counts.size, deltas.size),
                "need aligned non-empty arrays of budgets, counts and local deltas")
        bad = ~(np.isfinite(eps) & (eps > 0))
        if bad.any():
            raise ParameterError("epsilons", float(eps[bad][0]), "must be finite numbers > 0")
        if not np.issubdtype(counts.dtype, np.integer) or (counts < 1).any():
            raise ParameterError("counts", counts.tolist()[:5], "must be integers >= 1")
        bad = ~((deltas >= 0) & (deltas < 1))
        if bad.any():
            raise ParameterError("deltas", float(deltas[bad][0]), "must lie in [0, 1)")
        object.__setattr__(self, "epsilons", eps)
        object.__setattr__(self, "counts", counts.astype(np.int64))
        object.__setattr__(self, "deltas", deltas)

    @classmethod
    def from_budgets(cls, epsilons, deltas=None) -> BudgetProfile:
        """The profile of one budget (and local delta, default 0) per user."""
        eps = np.asarray(epsilons, dtype=float).reshape(-1)
        require(eps.size >= 1, "epsilons", eps.size, "needs at least one user")
        dl = np.zeros_like(eps) if deltas is None else np.broadcast_to(
            np.asarray(deltas, dtype=float).reshape(-1), eps.shape)
        pairs, counts = np.unique(np.stack([eps, dl], axis=1), axis=0, return_counts=True)
        return cls(pairs[:, 0], counts, pairs[:, 1])

    @classmethod
    def from_groups(cls, epsilons, counts, deltas=None) -> BudgetProfile:
        """The profile of groups of ``counts`` users with budgets ``epsilons`` (zero counts are
        dropped; equal budgets are merged)."""
        eps = np.asarray(epsilons, dtype=float).reshape(-1)
        counts = np.asarray(counts).reshape(-1)
        require(eps.shape == counts.shape, "counts", counts.tolist(), "need one count per budget")
        if not np.issubdtype(counts.dtype, np.integer) or (counts < 0).any():
            raise ParameterError("counts", counts.tolist()[:5], "must be integers >= 0")
        dl = np.zeros_like(eps) if deltas is None else np.broadcast_to(
            np.asarray(deltas, dtype=float).reshape(-1), eps.shape)
        keep = counts > 0
        require(keep.any(), "counts", counts.tolist(), "need at least one user")
        pairs, inverse = np.unique(np.stack([eps[keep], dl[keep]], axis=1), axis=0,
                                   return_inverse=True)
        merged = np.bincount(inverse.reshape(-1), weights=counts[keep], minlength=len(pairs))
        return cls(pairs[:, 0], merged.astype(np.int64), pairs[:, 1])

    @classmethod
    def constant(cls, epsilon: float, n: int) -> BudgetProfile:
        return cls.from_groups([epsilon], [n])

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @property
    def is_constant(self) -> bool:
        return np.unique(self.epsilons).size == 1

    @property
    def budget_values(self) -> np.ndarray:
        """The distinct budgets, ascending."""
        return np.unique(self.epsilons)

    def budget_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """(distinct budgets ascending, number of users with each)."""
        values, inverse = np.unique(self.epsilons, return_inverse=True)
        return values, np.bincount(inverse.reshape(-1), weights=self.counts,
                                   minlength=values.size).astype(np.int64)

    def expanded(self) -> tuple[np.ndarray, np.ndarray]:
        """(budgets, local deltas), one entry per user, in profile order."""
        return np.repeat(self.epsilons, self.counts), np.repeat(self.deltas, self.counts)

    def without_one(self, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
        """(distinct budgets, counts) of the profile with one user of budget ``epsilon``
        removed (the target's "others")."""
        values, counts = self.budget_counts()
        at = np.flatnonzero(values == epsilon)
        require(at.size == 1, "epsilon", epsilon, "is not a budget of the profile")
        counts = counts.copy()
        counts[at[0]] -= 1
        keep = counts > 0
        return values[keep], counts[keep]


# ----------------------------------------------------------------------------------------------
# Poisson-binomial laws (sums of independent Bernoullis), with error bounds
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CountLaw:
    """pmf of a count on [offset, offset + len(pmf)): each entry within relative ``rel_err`` of
    the truth, and ``dropped`` (absolute) mass left outside the window."""

    pmf: np.ndarray
    offset: int
    rel_err: float
    dropped: float

    @property
    def support(self) -> np.ndarray:
        return self.offset + np.arange(self.pmf.size)


def _binomial_window(n: int, p: float, pc: float | None = None) -> CountLaw:
    """Bin(n, p) on a window holding all but TAIL_MASS on each side (tails from scipy).

    ``pc`` is 1 - p computed directly (default: the float 1 - p). For p > 1/2 the law is
    n - Bin(n, pc): a p near 1 (a blanket mass gamma at tiny eps) carries its information in
    the complement, which the float p has lost (1 - gamma ~ eps / k)."""
    if pc is None:
        pc = 1.0 - p
    if p > 0.5 and 0.0 < pc < p:
        law = _binomial_window(n, pc, p)
        return CountLaw(law.pmf[::-1].copy(), n - (law.offset + law.pmf.size - 1),
                        law.rel_err, law.dropped)
    if p <= 0.0 or n == 0:
        return CountLaw(np.ones(1), 0, 0.0, 0.0)
    if pc <= 0.0:
        return CountLaw(np.ones(1), n, 0.0, 0.0)
    sd = math.sqrt(n * p * pc)
    width = 40.0 * sd + 60.0
    lo = max(0, int(math.floor(n * p - width)))
    hi = min(n, int(math.ceil(n * p + width)))
    while lo > 0 and binom.cdf(lo - 1, n, p) > TAIL_MASS:
        lo = max(0, lo - int(width))
    while hi < n and binom.sf(hi, n, p) > TAIL_MASS:
        hi = min(n, hi + int(width))
    dropped = ((binom.cdf(lo - 1, n, p) if lo > 0 else 0.0)
               + (binom.sf(hi, n, p) if hi < n else 0.0))
    pmf = binom.pmf(np.arange(lo, hi + 1), n, p)
    return CountLaw(pmf, lo, REL_SPECIAL, float(dropped) * (1 + REL_SPECIAL))


def _trim(law: CountLaw) -> CountLaw:
    """Drop outer entries holding at most TAIL_MASS (relative to 1) on each side."""
    pmf = law.pmf
    if pmf.size <= 2:
        return law
    head = np.cumsum(pmf)
    tail = np.cumsum(pmf[::-1])
    lo = int(np.searchsorted(head, TAIL_MASS, side="right"))
    cut = int(np.searchsorted(tail, TAIL_MASS, side="right"))
    hi = pmf.size - cut
    if lo >= hi:
        return law
    dropped = (head[lo - 1] if lo > 0 else 0.0) + (tail[cut - 1] if cut > 0 else 0.0)
    return CountLaw(pmf[lo:hi], law.offset + lo, law.rel_err,
                    law.dropped + float(dropped) * (1 + law.rel_err))


def _convolve(a: CountLaw, b: CountLaw) -> CountLaw:
    """Law of the sum of independent counts (positive terms: relative error adds up)."""
    pmf = np.convolve(a.pmf, b.pmf)
    rel = a.rel_err + b.rel_err + 2 * U * (min(a.pmf.size, b.pmf.size) + 1)
    dropped = a.dropped + b.dropped  # mass of a pair with either part outside its window
    return _trim(CountLaw(pmf, a.offset + b.offset, rel, dropped))


def _bernoulli_sum(p: np.ndarray, pc: np.ndarray | None = None) -> CountLaw:
    """Law of a sum of independent Bernoulli(p_i): pairwise products of the generating
    polynomials, vectorized over pairs at each level of a binary tree (a loop over the degree)."""
    polys = np.stack([1.0 - p if pc is None else pc, p], axis=1)
    levels = 0
    while polys.shape[0] > 1:
        if polys.shape[0] % 2:
            pad = np.zeros((1, polys.shape[1]))
            pad[0, 0] = 1.0
            polys = np.vstack([polys, pad])
        a, b = polys[0::2], polys[1::2]
        width = polys.shape[1]
        out = np.zeros((a.shape[0], 2 * width - 1))
        for j in range(width):  # a loop over the polynomial degree, vectorized over pairs
            out[:, j:j + width] += a[:, j:j + 1] * b
        polys = out
        levels += 1
    rel = 4 * U * (polys.shape[1] + levels + 1)
    return _trim(CountLaw(polys[0], 0, rel, 0.0))


def poisson_binomial(probabilities, counts, complements=None) -> CountLaw:
    """Law of sum_g Bin(counts_g, probabilities_g) (independent), with its error bounds.

    ``complements`` (optional) are the 1 - probabilities computed without cancellation; pass
    them when a probability may be close to 1 (the entry-wise relative error bound assumes
    both are accurate to a few ulps)."""
    p = np.asarray(probabilities, dtype=float).reshape(-1)
    c = np.asarray(counts, dtype=np.int64).reshape(-1)
    pc = 1.0 - p if complements is None else np.asarray(complements, dtype=float).reshape(-1)
    require(p.shape == c.shape == pc.shape, "counts", c.tolist()[:5],
            "need one count (and complement) per probability")
    keep = c > 0
    p, c, pc = p[keep], c[keep], pc[keep]
    singles = p[c == 1]
    require(singles.size <= MAX_DISTINCT_USERS, "budgets", singles.size,
            f"at most {MAX_DISTINCT_USERS} users with distinct budgets (group the budgets)")
    many = c > 1
    parts = [_binomial_window(int(ci), float(pi), float(qi))
             for pi, qi, ci in zip(p[many], pc[many], c[many], strict=True)]
    if singles.size:
        parts.append(_bernoulli_sum(singles, pc[c == 1]))
    law = CountLaw(np.ones(1), 0, 0.0, 0.0)
    for part in sorted(parts, key=lambda x: x.pmf.size):  # a loop over budget groups
        law = _convolve(law, part)
    return law
