"""Wang's variation-ratio framework (001): parameters, numerical and closed-form upper bounds,
and the lower bound of Thm 5.1.

The reduction (001 Thm 4.2)
---------------------------
A randomizer has the (p, beta)-variation property if every pair of output distributions has
ratio at most p and total variation at most beta, and the q-ratio property if
R(x1)(y) <= q R(xi)(y) for all inputs (001 Sec. 4). With alpha = beta / (p - 1) and
r = alpha p / q, 001 Thm 4.2 bounds every divergence of the shuffled outputs by that of

    P = (A + D1, C - A + D2),   Q = (A + D2, C - A + D1),
    C ~ Bin(n - 1, 2r),  A | C ~ Bin(C, 1/2),
    (D1, D2) = (1, 0) w.p. p alpha, (0, 1) w.p. alpha, (0, 0) otherwise.

**Status.** 000 Sec. 3.3 shows that the "stronger clone" reduction of Feldman et al. (SODA 2023),
which 001 Lemma 4.4 generalises, rests on a wrong post-processing step. Every upper bound here
that goes through Thm 4.2 (numerical, Thm 4.7, Thm 4.8) therefore carries the status
``relies-on-stronger-clone-reduction``; the auditor compares them with exact lower bounds.
The lower bound of Thm 5.1 is a genuine post-processing of the shuffled output of a concrete
neighbouring pair and is ``proven``. It exposes the flaw: with the other users at a third value,
k-RR (k >= 3) gives exactly 001's pair, so both bounds agree (001 Sec. 5); but with all other
users at x0 the lower bound can exceed 001's upper bound (4-RR, eps0 = 4, n = 100,
delta = 1e-6: lower 3.9998 > "upper" 3.687; tests/test_variation_ratio.py).

The two-count kernel
--------------------
Both P/Q above and the lower-bound pair of Thm 5.1 are instances of one family: n - 1 other users
each land in category 0 w.p. s0, in category 1 w.p. s1 (else elsewhere); the distinguished user
lands in categories (0, 1, elsewhere) w.p. u = (u0, u1, uw) under P and v = (v0, v1, vw) under
Q; (a, b) are the two category counts. For C = c others in the two categories,
A | C ~ Bin(c, rho), rho = s0 / (s0 + s1), and (derived as 001 App. B and App. E, eq. 15)

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

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from scipy import special, stats

from protocols.bounds.engine import core as engine
from protocols.bounds.engine.common import Estimate
from protocols.bounds.engine.core import EpsilonEstimate
from protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from protocols.bounds.spec import BoundSpec, any_ldp, discrete_output, register
from protocols.errors import require, require_int_at_least, require_probability_open
from protocols.randomizers.base import Randomizer
from protocols.randomizers.registry import randomizer_class, randomizer_names

#: Relative error allowed for each betainc / binomial pmf value (generous: they are accurate to
#: a few ulps); the upper (lower) estimate adds (subtracts) this times the sum of |terms|.
_RELATIVE_SLACK = 1e-10
#: Relative rounding error allowed when locating a region threshold (> 100 ulps).
_ROUNDING = 1e-13
#: Mass of C ~ Bin(n - 1, s) left outside the summation window (its effect is bounded exactly).
_TAIL_TARGET = 1e-22

REFERENCE_NUMERICAL = "001 Thm 4.2 + Thm 4.6, Alg. 1"
REFERENCE_THM47 = "001 Thm 4.7"
REFERENCE_THM48 = "001 Thm 4.8"
REFERENCE_LOWER = "001 Thm 5.1, Prop. 1, Alg. 3"


# ------------------------------------------------------------------------------------------
# Parameters (001 Sec. 4.1, Tables 1, 2, 5; Thm 6.1)
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class VariationRatioParameters:
    """(p, beta, q) of 001 Sec. 4: ratio bound p > 1, total variation bound
    0 <= beta <= (p - 1)/(p + 1), and ratio to the other users' distributions q >= 1."""

    p: float
    beta: float
    q: float
    source: str = ""

    def __post_init__(self) -> None:
        require(_is_real(self.p) and 1.0 < self.p < math.inf, "p", self.p,
                "must be a finite number > 1")
        require(_is_real(self.q) and 1.0 <= self.q < math.inf, "q", self.q,
                "must be a finite number >= 1")
        limit = (self.p - 1.0) / (self.p + 1.0)
        require(_is_real(self.beta) and 0.0 <= self.beta <= limit * (1.0 + 1e-12), "beta",
                self.beta, f"must lie in [0, (p - 1)/(p + 1)] = [0, {limit:.6g}]")
        object.__setattr__(self, "beta", float(min(self.beta, limit)))

    @property
    def alpha(self) -> float:
        """alpha = beta / (p - 1): the weight of each clone component of user 1 (001 Lemma 4.3)."""
        return self.beta / (self.p - 1.0)

    @property
    def r(self) -> float:
        """r = alpha p / q: each other user is a clone of either component w.p. r (Lemma 4.3)."""
        return self.alpha * self.p / self.q

    def describe(self) -> str:
        text = f"p={self.p:.6g}, beta={self.beta:.6g}, q={self.q:.6g}"
        return f"{text} ({self.source})" if self.source else text


