"""Shuffled k-RR at small n: the privacy curve of every dataset pair, by its count statistic.

k-RR reports its input with probability p = e^eps0 / (e^eps0 + k - 1) and each other value with
q = 1 / (e^eps0 + k - 1). Let user 1 hold x0 (law P0) or x1 (law P1) and the n - 1 others hold
n0 copies of x0, n1 of x1 and nr values outside {x0, x1}. The statistic here is
Y = (number of reports x0, number of reports x1):

    Z = Tri(n0; p, q) + Tri(n1; q, p) + Tri(nr; q, q)      (the others; Tri(m; a, b) is the
                                                            pair of counts of a trinomial),
    P0(y) = p Z(y - e0) + q Z(y - e1) + r Z(y),  P1(y) = q Z(y - e0) + p Z(y - e1) + r Z(y),

r = 1 - p - q. For k = 3 the others outside {x0, x1} all hold the third value, and Y is the
whole histogram (the third count is n - Y0 - Y1): D_{e^eps}(P0 || P1) is then exactly the
hockey-stick divergence of that dataset pair (000 Thm 12: the histogram is sufficient), and
delta(eps) = max over (n0, n1, nr) of it; swapping x0 and x1 maps direction P1 || P0 at
(n0, n1) to P0 || P1 at (n1, n0), so one direction over every (n0, n1) covers both. For k > 3
Y is a post-processing of the histogram of any dataset whose nr others hold values outside
{x0, x1}, so every (n0, n1, nr) gives a proven *lower* bound (000 Thm 14's triples (0, 1, 2),
(0, 1, 1), (0, 1, 0) are the corners nr = n - 1, n1 = n - 1, n0 = n - 1). It is not an upper
bound for k > 3: where the nr others hold several values, the counts of those values tell the
adversary how many of them reported uniformly (the blanket count), which Y hides.

**Certified numerics.** The largest class's trinomial is evaluated in closed form
(log-gamma; relative error <= REL_TRI); the other users are added one at a time,
Z'(a, b) = r_u Z(a, b) + a_u Z(a - 1, b) + b_u Z(a, b - 1), sums of non-negative terms
(relative error <= 3u per user). P0 and P1 are non-negative combinations (3u more). The
divergence sum_y (P0 - e^eps P1)_+ is bracketed by the relative error times P0 + e^eps P1 on
each term. A configuration's eps(delta) is bracketed by bisection on the certified ends; the
bound is the maximum over the configurations evaluated (upper: all of them; lower: every one
is a real pair).

Cost: (n + 1)^2 cells per configuration and up to n^2 / 2 configurations; ``krr-exact``
enumerates them up to n = MAX_N_FULL and beyond that covers them by blocks of datasets dominated
by revealing reports (protocols/bounds/numerical/krr3_blocks.py: the same exact curve, bracket
~1e-6 relative) while the blocks' windows stay small (krr3_blocks.MAX_CELLS);
``krr-exact-lower`` evaluates the corners' neighbourhoods (any subset of pairs
is a lower bound; at the n <= 100 points checked the worst pair was within them) up to
MAX_N_CORNERS. Bounds:
``krr-exact`` (k = 3, upper, proven: the exact curve over every dataset) and
``krr-exact-lower`` (k >= 3, lower, proven: the best pair found).
"""

from __future__ import annotations

import math
import time

import numpy as np
from scipy.special import gammaln

from shufflesim.protocols.bounds.engine.common import REL_SPECIAL, U
from shufflesim.protocols.bounds.numerical import krr3_blocks
from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.bounds.spec import BoundSpec, named
from shufflesim.protocols.errors import require, require_int_at_least, require_probability_open

__all__ = ["PairCurve", "config_delta", "config_pmf", "krr_exact_epsilon",
           "krr_exact_lower_epsilon", "krr_pair_curve"]

REFERENCE = ("exact over every dataset pair of shuffled k-RR by the counts of x0 and x1 "
             "(000 Thm 12 sufficiency), derived in protocols/bounds/numerical/krr_exact.py")
#: relative error of a closed-form trinomial pmf (log-gamma of arguments <= 1e4; generous)
REL_TRI = 10 * REL_SPECIAL
#: every dataset pair is evaluated up to this n (k = 3: the exact upper bound)
MAX_N_FULL = 100
#: krr-exact's dominated blocks (krr3_blocks) run up to this n (and MAX_CELLS)
MAX_N_BLOCKS = 10**6
#: the lower bound's corner neighbourhoods are evaluated up to this n
MAX_N_CORNERS = 1500
#: Smallest probability 1 - p of reporting another value that krr-exact(-lower) accepts
#: (floating-point limit of its windowed trinomials, _check).
MIN_OTHER_PROBABILITY = 1e-8
#: corner neighbourhood: configurations with at most this many users outside the corner class
CORNER_RADIUS = 3
#: relative eps tolerance of each configuration's bisection
EPS_RTOL = 1e-9


