"""Bounds for multi-message shuffle protocols (issue 15): 001's variation-ratio bound with the
Table 3 parameters, an exact proven upper bound (the blanket-only model) and an exact proven
lower bound (a concrete neighbouring pair); the mathematics is in
:mod:`shufflesim.protocols.bounds.multi_message.models` (what is sufficient, why each model
bounds what it claims) and :mod:`~shufflesim.protocols.bounds.multi_message.kernels` (exact
divergences). docs/multi_message.md has the comparisons and timings.

Counting blanket messages. A user sends one input message and b blanket messages; with n users
there are N = n b blanket messages, all independent of user 1's input (its own b included).
001 Sec. 4 ("Multi-message protocols") replaces the n - 1 other users of Thm 4.2 by
n'(m - 1) = n b: that is the N used by every bound here.
"""

from __future__ import annotations

import dataclasses
import math
import time

from shufflesim.protocols.bounds.engine.eps_search import EpsilonEstimate, epsilon_of_delta
from shufflesim.protocols.bounds.multi_message import kernels
from shufflesim.protocols.bounds.multi_message.models import (
    ThinnedProductModel,
    candidate_pairs,
    is_multi_message,
    pair_model,
    thinned_model,
    thinned_tables_of,
    third_values,
)
from shufflesim.protocols.bounds.multi_message.thinned_curve import OFFSETS as CURVE_OFFSETS
from shufflesim.protocols.bounds.multi_message.thinned_curve import LowerCurve
from shufflesim.protocols.bounds.multi_message.thinned_curve import (
    largest_certified as curve_largest_certified,
)
from shufflesim.protocols.bounds.multi_message.thinned_scout import Scout
from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.bounds.spec import BoundSpec
from shufflesim.protocols.errors import require, require_int_at_least, require_probability_open
from shufflesim.protocols.lazy import lazy_module

#: the variation-ratio and blanket-only bounds' two-count sums (not exact-lower's path)
two_count = lazy_module("shufflesim.protocols.bounds.numerical.two_count")

REFERENCE_VR = "001 Thm 4.2 + Alg. 1 with Table 3 (n - 1 -> n b blanket messages, Sec. 4)"
REFERENCE_UPPER = "blanket-only model, exact (protocols/bounds/multi_message/models.py)"
REFERENCE_LOWER = "concrete pair, post-processed view, exact (001 Thm 5.1 style)"
#: eps searched in [0, log p], or [0, EPS_MAX_INFINITE] when p = +inf.
EPS_MAX_INFINITE = 40.0
#: Relative tolerance of the eps(delta) brackets.
RTOL = 1e-6
#: The same for the dense thinned lower model (each evaluation costs ~1 s at n = 10^5).
THINNED_RTOL = 1e-4
#: the dense search's first point lies this much (relative) past the crossing that the cheap
#: models' slope predicts (:func:`_largest_certified`), so that it usually brackets it (cheu
#: d = 16, n = 1e4: the cheap slope put it 5 % short)
FIRST_OVERSHOOT = 0.1


def blanket_count(randomizer, n: int) -> int:
    """N = n b: all blanket messages (001 Sec. 4: n'(m - 1))."""
    return int(n) * int(randomizer.blanket_messages_per_client)


def _check(randomizer, n: int, delta: float) -> None:
    require(is_multi_message(randomizer), "randomizer", getattr(randomizer, "name", randomizer),
            "is not a multi-message randomizer")
    require_int_at_least("n", n, 2)
    require_probability_open("delta", delta)


def _eps_max(randomizer) -> float:
    p = float(randomizer.variation_ratio_parameters().p)
    return EPS_MAX_INFINITE if math.isinf(p) else min(math.log(p), EPS_MAX_INFINITE)


# ------------------------------------------------------------------------------------------
# 001's variation-ratio bound with Table 3
# ------------------------------------------------------------------------------------------
def variation_ratio_pair(p: float, beta: float, q: float, blanket: int) -> two_count.TwoCountPair:
    """001 Thm 4.2's pair with N = ``blanket`` clones: alpha = beta/(p - 1), r = alpha p / q;
    p = +inf is the limit alpha -> 0, p alpha -> beta (Table 3 rows with p = +inf)."""
    require(beta > 0 and q >= 1 and p > 1, "parameters", (p, beta, q),
            "need p > 1, beta > 0 and q >= 1")
    if math.isinf(p):
        alpha, p_alpha = 0.0, float(beta)
    else:
        alpha = beta / (p - 1.0)
        p_alpha = p * alpha
    r = p_alpha / q
    require(2.0 * r <= 1.0 + 1e-12, "parameters", (p, beta, q),
            f"the clone probability 2r = {2 * r:.6g} must be at most 1")
    return two_count.TwoCountPair(int(blanket) + 1, (r, r), (p_alpha, alpha), (alpha, p_alpha))