#: Largest eps0 of the variation-ratio bounds: p = e^eps0 and the binomial kernels must stay
#: finite floats.
EPSILON0_MAX = 700.0


def check_epsilon0(randomizer) -> None:
    """ParameterError when the randomizer's eps0 exceeds :data:`EPSILON0_MAX`."""
    eps0 = float(randomizer.epsilon0)
    require(eps0 <= EPSILON0_MAX, "epsilon0", randomizer.epsilon0,
            f"the variation-ratio bounds handle eps0 <= {EPSILON0_MAX:g} (e^eps0 must be a "
            f"finite float); eps0 itself is a valid eps")


def _is_real(value: object) -> bool:
    return isinstance(value, (int, float, np.floating)) and not isinstance(value, bool)


def generic_parameters(epsilon0: float) -> VariationRatioParameters:
    """Any eps0-LDP randomizer: p = q = e^eps0, beta = (e^eps0 - 1)/(e^eps0 + 1)
    (001 Table 1 row "general mechanisms"; beta from Kairouz et al. [36, Thm 2.4])."""
    require(_is_real(epsilon0) and 0 < epsilon0 < 700, "epsilon0", epsilon0,
            "must be a finite number in (0, 700)")
    e = math.exp(epsilon0)
    return VariationRatioParameters(e, math.tanh(epsilon0 / 2.0), e, "001 Table 1, general")


def specific_parameter_names() -> list[str]:
    """Registered randomizer names that declare a specific row
    (``variation_ratio_parameters``); the others use the generic row."""
    return [name for name in randomizer_names()
            if randomizer_class(name).variation_ratio_parameters
            is not Randomizer.variation_ratio_parameters]


def parameters_for(randomizer) -> VariationRatioParameters:
    """The tightest (p, beta, q) known for ``randomizer`` (001 Tables 1, 5): the row it declares
    (``variation_ratio_parameters``), else the generic row, valid for every eps0-LDP randomizer.

    The built-in rows have p = q = e^eps0 (identical eps0-LDP users, 001 Sec. 4) and beta the
    worst-case total variation between two output distributions.
    """
    check_epsilon0(randomizer)
    generic = generic_parameters(randomizer.epsilon0)
    declared = getattr(randomizer, "variation_ratio_parameters", None)
    row = declared() if callable(declared) else None
    if row is None:
        return generic
    # Round the closed form up by far more than its floating-point error (the bounds are
    # non-decreasing in beta), never beyond the generic row.
    beta = min(row.beta * (1.0 + 1e-12), generic.beta)
    return VariationRatioParameters(row.p, beta, row.q, row.source)


def parallel_parameters(epsilon0: float, betas, probabilities) -> VariationRatioParameters:
    """Advanced parallel composition (001 Thm 6.1, Alg. 2): a user runs base randomizer k with
    probability P_k; with every base eps0-LDP with total variation beta_k, the parallel
    randomizer has p = q = e^eps0 and beta = sum_k P_k beta_k."""
    betas = np.asarray(betas, dtype=float)
    probabilities = np.asarray(probabilities, dtype=float)
    require(betas.shape == probabilities.shape and betas.ndim == 1 and betas.size > 0,
            "probabilities", probabilities.tolist(), "needs one probability per base beta")
    require(bool(np.all(probabilities >= 0)) and abs(probabilities.sum() - 1) < 1e-9,
            "probabilities", probabilities.tolist(), "must be >= 0 and sum to 1")
    generic = generic_parameters(epsilon0)
    require(bool(np.all((betas >= 0) & (betas <= generic.beta * (1 + 1e-12)))), "betas",
            betas.tolist(), f"must lie in [0, {generic.beta:.6g}] for eps0 = {epsilon0}")
    return VariationRatioParameters(generic.p, float(betas @ probabilities), generic.q,
                                    "001 Thm 6.1, parallel composition")


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


