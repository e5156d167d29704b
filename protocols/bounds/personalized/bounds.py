"""Amplification bounds for users with personalized budgets (heterogeneous users).

User i randomizes with its own budget eps_i. The bounds take a :class:`BudgetProfile` (the
multiset of the n budgets) and hold for every neighbouring pair of datasets differing in any one
user, whatever its budget.

003's mu-GDP bound (:func:`gspa_gdp_personalized`) holds for any (eps_i, delta_i)-LDP users; it is
``approximate`` (a Berry-Esseen term is dropped) and rests on the stronger-clone reduction
(000 Sec. 3.3). The other bounds are derived here for k-ary randomized response (``krr``, and
binary RR ``brr`` = 2-RR), the family for which the blanket is the same for every budget.

Blanket with one common component (derived from 000 Def. 7-8, Thm 4 and Thm 12)
-----------------------------------------------------------------------------
For k-RR with budget eps, R_eps(x) = gamma(eps) U + (1 - gamma(eps)) delta_x with U uniform on
[k] and gamma(eps) = k / (e^eps + k - 1): every budget has the *same* blanket U (000 Table 2 row
k-RR), only its mass gamma differs. Let user 1 (budget eps_t) be the one whose input changes,
x1^0 -> x1^1, and A_b = R_{eps_t}(x1^b). Write every other user as: with probability gamma_i a
sample from U, else a "left-over" sample from delta_{x_i}. The histogram of

    one sample of A_b, and for i >= 2 independently: a sample of U w.p. gamma_i, else a symbol _|_

is a reduction pair (P_0, P_1): the shuffled output is obtained from it by post-processing that
does not depend on b. Replace each _|_ by the left-over output of a user drawn from the set I of
users who chose _|_; given the histogram, P(I = S) is proportional to
prod_{i in S} (1 - gamma_i) prod_{i notin S} gamma_i over the sets of the right size, because the
histogram of the non-_|_ samples depends on S only through |S| (the U samples are i.i.d. whoever
drew them). This is where a *common* component is needed; the stronger clone of 003 Lemma 1
mixes user-specific components (000 Sec. 3.3).

The number M of users i >= 2 that drew from U is visible in the histogram, so
D_{e^eps}(P_0 || P_1) = sum_m P(M = m) f(m + 1), with M ~ Poisson-binomial(gamma_2..gamma_n) and
f(m) = D_{e^eps} of one A_b sample plus m - 1 samples of U, which by 000 Thm 12 (A2 = U) is

    f(m) = (1/m) E[(L_1 + ... + L_m)_+],   L = (A_0(y) - e^eps A_1(y)) / U(y),  y ~ U,

a sum of binomial tails (:func:`f_values`; cross-checked against the hockey-stick engine,
:func:`f_engine`). For equal budgets M is Bin(n-1, gamma) and the identity
C(n-1, m) / (m + 1) = C(n, m + 1) / n turns the sum into 000 Thm 13's (1/n) E[(G_1 + ... +
G_n)_+] (the homogeneous optimal bound). Equivalently (exchangeability inside f),
delta = E[L_0 1{L_0 + sum_{i>=2} B_i L_i > 0}] with B_i ~ Bernoulli(gamma_i): *not* a
normalized hockey-stick of a sum of non-identical GPARVs. The tempting generalization
(1/n) E[(sum_i G_i)_+] with G_i = L_i / gamma_i w.p. gamma_i is not a bound: for 3-RR with the
target at budget 0.2 and three others at 2.0 it gives 0.0311 at eps = 0.05, below the true
0.0346. The brute-force enumeration of shuffled histograms for n <= 6 in the tests is the
arbiter: the bound is never below the true divergence of any dataset, and for k >= 3 it is
attained.

Computation. f is non-increasing in m (adding an independent U sample is post-processing), so
blocks [b_j, b_{j+1}) of M's values bracket the sum: sum_j P_j f(b_{j+1}) <= delta <=
sum_j P_j f(b_j + 1), with a bracket of each f from :func:`f_values`. Blocks are split where the
gap exceeds its share until the bracket is within ``rtol``; the law of M is a product of
binomial / Bernoulli generating polynomials (:func:`poisson_binomial`, positive arithmetic with
an entry-wise relative error bound and bounded window tails).

Target user. The bound is the maximum over the budget values present of the bound with the
target at that budget (the others: everyone else). With more than :data:`MAX_TARGETS` distinct
budgets a single conservative case is used: the target at the largest budget and, as others,
everyone but one user of the smallest budget. It dominates every case because f grows with the
target's budget (k-RR at eps is k-RR at eps' > eps followed by a symmetric channel that maps U to
U, applied to the whole multiset) and the sum shrinks when M grows stochastically (removing a
user with a larger gamma leaves a stochastically smaller M).

Exact pair with heterogeneous budgets (lower bound; generalizes 000 Thm 14)
--------------------------------------------------------------------------
X0 = (x0, x2, ..., x2), X1 = (x1, x2, ..., x2), every other user with its own budget. With
pi = the law of M as above and F(c) = sum_m pi_m m! k^-m / (c - (n - 1) + m)!, the law of the
others' histogram H' is F(H'_x2) / prod_{y != x2} H'_y!, so with H the full histogram and
c2 = H_x2:

    P_b(H) = [F(c2) sum_{y != x2} A_b(y) H_y + A_b(x2) F(c2 - 1)] / prod_{y != x2} H_y!.

Summing over the histograms with a given c2 (weight (k-1)^(n-c2) / (n-c2)! times a multinomial
over the k - 1 other values) gives delta(eps) = sum_c2 w(c2) E[(alpha + linear(X))_+] with
closed forms in binomial tails (:func:`protocols.bounds.engine.common.leaf_positive_part`) for
the three cases x2 = x1, x2 = x0 and x2 outside {x0, x1} (the candidate triples of the
homogeneous bound; k-RR is symmetric, so these cover both directions). Exact for the pair, hence
a lower bound on the mechanism's delta; the tests compare it with brute-force enumeration.

Other bounds here: the homogeneous optimal bound at the largest budget (valid for k-RR by the
same two monotonicity facts), the per-group shuffle (the privacy of tagged reports, which the
weighted estimators of protocols.estimators.personalized need: each report's budget group is
visible, so a user hides only among its own group), and the baseline protocol in which every
user randomizes at the smallest budget (a different protocol: its central eps, not a bound on the
personalized mechanism).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from protocols.bounds.atoms import RatioAtoms
from protocols.bounds.closed_form import gdp
from protocols.bounds.engine import core as engine
from protocols.bounds.engine.common import REL_SPECIAL, Estimate, U, leaf_positive_part
from protocols.bounds.numerical import optimal
from protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from protocols.bounds.spec import BoundSpec, register
from protocols.errors import ParameterError, require, require_probability_open

#: Largest number of distinct budgets for which every budget value is tried as the target's.
MAX_TARGETS = 16
#: Largest number of users with distinct budgets for the exact Poisson-binomial law.
MAX_DISTINCT_USERS = 40_000
#: Mass left outside the windows of Poisson-binomial and binomial laws (bounded, not dropped).
TAIL_MASS = 1e-40
#: Relative error allowed for log-space terms (lgamma / logsumexp over ~1e5 terms).
REL_LOG = 1e-9
RANDOMIZERS = ("brr", "krr")

REFERENCE_BLANKET = "000 Thm 12-13, common-blanket general clone for per-user budgets (derived)"
REFERENCE_EXACT = "000 Thm 14 generalized to per-user budgets (derived)"


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
    while lo > 0 and stats.binom.cdf(lo - 1, n, p) > TAIL_MASS:
        lo = max(0, lo - int(width))
    while hi < n and stats.binom.sf(hi, n, p) > TAIL_MASS:
        hi = min(n, hi + int(width))
    dropped = ((stats.binom.cdf(lo - 1, n, p) if lo > 0 else 0.0)
               + (stats.binom.sf(hi, n, p) if hi < n else 0.0))
    pmf = stats.binom.pmf(np.arange(lo, hi + 1), n, p)
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


# ----------------------------------------------------------------------------------------------
# k-RR family
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _KRRFamily:
    """k-ary RR at any budget: gamma = k / (e^eps + k - 1), p = e^eps / (e^eps + k - 1),
    q = 1 / (e^eps + k - 1) (brr: k = 2; Kairouz et al., 000 App. A and Table 2).

    Every quantity is computed in a form without cancellation (issue 14), in terms of
    s = e^-eps (no overflow up to any finite eps):
    p - q = 1 - gamma = (1 - s) / (1 + (k - 1) s) with 1 - s = -expm1(-eps) (as a plain
    difference it kept only ~eps / ulp correct digits at tiny eps: 0 at eps = 1e-300);
    q - e^eps' p = -q expm1(eps' + eps) and p - e^eps' q = -p expm1(eps' - eps) (the exact
    pair's alpha terms); 1 - e^eps' = -expm1(eps')."""

    randomizer: object
    k: int

    @classmethod
    def of(cls, randomizer) -> _KRRFamily:
        name = getattr(randomizer, "name", None)
        if name not in RANDOMIZERS:
            raise ParameterError("randomizer.name", name,
                                 f"heterogeneous blanket and exact bounds are derived for "
                                 f"{list(RANDOMIZERS)} (one blanket for every budget)")
        return cls(randomizer, int(randomizer.input_domain.size))

    def at(self, epsilon: float):
        return dataclasses.replace(self.randomizer, epsilon0=float(epsilon))

    def gamma(self, epsilon) -> np.ndarray:
        eps = np.asarray(epsilon, dtype=float)
        # k / (e^eps + k - 1) = k e^-eps / (1 + (k - 1) e^-eps): no overflow.
        small = np.exp(-eps)
        return self.k * small / (1.0 + (self.k - 1) * small)

    def blanket_complement(self, epsilon) -> np.ndarray:
        """1 - gamma(eps) = p - q = (1 - e^-eps) / (1 + (k - 1) e^-eps), with expm1."""
        eps = np.asarray(epsilon, dtype=float)
        small = np.exp(-eps)
        return -np.expm1(-eps) / (1.0 + (self.k - 1) * small)

    def pq(self, epsilon: float) -> tuple[float, float]:
        small = math.exp(-epsilon)
        q = small / (1.0 + (self.k - 1) * small)
        return 1.0 / (1.0 + (self.k - 1) * small), q

    def gap(self, epsilon: float) -> float:
        """p - q without cancellation (= 1 - gamma)."""
        return float(self.blanket_complement(float(epsilon)))

    def l_atoms(self, epsilon: float) -> RatioAtoms:
        """Atoms of L = (A_0(y) - e^eps A_1(y)) / U(y), y ~ U, for the pair (0, 1) at budget
        ``epsilon``: (k p, k q) and (k q, k p) w.p. 1/k each, (k q, k q) w.p. (k - 2)/k."""
        p, q = self.pq(epsilon)
        k = self.k
        a = [k * p, k * q] + ([k * q] if k > 2 else [])
        b = [k * q, k * p] + ([k * q] if k > 2 else [])
        w = [1.0 / k, 1.0 / k] + ([(k - 2) / k] if k > 2 else [])
        return RatioAtoms(np.array(a), np.array(b), np.array(w))

    def others_law(self, values: np.ndarray, counts: np.ndarray) -> CountLaw:
        """Law of the number of others that draw from the blanket (Poisson-binomial of the
        gamma_i, with the complements 1 - gamma_i computed directly)."""
        return poisson_binomial(self.gamma(values), counts, self.blanket_complement(values))


# ----------------------------------------------------------------------------------------------
# Blanket bound: delta(eps) = sum_m P(M = m) f(m + 1)
# ----------------------------------------------------------------------------------------------
def f_engine(family: _KRRFamily, target_epsilon: float, m: int, epsilon: float,
             rtol: float = 1e-6) -> Estimate:
    """f(m) = (1/m) E[(L_1 + ... + L_m)_+] with the hockey-stick engine (000 Thm 12 with
    A2 = U): the reference that :func:`f_values` is tested against."""
    return engine.delta_of_epsilon([(family.l_atoms(target_epsilon), int(m))], int(m),
                                   float(epsilon), "upper", rtol=rtol)


def f_values(family: _KRRFamily, target_epsilon: float, ms, epsilon: float,
             k_sd: float = 8.0) -> tuple[np.ndarray, np.ndarray]:
    """f(m) for every m in ``ms`` (>= 1), vectorized, with absolute error bounds.

    sum_{i<=m} L_i = k [q (1 - e) m + (p - q)((1 + e) A - e T)] where T ~ Bin(m, 2/k) counts the
    samples on {x0, x1} and A | T ~ Bin(T, 1/2) those on x0 (k = 2: T = m), so
    f(m) = (k/m) sum_T P(T) E[(c_T + beta A)_+ | T], c_T = q (1 - e) m - (p - q) e T,
    beta = (p - q)(1 + e): binomial tails via engine_common.leaf_positive_part. T is summed
    over mean +- k_sd sd; outside, (c_T + beta A)_+ <= beta A (c_T <= 0 for e >= 1), whose
    mass is bounded with exact binomial partial moments.
    """
    ms = np.asarray(ms, dtype=float).reshape(-1)
    require(bool((ms >= 1).all()), "m", ms.min(initial=1.0), "must be >= 1")
    p, q = family.pq(target_epsilon)
    gap = family.gap(target_epsilon)           # p - q, without cancellation
    k = family.k
    growth = math.exp(epsilon)
    drop = -math.expm1(epsilon)                # 1 - e^eps, without cancellation
    beta = gap * (1 + growth)
    if k == 2:
        t = ms[:, None]
        weight = np.ones_like(t)
        tail = np.zeros(ms.size)
    else:
        rho = 2.0 / k
        mean, sd = ms * rho, np.sqrt(ms * rho * (1 - rho))
        half = int(math.ceil(k_sd * float(sd.max()) + 10))
        lo_edge = np.maximum(np.round(mean) - half, 0.0)
        t = lo_edge[:, None] + np.arange(2 * half + 1)[None, :]
        inside = t <= ms[:, None]
        t = np.minimum(t, ms[:, None])
        weight = np.where(inside, stats.binom.pmf(t, ms[:, None], rho), 0.0)
        hi_edge = lo_edge + 2 * half
        # E[beta A 1{T outside}] = (beta / 2) E[T 1{T outside}], E[T 1{T >= j}] = m rho
        # P[Bin(m - 1, rho) >= j - 1].
        mm1 = ms - 1
        part = (stats.binom.cdf(lo_edge - 2, mm1, rho) + stats.binom.sf(hi_edge - 1, mm1, rho))
        tail = 0.5 * beta * ms * rho * np.where(lo_edge > 0, part, stats.binom.sf(
            hi_edge - 1, mm1, rho))
    c = q * drop * ms[:, None] - gap * growth * t
    leaf, leaf_err = leaf_positive_part(t, c / beta, 0.0, 1.0, 0.5)
    # Rounding of c / beta (E[(v + A)_+] is 1-Lipschitz in v) and of the weights (REL_SPECIAL).
    c_err = 8 * U * (q * abs(drop) * ms[:, None] + gap * growth * t) / beta
    value = (weight * leaf).sum(axis=1) * beta
    err = (weight * (leaf_err + REL_SPECIAL * leaf + c_err)).sum(axis=1) * beta + tail
    return k * value / ms, k * err / ms * (1 + 8 * U)


def blanket_delta_for_target(family: _KRRFamily, target_epsilon: float, others: CountLaw,
                             epsilon: float, *, rtol: float = 1e-3) -> Estimate:
    """delta(eps) = sum_m P(M = m) f(m + 1) for a target at ``target_epsilon`` whose others
    have the blanket count law ``others`` (module docstring), bracketed.

    Blocks [b_j, b_{j+1}) of M: P_j f(b_{j+1}) <= block <= P_j f(b_j + 1) (f non-increasing).
    Rounds of refinement split every block whose gap exceeds its share of the target width,
    evaluating the new end points in one vectorized call.
    """
    cache: dict[int, tuple[float, float]] = {}

    def evaluate(points) -> None:
        new = sorted({int(b) for b in points} - set(cache))
        if new:
            values, errs = f_values(family, target_epsilon, np.asarray(new) + 1.0, epsilon)
            for b, v, e in zip(new, values, errs, strict=True):
                cache[b] = (max(0.0, v - e), v + e)

    pmf, offset = others.pmf, others.offset
    prefix = np.concatenate([[0.0], np.cumsum(pmf)])
    end = offset + pmf.size                   # blocks cover the counts m in [offset, end)
    quantiles = offset + np.searchsorted(prefix[1:], np.linspace(0.0, 1.0, 33)[1:-1])
    points = np.unique(np.concatenate([[offset, end], quantiles]))

    def bracket(points):
        left, right = points[:-1], points[1:]
        evaluate(np.concatenate([left, right - 1]))
        # Block masses as sums of their own (positive) terms: no cancellation.
        mass = np.add.reduceat(pmf, left - offset)
        hi = mass * np.array([cache[int(b)][1] for b in left])       # M + 1 >= left + 1
        lo = mass * np.array([cache[int(b) - 1][0] for b in right])  # M + 1 <= right
        return lo, hi

    lo, hi = bracket(points)
    for _ in range(12):  # refinement rounds
        lower, upper = float(lo.sum()), float(hi.sum())
        if upper - lower <= rtol * upper:
            break
        gaps = hi - lo
        width = np.diff(points)
        split = (gaps > rtol * upper / (2 * gaps.size)) & (width >= 2)
        if not split.any():
            break
        mids = points[:-1][split] + width[split] // 2
        points = np.unique(np.concatenate([points, mids]))
        lo, hi = bracket(points)
    # Entry errors of the count law (relative), and its dropped mass at the largest f (m = 1).
    evaluate([0])
    rel = others.rel_err + 4 * U * points.size
    upper = float(hi.sum()) * (1 + rel) + others.dropped * cache[0][1]
    lower = max(0.0, float(lo.sum()) * (1 - rel))
    return Estimate(upper, lower, upper, "heterogeneous-blanket")


def _perturbation(magnitude_a, beta, t, v, rho, rel):
    """Bound on |E[(alpha' + beta' B)_+] - E[(alpha + beta B)_+]|, B ~ Bin(t, rho), when alpha
    and beta carry relative errors <= rel with |alpha| parts summing to ``magnitude_a`` and
    v = alpha / beta: the integrand moves by at most rel (magnitude_a + beta B), and only where
    one of the two is positive, B >= x* - 1 when that shift is below one step
    (rel (magnitude_a / beta + t) < 1); otherwise everywhere."""
    k = np.maximum(np.floor(-v) + 1.0, 0.0)
    j = np.maximum(k - 1.0, 0.0)
    tail = stats.binom.sf(j - 1.0, t, rho)                                     # P[B >= j]
    tail_b = t * rho * stats.binom.sf(j - 2.0, np.maximum(t - 1.0, 0.0), rho)  # E[B 1{B >= j}]
    local = magnitude_a * tail + beta * tail_b
    with np.errstate(divide="ignore", invalid="ignore"):
        shift_ok = rel * (magnitude_a / beta + t) < 1.0
    full = magnitude_a + beta * t * rho
    return rel * np.where(shift_ok, local, full) * (1 + REL_SPECIAL) + 8 * U * full


# ----------------------------------------------------------------------------------------------
# Exact pair: delta(eps) = sum_c2 w(c2) E[(alpha + linear)_+]
# ----------------------------------------------------------------------------------------------
PATTERNS = ("x2=x1", "x2=x0", "x2-other")


@dataclass
class _ExactPair:
    """Precomputed, eps-independent parts of the exact-pair delta for one target budget and one
    pattern (module docstring)."""

    family: _KRRFamily
    target_epsilon: float
    n: int
    pattern: str
    c2: np.ndarray            # window of the count at x2
    log_a: np.ndarray         # log w(c2) + log F(c2)
    log_b: np.ndarray         # log w(c2) + log F(c2 - 1)
    outside: float            # P_2(c2 outside the window) * e^eps_t: bound on its contribution
    pi_dropped: float         # mass of M left out of F
    rel: float                # relative error of exp(log_a), exp(log_b)

    @classmethod
    def build(cls, family: _KRRFamily, target_epsilon: float, others_values, others_counts,
              pattern: str) -> _ExactPair:
        require(pattern in PATTERNS, "pattern", pattern, f"must be one of {PATTERNS}")
        k = family.k
        require(pattern != "x2-other" or k >= 3, "pattern", pattern, "needs k >= 3")
        n = int(np.sum(others_counts)) + 1
        pi = family.others_law(others_values, others_counts)
        # c2 = n - Y, Y ~ PB over all n users of gamma_i (k - 1) / k (outputs other than x2,
        # everyone at x2): its window, and its left-out mass.
        values = np.append(np.asarray(others_values, dtype=float), target_epsilon)
        counts = np.append(np.asarray(others_counts, dtype=np.int64), 1)
        # 1 - gamma (k - 1) / k = e^eps / (e^eps + k - 1) = p (computed directly)
        y = poisson_binomial(family.gamma(values) * (k - 1) / k, counts,
                             1.0 / (1.0 + (k - 1) * np.exp(-values)))
        c2 = (n - y.support)[::-1]
        outside = (y.dropped + 0.0) * math.exp(target_epsilon) * (1 + y.rel_err)
        m = pi.support.astype(float)
        log_pi = np.log(np.maximum(pi.pmf, 1e-300))
        base = log_pi + special.gammaln(m + 1.0) - m * math.log(k)
        cs = np.concatenate([[c2[0] - 1], c2]).astype(float)
        log_f = np.full(cs.size, -np.inf)
        step = max(1, (1 << 22) // max(1, m.size))
        for start in range(0, cs.size, step):  # chunks of c2 (memory bound)
            c = cs[start:start + step, None]
            j = c - (n - 1) + m[None, :]
            with np.errstate(invalid="ignore"):
                terms = np.where(j >= 0, base[None, :] - special.gammaln(np.maximum(j, 0) + 1.0),
                                 -np.inf)
            log_f[start:start + step] = special.logsumexp(terms, axis=1)
        log_w = (n - c2) * math.log(k - 1) - special.gammaln(n - c2 + 1.0)
        return cls(family, float(target_epsilon), n, pattern, c2.astype(np.int64),
                   log_w + log_f[1:], log_w + log_f[:-1], float(outside), float(pi.dropped),
                   REL_LOG + float(pi.rel_err))

    def delta(self, epsilon: float) -> Estimate:
        """delta(eps) for the pair, bracketed (lower and upper)."""
        growth = math.exp(epsilon)
        drop = -math.expm1(epsilon)                        # 1 - e^eps
        p, q = self.family.pq(self.target_epsilon)
        gap = self.family.gap(self.target_epsilon)         # p - q
        k = self.family.k
        n_rest = (self.n - self.c2).astype(float)
        ea = np.exp(self.log_a)
        eb = np.exp(self.log_b)
        r = 1.0 / (k - 1)
        if self.pattern == "x2-other":
            value, err = self._other_value(ea, eb, n_rest, q, gap, growth, drop, r)
        else:
            if self.pattern == "x2=x1":
                # q - e^eps p = -q expm1(eps + eps_t)
                alpha_a = ea * drop * q * n_rest
                alpha_b = eb * (-q * math.expm1(epsilon + self.target_epsilon))
                beta, rho, shift = ea * gap, r, 0.0
            else:  # x2 = x0: alpha - beta X with X ~ Bin(N', r) = alpha - beta N' + beta X'
                # p - e^eps q = -p expm1(eps - eps_t)
                alpha_a = ea * drop * q * n_rest
                alpha_b = eb * (-p * math.expm1(epsilon - self.target_epsilon))
                beta, rho, shift = ea * growth * gap, 1.0 - r, 1.0
            alpha = alpha_a + alpha_b - shift * beta * n_rest
            pos = beta > 0
            safe = np.where(pos, beta, 1.0)
            v = alpha / safe
            leaf, leaf_err = leaf_positive_part(n_rest, v, 0.0, 1.0, rho)
            value = np.where(pos, beta * leaf, np.maximum(alpha, 0.0))
            magnitude_a = np.abs(alpha_a) + np.abs(alpha_b) + shift * beta * n_rest
            moved = _perturbation(magnitude_a, safe, n_rest, v, rho, self.rel)
            err = np.where(pos, beta * leaf_err + moved, (self.rel + 8 * U) * magnitude_a)
        total = float(np.sum(value))
        slack = float(np.sum(err)) + 4 * U * total * self.c2.size
        # Left-out mass of M changes delta by at most (1 + e^eps) times it; c2 outside the
        # window adds at most e^eps_t P_2(outside) (P_0 <= e^eps_t P_2, (P0 - e P1)_+ <= P0).
        lower = max(0.0, total - slack - (1 + growth) * self.pi_dropped)
        upper = total + slack + (1 + growth) * self.pi_dropped + self.outside
        return Estimate(lower, lower, upper, "heterogeneous-exact")

    def _other_value(self, ea, eb, n_rest, q, gap, growth, drop, r):
        """x2 outside {x0, x1}: (X, Y) ~ trinomial(N'; r, r), S = X + Y ~ Bin(N', 2r),
        X | S ~ Bin(S, 1/2); integrand alpha - kappa e S + kappa (1 + e) X."""
        alpha_a = drop * q * ea * n_rest
        alpha_b = drop * q * eb
        alpha = alpha_a + alpha_b
        kappa = ea * gap
        two_r = 2.0 * r
        mean = n_rest * two_r
        sd = np.sqrt(np.maximum(n_rest * two_r * (1 - two_r), 0.0))
        half = int(math.ceil(9.0 * float(sd.max(initial=0.0)) + 10))
        s = np.round(mean)[:, None] + np.arange(-half, half + 1)[None, :]
        inside = (s >= 0) & (s <= n_rest[:, None])
        s = np.clip(s, 0, n_rest[:, None])
        weight = np.where(inside, stats.binom.pmf(s, n_rest[:, None], two_r), 0.0)
        beta = kappa * (1 + growth)
        pos = beta > 0
        safe = np.where(pos, beta, 1.0)[:, None]
        v = (alpha[:, None] - kappa[:, None] * growth * s) / safe
        leaf, leaf_err = leaf_positive_part(s, v, 0.0, 1.0, 0.5)
        inner = np.where(pos[:, None], safe * leaf, np.maximum(alpha[:, None], 0.0))
        # alpha - kappa e S is perturbed through ea, eb (relative self.rel) as a whole.
        magnitude_a = (np.abs(alpha_a) + np.abs(alpha_b))[:, None] + kappa[:, None] * growth * s
        moved = _perturbation(magnitude_a, safe, s, v, 0.5, self.rel)
        inner_err = np.where(pos[:, None], safe * leaf_err + moved,
                             (self.rel + 8 * U) * magnitude_a)
        value = np.sum(weight * inner, axis=1)
        err = np.sum(weight * (inner_err + (REL_SPECIAL + 4 * U) * inner), axis=1)
        # S outside its window: the integrand is at most P_0's numerator,
        # ea (q N' + (p - q) X) + eb q, whose mass there is bounded with binomial tails.
        lo_edge = np.round(mean) - half
        hi_edge = np.round(mean) + half
        tail_p = stats.binom.cdf(lo_edge - 1, n_rest, two_r) + stats.binom.sf(hi_edge, n_rest,
                                                                             two_r)
        nm1 = np.maximum(n_rest - 1, 0)
        tail_s = n_rest * two_r * (stats.binom.cdf(lo_edge - 2, nm1, two_r)
                                   + stats.binom.sf(hi_edge - 1, nm1, two_r))
        err = err + (ea * q * n_rest + eb * q) * tail_p + ea * gap * 0.5 * tail_s
        return value, err


# ----------------------------------------------------------------------------------------------
# Target cases and eps(delta)
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Case:
    label: str
    target_epsilon: float
    delta_fn: Callable[[float], Estimate]


def _target_cases(profile: BudgetProfile) -> tuple[list[tuple[float, np.ndarray, np.ndarray]],
                                                   bool]:
    """(target budget, others' budgets, others' counts) per case, largest budget first; and
    whether the cases are exhaustive (every distinct budget tried) or the single conservative
    case (module docstring)."""
    values, counts = profile.budget_counts()
    if values.size <= MAX_TARGETS:
        cases = []
        for eps_t in values[::-1]:
            others_v, others_c = profile.without_one(float(eps_t))
            cases.append((float(eps_t), others_v, others_c))
        return cases, True
    counts = counts.copy()
    counts[0] -= 1  # everyone but one user of the smallest budget
    keep = counts > 0
    return [(float(values[-1]), values[keep], counts[keep])], False


def _check_profile(profile, delta) -> None:
    require(isinstance(profile, BudgetProfile), "budgets", type(profile).__name__,
            "must be a BudgetProfile")
    require(profile.n >= 2, "n", profile.n, "must be an integer >= 2")
    require_probability_open("delta", delta)


def _eps_max(epsilon_t: float) -> float:
    # delta(eps) = 0 from eps = eps_t on (L <= gamma (e^eps_t - e^eps) <= 0; for the exact pair
    # A_0 <= e^eps_t A_1 pointwise).
    return epsilon_t * (1 + 1e-9) + 1e-9


def _search(case: _Case, delta: float, side: str, rtol: float, extra: int = 8):
    """eps(delta) for one case with the engine's bracketing (engine.epsilon_of_delta), then a
    few bisection steps on [certified above, certified below] to narrow the reported error: a
    midpoint is certified above when its lower estimate exceeds delta, below when its upper
    estimate is at most delta; when it is neither, the delta bracket is the limit.

    Absolute tolerances scale with the target's budget (a fixed 1e-9 could not resolve a bound
    at eps_t = 1e-12). Upper side: the result is at most eps_t, the safe answer wherever the
    float search cannot certify a crossing (it returned inf at eps_t = 20, where the certified
    bracket of the exact delta near eps_t is e^eps_t REL_LOG wide, and at eps_t = 1e-300): the
    pairs of this case differ in the report of one eps_t-LDP user, and the shuffled output is
    a post-processing of that report given the others, so their D_{e^eps_t} is 0 (issue 14)."""
    eps_t = case.target_epsilon
    xtol = min(1e-10, 1e-6 * eps_t)
    est = engine.epsilon_of_delta(case.delta_fn, delta, side, eps_max=_eps_max(eps_t),
                                  rtol=rtol, xtol=xtol)
    lower, upper = est.lower, est.upper
    steps = 0
    while (steps < extra and math.isfinite(upper)
           and upper - lower > max(10 * xtol, rtol * upper)):
        mid = 0.5 * (lower + upper)
        at = case.delta_fn(mid)
        steps += 1
        if at.lower > delta:
            lower = mid
        elif at.upper <= delta:
            upper = mid
        else:
            break
    if side == "upper" and not upper <= eps_t:
        upper = eps_t
        lower = min(lower, eps_t)
    value = upper if side == "upper" else lower
    return engine.EpsilonEstimate(value, lower, upper, upper - lower, est.saturated,
                                  est.evaluations + steps)


def _max_over_cases(cases: list[_Case], delta: float, side: str, rtol: float):
    """max over cases of eps(delta) with screening (as protocols.bounds.numerical.optimal): a case
    whose certified delta at the current best eps is <= delta (upper) / not > delta (lower)
    cannot raise the maximum (upper: exact; lower: only costs tightness)."""
    best = None
    label = ""
    for case in cases:
        if best is not None and math.isfinite(best.value):
            at = case.delta_fn(best.value)
            if (at.upper <= delta) if side == "upper" else not (at.lower > delta):
                continue
        est = _search(case, delta, side, rtol)
        better = best is None or (est.upper if side == "upper" else est.lower) > (
            best.upper if side == "upper" else best.lower)
        if better:
            best, label = est, case.label
    return best, label


def _result(method, kind, est, delta, status, reference, started, note) -> BoundResult:
    error = est.error if math.isfinite(est.error) else math.inf
    return BoundResult(method=method, kind=kind, epsilon=float(est.value), delta=float(delta),
                       epsilon_error=float(error), status=status, reference=reference,
                       seconds=time.perf_counter() - started, note=note)


def _profile_note(profile: BudgetProfile) -> str:
    values, counts = profile.budget_counts()
    if values.size <= 6:
        groups = ", ".join(f"{c} x {v:g}" for v, c in zip(values, counts, strict=True))
    else:
        groups = f"{values.size} distinct budgets in [{values[0]:g}, {values[-1]:g}]"
    return f"n = {profile.n}: {groups}"


def blanket_cases(randomizer, profile: BudgetProfile, *, rtol: float = 1e-3):
    """The target cases of the heterogeneous blanket bound (module docstring)."""
    family = _KRRFamily.of(randomizer)
    specs, exhaustive = _target_cases(profile)
    cases = []
    for eps_t, others_v, others_c in specs:
        law = family.others_law(others_v, others_c)

        def fn(eps, eps_t=eps_t, law=law):
            return blanket_delta_for_target(family, eps_t, law, eps, rtol=rtol)

        cases.append(_Case(f"target budget {eps_t:g}", eps_t, fn))
    return cases, exhaustive


def optimal_blanket_personalized_delta(randomizer, profile: BudgetProfile, epsilon: float, *,
                                       rtol: float = 1e-3) -> Estimate:
    """delta(eps) of the heterogeneous blanket bound (max over target cases), bracketed."""
    cases, _ = blanket_cases(randomizer, profile, rtol=rtol)
    ests = [c.delta_fn(float(epsilon)) for c in cases]
    return Estimate(max(e.upper for e in ests), max(e.lower for e in ests),
                    max(e.upper for e in ests), "heterogeneous-blanket")


def optimal_blanket_personalized(randomizer, profile: BudgetProfile, delta: float, *,
                                 rtol: float = 1e-5) -> BoundResult:
    """Upper bound eps(delta) for k-RR / binary RR users with personalized budgets: the
    common-blanket reduction (module docstring), maximised over the target's budget."""
    started = time.perf_counter()
    _check_profile(profile, delta)
    cases, exhaustive = blanket_cases(randomizer, profile)
    est, label = _max_over_cases(cases, delta, "upper", rtol)
    how = ("every budget tried as the target's" if exhaustive else
           "conservative case: target at the largest budget, others without one smallest")
    note = f"{_profile_note(profile)}; {how}; attained with {label}"
    return _result("optimal-blanket-personalized", BoundKind.UPPER, est, delta,
                   BoundStatus.PROVEN, REFERENCE_BLANKET, started, note)


def exact_cases(randomizer, profile: BudgetProfile, patterns=None):
    """Cases of the heterogeneous exact-pair lower bound: target budget x pattern."""
    family = _KRRFamily.of(randomizer)
    if patterns is None:
        patterns = ("x2-other", "x2=x1", "x2=x0") if family.k >= 3 else ("x2=x1", "x2=x0")
    specs, _ = _target_cases(profile)
    cases = []
    for eps_t, others_v, others_c in specs:
        for pattern in patterns:
            pair = _ExactPair.build(family, eps_t, others_v, others_c, pattern)
            cases.append(_Case(f"target budget {eps_t:g}, {pattern}", eps_t, pair.delta))
    return cases


def exact_lower_personalized_delta(randomizer, profile: BudgetProfile, epsilon: float,
                                   patterns=None) -> Estimate:
    """delta(eps) of the exact pair, maximised over the cases, bracketed (lower side)."""
    ests = [c.delta_fn(float(epsilon)) for c in exact_cases(randomizer, profile, patterns)]
    lower = max(e.lower for e in ests)
    return Estimate(lower, lower, max(e.upper for e in ests), "heterogeneous-exact")


def exact_lower_personalized(randomizer, profile: BudgetProfile, delta: float, *,
                             rtol: float = 1e-5, patterns=None) -> BoundResult:
    """Lower bound eps(delta): the exact divergence of X0 = (x0, x2, ..., x2) vs
    X1 = (x1, x2, ..., x2) with per-user budgets (module docstring), maximised over the
    target's budget and the position of x2."""
    started = time.perf_counter()
    _check_profile(profile, delta)
    cases = exact_cases(randomizer, profile, patterns)
    est, label = _max_over_cases(cases, delta, "lower", rtol)
    note = f"{_profile_note(profile)}; X0 = (0, x2, ..), X1 = (1, x2, ..) with {label}"
    return _result("exact-lower-personalized", BoundKind.LOWER, est, delta, BoundStatus.PROVEN,
                   REFERENCE_EXACT, started, note)


# ----------------------------------------------------------------------------------------------
# Other bounds for personalized budgets
# ----------------------------------------------------------------------------------------------
def gspa_gdp_personalized(profile: BudgetProfile, delta: float) -> BoundResult:
    """003 Thm 2 with every user's (eps_i, delta_i): mu = sqrt(2 / (sum q_i - max q_i)),
    q_i = (1 - delta_i) / (1 + e^eps_i), converted with 003 Fact 3
    (protocols.bounds.closed_form.gdp).
    Approximate (Berry-Esseen term dropped) and reliant on the stronger-clone reduction."""
    _check_profile(profile, delta)
    eps, deltas = profile.expanded()
    result = gdp.gdp_personalized_bound(eps, delta, deltas)
    return dataclasses.replace(result, method="gspa-gdp-personalized",
                               note=f"{_profile_note(profile)}; {result.note}")


def _optimal(randomizer, epsilon: float, n: int, delta: float) -> BoundResult:
    return optimal.optimal_blanket_epsilon(dataclasses.replace(randomizer, epsilon0=float(epsilon)),
                                           int(n), delta)


def optimal_blanket_max_budget(randomizer, profile: BudgetProfile, delta: float) -> BoundResult:
    """The homogeneous optimal bound (000 Thm 13) with every user at the largest budget: an
    upper bound for k-RR users with smaller budgets too (module docstring: f grows with the
    target's budget, and smaller budgets only enlarge the others' blanket masses). It ignores
    the heterogeneity; the personalized blanket bound is never above it."""
    started = time.perf_counter()
    _check_profile(profile, delta)
    _KRRFamily.of(randomizer)
    top = float(profile.budget_values[-1])
    result = _optimal(randomizer, top, profile.n, delta)
    return dataclasses.replace(result, method="optimal-blanket-max-budget",
                               seconds=time.perf_counter() - started,
                               note=f"everyone at the largest budget {top:g}, n = {profile.n}; "
                                    f"{result.note}")


def optimal_blanket_tagged(randomizer, profile: BudgetProfile, delta: float) -> BoundResult:
    """The privacy of tagged reports (each report carries its budget, as the weighted
    estimators need): a user hides only among the users of its own budget, so the shuffle acts
    as one shuffle per budget group; eps = max over groups of the homogeneous optimal bound
    (000 Thm 13) with that group's size and budget (a group of one has no amplification). With
    more than MAX_TARGETS distinct budgets the largest budget with n = 1 is used (every tag is
    unique up to ties: no amplification to count on)."""
    started = time.perf_counter()
    _check_profile(profile, delta)
    values, counts = profile.budget_counts()
    if values.size > MAX_TARGETS:
        groups = [(float(values[-1]), 1)]
    else:
        groups = [(float(v), int(c)) for v, c in zip(values, counts, strict=True)]
    results = [(_optimal(randomizer, v, c, delta), v, c) for v, c in groups]
    worst, v, c = max(results, key=lambda item: item[0].epsilon)
    statuses = {r.status for r, _, _ in results}
    status = BoundStatus.PROVEN if statuses == {BoundStatus.PROVEN} else worst.status
    return dataclasses.replace(worst, method="optimal-blanket-tagged", status=status,
                               seconds=time.perf_counter() - started,
                               note=f"per-group shuffle; worst group: {c} users at budget {v:g}; "
                                    f"{worst.note}")


def baseline_min_budget(randomizer, profile: BudgetProfile, delta: float) -> BoundResult:
    """The central eps of the non-personalized protocol in which every user randomizes at the
    smallest budget (the baseline that satisfies everyone's preference without personalized
    budgets). Not a bound on the personalized mechanism: a reference for its utility cost."""
    started = time.perf_counter()
    _check_profile(profile, delta)
    low = float(profile.budget_values[0])
    result = _optimal(randomizer, low, profile.n, delta)
    return dataclasses.replace(result, method="baseline-min-budget",
                               seconds=time.perf_counter() - started,
                               note=f"protocol with every user at the smallest budget {low:g} "
                                    f"(not the personalized mechanism); {result.note}")


# ----------------------------------------------------------------------------------------------
# Catalogue entries
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PersonalizedUsers:
    """The users of a personalized-budget setting, for the bound catalogue: a randomizer family
    and the budget multiset. It has no ``epsilon0`` and its own ``name`` and ``output_kind``,
    so that the catalogue's homogeneous bounds (which assume one eps0) do not apply to it."""

    randomizer: object
    profile: BudgetProfile

    output_kind = "personalized"

    @property
    def name(self) -> str:
        return f"personalized:{getattr(self.randomizer, 'name', '?')}"

    @property
    def base_name(self) -> str:
        return getattr(self.randomizer, "name", "?")


@dataclass(frozen=True)
class PersonalizedSpec:
    """Catalogue data of one personalized bound (protocols.bounds.catalogue registers it);
    ``mechanism`` says what it describes: the personalized mechanism, the tagged-report
    protocol, or the baseline protocol at the smallest budget."""

    name: str
    kind: BoundKind
    reference: str
    status: BoundStatus
    regime: str
    function: Callable
    randomizers: tuple[str, ...] | None   # None: any randomizer
    mechanism: str
    also: tuple[BoundStatus, ...] = ()
    needs_randomizer: bool = True

    def applies_to(self, users) -> bool:
        return isinstance(users, PersonalizedUsers) and (
            self.randomizers is None or users.base_name in self.randomizers)

    def compute(self, users, n: int, delta: float) -> BoundResult:
        require(isinstance(users, PersonalizedUsers), "randomizer", type(users).__name__,
                "personalized bounds take PersonalizedUsers(randomizer, BudgetProfile)")
        require(int(n) == users.profile.n, "n", n,
                f"must equal the number of budgets in the profile ({users.profile.n})")
        if not self.needs_randomizer:
            return self.function(users.profile, delta)
        return self.function(users.randomizer, users.profile, delta)


MECHANISM = "personalized mechanism"
TAGGED = "per-group shuffle (tagged reports)"
BASELINE = "baseline protocol at the smallest budget"

PERSONALIZED_SPECS = (
    PersonalizedSpec("gspa-gdp-personalized", BoundKind.UPPER,
                     "003 Thm 2 (mu-GDP, personalized (eps_i, delta_i)) + 003 Fact 3",
                     BoundStatus.APPROXIMATE, "any eps_i-LDP users, n >= 2; asymptotic in n",
                     gspa_gdp_personalized, None, MECHANISM,
                     also=(BoundStatus.STRONGER_CLONE,), needs_randomizer=False),
    PersonalizedSpec("optimal-blanket-personalized", BoundKind.UPPER, REFERENCE_BLANKET,
                     BoundStatus.PROVEN, "k-RR / binary RR users with any budgets, n >= 2",
                     optimal_blanket_personalized, RANDOMIZERS, MECHANISM),
    PersonalizedSpec("exact-lower-personalized", BoundKind.LOWER, REFERENCE_EXACT,
                     BoundStatus.PROVEN, "k-RR / binary RR users with any budgets, n >= 2",
                     exact_lower_personalized, RANDOMIZERS, MECHANISM),
    PersonalizedSpec("optimal-blanket-max-budget", BoundKind.UPPER,
                     "000 Thm 13 at the largest budget (valid for k-RR; module docstring)",
                     BoundStatus.PROVEN, "k-RR / binary RR users, n >= 2",
                     optimal_blanket_max_budget, RANDOMIZERS, MECHANISM),
    PersonalizedSpec("optimal-blanket-tagged", BoundKind.UPPER,
                     "000 Thm 13 per budget group (reports tagged with their budget)",
                     BoundStatus.PROVEN, "randomizers with an optimal-blanket decomposition",
                     optimal_blanket_tagged, None, TAGGED),
    PersonalizedSpec("baseline-min-budget", BoundKind.UPPER,
                     "000 Thm 13 with every user at the smallest budget (another protocol)",
                     BoundStatus.PROVEN, "randomizers with an optimal-blanket decomposition",
                     baseline_min_budget, None, BASELINE),
)


def personalized_spec(name: str) -> PersonalizedSpec:
    for spec in PERSONALIZED_SPECS:
        if spec.name == name:
            return spec
    raise ParameterError("method", name, f"unknown personalized bound; choose one of "
                                         f"{[s.name for s in PERSONALIZED_SPECS]}")


# ------------------------------------------------------------------------------------------
# Catalogue entries
# ------------------------------------------------------------------------------------------
# Personalized budgets: these bounds apply to PersonalizedUsers (a randomizer and a
# BudgetProfile), never to a plain randomizer.
for _spec in PERSONALIZED_SPECS:
    register(BoundSpec(_spec.name, _spec.kind, _spec.reference, _spec.status, _spec.regime,
                       _spec.applies_to, _spec.compute, scope="personalized", also=_spec.also))