def variation_ratio_delta(p: float, beta: float, q: float, blanket: int,
                          epsilon: float) -> kernels.Estimate:
    """delta(eps) of 001's reduction pair (both directions, guaranteed interval)."""
    return two_count.two_count_delta(variation_ratio_pair(p, beta, q, blanket), epsilon)


def variation_ratio_bound(randomizer, n: int, delta: float) -> BoundResult:
    """001 Alg. 1 with the Table 3 row and n - 1 replaced by N = n b (status: relies on the
    stronger-clone reduction, like all of 001's upper bounds)."""
    started = time.perf_counter()
    _check(randomizer, n, delta)
    row = randomizer.variation_ratio_parameters()
    big_n = blanket_count(randomizer, n)
    pair = variation_ratio_pair(float(row.p), float(row.beta), float(row.q), big_n)
    eps_max = _eps_max(randomizer)
    found = epsilon_of_delta(lambda e: two_count.two_count_delta(pair, e), delta, "upper",
                             eps_max=eps_max, rtol=RTOL)
    value, error = found.value, found.error
    if found.saturated and not math.isinf(float(row.p)):
        value, error = eps_max, 0.0  # every view's likelihood ratio is at most p
    return BoundResult("multi-message-variation-ratio", BoundKind.UPPER, float(value),
                       float(delta), float(error), BoundStatus.STRONGER_CLONE, REFERENCE_VR,
                       time.perf_counter() - started,
                       f"p={row.p:.6g}, beta={row.beta:.6g}, q={row.q:.6g}, N={big_n} "
                       f"blanket messages ({row.source})")


# ------------------------------------------------------------------------------------------
# Exact models
# ------------------------------------------------------------------------------------------
def upper_delta(randomizer, n: int, epsilon: float) -> kernels.Estimate:
    """delta(eps) of the blanket-only model, maximised over the declared pairs (proven upper
    bound on the shuffled view's delta(eps) for every dataset: models.py)."""
    pairs, _ = candidate_pairs(randomizer)
    big_n = blanket_count(randomizer, n)
    return kernels.max_estimate(pair_model(randomizer, x0, x1).delta(big_n, epsilon)
                                for x0, x1 in pairs)


def lower_models(randomizer, n: int) -> list:
    """(x0, x1, x*, model) for every supported concrete pair (other users at x*)."""
    pairs, _ = candidate_pairs(randomizer)
    found = []
    for x0, x1 in pairs:
        for x_star in third_values(randomizer, x0, x1):
            model = pair_model(randomizer, x0, x1, x_star, n)
            if model is not None:
                found.append((x0, x1, x_star, model))
            thinned = thinned_model(randomizer, x0, x1, x_star, n)
            if thinned is not None:
                found.append((x0, x1, x_star, thinned))
    require(bool(found), "randomizer", randomizer.name,
            "no concrete neighbouring pair with a supported lower model")
    return found


def lower_delta(randomizer, n: int, epsilon: float, models=None) -> kernels.Estimate:
    """delta(eps) of the best concrete pair (a proven lower bound on the shuffled view's)."""
    models = lower_models(randomizer, n) if models is None else models
    big_n = blanket_count(randomizer, n)
    best = None
    for *_, model in models:
        value = model.delta(big_n, epsilon)
        if best is None or value.lower > best.lower:
            best = value
    return best


#: above this eps the two-count kernel's upper estimate can be loose (its bracket doubled at
#: eps >= ~29 for balcer at n = 2, issue 31); delta(eps) is non-increasing, so the estimate at
#: MONOTONE_CAP is also an upper estimate at every larger eps
MONOTONE_CAP = 20.0


