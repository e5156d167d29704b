"""Shared pieces of the hockey-stick engine: the Estimate record, the category view of a group,
error constants, and binomial building blocks with explicit error bounds.

Floating-point model (used by every method; each method states where it adds slack):

- ``U`` is the unit roundoff of float64. Elementary operations are correctly rounded.
- ``REL_SPECIAL``: scipy.stats.binom sf/cdf/pmf (Boost) are assumed accurate to 1e-9 relative
  where the result is a normal float. Observed errors are below 1e-11 for counts up to 1e7
  (tests/test_engine.py checks a panel of points against mpmath); the margin is > 100x.
- Sums of non-negative terms are covered by a final relative margin ``REL_SUM`` = 1e-10:
  the conditioning method's sums nest at most ~1e5 + 1e3 + 520 + 256 terms, and naive
  summation of N non-negative terms errs by at most N u relative (1.2e-11 here). Longer sums
  (enumeration, FFT) add their own N u term.
- Results that underflow are covered by an absolute margin ``TINY`` on upper bounds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.bounds.atoms import RatioAtoms
from shufflesim.protocols.bounds.engine import binomial_path
from shufflesim.protocols.bounds.engine.binomial_memo import RowMemo
from shufflesim.protocols.distributions import binom
from shufflesim.protocols.errors import ParameterError

U = float(np.finfo(float).eps) / 2
REL_SPECIAL = 1e-9
REL_SUM = 1e-10
TINY = 1e-290


@dataclass(frozen=True)
class Estimate:
    """A numerically bracketed quantity: ``lower <= true value <= upper`` is guaranteed.

    ``value`` is the side that was asked for (``upper`` or ``lower``); ``method`` names the
    algorithm that produced it.
    """

    value: float
    lower: float
    upper: float
    method: str = ""

    @property
    def error(self) -> float:
        """Width of the guaranteed bracket."""
        return self.upper - self.lower

    def scaled(self, factor: float) -> Estimate:
        """The estimate of ``factor`` times the quantity (factor > 0), rounded outward."""
        lo = self.lower * factor * (1 - 4 * U)
        hi = self.upper * factor * (1 + 4 * U)
        val = hi if self.value == self.upper else lo
        return Estimate(val, lo, hi, self.method)


@dataclass(frozen=True)
class Categories:
    """One group at one eps: distinct values ``c`` of G (the zero atom included when it has
    mass), their probabilities ``w`` (summing to 1), the number of users ``count`` and a bound
    ``c_err`` on |computed c - exact c| (exact meaning a_j - e^eps b_j with the exact e^eps)."""

    c: np.ndarray
    w: np.ndarray
    count: int
    c_err: float

    @property
    def mean(self) -> float:
        return float(self.w @ self.c)

    @property
    def variance(self) -> float:
        return float(self.w @ (self.c - self.mean) ** 2)


def check_side(side: str) -> str:
    if side not in ("upper", "lower"):
        raise ParameterError("side", side, "must be 'upper' or 'lower'")
    return side


def check_groups(groups: Sequence[tuple[RatioAtoms, int]]) -> list[tuple[RatioAtoms, int]]:
    """Validate ``groups``: a non-empty sequence of (RatioAtoms, count >= 0)."""
    if isinstance(groups, RatioAtoms) or not isinstance(groups, Sequence) or len(groups) == 0:
        raise ParameterError("groups", groups,
                             "must be a non-empty sequence of (RatioAtoms, count)")
    out = []
    for item in groups:
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], RatioAtoms)):
            raise ParameterError("groups", item, "each group must be a (RatioAtoms, count) pair")
        atoms, count = item
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
            raise ParameterError("count", count, "must be an integer >= 0")
        if not (np.isfinite(atoms.a).all() and np.isfinite(atoms.b).all()):
            raise ParameterError("atoms", atoms, "a and b must be finite")
        if (atoms.a < 0).any() or (atoms.b < 0).any():
            raise ParameterError("atoms", atoms, "a and b must be >= 0 (they are density ratios)")
        out.append((atoms, int(count)))
    return out


def check_epsilon(epsilon: float) -> float:
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.floating)) \
            or not (0 <= epsilon < math.inf):
        raise ParameterError("epsilon", epsilon, "must be a finite number >= 0")
    return float(epsilon)


def categories(atoms: RatioAtoms, count: int, epsilon: float) -> Categories:
    """The distinct values of G = a - e^eps b (with the zero atom) and their probabilities.

    Atoms of zero weight are dropped; weights summing to more than 1 are rescaled to sum to 1;
    atoms with equal computed values are merged (000 Sec. 4.4: merging atoms of equal value does
    not change the distribution of G).
    """
    keep = atoms.weight > 0
    a, b, w = atoms.a[keep], atoms.b[keep], atoms.weight[keep]
    growth = math.exp(epsilon)
    c = a - growth * b
    # |fl(a - fl(e^eps) b) - (a - e^eps b)| <= 4u (a + e^eps b) (exp is accurate to < 2 ulp).
    c_err = float(4 * U * (a + growth * b).max()) if a.size else 0.0
    total = float(w.sum())
    if total > 1:
        w = w / total
        total = 1.0
    if total < 1:
        c = np.append(c, 0.0)
        w = np.append(w, 1.0 - total)
    values, inverse = np.unique(c, return_inverse=True)
    probs = np.bincount(inverse, weights=w, minlength=values.size)
    nz = probs > 0
    return Categories(values[nz], probs[nz], int(count), c_err)


def trivial_estimate(cats: Sequence[Categories]) -> tuple[float, float] | None:
    """Exact (lower, upper) when the sum cannot change sign: 0 if every value is <= 0,
    E[sum] if every value is >= 0; ``None`` otherwise."""
    active = [g for g in cats if g.count > 0]
    if all(g.c.max() <= 0 for g in active):
        return 0.0, input_slack(active)
    slack = sum(g.count * g.c_err for g in active)
    if all(g.c.min() >= 0 for g in active):
        mean = sum(g.count * g.mean for g in active)
        err = 4 * U * sum(g.count * float(g.w @ np.abs(g.c)) for g in active) + slack
        return max(mean - err, 0.0), mean + err
    return None


# ---------------------------------------------------------------------------------------------
# Binomial building blocks
# ---------------------------------------------------------------------------------------------

def binom_le(k, m, q):
    """P[Bin(m, q) <= k], vectorized; exact 0 / 1 outside the support."""
    return binom.cdf(k, m, q)


def binom_ge(k, m, q):
    """P[Bin(m, q) >= k], vectorized."""
    return binom.sf(np.asarray(k) - 1, m, q)


#: binom_ge and binom.pmf remembered across an eps search's evaluations (the same values:
#: engine/binomial_memo.py)
BINOM_GE = RowMemo(binom_ge)
BINOM_PMF = RowMemo(binom.pmf)


def binom_interval(lo, hi, m, q):
    """P[lo <= Bin(m, q) <= hi] and an absolute error bound, computed from the tail on the far
    side of the mean so that the subtraction does not cancel more than necessary."""
    lo, hi, m = np.broadcast_arrays(np.asarray(lo, float), np.asarray(hi, float),
                                    np.asarray(m, float))
    mean = m * q
    use_lower_tail = hi <= mean
    a = np.where(use_lower_tail, binom_le(hi, m, q), binom_ge(lo, m, q))
    b = np.where(use_lower_tail, binom_le(lo - 1, m, q), binom_ge(hi + 1, m, q))
    p = np.maximum(a - b, 0.0)
    p = np.where(hi < lo, 0.0, p)
    err = np.where(hi < lo, 0.0, REL_SPECIAL * (a + b) + 2 * U * (a + b))
    return p, err


def leaf_positive_part(t, v, cb: float, d: float, rho: float):
    """h = E[(cb*t + v + d*B)_+] for B ~ Bin(t, rho) and an absolute error bound
    (see :func:`leaf_with_slope`)."""
    h, err, _ = leaf_with_slope(t, v, cb, d, rho)
    return h, err


def leaf_with_slope(t, v, cb: float, d: float, rho: float):
    """h = E[(cb*t + v + d*B)_+] for B ~ Bin(t, rho), d > 0, t >= 0 integer, v real; with an
    absolute error bound, and ``slope``: an upper bound on the derivative of h over [v - d, v + d]
    (h' = P[cb t + v + d B > 0] is non-decreasing; at v + d it is at most P[B >= k-1]), so that
    |h(v') - h(v)| <= |v' - v| * slope for |v' - v| <= d.

    With b* = -(cb t + v)/d and k = max(0, floor(b*) + 1) (so B >= k iff B > b*),
        E[(B - b*)_+] = (t rho - b*) P[B >= k] + E[(B - t rho) 1{B >= k}]
    and the binomial identity E[(B - t rho) 1{B >= k}] = t rho (1 - rho) P[Bin(t-1, rho) = k-1]
    (from E[(B - t rho) f(B)] = t rho (1 - rho) E[f(B'+1) - f(B')], B' ~ Bin(t-1, rho)).
    This centred form avoids the catastrophic cancellation of A P[B >= k] + d E[B 1{B >= k}].

    Error: the relative error REL_SPECIAL of the two binomial terms, and the error e_b of b*
    (E[(B - b)_+] is 1-Lipschitz in b with slope P[B > b], bounded by P[B >= k-1]).
    """
    t = np.asarray(t, dtype=float)
    v = np.asarray(v, dtype=float)
    t, v = np.broadcast_arrays(t, v)
    bstar = -(cb * t + v) / d
    k = np.maximum(np.floor(bstar) + 1.0, 0.0)
    tpos = t > 0
    tm1 = np.where(tpos, t - 1.0, 0.0)
    pk = np.where(tpos, BINOM_PMF(k - 1.0, tm1, rho), 0.0)   # P[Bin(t-1) = k-1]
    if binomial_path.path_applies(k, t, rho):
        # many consecutive rows (n >~ 1e7): tails from anchors and pmfs, ~1/30 of the cost
        tail, tail_err = binomial_path.tails_along_rows(k, t, rho, pk, BINOM_GE, REL_SPECIAL)
    else:
        tail, tail_err = BINOM_GE(k, t, rho), None     # P[B >= k], REL_SPECIAL relative
    mean = t * rho
    term1 = (mean - bstar) * tail
    term2 = mean * (1.0 - rho) * pk
    value = np.maximum(term1 + term2, 0.0)
    # P[B = k-1] = P[Bin(t-1) = k-1] * t (1 - rho) / (t - k + 1)  (for 1 <= k <= t).
    with np.errstate(divide="ignore", invalid="ignore"):
        p_prev = np.where((k >= 1) & (k <= t), pk * t * (1.0 - rho) / (t - k + 1.0), 0.0)
    e_b = 8 * U * (abs(cb) * t + np.abs(v) + d * mean) / d + 4 * U * np.abs(bstar)
    if tail_err is None:
        slope = np.minimum(1.0, (tail + p_prev) * (1 + 2 * REL_SPECIAL))
        binom_err = REL_SPECIAL * (np.abs(term1) + term2)
    else:
        slope = np.minimum(1.0, (tail + tail_err + p_prev * (1 + REL_SPECIAL)) * (1 + 4 * U))
        binom_err = np.abs(mean - bstar) * tail_err * (1 + 4 * U) + REL_SPECIAL * term2
    err = (binom_err + 4 * U * (np.abs(term1) + term2)
           + e_b * np.where(e_b <= 1.0, slope, 1.0))
    return d * value, d * err * (1 + 4 * U), slope


def mode_pmf_on_range(k1, k2, t, rho):
    """max over integers k in [k1, k2] of P[Bin(t, rho) = k] (0 if the range is empty), using
    unimodality (the mode is floor((t+1) rho))."""
    k1 = np.maximum(np.ceil(k1), 0.0)
    k2 = np.minimum(np.floor(k2), t)
    mode = np.floor((t + 1.0) * rho)
    # floor((t+1) rho) is the argmax; its neighbours are checked too in case rounding of
    # (t+1) rho moved the floor by one.
    p = np.zeros(np.broadcast(k1, k2, t).shape)
    for shift in (-1.0, 0.0, 1.0):
        p = np.maximum(p, binom.pmf(np.clip(mode + shift, k1, k2), t, rho))
    return np.where(k1 > k2, 0.0, p * (1 + REL_SPECIAL))


def log_sum_exp(x: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ln sum_j b_j e^{x_j} along the last axis (b > 0), by the usual max shift: the same
    arithmetic as scipy.special.logsumexp (hence the same rounding, covered by the callers'
    8u (1 + lam max|c|) per user) without its per-call overhead (~0.3 ms); +inf on overflow."""
    with np.errstate(over="ignore", invalid="ignore"):
        top = x.max(axis=-1, keepdims=True)
        top[~np.isfinite(top)] = 0.0
        out = np.asarray(top[..., 0] + np.log(np.exp(x - top) @ b))
    out[np.isnan(out)] = np.inf
    return out


#: grid points of each pass of :func:`minimise_unimodal` (4 passes: the final step is
#: span / 64 * (2 / 64)^3 ~ 9e-6 for the Chernoff spans of 18 natural-log units)
MIN_GRID = 65
MIN_PASSES = 4
#: 0, 1, ..., MIN_GRID - 1: numpy.linspace's own steps (its arithmetic, without its ~4 us of
#: set-up per call; 12 calls per engine evaluation)
_GRID_STEPS = np.arange(MIN_GRID, dtype=float)
_GRID_STEPS.flags.writeable = False


def _grid(lo: float, hi: float) -> np.ndarray:
    """numpy.linspace(lo, hi, MIN_GRID) by the same arithmetic (step (hi - lo) / (MIN_GRID - 1)
    times 0..MIN_GRID - 1, plus lo, the last point set to hi): bit-identical for finite ends."""
    grid = _GRID_STEPS * ((hi - lo) / (MIN_GRID - 1)) + lo
    grid[-1] = hi
    return grid


def minimise_unimodal(fun, lo: float, hi: float) -> float:
    """min of a unimodal ``fun`` over [lo, hi]; ``fun`` takes an array of points. A grid, then
    three zooms on +-1 grid step around the best point (the minimiser of a unimodal function lies
    within one step of the best grid point). Callers use it for Chernoff exponents, where any
    point gives a valid bound, so only tightness depends on it: the final step (~1e-5) is finer
    than the 1e-4 tolerance of the bounded Brent search it replaces (~30 Python-level function
    calls, now 4 vectorized ones)."""
    best = math.inf
    first, last = lo, hi
    for _ in range(MIN_PASSES):
        grid = _grid(lo, hi)
        vals = np.asarray(fun(grid), dtype=float)
        vals = np.where(np.isnan(vals), np.inf, vals)
        i = int(np.argmin(vals))
        best = min(best, float(vals[i]))
        step = (hi - lo) / (MIN_GRID - 1)
        lo, hi = max(grid[i] - step, first), min(grid[i] + step, last)
    return best


def _log_mgf_sum(active: Sequence[Categories], lam: np.ndarray) -> np.ndarray:
    """sum_g n_g ln E e^{lam c} for an array of lam (rows), vectorized over lam."""
    lam = np.asarray(lam, dtype=float)[:, None]
    return sum(g.count * log_sum_exp(lam * g.c[None, :], g.w) for g in active)


def chernoff_tail(cats: Sequence[Categories], level: float) -> float:
    """Upper bound on P[S >= level] by Chernoff, min_{lam > 0} e^{-lam level} E e^{lam S},
    with the log-MGF rounding added (as in :func:`chernoff_upper`)."""
    active = [g for g in cats if g.count > 0]
    scale = math.sqrt(sum(g.count * g.variance for g in active)) or 1.0
    c_abs = max(float(np.abs(g.c).max()) for g in active)
    n_users = sum(g.count for g in active)
    mean = sum(g.count * g.mean for g in active)
    if mean >= level:
        return 1.0

    def log_bound(s):
        lam = np.exp(np.atleast_1d(np.asarray(s, dtype=float)))
        val = _log_mgf_sum(active, lam)
        return val - lam * level + n_users * 8 * U * (1 + lam * c_abs)

    guess = math.log(max(level - mean, 1e-300) / scale ** 2)
    best = min(minimise_unimodal(log_bound, guess - 12.0, guess + 6.0),
               float(log_bound(guess)[0]))
    return min(1.0, math.exp(min(best, 0.0)) + TINY)   # TINY: exp may underflow


def input_slack(cats: Sequence[Categories]) -> float:
    """Bound on |E[(S)_+] - E[(S')_+]| for S with the exact values a - e^eps b and S' with the
    computed ones: every user's value moves by at most c_err, so with A = sum_g n_g c_err the
    difference is at most A P[max(S, S') > 0] <= A P[S' >= -A] (Chernoff)."""
    total = sum(g.count * g.c_err for g in cats)
    if total == 0.0:
        return 0.0
    return total * chernoff_tail(cats, -total)


def chernoff_upper(cats: Sequence[Categories]) -> float:
    """Upper bound on E[(S)_+], S the sum over independent groups, from y_+ <= e^{lam y}/(lam e):
    E[S_+] <= min_{lam > 0} prod_g (sum_j w_j e^{lam c_j})^{n_g} / (lam e). Any lam is valid, so
    the numerical minimisation only affects tightness (the exponent is convex in lam, hence
    unimodal in ln lam: :func:`minimise_unimodal`); the rounding of the log-MGF (at most
    8u (1 + lam max|c|) per user) is added. Tight far in the tail (where delta(eps) is tiny),
    loose near the bulk; the engine intersects it with the other methods' brackets."""
    active = [g for g in cats if g.count > 0]
    scale = math.sqrt(sum(g.count * g.variance for g in active)) or 1.0
    c_abs = max(float(np.abs(g.c).max()) for g in active)
    n_users = sum(g.count for g in active)

    def log_bound(s):
        lam = np.exp(np.atleast_1d(np.asarray(s, dtype=float)))
        val = _log_mgf_sum(active, lam)
        return val - np.log(lam * math.e) + n_users * 8 * U * (1 + lam * c_abs)

    mean = sum(g.count * g.mean for g in active)
    guess = math.log(max(-mean, scale) / scale ** 2)
    best = min(minimise_unimodal(log_bound, guess - 12.0, guess + 6.0),
               float(log_bound(guess)[0]))
    return math.exp(min(best, 700.0)) + TINY            # TINY: exp may underflow


def excess_bound(var, dist):
    """Sharp bound E[(Y - a)_+] <= (sqrt(var + a^2) - a) / 2 for E Y = 0, Var Y <= var, a >= 0
    (written without cancellation)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(var > 0, var / (2.0 * (np.sqrt(var + dist * dist) + dist)), 0.0)


def chernoff_lambda(var, dist):
    """A good lam for the Chernoff bound of E(Y - a)_+ (optimal for Gaussian Y): any lam > 0
    gives a valid bound."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(var > 0, (dist + np.sqrt(dist * dist + 4 * var)) / (2 * var), np.inf)