def _probabilities(epsilon0: float, k: int) -> tuple[float, float, float]:
    e0 = math.exp(epsilon0)
    p = e0 / (e0 + k - 1)
    q = 1.0 / (e0 + k - 1)
    return p, q, max(1.0 - p - q, 0.0)


def _trinomial(m: int, a: float, b: float, size: int) -> np.ndarray:
    """P[(A, B) = (i, j)] for m users each counted in A with probability a, in B with b
    (closed form), on a (size, size) array."""
    out = np.zeros((size, size))
    i = np.arange(m + 1, dtype=float)[:, None]
    j = np.arange(m + 1, dtype=float)[None, :]
    rest = m - i - j
    ok = rest >= 0
    c = 1.0 - a - b
    with np.errstate(divide="ignore", invalid="ignore"):
        log_c = math.log(c) if c > 0 else -math.inf
        logp = (gammaln(m + 1.0) - gammaln(i + 1) - gammaln(j + 1)
                - gammaln(np.where(ok, rest, 0) + 1)
                + i * math.log(a) + j * math.log(b) + np.where(rest > 0, rest * log_c, 0.0))
        block = np.where(ok, np.exp(logp), 0.0)
    out[: m + 1, : m + 1] = block
    return out


def config_pmf(epsilon0: float, k: int, n0: int, n1: int, nr: int) -> tuple[np.ndarray, float]:
    """Z, the law of (reports x0, reports x1) of the n0 + n1 + nr others, on an
    (n, n) array (n = n0 + n1 + nr + 1), and the relative error bound of every entry."""
    p, q, r = _probabilities(epsilon0, k)
    size = n0 + n1 + nr + 1
    classes = [(n0, p, q), (n1, q, p), (nr, q, q)]
    big = max(range(3), key=lambda c: classes[c][0])
    m, a, b = classes[big]
    z = _trinomial(m, a, b, size)
    rel = REL_TRI
    for c, (count, a_u, b_u) in enumerate(classes):
        if c == big:
            continue
        r_u = 1.0 - a_u - b_u
        for _ in range(count):
            new = r_u * z
            new[1:, :] += a_u * z[:-1, :]
            new[:, 1:] += b_u * z[:, :-1]
            z = new
            rel += 4 * U
    return z, rel + 4 * U


def _curve_terms(z: np.ndarray, epsilon0: float, k: int):
    """(P0, P1) on the (n + 1, n + 1) outputs for user 1 at x0 / x1 (module docstring)."""
    p, q, r = _probabilities(epsilon0, k)
    size = z.shape[0] + 1
    zz = np.zeros((size, size))
    zz[:-1, :-1] = z
    s0 = np.zeros((size, size))
    s0[1:, :-1] = z
    s1 = np.zeros((size, size))
    s1[:-1, 1:] = z
    p0 = p * s0 + q * s1 + r * zz
    p1 = q * s0 + p * s1 + r * zz
    return p0.ravel(), p1.ravel()


