"""The personalized blanket bound for k-RR users (module docstring of
protocols.bounds.personalized.bounds): the k-RR family with its common blanket, f(m) as a sum of
binomial tails (:func:`f_values`, cross-checked against the hockey-stick engine by
:func:`f_engine`) and delta(eps) = sum_m P(M = m) f(m + 1) for one target budget, bracketed over
blocks of M.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.bounds.atoms import RatioAtoms
from shufflesim.protocols.bounds.engine import core as engine
from shufflesim.protocols.bounds.engine.common import REL_SPECIAL, Estimate, U, leaf_positive_part
from shufflesim.protocols.bounds.personalized.profile import (
    CountLaw,
    poisson_binomial,
)
from shufflesim.protocols.distributions import binom
from shufflesim.protocols.errors import ParameterError, require

RANDOMIZERS = ("brr", "krr")


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
    beta = (p - q)(1 + e): binomial tails via engine.common.leaf_positive_part. T is summed
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
        weight = np.where(inside, binom.pmf(t, ms[:, None], rho), 0.0)
        hi_edge = lo_edge + 2 * half
        # E[beta A 1{T outside}] = (beta / 2) E[T 1{T outside}], E[T 1{T >= j}] = m rho
        # P[Bin(m - 1, rho) >= j - 1].
        mm1 = ms - 1
        part = (binom.cdf(lo_edge - 2, mm1, rho) + binom.sf(hi_edge - 1, mm1, rho))
        tail = 0.5 * beta * ms * rho * np.where(lo_edge > 0, part, binom.sf(
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
