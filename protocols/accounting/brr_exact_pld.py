"""Composed shuffled binary RR from its exact privacy curve over every dataset (issue 31).

Upper bound, ``brr-exact`` (proven): a dominating pair built from the exact curve
delta(eps) = max_k D_k(eps) of protocols.bounds.numerical.brr_exact (every dataset, both
directions, upper estimates). As a function of gamma = e^eps each D_k is a hockey-stick
divergence, hence convex, so their maximum is convex; the curve is symmetric
(D(P1 || P0; k) = D(P0 || P1; n - 1 - k)), so for eps < 0 it is 1 - e^eps + e^eps delta(-eps),
and it vanishes from eps0 on (every shuffled round is eps0-DP). On the grid eps_i = i h,
|i| <= m = ceil(eps0 / h):

1. u_i = upper estimates of delta(eps_i) (i >= 0), mirrored for i < 0;
2. v = the greatest convex minorant of the points (e^eps_i, u_i), in 50-digit arithmetic: the
   true curve is convex and <= u at the nodes, so it is <= v at the nodes, and the linear
   interpolation of v between nodes lies above the true curve (convexity);
3. the pessimistic connect-the-dots PLD of v (Doroshenko, Ghazi, Kamath, Kumar, Manurangsi 2022,
   Alg. 1; the masses are >= 0 because v is convex, and the implied second distribution has
   mass <= 1 because the slopes of v lie in [-1, 0]): a real pair (P, Q) whose hockey-stick
   curve is that interpolation, so it dominates every neighbouring pair of datasets of one
   round for every eps in R (both directions: its curve is symmetric like the truth's).

Each mass is rounded up to float (more mass only raises every composed delta), and T rounds
compose as the product of the pair (Zhu, Dong, Wang 2022, Thm 10: dominating pairs compose
under adaptive composition), by dp_accounting's pessimistic self-composition; its FFT noise is
covered by solving at delta - FFT_SLACK * (pmf size), as protocols.accounting.compose does.

Lower bound, ``brr-exact-lower`` (proven): for a fixed dataset pair the T-round output is the
product of the rounds' outputs, so the composed exact pair of any one k is a lower bound; the
best of a few k at both ends (where the single-round maximum lies) is reported. Its PLD is
dp_accounting's optimistic discretisation of the pair's window pmfs scaled down by their
relative error (masses outside the windows dropped), composed with ``compose`` by repeated
squaring (which only moves mass down), solved at delta + slack.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import math
import time

import numpy as np

from shufflesim.protocols.accounting.pld import FFT_SLACK, TAIL_TRUNCATION, pmf_size, power
from shufflesim.protocols.accounting.rounds import (
    ComposedResult,
    normalize_rounds,
    pure_cap,
    total_rounds,
)
from shufflesim.protocols.bounds.result import BoundKind, BoundStatus
from shufflesim.protocols.errors import require, require_probability_open
from shufflesim.protocols.lazy import lazy_module

#: the exact binary-RR curve, imported when a binary randomizer is composed (issue 32)
brr_exact = lazy_module("shufflesim.protocols.bounds.numerical.brr_exact")

__all__ = ["brr_exact_lower_composed", "brr_exact_upper_composed", "dominating_pld"]

def _dp_accounting():
    """dp_accounting's (pld_pmf, privacy_loss_distribution) modules, imported on first use:
    importing them imports scipy.signal and scipy.stats (about 1.2 s of CPU), which every other
    composed method no longer needs (issue 32)."""
    return (importlib.import_module("dp_accounting.pld.pld_pmf"),
            importlib.import_module("dp_accounting.pld.privacy_loss_distribution"))


#: grid step of the dominating PLD (and of the lower bound's optimistic PLD)
STEP = 0.004
#: finest upper grid step (its node count is eps0 / step)
MIN_STEP = 2e-4
#: grid steps per loss scale (grid_steps)
UPPER_RESOLUTION = 100.0
LOWER_RESOLUTION = 50.0
#: past the first node whose upper estimate is below this, the later nodes reuse it
FLOOR = 1e-30
#: k (ones among the others) tried at each end by the composed lower bound
LOWER_CANDIDATES = 3
#: every loss of the lower bound's pairs is lowered by this before rounding (covers the
#: relative error of the pmfs, ~1e-8, in the log ratio)
LOSS_SHIFT = 1e-7
_DIGITS = 50


def _convex_minorant(x: list, y: list) -> list:
    """Values at every x of the greatest convex minorant of the points (x_i, y_i) (x
    increasing), exact in mpmath's working precision (lower hull, then linear interpolation)."""
    hull: list[int] = []
    for i in range(len(x)):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            # drop b if it lies on or above the segment a -> i
            if (y[b] - y[a]) * (x[i] - x[a]) >= (y[i] - y[a]) * (x[b] - x[a]):
                hull.pop()
            else:
                break
        hull.append(i)
    out = list(y)
    for a, b in itertools.pairwise(hull):
        for j in range(a + 1, b):
            out[j] = y[a] + (y[b] - y[a]) * (x[j] - x[a]) / (x[b] - x[a])
    return out