class PairCurve:
    """One configuration's D(eps) = sum (P0 - e^eps P1)_+ with certified ends (outputs sorted
    by their likelihood ratio, so each evaluation is a suffix sum)."""

    def __init__(self, p0: np.ndarray, p1: np.ndarray, rel: float) -> None:
        keep = p0 > 0
        p0, p1 = p0[keep], p1[keep]
        with np.errstate(divide="ignore"):
            ratio = np.where(p1 > 0, np.log(p0) - np.log(np.where(p1 > 0, p1, 1.0)), np.inf)
        order = np.argsort(ratio)
        self.ratio = ratio[order]
        self.p0 = p0[order]
        self.p1 = p1[order]
        self.rel = rel + 8 * U
        # suffix sums of P0 and P1 (non-negative: relative error <= len u)
        self.s0 = np.concatenate([np.cumsum(self.p0[::-1])[::-1], [0.0]])
        self.s1 = np.concatenate([np.cumsum(self.p1[::-1])[::-1], [0.0]])
        self.rel_sum = self.rel + (self.p0.size + 2) * U

    def delta(self, epsilon: float) -> tuple[float, float]:
        """(lower, upper) of D(eps). The terms with P0 > e^eps P1 are those whose computed
        log ratio exceeds eps up to the log ratio's error (2 rel from P0 and P1, and each log's
        rounding, <= 2 ulp of |ln P| <= 745: 1e-12 covers both logs): terms within that margin
        are bounded by their P0 on the upper side and left out on the lower."""
        e = math.exp(epsilon)
        margin = 2 * self.rel + 1e-12
        lo_i = int(np.searchsorted(self.ratio, epsilon + margin, side="right"))
        hi_i = int(np.searchsorted(self.ratio, epsilon - margin, side="left"))
        sure = self.s0[lo_i] - e * self.s1[lo_i]
        size = self.s0[lo_i] + e * self.s1[lo_i]
        lower = max(0.0, sure - self.rel_sum * size - 4 * U * size)
        maybe = self.s0[hi_i] - self.s0[lo_i]            # P0 of the uncertain terms
        upper = max(sure, 0.0) + self.rel_sum * size + 4 * U * size + maybe * (1 + self.rel_sum)
        return lower, upper * (1 + 4 * U)

    def epsilon(self, delta: float, eps_max: float) -> tuple[float, float]:
        """(lower, upper) of this pair's eps(delta) in [0, eps_max]: upper = an eps whose
        certified D is <= delta, lower = an eps whose certified D is > delta (0 if none).
        ``eps_max`` = eps0 needs no evaluation: the shuffled output of an eps0-LDP randomizer
        is eps0-DP (post-processing), so D(eps0) = 0."""
        lo_ok, hi_ok = 0.0, eps_max
        if self.delta(0.0)[1] <= delta:
            return 0.0, 0.0
        for _ in range(200):
            if hi_ok - lo_ok <= EPS_RTOL * hi_ok:
                break
            mid = 0.5 * (lo_ok + hi_ok)
            lower, upper = self.delta(mid)
            if upper <= delta:
                hi_ok = mid
            elif lower > delta:
                lo_ok = mid
            else:
                break            # numerical resolution reached: the bracket stays certified
        certified_lower = lo_ok if self.delta(lo_ok)[0] > delta else 0.0
        return certified_lower, hi_ok


class WindowedCurve(PairCurve):
    """A PairCurve of a population computed on windows (krr3_blocks.population): the exact
    law's mass outside the windows, ``out``, moves each of P0, P1 by at most ``out`` in total,
    so D(eps) moves by at most (1 + e^eps) out, added to the upper end and taken from the
    lower one."""

    def __init__(self, p0: np.ndarray, p1: np.ndarray, rel: float, out: float) -> None:
        super().__init__(p0, p1, rel)
        self.out = out

    def delta(self, epsilon: float) -> tuple[float, float]:
        lower, upper = super().delta(epsilon)
        slack = (1.0 + math.exp(epsilon)) * self.out * (1 + 1e-12)
        return max(0.0, lower - slack), upper + slack


def windowed_pair_curve(epsilon0: float, k: int, n0: int, n1: int, nr: int,
                        out_target: float) -> WindowedCurve:
    """The certified curve of configuration (n0, n1, nr) from windowed trinomials (product of
    two binomial pmfs, krr3_blocks) convolved directly: the same pair as krr_pair_curve at a
    cost independent of the users added one at a time."""
    z = krr3_blocks.population(epsilon0, n0, n1, nr, 0, out_target, direct=True, k=k)
    p, q, r = _probabilities(epsilon0, k)
    zz, s0, s1 = krr3_blocks.user_one_shifts(z.z)
    p0 = (p * s0 + q * s1 + r * zz).ravel()
    p1 = (q * s0 + p * s1 + r * zz).ravel()
    return WindowedCurve(p0, p1, z.rel + krr3_blocks.REL_PARAMETERS + 8 * U, z.out)


def krr_pair_curve(epsilon0: float, k: int, n0: int, n1: int, nr: int) -> PairCurve:
    """The certified curve of configuration (n0, n1, nr), direction P0 || P1."""
    z, rel = config_pmf(epsilon0, k, n0, n1, nr)
    p0, p1 = _curve_terms(z, epsilon0, k)
    return PairCurve(p0, p1, rel + 4 * U)


def config_delta(epsilon: float, epsilon0: float, k: int, n0: int, n1: int,
                 nr: int) -> tuple[float, float]:
    """(lower, upper) of D_{e^eps}(P0 || P1) for configuration (n0, n1, nr)."""
    return krr_pair_curve(epsilon0, k, n0, n1, nr).delta(epsilon)