def _slice_starts(slope: float, offset: np.ndarray, size: np.ndarray, tolerance: np.ndarray):
    """For each slice a + b = size: the integer start of {a : slope * a + offset > 0}, which is
    {a >= start} for slope > 0 and {a <= start} for slope < 0; the integer nearest the
    threshold -offset/slope; and a mask of the slices where that threshold lies within
    ``tolerance`` of the integer (the integer's side is then uncertain under rounding)."""
    threshold = np.clip(-offset / slope, -2.0, size + 2.0)
    start = np.floor(threshold) + 1.0 if slope > 0 else np.ceil(threshold) - 1.0
    nearest = np.round(threshold)
    return start, nearest, np.abs(threshold - nearest) <= tolerance


def _slice_masses(slope: float, starts: tuple, c: np.ndarray, rho: float, rho_c: float):
    """Masses under Bin(c, rho) of {a >= start} (slope > 0) or {a <= start} (slope < 0) for
    several start arrays: one betainc call at the deepest start and, for the others, that tail
    plus the few pmf terms in between (sums of positive terms: no cancellation)."""
    if slope > 0:
        base = np.maximum.reduce(starts)
        tail = _binomial_at_least(base, c, rho)
        gaps = [base - start for start in starts]
    else:
        base = np.minimum.reduce(starts)
        tail = _binomial_at_most(base, c, rho, rho_c)
        gaps = [start - base for start in starts]
    masses = []
    for start, gap in zip(starts, gaps, strict=True):
        widest = int(gap.max())
        if widest > 6:
            masses.append(_binomial_at_least(start, c, rho) if slope > 0
                          else _binomial_at_most(start, c, rho, rho_c))
            continue
        mass = tail.copy()
        for i in range(widest):
            # the points between: start, ..., base - 1 (slope > 0) or base + 1, ..., start
            point = start + i if slope > 0 else start - i
            mass += np.where(i < gap, stats.binom.pmf(point, c, rho), 0.0)
        masses.append(mass)
    return tuple(masses)


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
    masses = _slice_masses(slope, starts, c, rho, rho_c)
    # The uncertain point a' of slice c' is seen by the user-in-category-0 component at its own
    # count a = a' - 1, by the other two at a = a'.
    uncertain = ((near_next - 1.0, odd_next, size_next), (near_next, odd_next, size_next),
                 (near_here, odd_here, c))
    return masses, uncertain


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

    lo, hi = _window(m, s)
    c = np.arange(lo, hi + 1, dtype=float)
    weight = stats.binom.pmf(c, m, s)
    extra = 0.0  # bound on the points whose side is uncertain (upper estimate only)
    if abs(slope) <= _ROUNDING * slope_scale:
        # The direction of the half-lines is uncertain: a lower estimate from the region
        # {H > 0} taken as constant on each slice, and the trivial upper estimate.
        here = (s0 * coeff[1] * c + k2 * (n - c) > 0).astype(float)
        following = (s0 * coeff[1] * (c + 1.0) + k2 * (n - c - 1.0) > 0).astype(float)
        masses = (following, following, here)
        extra = 1.0
    else:
        masses, uncertain = _masses(slope, s0, coeff, scale, k2, k2_scale, slope_scale, n, c,
                                    rho, rho_c)
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
                factor * weight[odd] * stats.binom.pmf(point[odd], cc, rho)))
    value = 0.0
    absolute = 0.0
    scaled = 0.0
    for j in range(3):
        if scale[j] == 0.0:
            continue
        total = float(np.sum(weight * masses[j]))
        value += coeff[j] * total
        absolute += abs(coeff[j]) * total
        scaled += scale[j] * total
    outside = float(stats.binom.cdf(lo - 1, m, s)) + float(stats.binom.sf(hi, m, s))
    # relative error of the tails and weights, and rounding of the coefficients u - e^eps v
    rounding = _RELATIVE_SLACK * absolute + 1e-15 * scaled
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