@functools.lru_cache(maxsize=32)
def dominating_pld(epsilon0: float, n: int, step: float = STEP):
    """The dominating pair's pessimistic PLD for one round (module docstring), symmetric."""
    import mpmath  # optional extra, imported on first use (20 ms off every composing process)

    m = int(math.ceil(epsilon0 / step))
    positive = []
    for i in range(m + 1):
        # delta(eps) is non-increasing: below FLOOR, the last upper estimate covers the rest
        if positive and positive[-1] <= FLOOR:
            positive.append(positive[-1])
        else:
            positive.append(brr_exact.brr_exact_delta(i * step, epsilon0, n).upper)
    positive[-1] = 0.0  # m * step >= eps0, where every round is eps0-DP
    with mpmath.workdps(_DIGITS):
        h = mpmath.mpf(step)
        gam = [mpmath.exp(i * h) for i in range(-m, m + 1)]
        vals = []
        for i in range(-m, m + 1):
            u = mpmath.mpf(positive[abs(i)])
            vals.append(u if i >= 0 else 1 - gam[i + m] + gam[i + m] * u)
        v = _convex_minorant(gam, vals)
        v = [min(max(val, mpmath.mpf(0)), mpmath.mpf(1)) for val in v]
        e_h = mpmath.exp(h)
        d = [v[j + 1] - v[j] for j in range(2 * m)]
        probs = [1 - v[0] + d[0] / (e_h - 1)]
        probs += [(d[j] - d[j - 1] * e_h) / (e_h - 1) for j in range(1, 2 * m)]
        probs.append(d[-1] / (1 / e_h - 1))
        up = np.array([max(float(p), 0.0) for p in probs]) * (1 + 4 * np.finfo(float).eps)
        up += np.where(up > 0, 1e-300, 0.0)
    pld_pmf, pld_module = _dp_accounting()
    pmf = pld_pmf.DensePLDPmf(step, -m, up, float(v[-1]), pessimistic_estimate=True)
    return pld_module.PrivacyLossDistribution(pmf)


def _pair_pld(epsilon0: float, n: int, ones: int, step: float):
    """Optimistic PLD of one exact pair, direction P1 || P0 (user 1 holds 1 vs 0, ``ones`` ones
    among the others; the other direction is this one at n - 1 - ones, by flipping every bit).
    P1's masses are scaled down by their relative error and its log masses lowered by
    LOSS_SHIFT, so that every loss is below its true value before dp_accounting rounds it down
    to the grid."""
    pmf = brr_exact._pair_pmf(ones, n - 1 - ones, float(epsilon0))
    p = 1.0 / (1.0 + math.exp(-epsilon0))
    q = 1.0 / (1.0 + math.exp(epsilon0))
    g = np.concatenate([[0.0], pmf.g, [0.0]])
    one = q * g[1:] + p * g[:-1]          # P1(y), y = lo .. lo + len(g)
    zero = p * g[1:] + q * g[:-1]         # P0(y)
    keys = range(pmf.lo, pmf.lo + len(one))
    shift = math.log1p(-8 * pmf.rel) - LOSS_SHIFT
    log_one = {k: math.log(a) + shift for k, a in zip(keys, one, strict=False) if a > 0}
    log_zero = {k: math.log(b) for k, b in zip(keys, zero, strict=False) if b > 0}
    _, pld_module = _dp_accounting()
    return pld_module.from_two_probability_mass_functions(
        log_zero, log_one, pessimistic_estimate=False, value_discretization_interval=step)