def _all_configs(n: int):
    """Every (n0, n1, nr) with n0 + n1 + nr = n - 1, corners first (where the maximum is
    usually found, so that the screening of the others is effective)."""
    corners = _corner_configs(n)
    seen = set(corners)
    rest = [(a, b, n - 1 - a - b) for a in range(n) for b in range(n - a)
            if (a, b, n - 1 - a - b) not in seen]
    return corners + rest


def _corner_configs(n: int):
    out = []
    for main in range(3):
        for x in range(CORNER_RADIUS + 1):
            for y in range(CORNER_RADIUS + 1 - x):
                if x + y > n - 1:
                    continue
                counts = [0, 0, 0]
                others = [c for c in range(3) if c != main]
                counts[others[0]], counts[others[1]] = x, y
                counts[main] = n - 1 - x - y
                cfg = tuple(counts)
                if cfg not in out:
                    out.append(cfg)
    return out


def _search(randomizer, n: int, delta: float, side: str):
    """max over the configurations of their certified eps(delta) ends; returns (lower, upper,
    best configuration). Upper: every configuration (k = 3); a configuration whose certified
    D(best) is <= delta cannot raise the maximum (D is non-increasing in eps), so it is
    skipped after one evaluation."""
    epsilon0 = float(randomizer.epsilon0)
    k = int(randomizer.domain_size)
    configs = _all_configs(n) if side == "upper" else _corner_configs(n)
    best_lo, best_hi, where = 0.0, 0.0, configs[0]
    for cfg in configs:
        curve = krr_pair_curve(epsilon0, k, *cfg)
        if best_hi > 0:
            lower, upper = curve.delta(best_hi)
            if upper <= delta:
                continue
        lo, hi = curve.epsilon(delta, epsilon0)
        if lo > best_lo:
            best_lo, where = lo, cfg
        best_hi = max(best_hi, hi)
    return best_lo, min(best_hi, epsilon0), where


def _check(randomizer, n: int, delta: float, limit: int) -> None:
    require_int_at_least("n", n, 1)
    require(n <= limit, "n", n, f"evaluates every dataset pair only up to n = {limit}")
    require_probability_open("delta", delta)
    epsilon0 = float(randomizer.epsilon0)
    require(0 < epsilon0 <= 50, "epsilon0", epsilon0, "needs 0 < eps0 <= 50")
    k = int(getattr(randomizer, "domain_size", 3))
    # the windowed trinomials divide by 1 - p = (k - 1) / (e^eps0 + k - 1) and by theta's
    # distance from 1: below MIN_OTHER_PROBABILITY they round to 0 (eps0 = 50 divided by zero)
    require((k - 1.0) / (math.exp(epsilon0) + k - 1.0) >= MIN_OTHER_PROBABILITY, "epsilon0",
            epsilon0, f"needs 1 - p = (k - 1) / (e^eps0 + k - 1) >= {MIN_OTHER_PROBABILITY:g} "
            "for its windowed trinomials; use exact-lower / optimal-blanket")


def krr_exact_epsilon(randomizer, n: int, delta: float) -> BoundResult:
    """Upper bound for 3-RR: the exact eps(delta) over every dataset pair (module docstring),
    its certified upper end."""
    start = time.perf_counter()
    _check(randomizer, n, delta, MAX_N_BLOCKS)
    require(int(randomizer.domain_size) == 3, "domain_size", randomizer.domain_size,
            "krr-exact is exact for k = 3 only (for k > 3 the counts of the other values "
            "matter; krr-exact-lower holds for every k)")
    if n > MAX_N_FULL:
        return _by_blocks(randomizer, n, delta, start)
    lower, upper, where = _search(randomizer, n, delta, "upper")
    return BoundResult("krr-exact", BoundKind.UPPER, float(upper), float(delta),
                       float(max(0.0, upper - lower)), BoundStatus.PROVEN, REFERENCE,
                       time.perf_counter() - start,
                       f"exact curve over every dataset pair; worst (n0, n1, nr) = {where}")