def reduction_pair(params: VariationRatioParameters, n: int) -> TwoCountPair:
    """The pair (P^q_{beta,p}, Q^q_{beta,p}) of 001 Thm 4.2."""
    a, r = params.alpha, params.r
    return TwoCountPair(n, (r, r), (params.p * a, a), (a, params.p * a))


# ------------------------------------------------------------------------------------------
# eps(delta) by bracketing
# ------------------------------------------------------------------------------------------
def invert(delta_fn: Callable[[float], Estimate], delta: float, side: str,
           eps_max: float) -> EpsilonEstimate:
    """eps(delta) with the engine's bracketing
    (:func:`protocols.bounds.engine.core.epsilon_of_delta`, relative tolerance 1e-6), so that
    every bound is conservative the same way."""
    return engine.epsilon_of_delta(delta_fn, delta, side, eps_max=eps_max, rtol=1e-6)


def _check_common(n: int, delta: float) -> None:
    require_int_at_least("n", n, 2)
    require_probability_open("delta", delta)


# ------------------------------------------------------------------------------------------
# Upper bounds
# ------------------------------------------------------------------------------------------
def reduction_delta(params: VariationRatioParameters, n: int, epsilon: float) -> Estimate:
    """max(D_{e^eps}(P||Q), D_{e^eps}(Q||P)) for 001's P^q_{beta,p}, Q^q_{beta,p} (Thm 4.6)."""
    require_int_at_least("n", n, 2)
    if params.beta == 0.0:
        return _interval(0.0, 0.0)
    return two_count_delta(reduction_pair(params, n), epsilon)


def numerical_epsilon(params: VariationRatioParameters, n: int, delta: float,
                      iterations: int | None = None) -> EpsilonEstimate:
    """The numerical upper bound of 001 Alg. 1: smallest eps in [0, log p] with
    max(D(P||Q), D(Q||P)) <= delta, on the conservative side.

    ``iterations=T`` reproduces the paper's T-step bisection on [0, log p] exactly (it returns
    eps_H, an upper bound for every T); by default the bracket is refined to relative 1e-7.
    """
    _check_common(n, delta)
    eps_max = math.log(params.p)
    if params.beta == 0.0:
        return EpsilonEstimate(0.0, 0.0, 0.0, 0.0, False, 0)
    pair = reduction_pair(params, n)
    if iterations is None:
        found = invert(lambda e: two_count_delta(pair, e), delta, "upper", eps_max)
        if found.saturated:
            # the upper estimate at log p exceeded delta only through its slack: the ratio
            # P/Q is at most p, so delta(log p) = 0 exactly.
            return replace(found, value=eps_max, upper=eps_max, error=eps_max - found.lower)
        return found
    require_int_at_least("iterations", iterations, 1)
    low, high = 0.0, eps_max
    for _ in range(iterations):
        mid = 0.5 * (low + high)
        if two_count_delta(pair, mid).upper > delta:
            low = mid
        else:
            high = mid
    return EpsilonEstimate(high, low, high, high - low, False, iterations)