@functools.lru_cache(maxsize=64)
def loss_scale(epsilon0: float, n: int) -> float:
    """The standard deviation of the privacy loss ln(P1 / P0) under P1 for the pair with no
    other one (k = 0): the scale the PLD grids resolve (a heuristic: it sets only the grid)."""
    pmf = brr_exact._pair_pmf(0, n - 1, float(epsilon0))
    p = 1.0 / (1.0 + math.exp(-epsilon0))
    q = 1.0 / (1.0 + math.exp(epsilon0))
    g = np.concatenate([[0.0], pmf.g, [0.0]])
    one, zero = q * g[1:] + p * g[:-1], p * g[1:] + q * g[:-1]
    keep = (one > 0) & (zero > 0)
    loss = np.log(one[keep] / zero[keep])
    w = one[keep] / one[keep].sum()
    return float(math.sqrt(max(float(w @ (loss - w @ loss) ** 2), 0.0)))


def grid_steps(rounds) -> tuple[float, float]:
    """(upper step, lower step): UPPER_RESOLUTION (LOWER_RESOLUTION sqrt(T)) steps per loss
    scale of the finest round, the upper one within [MIN_STEP, STEP]."""
    scale = min(loss_scale(float(r.randomizer.epsilon0), int(r.n)) for r in rounds)
    upper = min(max(scale / UPPER_RESOLUTION, MIN_STEP), STEP)
    lower = min(upper / 4, scale / (LOWER_RESOLUTION * math.sqrt(total_rounds(rounds))))
    return upper, max(lower, MIN_STEP / 8)


def _rounds(rounds, delta):
    rounds = normalize_rounds(rounds)
    require_probability_open("delta", delta)
    for r in rounds:
        require(getattr(r.randomizer, "name", None) == "brr", "randomizer", r.randomizer,
                "brr-exact composes binary RR rounds only (randomizer brr)")
    return rounds


def brr_exact_upper_composed(rounds, delta: float, *, step: float | None = None,
                             **_options) -> ComposedResult:
    """Upper bound over the rounds (module docstring)."""
    start = time.perf_counter()
    rounds = _rounds(rounds, delta)
    step = grid_steps(rounds)[0] if step is None else step
    composed = None
    for r in rounds:
        piece = power(dominating_pld(float(r.randomizer.epsilon0), int(r.n), step), r.repeat,
                       True)
        composed = piece if composed is None else composed.compose(piece, TAIL_TRUNCATION)
    target = delta - FFT_SLACK * pmf_size(composed)
    require(target > 0, "delta", delta, "too small for the composition's floating-point slack")
    eps = min(float(max(composed.get_epsilon_for_delta(target), 0.0)), pure_cap(rounds))
    return ComposedResult("brr-exact", BoundKind.UPPER, eps, float(delta), total_rounds(rounds),
                          BoundStatus.PROVEN, "exact curve over every dataset (brr_exact) as a "
                          "dominating pair (convex minorant, connect-the-dots) + Zhu-Dong-Wang "
                          "2022 Thm 10", time.perf_counter() - start, step,
                          f"dominating pair from the exact curve; PLD grid interval {step:g}")


def brr_exact_lower_composed(rounds, delta: float, *, step: float | None = None,
                             **_options) -> ComposedResult:
    """Lower bound: the best of a few exact dataset pairs, each composed over every round (the
    same k in every round)."""
    start = time.perf_counter()
    rounds = _rounds(rounds, delta)
    step = grid_steps(rounds)[1] if step is None else step
    best, label = 0.0, ""
    n_min = min(int(r.n) for r in rounds)
    ends = sorted({k for k in range(min(LOWER_CANDIDATES, n_min))}
                  | {-k - 1 for k in range(min(LOWER_CANDIDATES, n_min))})
    for end in ends:
        composed = None
        for r in rounds:
            ones = end if end >= 0 else int(r.n) + end
            piece = power(_pair_pld(float(r.randomizer.epsilon0), int(r.n), ones, step),
                           r.repeat, False)
            composed = piece if composed is None else composed.compose(piece, TAIL_TRUNCATION)
        eps = composed.get_epsilon_for_delta(min(delta + FFT_SLACK * pmf_size(composed), 1.0))
        if eps > best:
            best, label = float(eps), (f"k = {end}" if end >= 0 else f"k = n{end}")
    return ComposedResult("brr-exact-lower", BoundKind.LOWER, best, float(delta),
                          total_rounds(rounds), BoundStatus.PROVEN,
                          "exact dataset pair composed (product of the rounds' outputs)",
                          time.perf_counter() - start, step,
                          f"best of the pairs at both ends, attained at {label} ones among the "
                          "others")