def _by_blocks(randomizer, n: int, delta: float, start: float) -> BoundResult:
    """krr-exact beyond MAX_N_FULL: krr3_blocks' refinement (its module docstring)."""
    epsilon0 = float(randomizer.epsilon0)
    cells = krr3_blocks.block_cells(epsilon0, n)
    require(cells <= krr3_blocks.MAX_CELLS, "n", n,
            f"krr-exact's blocks need windows of ~{cells:.0f} cells at eps0 = {epsilon0:g} "
            f"(limit {krr3_blocks.MAX_CELLS}); use optimal-blanket")
    lower, upper, where, pairs = krr3_blocks.krr3_epsilon(epsilon0, n, delta, _corner_configs(n))
    return BoundResult("krr-exact", BoundKind.UPPER, float(min(upper, epsilon0)), float(delta),
                       float(max(0.0, upper - lower)), BoundStatus.PROVEN, REFERENCE,
                       time.perf_counter() - start,
                       f"exact curve over every dataset pair by dominated blocks ({pairs} "
                       f"populations); best pair (n0, n1, nr) = {where}")


def krr_exact_lower_epsilon(randomizer, n: int, delta: float) -> BoundResult:
    """Lower bound for any k: the best dataset pair (n0 copies of x0, n1 of x1, nr others at
    one value outside {x0, x1}) over the corners' neighbourhoods (n <= MAX_N_CORNERS; cheap:
    ~30 pairs), its certified lower end. krr-exact's bracket has the best pair over every
    configuration as its lower end (k = 3, n <= MAX_N_FULL)."""
    start = time.perf_counter()
    _check(randomizer, n, delta, MAX_N_CORNERS)
    require(_is_krr_with_a_third_value(randomizer), "domain_size",
            getattr(randomizer, "domain_size", None),
            "krr-exact-lower needs k >= 3 (2-RR is binary RR: use brr-exact or exact-lower)")
    # each pair on windows with bounded outside mass (windowed_pair_curve): the same pairs as
    # _search(..., "lower") at a fraction of its one-user-at-a-time cost (n = 1000: 2.3 s)
    epsilon0, k = float(randomizer.epsilon0), int(randomizer.domain_size)
    lower, upper, where = 0.0, 0.0, _corner_configs(n)[0]
    for cfg in _corner_configs(n):
        curve = windowed_pair_curve(epsilon0, k, *cfg, krr3_blocks.OUT_FRACTION * delta)
        lo, hi = curve.epsilon(delta, epsilon0)
        if lo > lower:
            lower, where = lo, cfg
        upper = max(upper, hi)
    scope = "the corners' neighbourhoods"
    return BoundResult("krr-exact-lower", BoundKind.LOWER, float(lower), float(delta),
                       float(max(0.0, upper - lower)), BoundStatus.PROVEN, REFERENCE,
                       time.perf_counter() - start,
                       f"best dataset pair over {scope}; at (n0, n1, nr) = {where}")


def _is_krr_with_a_third_value(randomizer) -> bool:
    """k-RR with k >= 3: the pairs' other users may hold a value outside {x0, x1}. For k = 2
    there is none (a "third value" reporting x0 and x1 with q each would put mass on an output
    that does not exist, and the "lower bound" of such a pair rose above the truth: 2-RR,
    eps0 = 1, n = 200, delta = 1e-6 gave 0.3535 against brr-exact's 0.3182); 2-RR is binary RR,
    for which brr-exact and exact-lower hold."""
    return named("krr")(randomizer) and int(getattr(randomizer, "domain_size", 0)) >= 3


def _is_krr3(randomizer) -> bool:
    return named("krr")(randomizer) and int(getattr(randomizer, "domain_size", 0)) == 3


SPECS: tuple[BoundSpec, ...] = (
    BoundSpec(
        "krr-exact", BoundKind.UPPER, "exact privacy curve of shuffled 3-RR over every dataset "
        "pair (count statistic, 000 Thm 12 sufficiency; beyond n = 100 by blocks of datasets "
        "dominated by revealing reports)",
        BoundStatus.PROVEN, f"k-RR with k = 3, n <= {MAX_N_BLOCKS}, windows <= {krr3_blocks.MAX_CELLS} cells "
        "(eps0 = 2: n <= 238; 4: n <= 1253; 10: n <= 4.8e5)", _is_krr3,
        krr_exact_epsilon, scope="specific"),
    BoundSpec(
        "krr-exact-lower", BoundKind.LOWER, "best dataset pair of shuffled k-RR over the counts "
        "of x0, x1 and the rest among the other users (000 Thm 14 generalized to mixed others)",
        BoundStatus.PROVEN, f"k-RR with k >= 3, n <= {MAX_N_CORNERS}", _is_krr_with_a_third_value,
        krr_exact_lower_epsilon, scope="specific"),
)