def theorem_4_7_epsilon(params: VariationRatioParameters, n: int, delta: float) -> float:
    """001 Thm 4.7 (analytic bound), with Omega = 2r(n-1) - sqrt(min(6r, 1/2)(n-1) log(4/delta)):

        eps = log(1 + beta (2 sqrt(Omega L/2) + 1)
                      / (alpha Omega + beta (Omega/2 - sqrt(Omega L/2))
                         + (1 - alpha - alpha p)(n - 1 - Omega) r/(1 - 2r)))

    with L = log(4/delta). Regime (001 Thm 4.7 and App. C): the coefficient of C in the
    denominator gamma = (p+1) alpha/2 - (1-alpha-alpha p) r/(1-2r) must be >= 0 and the bound
    F(C) must be non-increasing for C >= Omega. The paper states the latter as Omega >= a
    threshold whose printed form is garbled in our copy; we use the exact condition re-derived
    from App. C: with x = sqrt(C), F' < 0 iff gamma sqrt(L/2) x^2 + gamma x - sqrt(L/2)(D0 +
    beta/2) > 0, D0 = (1-alpha-alpha p)(n-1) r/(1-2r), i.e. C > x*^2 for the positive root x*;
    and the denominator must be positive on [Omega, n-1].
    """
    _check_common(n, delta)
    p, beta, alpha, r = params.p, params.beta, params.alpha, params.r
    if beta == 0.0:
        return 0.0
    big_l = math.log(4.0 / delta)
    k = big_l / 2.0
    rest = (1.0 - alpha - alpha * p) * r / (1.0 - 2.0 * r)
    gamma = (p + 1.0) * alpha / 2.0 - rest
    require(gamma >= 0.0, "epsilon0", math.log(p),
            f"Thm 4.7 needs (p+1) alpha/2 - (1-alpha-alpha p) r/(1-2r) >= 0 (it is {gamma:.4g})")
    omega = 2.0 * r * (n - 1) - math.sqrt(min(6.0 * r, 0.5) * (n - 1) * big_l)
    d0 = rest * (n - 1)
    if gamma > 0:
        root = (-gamma + math.sqrt(gamma**2 + 4.0 * gamma * math.sqrt(k) * math.sqrt(k)
                                   * (d0 + beta / 2.0))) / (2.0 * gamma * math.sqrt(k))
        threshold = root**2
    else:
        threshold = math.inf
    require(omega > 0 and omega >= threshold, "n", n,
            f"Thm 4.7 needs Omega = {omega:.4g} >= {threshold:.4g} (F non-increasing beyond "
            "Omega); increase n")

    def denominator(cc: float) -> float:
        return alpha * cc + beta * (cc / 2.0 - math.sqrt(cc * k)) + rest * (n - 1 - cc)

    den = denominator(omega)
    require(den > 0 and gamma - beta * math.sqrt(k) / (2.0 * math.sqrt(omega)) >= 0, "n", n,
            "Thm 4.7 needs a positive, non-decreasing denominator beyond Omega; increase n")
    return math.log1p(beta * (2.0 * math.sqrt(omega * k) + 1.0) / den)


def theorem_4_8_epsilon(params: VariationRatioParameters, n: int, delta: float) -> float:
    """001 Thm 4.8 (asymptotic bound), valid for n >= 8 log(2/delta) / r:

        eps = log(1 + beta / ((1 - c)(1 + p) beta/(p - 1) + c)
                      * (sqrt(32 log(4/delta) / (r (n - 1))) + 4 / (r n))),
        r = p beta / ((p - 1) q),  c = max(0, (4/9)(1 - 3r)/(1 - 2r)).
    """
    _check_common(n, delta)
    p, beta, r = params.p, params.beta, params.r
    if beta == 0.0:
        return 0.0
    needed = 8.0 * math.log(2.0 / delta) / r
    require(n >= needed, "n", n, f"Thm 4.8 needs n >= 8 log(2/delta)/r = {needed:.6g}")
    c = max(0.0, 4.0 / 9.0 * (1.0 - 3.0 * r) / (1.0 - 2.0 * r))
    factor = beta / ((1.0 - c) * (1.0 + p) * beta / (p - 1.0) + c)
    return math.log1p(factor * (math.sqrt(32.0 * math.log(4.0 / delta) / (r * (n - 1)))
                                + 4.0 / (r * n)))


def _upper_result(method: str, reference: str, epsilon: float, error: float, delta: float,
                  params: VariationRatioParameters, started: float, note: str = "") -> BoundResult:
    text = params.describe() + (f"; {note}" if note else "")
    cap = math.log(params.p)
    if epsilon > cap:
        # the shuffled mechanism is always log(p)-DP (p bounds every output ratio of R)
        epsilon, error = cap, 0.0
        text += "; capped at log p = eps0: no amplification shown"
    return BoundResult(method=method, kind=BoundKind.UPPER, epsilon=float(epsilon),
                       delta=float(delta), epsilon_error=float(error),
                       status=BoundStatus.STRONGER_CLONE, reference=reference,
                       seconds=time.perf_counter() - started, note=text)


def numerical_bound(randomizer, n: int, delta: float, *, generic: bool = False,
                    iterations: int | None = None) -> BoundResult:
    """001 Alg. 1 with the randomizer's parameters (or the generic eps0-LDP row)."""
    started = time.perf_counter()
    params = generic_parameters(randomizer.epsilon0) if generic else parameters_for(randomizer)
    search = numerical_epsilon(params, n, delta, iterations)
    method = "variation-ratio-generic" if generic else "variation-ratio"
    return _upper_result(method, REFERENCE_NUMERICAL, search.value, search.error, delta,
                         params, started)


