"""Clone-based amplification bounds: Feldman, McMillan and Talwar (002, "Hiding among the
clones", FMT21) and the "stronger clone" of Feldman et al. (SODA 2023) as restated in 000 Sec. 3.3.

Every function here is for the *generic* setting (any eps0-DP local randomizer, possibly adaptive)
unless its name says k-RR. Reference pair of the clone reduction (002 Thm 3.2; 000 Thm 1):

    C ~ Bin(n - 1, p_clone),  A ~ Bin(C, 1/2),  Delta ~ Bern(q),  q = e^eps0 / (e^eps0 + 1),
    P0 = (A + Delta, C - A + 1 - Delta),   P1 = (A + 1 - Delta, C - A + Delta),

with p_clone = e^-eps0 for the standard clone. The shuffled mechanism is (eps, delta)-DP whenever
D_{e^eps}(P0 || P1) <= delta (the pair is symmetric: D(P0||P1) = D(P1||P0), see below).

Evaluation (our equivalent of 002 App. F, Alg. 5-6): the total C + 1 is common to both, so
condition on C = c and let F = first count.
With B_c the pmf of Bin(c, 1/2),

    P0(F = a | c) = q B_c(a - 1) + (1 - q) B_c(a),   P1(F = a | c) = q B_c(a) + (1 - q) B_c(a - 1).

Since B_c(a - 1) / B_c(a) = a / (c + 1 - a) is increasing in a, P0 - e^eps P1 > 0 exactly for
a > tau_c = r (c + 1) / (1 + r), r = (e^eps q - (1 - q)) / (q - e^eps (1 - q)) (for eps < eps0), so

    D_c = alpha * P[Bin(c, 1/2) >= m] - beta * P[Bin(c, 1/2) > m],  m = floor(tau_c),
    alpha = q - e^eps (1 - q),  beta = e^eps q - (1 - q),

and delta(eps) = sum_c P[C = c] D_c: O(1) per c, vectorized over a window of c holding all but
~1e-24 of the mass of C (the rest is added as if D_c = 1). Every c is evaluated while the window
has at most 16384 values (n up to ~3e6 at eps0 = 1, i.e. exact); beyond, the window is cut into
16384 blocks charged at their left end, an upper bound because D_c is non-increasing in c (002
Lemma F.2; Alg. 6). The map a -> c + 1 - a sends P0 to P1, so both directions have the same
divergence. For eps >= eps0, D = 0 (the likelihood ratio of the pair is at most q/(1 - q) = e^eps0).

Conservative floating point: the binomial tails and pmfs come from ``scipy.stats.binom`` (Boost),
whose relative error we measured against 30-digit references (mpmath): <= 2e-13 at c = 1e4,
6e-13 at 1e6, 3.4e-12 at 1e7 for the tails, <= 1.7e-9 for pmfs at n = 1e8 (scipy.special.bdtrc
is far worse, 1e-8 at 1e7, and is not used). Each D_c is increased by
:func:`tail_relative_error` (c) times the magnitude of its two terms and the total by
:func:`pmf_relative_error` (n), both with a margin of >= 10 over those measurements (checked by
tests/test_clones.py when mpmath is present). The inversion eps(delta) is a bracketing search
that returns the upper end of a bracket on which delta(eps_R) <= delta was verified.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable

import numpy as np

from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.bounds.spec import (
    BoundSpec,
    any_ldp,
    generic,
    generic_delta,
)
from shufflesim.protocols.distributions import binom
from shufflesim.protocols.errors import ParameterError, require

#: Relative rounding allowance of closed-form expressions.
_REL_ERR = 1e-12
#: Mass of C ~ Bin(n - 1, p) left outside the evaluated window (charged in full to delta).
_TAIL_MASS = 1e-24
#: Default absolute tolerance of the eps(delta) bisection.
DEFAULT_TOL = 1e-9
#: Largest eps0 the closed-form and clone bounds accept: exp(eps0) must stay finite with room
#: to spare (exp overflows above ~709.78) and e^-eps0 a normal float.
EPSILON0_MAX = 700.0

FMT21 = "Feldman, McMillan, Talwar, Hiding among the clones (002)"


# -- validation shared by the closed-form modules ------------------------------------------------
def check_epsilon0(epsilon0: float, field: str = "epsilon0",
                   maximum: float | None = None) -> float:
    """eps0 as a float: finite and > 0, and at most ``maximum`` (default
    :data:`EPSILON0_MAX`), beyond which e^eps0 is not representable (a clean ParameterError: for
    an eps0-LDP randomizer the shuffle is eps0-DP anyway, so eps0 itself is the bound)."""
    require(
        isinstance(epsilon0, numbers.Real) and not isinstance(epsilon0, bool)
        and 0 < float(epsilon0) < math.inf,
        field, epsilon0, "must be a finite number > 0",
    )
    top = EPSILON0_MAX if maximum is None else maximum
    require(float(epsilon0) <= top, field, epsilon0,
            f"this bound handles eps0 <= {top:g} only (e^eps0 and the probabilities it "
            f"implies leave double precision); eps0 itself is a valid eps (eps0-LDP implies "
            f"eps0-DP after shuffling)")
    return float(epsilon0)


def krr_fields(randomizer) -> tuple[float, int]:
    """(eps0, k) of a k-RR randomizer, for the bounds specific to it (002 Thm 4.1, 004 Thm 3.1);
    ParameterError for any other randomizer."""
    if getattr(randomizer, "name", None) != "krr":
        raise ParameterError(
            "randomizer", getattr(randomizer, "name", randomizer),
            "this bound is specific to k-ary randomized response ('krr')",
        )
    return check_epsilon0(randomizer.epsilon0), int(randomizer.domain_size)


def check_n(n: int, minimum: int = 1) -> int:
    require(
        isinstance(n, numbers.Integral) and not isinstance(n, bool) and int(n) >= minimum,
        "n", n, f"must be an integer >= {minimum}",
    )
    return int(n)


def check_delta(delta: float, field: str = "delta") -> float:
    require(
        isinstance(delta, numbers.Real) and not isinstance(delta, bool) and 0 < float(delta) < 1,
        field, delta, "must lie in the open interval (0, 1)",
    )
    return float(delta)


def check_epsilon(epsilon: float) -> float:
    require(
        isinstance(epsilon, numbers.Real) and not isinstance(epsilon, bool)
        and 0 <= float(epsilon) < math.inf,
        "epsilon", epsilon, "must be a finite number >= 0",
    )
    return float(epsilon)


def round_up(value: float) -> float:
    """A closed-form value moved above its own floating-point error (a few ulps): x (1 + 1e-12)."""
    return float(value) * (1.0 + _REL_ERR)


# -- inversion delta(eps) -> eps(delta) --------------------------------------------------------
def smallest_epsilon(
    delta_of_epsilon: Callable[[float], float], delta: float, upper: float,
    tol: float = DEFAULT_TOL,
) -> tuple[float, float]:
    """Smallest eps in [0, upper] with delta_of_epsilon(eps) <= delta, by a safeguarded
    false-position (Illinois) search on log delta(eps) - log delta that keeps a bracket.

    ``delta_of_epsilon(upper)`` must be <= delta (callers pass the trivial bound eps0, where every
    bound here has delta = 0). Returns (eps_R, eps_R - eps_L) with eps_R - eps_L <= tol:
    delta_of_epsilon(eps_R) <= delta was verified and delta_of_epsilon(eps_L) > delta (or
    eps_L = 0 with eps_R = 0). If delta_of_epsilon is non-increasing, the smallest admissible eps
    lies in [eps_L, eps_R]; in any case eps_R is a valid guarantee of the bound.
    """
    log_target = math.log(delta)

    def gap(eps: float) -> float:
        value = delta_of_epsilon(eps)
        return math.log(value) - log_target if value > 0 else -math.inf

    g_lo = gap(0.0)
    if g_lo <= 0:
        return 0.0, 0.0
    lo, hi = 0.0, float(upper)
    g_hi = -math.inf  # delta(upper) <= delta by contract; its value is not needed
    stale = 0  # which end has stayed put (Illinois: halve its gap)
    while hi - lo > tol:
        width = hi - lo
        if math.isfinite(g_hi) and math.isfinite(g_lo):
            x = hi - g_hi * width / (g_hi - g_lo)
        else:
            x = lo + 0.5 * width
        # keep the step inside the bracket and at least tol/2 from its ends
        x = min(max(x, lo + 0.5 * tol), hi - 0.5 * tol)
        g = gap(x)
        if g <= 0:
            hi, g_hi = x, g
            if stale == -1:
                g_lo *= 0.5
            stale = -1
        else:
            lo, g_lo = x, g
            if stale == 1 and math.isfinite(g_hi):
                g_hi *= 0.5
            stale = 1
        if hi - lo > 0.5 * width and math.isfinite(g_hi):
            # poor progress: bisect once to guarantee the bracket shrinks geometrically
            mid = lo + 0.5 * (hi - lo)
            g = gap(mid)
            if g <= 0:
                hi, g_hi = mid, g
            else:
                lo, g_lo = mid, g
    return hi, hi - lo


# -- the clone reference pair ---------------------------------------------------------------------
def tail_relative_error(trials: np.ndarray | float) -> np.ndarray | float:
    """Allowance for the relative error of scipy.stats.binom.sf(m, c, 1/2) (see module
    docstring): 1e-11 + 1e-17 c."""
    return 1e-11 + 1e-17 * np.asarray(trials, dtype=float)


def pmf_relative_error(trials: float) -> float:
    """Allowance for the relative error of scipy.stats.binom.pmf(., trials, p): 1e-11 + 1e-15 n."""
    return 1e-11 + 1e-15 * float(trials)


class ClonePair:
    """The clone reference pair for fixed (eps0, n, clone probability).

    The window of C values holding all but ~2e-24 of the mass of C ~ Bin(n - 1, p) is split into
    at most ``max_points`` consecutive blocks [g_j, g_{j+1}); D_c is evaluated at each block's
    left end only and charged to the whole block's mass. D_c is non-increasing in c (002 Lemma
    F.2: more clones is a post-processing), so this is an upper bound (002 Alg. 6); it is exact
    when the window has at most ``max_points`` values (n up to ~3e6 at eps0 = 1).
    """

    def __init__(self, epsilon0: float, n: int, clone_probability: float,
                 max_points: int = 1 << 14) -> None:
        self.epsilon0 = check_epsilon0(epsilon0)
        self.n = check_n(n)
        require(
            isinstance(clone_probability, numbers.Real) and 0 <= clone_probability <= 1,
            "clone_probability", clone_probability, "must lie in [0, 1]",
        )
        self.q = 1.0 / (1.0 + math.exp(-self.epsilon0))  # e^eps0 / (e^eps0 + 1), a few ulps
        trials, p = self.n - 1, float(clone_probability)
        if trials == 0 or p == 0.0:
            self.c, self.weight, self.outside = np.zeros(1), np.ones(1), 0.0
            return
        # The upper end goes through the lower quantile of trials - C: isf is unreliable for
        # tiny tail masses.
        lo = int(binom.ppf(_TAIL_MASS, trials, p))
        hi = trials - int(binom.ppf(_TAIL_MASS, trials, 1.0 - p))
        lo, hi = max(lo, 0), min(max(hi, lo), trials)
        step = max(1, -(-(hi - lo + 1) // max_points))
        self.c = np.arange(lo, hi + 1, step, dtype=float)
        pmf = binom.pmf(np.arange(lo, hi + 1), trials, p)
        # block masses P[g_j <= C < g_{j+1}] as sums of pmfs (relative accuracy of the pmf)
        self.weight = np.add.reduceat(pmf, np.arange(0, pmf.size, step))
        self.outside = float(binom.cdf(lo - 1, trials, p) + binom.sf(hi, trials, p))

    def delta(self, epsilon: float) -> float:
        """Upper bound (rounded up, see module docstring) on D_{e^eps}(P0 || P1).

        Written so that nothing cancels (the defect of 1 - q followed by a product with e^eps at
        large eps0): with q = 1 / (1 + e^-eps0) and (1 - q) / q = e^-eps0,

            alpha = q - e^eps (1 - q) = q (1 - e^(eps - eps0)) = -q expm1(eps - eps0),
            beta = e^eps q - (1 - q) = q e^eps (1 - e^-(eps + eps0))
                 = -q e^eps expm1(-(eps + eps0)),
            r / (1 + r) = beta / (alpha + beta) = beta / (tanh(eps0 / 2) (1 + e^eps)),

        each to a few ulps. The threshold m = floor(tau_c) is also tried at m - 1 and m + 1:
        each candidate is the sum of P0 - e^eps P1 over a set of outcomes, hence at most the
        true D_c, so the maximum over the three is D_c itself even when rounding moved the
        floor by one (a wrong m alone would have been an under-estimate).
        """
        epsilon = check_epsilon(epsilon)
        if epsilon >= self.epsilon0:
            return 0.0
        q, e = self.q, math.exp(epsilon)
        alpha = q * -math.expm1(epsilon - self.epsilon0)
        beta = q * e * -math.expm1(-(epsilon + self.epsilon0))
        fraction = beta / (math.tanh(0.5 * self.epsilon0) * (1.0 + e))
        c = self.c
        m0 = np.minimum(np.floor(fraction * (c + 1.0)), c)
        best = np.full(c.shape, -np.inf)
        magnitude = np.zeros(c.shape)
        # the six tails of the three thresholds in one scipy call (its per-call overhead, not
        # the tails, dominated calibration: 0.15 of 0.2 s); element by element the same values
        ms = [np.clip(m0 + shift, 0.0, c) for shift in (-1.0, 0.0, 1.0)]
        tails = binom.sf(np.stack([m + k for m in ms for k in (-1.0, 0.0)]), c, 0.5)
        for i in range(3):
            at_least_m, above_m = tails[2 * i], tails[2 * i + 1]  # P[Bin >= m], P[Bin > m]
            value = alpha * at_least_m - beta * above_m
            better = value > best
            best = np.where(better, value, best)
            magnitude = np.where(better, alpha * at_least_m + beta * above_m, magnitude)
        d = np.clip(best, 0.0, None) + tail_relative_error(c) * magnitude
        total = (float(self.weight @ d) + self.outside) * (1.0 + pmf_relative_error(self.n))
        return min(1.0, total)


def clone_pair_delta(epsilon: float, epsilon0: float, n: int, clone_probability: float) -> float:
    """Upper bound (to floating-point accuracy, rounded up) on D_{e^eps}(P0 || P1) for the clone
    pair with C ~ Bin(n - 1, clone_probability) and Delta ~ Bern(e^eps0 / (e^eps0 + 1)).

    See the module docstring for the derivation (002 Lemma F.1, Alg. 5, evaluated for every c).
    """
    return ClonePair(epsilon0, n, clone_probability).delta(epsilon)


def fmt21_numerical_delta(epsilon: float, epsilon0: float, n: int) -> float:
    """002 Thm 3.2: delta(eps) of the standard clone pair, C ~ Bin(n - 1, e^-eps0)."""
    epsilon0 = check_epsilon0(epsilon0)
    return clone_pair_delta(epsilon, epsilon0, n, standard_clone_probability(epsilon0))


def stronger_clone_delta(epsilon: float, epsilon0: float, n: int) -> float:
    """Stronger clone (Feldman et al. SODA 2023, Cor. 3.4 + Lemma 5.1, as restated in 000 Sec.
    3.3, eq. (1)): with p = 1/(e^eps0 + 1), Delta_1 ~ Bern(e^eps0 p) = Bern(q) and
    Delta_2 = 1 - Delta_1, so the pair is the clone pair with C ~ Bin(n - 1, 2/(e^eps0 + 1)).

    Rests on the post-processing shown flawed in 000 Sec. 3.3: not a proven bound.
    """
    epsilon0 = check_epsilon0(epsilon0)
    return clone_pair_delta(epsilon, epsilon0, n, stronger_clone_probability(epsilon0))


def _numerical_result(method, clone_probability, epsilon0, n, delta, tol, status, reference,
                      note=""):
    epsilon0 = check_epsilon0(epsilon0)
    n = check_n(n)
    delta = check_delta(delta)
    require(isinstance(tol, numbers.Real) and 0 < tol < 1, "tol", tol, "must lie in (0, 1)")
    start = time.perf_counter()
    pair = ClonePair(epsilon0, n, clone_probability(epsilon0))
    eps, err = smallest_epsilon(pair.delta, delta, epsilon0, tol)
    return BoundResult(
        method=method, kind=BoundKind.UPPER, epsilon=eps, delta=delta, epsilon_error=err,
        status=status, reference=reference, seconds=time.perf_counter() - start, note=note,
    )


def standard_clone_probability(epsilon0: float) -> float:
    """Clone probability of the standard clone (002 Thm 3.2): e^-eps0."""
    return math.exp(-epsilon0)


def stronger_clone_probability(epsilon0: float) -> float:
    """Clone probability of the stronger clone (000 Sec. 3.3): 2 p = 2 / (e^eps0 + 1)."""
    return 2.0 / (math.exp(min(epsilon0, EPSILON0_MAX)) + 1.0)


def fmt21_numerical(epsilon0: float, n: int, delta: float, tol: float = DEFAULT_TOL) -> BoundResult:
    """002 Thm 3.2 (numerical generic bound): smallest eps with D_{e^eps}(P0 || P1) <= delta for
    the standard clone pair. Valid for every eps0 > 0, n >= 1, delta in (0, 1)."""
    return _numerical_result(
        "fmt21_numerical", standard_clone_probability, epsilon0, n, delta, tol, BoundStatus.PROVEN,
        f"{FMT21}, Thm 3.2 and App. F",
    )


def stronger_clone_numerical(
    epsilon0: float, n: int, delta: float, tol: float = DEFAULT_TOL
) -> BoundResult:
    """Stronger-clone generic bound (Feldman et al. SODA 2023; 000 Sec. 3.3 eq. (1)): clone pair
    with clone probability 2/(e^eps0 + 1). Status: relies on the flawed reduction."""
    return _numerical_result(
        "stronger_clone_numerical", stronger_clone_probability, epsilon0, n, delta, tol,
        BoundStatus.STRONGER_CLONE,
        "Feldman, McMillan, Talwar SODA 2023 (stronger clone), as restated in 000 Sec. 3.3",
        note="post-processing of the stronger clone reduction is flawed (000 Sec. 3.3)",
    )


# ------------------------------------------------------------------------------------------
# Catalogue entries
# ------------------------------------------------------------------------------------------
SPECS: tuple[BoundSpec, ...] = (
    BoundSpec(
        "fmt21_numerical", BoundKind.UPPER, "002 Thm 3.2 (clone reduction, numerical)",
        BoundStatus.PROVEN, "0 < eps0 <= 700, n >= 1", any_ldp, generic(fmt21_numerical),
        delta_at=generic_delta(fmt21_numerical_delta)),
    BoundSpec(
        "stronger_clone_numerical", BoundKind.UPPER,
        "Feldman, McMillan, Talwar SODA 2023 stronger clone (as restated in 000 Sec. 3.3)",
        BoundStatus.STRONGER_CLONE, "0 < eps0 <= 700, n >= 1", any_ldp,
        generic(stronger_clone_numerical), delta_at=generic_delta(stronger_clone_delta)),
)