def _monotone_upper(randomizer, n: int):
    """upper_delta with, for eps > MONOTONE_CAP, the upper end replaced by the smaller of its own
    and the one at MONOTONE_CAP (valid: the true delta(eps) is non-increasing in eps; the
    lower end stays the one at eps). Without it the search saw delta(eps_max) > delta and
    reported inf where the crossing lay at eps = 0.63 (issue 31)."""
    at_cap: list = []

    def estimate(eps: float) -> kernels.Estimate:
        est = upper_delta(randomizer, n, eps)
        if eps <= MONOTONE_CAP:
            return est
        if not at_cap:
            at_cap.append(upper_delta(randomizer, n, MONOTONE_CAP))
        upper = min(est.upper, at_cap[0].upper)
        return dataclasses.replace(est, value=upper, upper=max(upper, est.lower))
    return estimate


def exact_upper_bound(randomizer, n: int, delta: float) -> BoundResult:
    """The smallest eps with the blanket-only model's delta(eps) <= delta, rounded up."""
    started = time.perf_counter()
    _check(randomizer, n, delta)
    _, exhaustive = candidate_pairs(randomizer)
    require(exhaustive, "randomizer", randomizer.name,
            "declares no exhaustive neighbour pairs: the maximum over pairs is not proven")
    eps_max = _eps_max(randomizer)
    found = epsilon_of_delta(_monotone_upper(randomizer, n), delta, "upper",
                             eps_max=eps_max, rtol=RTOL)
    value, error = found.value, found.error
    if found.saturated and not math.isinf(float(randomizer.variation_ratio_parameters().p)):
        value, error = eps_max, 0.0  # the view's likelihood ratio is at most p: delta(log p) = 0
    return BoundResult("multi-message-exact-upper", BoundKind.UPPER, float(value),
                       float(delta), float(error), BoundStatus.PROVEN, REFERENCE_UPPER,
                       time.perf_counter() - started,
                       f"user 1's input message + N={blanket_count(randomizer, n)} blanket "
                       "messages, exact")


def _largest_certified(lower, delta: float, low: float, high: float, g_low: float,
                       slope: float | None = None) -> tuple[float, float]:
    """Shrink [low, high] (lower(low) > delta with g_low = ln(lower(low) / delta), high not
    certified) to a relative width
    THINNED_RTOL, keeping low a point with lower(low) > delta: regula falsi (Illinois) on
    ln(lower(eps) / delta), the midpoint where an end has no positive estimate or a step made
    little progress (issue 32: ~5 dense evaluations instead of the ~13 of a bisection).
    ``slope`` (optional, a hint of -d ln lower / d eps, e.g. the cheap models'): the first
    point is the crossing it predicts, pushed FIRST_OVERSHOOT further, instead of an
    evaluation at ``high`` (far from the crossing: one dense evaluation saved or more). Only
    where the points go depends on it: low stays a certified point."""
    def gap(eps: float) -> float:
        value = lower(eps)
        return math.log(value / delta) if value > 0 else -math.inf

    def predicted() -> float | None:
        """The crossing the slope hint predicts from low, pushed past it (None if none)."""
        if slope is None or not (slope > 0 and math.isfinite(g_low)):
            return None
        x = low + (1.0 + FIRST_OVERSHOOT) * g_low / slope
        return x if low < x < high else None

    if predicted() is None:
        g_high = gap(high)
        if g_high > 0:                     # certified at the top already
            return high, high
    else:
        g_high = -math.inf                 # not evaluated: the steps follow the hint
    stale = 0
    while high - low > THINNED_RTOL * high:
        width = high - low
        guess = None if math.isfinite(g_high) else predicted()
        if guess is not None:
            x = guess
        elif math.isfinite(g_low) and math.isfinite(g_high) and g_low > g_high:
            x = high - g_high * width / (g_high - g_low)
            x = min(max(x, low + 0.01 * width), high - 0.01 * width)
        else:
            x = low + 0.5 * width
        g = gap(x)
        if g > 0:
            if guess is not None and g < g_low:     # the secant of two certified points
                slope = (g_low - g) / (x - low)
            low, g_low = x, g
            if stale == 1 and math.isfinite(g_high):
                g_high *= 0.5          # Illinois: the other end stayed twice
            stale = 1
        else:
            high, g_high = x, g
            if stale == -1 and math.isfinite(g_low):
                g_low *= 0.5
            stale = -1
    return low, high


def _cheap_slope(lower, eps: float) -> float | None:
    """-d ln lower / d eps at eps by a forward difference of 0.1 % (a hint only)."""
    step = 1e-3 * eps
    a, b = lower(eps), lower(eps + step)
    if not (a > 0 and b > 0 and a > b):
        return None
    return math.log(a / b) / step