def analytic_bound(randomizer, n: int, delta: float) -> BoundResult:
    """001 Thm 4.7 with the randomizer's parameters (closed form: no numerical error)."""
    started = time.perf_counter()
    params = parameters_for(randomizer)
    eps = theorem_4_7_epsilon(params, n, delta)
    return _upper_result("variation-ratio-thm4.7", REFERENCE_THM47, eps, 0.0, delta, params,
                         started)


def asymptotic_bound(randomizer, n: int, delta: float) -> BoundResult:
    """001 Thm 4.8 with the randomizer's parameters (closed form)."""
    started = time.perf_counter()
    params = parameters_for(randomizer)
    eps = theorem_4_8_epsilon(params, n, delta)
    return _upper_result("variation-ratio-thm4.8", REFERENCE_THM48, eps, 0.0, delta, params,
                         started)


# ------------------------------------------------------------------------------------------
# Lower bound (001 Thm 5.1)
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LowerCandidate:
    """A neighbouring pair (x0, x1) with the other users all at x*, post-processed by
    g(y) = category 0 if R(x0)(y) > R(x1)(y), 1 if R(x0)(y) < R(x1)(y), else elsewhere
    (001 Thm 5.1 proof). Inputs are anchor indices (see :func:`lower_candidates`)."""

    x0: int
    x1: int
    x_star: int
    pair: TwoCountPair


def _anchor_count(randomizer) -> int:
    domain = randomizer.input_domain
    if hasattr(domain, "size"):
        return int(domain.size)
    return int(randomizer.output_pmf().shape[0])


def lower_candidates(randomizer, n: int) -> list[LowerCandidate]:
    """Candidate triples for Thm 5.1.

    Anchors are the categorical inputs, or for interval inputs the rows of the randomizer's
    default ``output_pmf`` (its extreme inputs). The pair is (0, 1) for categorical inputs (all
    registered categorical randomizers are symmetric under relabelling) and (first, last)
    anchors otherwise. x* ranges over x0, x1 and the anchor maximising
    min(R(x0)(Y0)/R(x*)(Y0), R(x1)(Y1)/R(x*)(Y1)) (001 Thm 5.1's choice); each candidate is a
    valid lower bound, so taking the best of several only tightens it.
    Needs a finite output space (001 Thm 5.1): continuous randomizers raise ParameterError.
    """
    require(randomizer.output_size is not None, "randomizer", randomizer.name,
            "001 Thm 5.1 needs a finite output domain")
    check_epsilon0(randomizer)
    count = _anchor_count(randomizer)
    x0, x1 = (0, 1) if hasattr(randomizer.input_domain, "size") else (0, count - 1)
    if hasattr(randomizer.input_domain, "size"):
        others = [2] if count >= 3 else []
    else:
        others = [x for x in range(count) if x not in (x0, x1)]
    groups = randomizer.output_groups((x0, x1, *others))
    mass = groups.mass
    higher0, higher1 = mass[0] > mass[1], mass[1] > mass[0]
    u = (float(mass[0][higher0].sum()), float(mass[0][higher1].sum()))
    v = (float(mass[1][higher0].sum()), float(mass[1][higher1].sum()))
    star_masses = np.stack([mass[:, higher0].sum(axis=1), mass[:, higher1].sum(axis=1)], axis=1)
    anchors = (x0, x1, *others)
    chosen = {0, 1}
    if len(anchors) > 2:
        with np.errstate(divide="ignore", invalid="ignore"):  # 0/0 when nothing distinguishes
            ratio = np.nan_to_num(np.minimum(u[0] / star_masses[2:, 0],
                                             v[1] / star_masses[2:, 1]), nan=0.0)
        chosen.add(2 + int(np.argmax(ratio)))
    candidates = []
    for index in sorted(chosen):
        s0, s1 = star_masses[index]
        if s0 <= 0 or s1 <= 0:
            continue
        pair = TwoCountPair(n, (float(s0), float(s1)), u, v,
                            exhaustive=not (~(higher0 | higher1)).any())
        candidates.append(LowerCandidate(x0, x1, anchors[index], pair))
    require(bool(candidates), "randomizer", randomizer.name,
            "no neighbouring pair with outputs that distinguish it")
    return candidates


