"""The two-count hockey-stick kernel of 001 (Thm 4.6, Alg. 1): D_{e^eps}(P || Q) between two
distributions of a pair of counts, as a guaranteed interval from binomial tails. Used by the
variation-ratio bounds (001's reduction pair P, Q: protocols.bounds.numerical.variation_ratio)
and by the post-processed lower bound of protocols.bounds.numerical.optimal.

Both 001's reduction pair P/Q and the lower-bound pair of Thm 5.1 are instances of one
family: n - 1 other users each land in category 0 w.p. s0, in category 1 w.p. s1 (else
elsewhere); the distinguished user lands in categories (0, 1, elsewhere) w.p.
u = (u0, u1, uw) under P and v = (v0, v1, vw) under Q; (a, b) are the two category counts. For
C = c others in the two categories, A | C ~ Bin(c, rho), rho = s0 / (s0 + s1), and (derived as
001 App. B and App. E, eq. 15)

    P(a, b) - e^eps Q(a, b)  has the sign of
    H(a, b) = s1 d0 a + s0 d1 b + s0 s1 d2 (n - a - b) / (1 - s0 - s1),
    d0 = u0 - e^eps v0,  d1 = u1 - e^eps v1,  d2 = uw - e^eps vw,

which is linear in a on each slice a + b = const. So on each slice the set where P > e^eps Q is a
half-line in a, and the hockey-stick divergence is an expectation over C of three binomial tails
(001 Thm 4.6 for rho = 1/2, Prop. 1 otherwise). It is evaluated on a window of C values with the
exact tail mass outside the window bounded by the largest possible slice term, the tails by
``scipy.special.betainc`` with a relative slack, and the few points whose side of the region
rounding may misjudge bounded explicitly (see :func:`two_count_divergence`): every returned
value is an interval (lower, upper) that contains the exact divergence.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from shufflesim.protocols.bounds.engine.common import Estimate
from shufflesim.protocols.distributions import binom
from shufflesim.protocols.errors import require, require_int_at_least

#: Relative error allowed for each betainc / binomial pmf value (generous: they are accurate to
#: a few ulps); the upper (lower) estimate adds (subtracts) this times the sum of |terms|.
_RELATIVE_SLACK = 1e-10
#: The same per value, when a product weight * tail is charged _RELATIVE_SLACK in all and the
#: tail's own error is bounded separately (tails by recurrence, :func:`_tail_at_least`).
_VALUE_SLACK = _RELATIVE_SLACK / 2
#: Relative rounding error allowed when locating a region threshold (> 100 ulps).
_ROUNDING = 1e-13
#: Mass of C ~ Bin(n - 1, s) left outside the summation window (its effect is bounded exactly).
_TAIL_TARGET = 1e-22
#: Windows of at least this many slices take their binomial tails by anchored recurrences
#: (:func:`_tail_at_least`): betainc every L slices, pmf terms in between, with
#: L = clip(sd / _BLOCK_PER_SD, 4, _BLOCK) for the inner binomial's sd (the recurrence's error
#: bound exceeds the direct route's by ~L / (2 sd): ~0.2% at n = 1e8; shorter windows are
#: cheap enough for betainc everywhere, which keeps the former brackets there).
_RECURSE_ABOVE = 16384
_BLOCK = 64
_BLOCK_PER_SD = 64
#: Largest step of the tail's start between neighbouring slices handled by the recurrence.
_MAX_STEP = 4
#: Unit roundoff of float64.
_UNIT = 2.0 ** -53


# ------------------------------------------------------------------------------------------
# The two-count hockey-stick kernel
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TwoCountPair:
    """The pair (P, Q) of count vectors described in the module docstring.

    n: number of users (n - 1 others); others: (s0, s1); first: (u0, u1) under P;
    second: (v0, v1) under Q. The remaining mass of each is the "elsewhere" category;
    ``exhaustive`` says the two categories cover every output (of every user), so the elsewhere
    masses are exactly 0 (and not the rounding residue of 1 - u0 - u1, or of 1 - s0 - s1).
    """

    n: int
    others: tuple[float, float]
    first: tuple[float, float]
    second: tuple[float, float]
    exhaustive: bool = False

    def __post_init__(self) -> None:
        require_int_at_least("n", self.n, 2)
        s0, s1 = self.others
        require(s0 > 0 and s1 > 0 and s0 + s1 <= 1 + 1e-12, "others", self.others,
                "category probabilities must be > 0 and sum to at most 1")
        for name, (a, b) in (("first", self.first), ("second", self.second)):
            require(a >= 0 and b >= 0 and a + b <= 1 + 1e-12, name, (a, b),
                    "category probabilities must be >= 0 and sum to at most 1")

    def swapped(self) -> TwoCountPair:
        """The reverse direction (Q, P)."""
        return TwoCountPair(self.n, self.others, self.second, self.first, self.exhaustive)


def _interval(lower: float, upper: float) -> Estimate:
    """A guaranteed bracket of a divergence (``value`` is the upper end)."""
    return Estimate(float(upper), float(lower), float(upper), "two-count")


def _binomial_at_least(k: np.ndarray, c: np.ndarray, rho: float) -> np.ndarray:
    """P[Bin(c, rho) >= k], exact via the regularized incomplete beta function."""
    out = np.where(k <= 0, 1.0, 0.0)
    inside = (k >= 1) & (k <= c)
    kk, cc = k[inside], c[inside]
    out[inside] = special.betainc(kk, cc - kk + 1.0, rho)
    return out


def _binomial_at_most(k: np.ndarray, c: np.ndarray, rho: float, rho_c: float) -> np.ndarray:
    """P[Bin(c, rho) <= k]; ``rho_c`` = 1 - rho computed accurately by the caller."""
    out = np.where(k >= c, 1.0, 0.0)
    inside = (k >= 0) & (k < c)
    kk, cc = k[inside], c[inside]
    out[inside] = special.betainc(cc - kk, kk + 1.0, rho_c)
    return out


def _window(m: int, s: float) -> tuple[int, int]:
    """[lo, hi] containing all but ~_TAIL_TARGET of Bin(m, s) (Bernstein's inequality); the
    exact mass outside is recomputed by the caller, so this only affects speed and tightness."""
    var = m * s * (1.0 - s)
    log_term = math.log(2.0 / _TAIL_TARGET)
    t = log_term / 3.0 + math.sqrt((log_term / 3.0) ** 2 + 2.0 * var * log_term)
    mean = m * s
    return max(0, int(math.floor(mean - t)) - 1), min(m, int(math.ceil(mean + t)) + 1)


@functools.lru_cache(maxsize=16)
def _weights(m: int, s: float):
    """The summation window of C ~ Bin(m, s): (lo, hi, slices c, weights pmf(c), mass outside),
    cached (they do not depend on eps: an eps search reuses them); arrays read-only."""
    lo, hi = _window(m, s)
    c = np.arange(lo, hi + 1, dtype=float)
    weight = binom.pmf(c, m, s)
    outside = float(binom.cdf(lo - 1, m, s)) + float(binom.sf(hi, m, s))
    c.flags.writeable = False
    weight.flags.writeable = False
    return lo, hi, c, weight, outside


def _slice_starts(slope: float, offset: np.ndarray, size: np.ndarray, tolerance: np.ndarray):
    """For each slice a + b = size: the integer start of {a : slope * a + offset > 0}, which is
    {a >= start} for slope > 0 and {a <= start} for slope < 0; the integer nearest the
    threshold -offset/slope; and a mask of the slices where that threshold lies within
    ``tolerance`` of the integer (the integer's side is then uncertain under rounding)."""
    threshold = np.clip(-offset / slope, -2.0, size + 2.0)
    start = np.floor(threshold) + 1.0 if slope > 0 else np.ceil(threshold) - 1.0
    nearest = np.round(threshold)
    return start, nearest, np.abs(threshold - nearest) <= tolerance


def _tail_at_least(k: np.ndarray, c: np.ndarray, rho: float, rho_c: float,
                   below: np.ndarray | None = None):
    """P[Bin(c, rho) >= k] and a bound on its absolute error, for ``c`` = consecutive integers
    (the summation window) and integer-valued ``k``.

    Long windows (>= _RECURSE_ABOVE slices) use the exact recurrence
    F(c + 1, k') = F(c, k') + rho pmf(k' - 1; c) and F(c, k') - F(c, k) = a sum of pmf(.; c):
    betainc only at an anchor every L slices (and the last; L: see _BLOCK_PER_SD), and from
    the nearer-in-error of the two anchors around a slice a cumulative sum of a few pmf terms
    per step (a pmf costs ~1/20 of a betainc). Error bound per slice: the anchor's and
    every term's relative error (_VALUE_SLACK each) plus the
    cumulative sum's rounding, gamma_L (anchor + sum of |terms|), L + 4 operations,
    and an underflow allowance.
    Short windows, or steps where k jumps by more than _MAX_STEP, use betainc everywhere (error
    0 here: the caller's relative slack covers it). ``rho_c`` = 1 - rho (accurate);
    ``below`` (optional): pmf(k - 1; c, rho), when the caller has it."""
    size = c.size
    steps = np.diff(k)
    widest = int(np.abs(steps).max()) if size > 1 else 0
    if size < _RECURSE_ABOVE or widest > _MAX_STEP:
        return _binomial_at_least(k, c, rho), 0.0
    kk, cc = k[:-1], c[:-1]
    if below is None:
        below = binom.pmf(k - 1.0, c, rho)
    # With X ~ Bin(c, rho), P[X + Bern(rho) >= j] = F(c, j) + rho pmf(j - 1), so the step
    # F(c + 1, k + d) - F(c, k) is a sum of pmf(.; c) terms of one sign (no cancellation):
    # d = 0: rho pmf(k - 1); d >= 1: -(pmf(k) + ... + pmf(k + d - 2)) - (1 - rho) pmf(k + d - 1);
    # d <= -1: pmf(k + d) + ... + pmf(k - 1) + rho pmf(k + d - 1).
    increment = np.where(steps == 0, rho * below[:-1], 0.0)
    for j in range(widest + 1):
        for mask, point, weights in (
                ((steps >= 1) & (j < steps), kk + j, (-1.0, -rho_c, steps - 1)),
                ((steps <= -1) & (j <= -steps), kk - 1.0 - j, (1.0, rho, -steps))):
            if not mask.any():
                continue
            if j == 0 and weights[0] > 0:
                term = below[:-1][mask]
            else:
                term = binom.pmf(point[mask], cc[mask], rho)
            unit, end, last_j = weights
            increment[mask] += np.where(last_j[mask] == j, end, unit) * term
    absolute = np.abs(increment)
    middle = c[size // 2]
    block = int(min(max(math.sqrt(middle * rho * rho_c) / _BLOCK_PER_SD, 4), _BLOCK))
    blocks = -(-size // block)
    starts = np.arange(blocks) * block
    anchors = _binomial_at_least(k[np.r_[starts, size - 1]], c[np.r_[starts, size - 1]], rho)
    first = anchors[:-1, None]
    last = np.r_[anchors[1:-1], anchors[-1]][:, None] if blocks > 1 else anchors[-1:, None]
    # step i (from slice i to i + 1) goes to row i // block, column i % block; padded steps
    # are 0, so a row's steps lead from its first slice to the next row's (or the last slice)
    padded = np.zeros(blocks * block)
    padded_abs = np.zeros(blocks * block)
    padded[:size - 1] = increment
    padded_abs[:size - 1] = absolute
    grid = padded.reshape(blocks, block)
    grid_abs = padded_abs.reshape(blocks, block)
    # forwards from the row's first slice, and backwards from the next anchor; each slice takes
    # the direction with the smaller error bound (backwards suits a falling tail)
    forward = np.zeros((blocks, block))
    forward_abs = np.zeros((blocks, block))
    np.cumsum(grid[:, :-1], axis=1, out=forward[:, 1:])
    np.cumsum(grid_abs[:, :-1], axis=1, out=forward_abs[:, 1:])
    backward = np.cumsum(grid[:, ::-1], axis=1)[:, ::-1]
    backward_abs = np.cumsum(grid_abs[:, ::-1], axis=1)[:, ::-1]
    spread_f = first + forward_abs
    spread_b = last + backward_abs
    use_b = spread_b < spread_f
    values = np.where(use_b, last - backward, first + forward).ravel()[:size]
    spread = np.where(use_b, spread_b, spread_f).ravel()[:size]
    gamma = (block + 4) * _UNIT / (1.0 - (block + 4) * _UNIT)
    # + an underflow allowance (betainc and pmf lose their relative accuracy below ~1e-260)
    error = (_VALUE_SLACK + gamma) * spread + 1e-200
    return np.clip(values, 0.0, 1.0), error


def _tail(slope: float, k: np.ndarray, c: np.ndarray, rho: float, rho_c: float,
          below: np.ndarray | None = None):
    """Mass of {a >= k} (slope > 0) or {a <= k} (slope < 0) under Bin(c, rho), with the bound
    on its absolute error of :func:`_tail_at_least`; P[Bin(c, rho) <= k] is read as
    P[Bin(c, rho_c) >= c - k] (as :func:`_binomial_at_most` does). ``below``: the pmf under
    Bin(c, rho) of the point just outside the set (k - 1 or k + 1), if known."""
    if slope > 0:
        return _tail_at_least(k, c, rho, rho_c, below)
    return _tail_at_least(c - k, c, rho_c, rho, below)


def _slice_masses(slope: float, starts: tuple, c: np.ndarray, rho: float, rho_c: float):
    """Masses under Bin(c, rho) of {a >= start} (slope > 0) or {a <= start} (slope < 0) for
    several start arrays: one tail at the deepest start and, for the others, that tail plus
    the few pmf terms in between (sums of positive terms: no cancellation). Returns the masses
    and, for each, 0 (direct betainc: the caller's _RELATIVE_SLACK covers the mass) or an array
    bounding its absolute error (recurrence: the tail's bound plus _VALUE_SLACK per pmf term)."""
    if slope > 0:
        base = np.maximum.reduce(starts)
        gaps = [base - start for start in starts]
    else:
        base = np.minimum.reduce(starts)
        gaps = [start - base for start in starts]
    # the points between a start and the base: base - 1 - t (slope > 0) or base + 1 + t
    # (slope < 0), t < gap; each pmf computed once, only where some start needs it
    step = -1.0 if slope > 0 else 1.0
    deepest = min(max(int(gap.max()) for gap in gaps), 6)
    points = [binom.pmf(base + step, c, rho)]
    for t in range(1, deepest):
        need = np.logical_or.reduce([(gap > t) & (gap <= 6) for gap in gaps])
        term = np.zeros(c.size)
        if need.any():
            term[need] = binom.pmf(base[need] + step * (t + 1), c[need], rho)
        points.append(term)
    tail, tail_error = _tail(slope, base, c, rho, rho_c, points[0])
    masses, errors = [], []
    for start, gap in zip(starts, gaps, strict=True):
        widest = int(gap.max())
        if widest > 6:
            mass, error = _tail(slope, start, c, rho, rho_c)
            masses.append(mass)
            errors.append(error)
            continue
        mass = tail.copy()
        for t in range(widest):
            mass += np.where(t < gap, points[t], 0.0)
        masses.append(mass)
        errors.append(tail_error if np.isscalar(tail_error)
                      else tail_error + _VALUE_SLACK * np.maximum(mass - tail, 0.0) * 1.01)
    return tuple(masses), tuple(errors)


def _is_mirror(pair: TwoCountPair) -> bool:
    """True when swapping the two categories maps P to Q: then D(P||Q) = D(Q||P)."""
    return (pair.others[0] == pair.others[1] and pair.first[0] == pair.second[1]
            and pair.first[1] == pair.second[0])


def _masses(slope, s0, coeff, scale, k2, k2_scale, slope_scale, n, c, rho, rho_c):
    """Region masses of the three components of the distinguished user on the slices C = c,
    and for each component the uncertain points (count, mask, slice size c')."""
    def tolerance(size, offset_scale):
        return _ROUNDING * (slope_scale * (size + 2.0) + offset_scale) / abs(slope)

    size_next = c + 1.0
    start_here, near_here, odd_here = _slice_starts(
        slope, s0 * coeff[1] * c + k2 * (n - c), c,
        tolerance(c, s0 * scale[1] * c + k2_scale * (n - c)))
    start_next, near_next, odd_next = _slice_starts(
        slope, s0 * coeff[1] * size_next + k2 * (n - size_next), size_next,
        tolerance(size_next, s0 * scale[1] * size_next + k2_scale * (n - size_next)))
    starts = (start_next - 1.0, start_next, start_here)
    masses, errors = _slice_masses(slope, starts, c, rho, rho_c)
    # The uncertain point a' of slice c' is seen by the user-in-category-0 component at its own
    # count a = a' - 1, by the other two at a = a'.
    uncertain = ((near_next - 1.0, odd_next, size_next), (near_next, odd_next, size_next),
                 (near_here, odd_here, c))
    return masses, errors, uncertain


def two_count_divergence(pair: TwoCountPair, epsilon: float) -> Estimate:
    """D_{e^eps}(P || Q) = sum_(a,b) (P(a,b) - e^eps Q(a,b))_+ for the pair (module docstring),
    as a guaranteed interval. O(sqrt(n)) betainc calls (a window of +- ~10 sigma of C).

    The region {P > e^eps Q} is decided once per output slice c' = a + b (threshold t(c')),
    and the three components of the distinguished user read it at (c + 1, a + 1), (c + 1, a)
    and (c, a) -- 001's low_{c+1} - 1, low_{c+1}, low_c -- so that each point is wholly in or
    out. Any region gives a lower estimate. For the upper estimate: a threshold is located to
    within _ROUNDING (> 100 ulps) of the magnitudes of the terms of H, so only the integer
    nearest it can be misjudged, and only when it lies that close to the threshold; there
    |P - e^eps Q| = |H| / (H_P + e^eps H_Q) * (P + e^eps Q) <= 2 _ROUNDING kappa (P + e^eps Q)
    with kappa = (terms of H) / (H_P + e^eps H_Q) bounded on the slice, and that is added.
    If the sign of the slope itself is uncertain the upper estimate is the trivial 1.
    """
    e_eps = math.exp(epsilon)
    n, m = pair.n, pair.n - 1
    s0, s1 = (float(x) for x in pair.others)
    s = s0 + s1
    rho, rho_c = s0 / s, s1 / s
    if pair.exhaustive or s > 1.0:  # no mass elsewhere (s > 1 is rounding): C = n - 1
        s = 1.0
    u0, u1 = (float(x) for x in pair.first)
    v0, v1 = (float(x) for x in pair.second)
    if pair.exhaustive:
        uw = vw = 0.0
    else:
        uw, vw = max(0.0, 1.0 - u0 - u1), max(0.0, 1.0 - v0 - v1)
    coeff = np.array([u0 - e_eps * v0, u1 - e_eps * v1, uw - e_eps * vw])
    scale = np.array([u0 + e_eps * v0, u1 + e_eps * v1, uw + e_eps * vw])
    if scale[2] != 0.0:
        require(s < 1.0, "others", pair.others,
                "the others must leave mass outside both categories when the distinguished "
                "user can land there")
        k2, k2_scale = (s0 * s1 / (1.0 - s)) * coeff[2], (s0 * s1 / (1.0 - s)) * scale[2]
    else:
        k2, k2_scale = 0.0, 0.0
    # H(a', b') = slope * a' + s0 d1 c' + k2 (n - c') on the slice c' = a' + b'.
    slope = s1 * coeff[0] - s0 * coeff[1]
    slope_scale = s1 * scale[0] + s0 * scale[1]

    lo, hi, c, weight, outside = _weights(m, s)
    extra = 0.0  # bound on the points whose side is uncertain (upper estimate only)
    if abs(slope) <= _ROUNDING * slope_scale:
        # The direction of the half-lines is uncertain: a lower estimate from the region
        # {H > 0} taken as constant on each slice, and the trivial upper estimate.
        here = (s0 * coeff[1] * c + k2 * (n - c) > 0).astype(float)
        following = (s0 * coeff[1] * (c + 1.0) + k2 * (n - c - 1.0) > 0).astype(float)
        masses = (following, following, here)
        errors = (0.0, 0.0, 0.0)
        extra = 1.0
    else:
        masses, errors, uncertain = _masses(slope, s0, coeff, scale, k2, k2_scale,
                                            slope_scale, n, c, rho, rho_c)
        # |P - e^eps Q| <= 2 _ROUNDING kappa (P + e^eps Q) at an uncertain point, where kappa
        # bounds (magnitude of the terms of H) / (H_P + e^eps H_Q) on its slice.
        smaller = min(s1 * scale[0], s0 * scale[1])
        for j, (point, odd, size) in enumerate(uncertain):
            if scale[j] == 0.0 or not odd.any():
                continue
            cc, sz = c[odd], size[odd]
            terms = (slope_scale * (sz + 2.0) + s0 * scale[1] * sz + k2_scale * (n - sz))
            floor = smaller * sz + k2_scale * (n - sz)
            with np.errstate(divide="ignore", invalid="ignore"):
                factor = np.where(floor > 0, np.minimum(1.0, 2.0 * _ROUNDING * terms / floor),
                                  1.0)
            extra += scale[j] * float(np.sum(
                factor * weight[odd] * binom.pmf(point[odd], cc, rho)))
    value = 0.0
    absolute = 0.0
    scaled = 0.0
    recurrence = 0.0  # components whose tails came by recurrence: their own error bound
    for j in range(3):
        if scale[j] == 0.0:
            continue
        total = float(np.sum(weight * masses[j]))
        value += coeff[j] * total
        scaled += scale[j] * total
        if np.isscalar(errors[j]):
            absolute += abs(coeff[j]) * total
        else:
            # the weights' relative error, plus the masses' bound (tail and pmf terms)
            recurrence += abs(coeff[j]) * (_VALUE_SLACK * total + float(
                np.sum(weight * errors[j]))) * (1.0 + 1e-12)
    # relative error of the tails and weights, and rounding of the coefficients u - e^eps v
    rounding = _RELATIVE_SLACK * absolute + 1e-15 * scaled + recurrence
    upper = value + rounding + extra + outside * float(np.clip(coeff, 0, None).sum())
    lower = value - rounding - outside * float(np.clip(-coeff, 0, None).sum())
    return _interval(max(0.0, lower), min(1.0, max(0.0, upper)))


def two_count_delta(pair: TwoCountPair, epsilon: float) -> Estimate:
    """max(D(P||Q), D(Q||P)) as a guaranteed interval."""
    forward = two_count_divergence(pair, epsilon)
    if _is_mirror(pair):
        return forward
    backward = two_count_divergence(pair.swapped(), epsilon)
    return _interval(max(forward.lower, backward.lower), max(forward.upper, backward.upper))