def _upper_search(randomizer, n: int, delta: float) -> EpsilonEstimate:
    """The blanket-only model's eps(delta) (exact_upper_bound's search without its checks)."""
    return epsilon_of_delta(lambda e: upper_delta(randomizer, n, e), delta, "upper",
                            eps_max=_eps_max(randomizer), rtol=RTOL)


def exact_lower_bound(randomizer, n: int, delta: float) -> BoundResult:
    """The largest certified eps with the best concrete pair's delta(eps) > delta."""
    started = time.perf_counter()
    _check(randomizer, n, delta)
    models = lower_models(randomizer, n)
    big_n = blanket_count(randomizer, n)
    # the max over models of eps_m(delta) is the eps of the max of their deltas: the cheap
    # models first, then the (dense, slower) thinned ones only where they can do better
    cheap = [m for m in models if not isinstance(m[3], ThinnedProductModel)]
    dense = [m for m in models if isinstance(m[3], ThinnedProductModel)]
    found = epsilon_of_delta(lambda e: lower_delta(randomizer, n, e, cheap), delta, "lower",
                             eps_max=_eps_max(randomizer), rtol=RTOL)
    chosen_models = cheap
    # the dense models' regions, evaluated once per set of thresholds: their lower estimate at
    # every eps follows (thinned_curve.LowerCurve)
    owners = [(m, tables) for m in dense for tables in thinned_tables_of(m[3], big_n)]
    curve = LowerCurve([tables for _, tables in owners])
    at_found, low, top = 0.0, None, None
    if owners and found.value > 0:
        # the thresholds placed by a subsample of the slices first (thinned_scout), the full
        # search where that does not certify the cheap models' eps
        scout = Scout(curve)
        if scout.beats(delta, found.value):
            top = _upper_search(randomizer, n, delta)
            low = scout.largest_certified(delta, found.value,
                                          min(top.value, _eps_max(randomizer)))
        if low is None:
            curve.add(found.value + c for c in CURVE_OFFSETS)
            at_found = curve(found.value)
    if at_found > delta:
        # the dense estimates are lower estimates only: the largest certified eps between the
        # cheap models' eps and the proven upper bound's
        top = top if top is not None else _upper_search(randomizer, n, delta)
        low = curve_largest_certified(curve, delta, found.value,
                                      min(top.value, _eps_max(randomizer)))
    if low is not None:
        found = EpsilonEstimate(low, low, top.value, top.value - low, False, 0)
        chosen_models = [owners[curve.best_index(low)][0]]
    x0, x1, x_star, chosen = (chosen_models[0] if len(chosen_models) == 1 else  # no evaluation
                              max(chosen_models,
                                  key=lambda m: m[3].delta(big_n, found.value).lower))
    note = (f"pair ({x0}, {x1}), others at {x_star}; "
            + ("their input messages are invisible to the statistic: the exact upper model"
               if chosen.others is None else
               "their input messages enter the statistic"
               + ("; messages marked as theirs dropped" if isinstance(chosen, ThinnedProductModel)
                  else "")))
    return BoundResult("multi-message-exact-lower", BoundKind.LOWER, float(found.value),
                       float(delta), float(found.error), BoundStatus.PROVEN, REFERENCE_LOWER,
                       time.perf_counter() - started, note)


# ------------------------------------------------------------------------------------------
# Catalogue entries
# ------------------------------------------------------------------------------------------
SPECS: tuple[BoundSpec, ...] = (
    BoundSpec(
        "multi-message-variation-ratio", BoundKind.UPPER, REFERENCE_VR,
        BoundStatus.STRONGER_CLONE,
        "multi-message randomizers with a Table 3 row (p, beta, q), 2 beta p/((p-1) q) <= 1",
        is_multi_message, variation_ratio_bound, scope="specific"),
    BoundSpec(
        "multi-message-exact-upper", BoundKind.UPPER, REFERENCE_UPPER, BoundStatus.PROVEN,
        "multi-message randomizers whose messages give a two-count sufficient statistic "
        "(cells or independent coordinates); exhaustive neighbour pairs",
        is_multi_message, exact_upper_bound, scope="specific"),
    BoundSpec(
        "multi-message-exact-lower", BoundKind.LOWER, REFERENCE_LOWER, BoundStatus.PROVEN,
        "multi-message randomizers whose messages give a two-count statistic",
        is_multi_message, exact_lower_bound, scope="specific"),
)