def triple_candidate(randomizer, n: int, x0: int, x1: int, x_star: int) -> LowerCandidate | None:
    """The Thm 5.1 post-processing (categories: outputs more likely under x0, more likely under
    x1, the rest) of the concrete pair X0 = (x0, x*, ..., x*), X1 = (x1, x*, ..., x*), i.e. of
    000 Thm 14's pair for the triple (x0, x1, x*), for a randomizer with a categorical input
    domain. Post-processing cannot increase a divergence, so its divergence is a proven lower
    bound on that pair's (001 Thm 5.1 proof). None when n < 2 or the pair is indistinguishable
    this way."""
    if n < 2 or not hasattr(randomizer.input_domain, "size"):
        return None
    groups = randomizer.output_groups((int(x0), int(x1), int(x_star)))
    mass = np.asarray(groups.mass)
    higher0, higher1 = mass[0] > mass[1], mass[1] > mass[0]
    u = (float(mass[0][higher0].sum()), float(mass[0][higher1].sum()))
    v = (float(mass[1][higher0].sum()), float(mass[1][higher1].sum()))
    s0, s1 = float(mass[2][higher0].sum()), float(mass[2][higher1].sum())
    if s0 <= 0 or s1 <= 0:
        return None
    pair = TwoCountPair(int(n), (s0, s1), u, v, exhaustive=not (~(higher0 | higher1)).any())
    return LowerCandidate(int(x0), int(x1), int(x_star), pair)


def lower_delta(candidates: list[LowerCandidate], epsilon: float) -> Estimate:
    """max over candidates and both directions of the Thm 5.1 divergence (a lower bound on the
    shuffled mechanism's delta(eps) for its worst neighbouring pair)."""
    best = _interval(0.0, 0.0)
    for candidate in candidates:
        value = two_count_delta(candidate.pair, epsilon)
        if value.lower > best.lower:
            best = value
    return best


def lower_bound(randomizer, n: int, delta: float) -> BoundResult:
    """001 Thm 5.1 lower bound on the shuffled eps(delta) (status proven: data processing on a
    concrete neighbouring pair, no reduction involved)."""
    started = time.perf_counter()
    _check_common(n, delta)
    candidates = lower_candidates(randomizer, n)
    search = invert(lambda e: lower_delta(candidates, e), delta, "lower",
                    float(randomizer.epsilon0))
    best = max(candidates, key=lambda cand: two_count_delta(cand.pair, search.value).lower)
    note = f"pair (x0, x1) = anchors ({best.x0}, {best.x1}), others at anchor {best.x_star}"
    return BoundResult(method="variation-ratio-lower", kind=BoundKind.LOWER,
                       epsilon=float(search.value), delta=float(delta),
                       epsilon_error=float(search.error), status=BoundStatus.PROVEN,
                       reference=REFERENCE_LOWER, seconds=time.perf_counter() - started,
                       note=note)


# ------------------------------------------------------------------------------------------
# Catalogue entries
# ------------------------------------------------------------------------------------------
register(BoundSpec(
    "variation-ratio", BoundKind.UPPER,
    REFERENCE_NUMERICAL + " with the randomizer's (p, beta, q) (Tables 1, 5)",
    BoundStatus.STRONGER_CLONE,
    "any eps0 > 0, n >= 2; randomizers without a table row use the generic row",
    any_ldp, numerical_bound, scope="specific"))
register(BoundSpec(
    "variation-ratio-generic", BoundKind.UPPER,
    REFERENCE_NUMERICAL + " with the generic row p = q = e^eps0, beta = tanh(eps0/2)",
    BoundStatus.STRONGER_CLONE, "any eps0 > 0, n >= 2", any_ldp,
    lambda r, n, delta: numerical_bound(r, n, delta, generic=True)))
register(BoundSpec(
    "variation-ratio-thm4.7", BoundKind.UPPER, REFERENCE_THM47 + " (analytic)",
    BoundStatus.STRONGER_CLONE,
    "(p+1) alpha/2 >= (1-alpha-alpha p) r/(1-2r) and Omega beyond the turning point of F "
    "(large enough n)", any_ldp, analytic_bound, scope="specific"))
register(BoundSpec(
    "variation-ratio-thm4.8", BoundKind.UPPER, REFERENCE_THM48 + " (asymptotic)",
    BoundStatus.STRONGER_CLONE, "n >= 8 log(2/delta) / r, r = p beta / ((p - 1) q)", any_ldp,
    asymptotic_bound, scope="specific"))
register(BoundSpec(
    "variation-ratio-lower", BoundKind.LOWER, REFERENCE_LOWER, BoundStatus.PROVEN,
    "finite output domain", discrete_output, lower_bound, scope="specific"))
