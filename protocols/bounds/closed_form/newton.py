"""Inversion delta(eps) -> eps(delta) of a closed-form bound by bracketed Newton steps
(issue 32: closed forms as closed forms, no generic bisection).

The closed forms of 004 (Hoeffding, Bennett with the exact Binomial expectation over the blanket
count, protocols.bounds.closed_form.blanket) have no solution for eps in closed form: 004 Thm 5.3
solves a looser variant (a tail of M split off, constants rounded), not the bound evaluated
here. Their delta(eps) and its derivative are closed forms, so Newton's method converges in a
few steps (6-9 evaluations at n = 1e3-1e8; the former false-position search took ~23).

Soundness does not depend on the derivative: the search keeps a bracket [lo, hi] with a
*verified* delta(hi) <= delta and delta(lo) > delta, and returns hi. A step that leaves the
bracket, or a missing or non-negative slope, gives way to the secant of the bracket's ends;
three steps that did not halve the bracket, to its midpoint (geometric when it spans decades):
safeguards, taken only where Newton has no usable step. Each Newton step is extended by a
quarter of the tolerance past the root it predicts, so that near the root the next point lands
on the other side and closes the bracket. The returned eps is the bound's own solution rounded
outward (upwards) to within ``tol``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

#: evaluations after which the search gives up improving and returns its verified upper end
MAX_EVALUATIONS = 80


def smallest_epsilon_newton(
    log_delta: Callable[[float], tuple[float, float]], delta: float, upper: float, tol: float,
    start: float | None = None, rtol: float = 0.0,
) -> tuple[float, float]:
    """Smallest eps in [0, upper] with delta(eps) <= delta, for ``log_delta(eps)`` =
    (ln delta(eps), -inf where delta(eps) = 0; its derivative in eps: any value, only the
    speed depends on it).

    The steps are Newton's on two forms of the equation (:func:`_newton_points`): from above
    the root the one of most progress inside the bracket, from below the one of least.
    ``upper``: a point with delta(upper) <= delta (not evaluated); ``start``: the first point
    to evaluate after 0 (default upper / 2). Returns (eps_R, eps_R - eps_L) with
    eps_R - eps_L <= tol (or the bracket reached after MAX_EVALUATIONS): delta(eps_R) <= delta
    was verified (or eps_R = upper), and delta(eps_L) > delta (or eps_L = eps_R = 0). If
    delta(eps) is non-increasing, its smallest admissible eps lies in [eps_L, eps_R]; eps_R is
    a valid guarantee of the bound in any case. ``rtol`` (optional): the tolerance is
    max(tol, rtol * eps_R), for roots that may lie decades below ``upper``.
    """
    log_target = math.log(delta)
    root_target = math.sqrt(-log_target)
    lo, hi = 0.0, float(upper)
    value, _ = log_delta(0.0)
    if value <= log_target:
        return 0.0, 0.0
    g_lo, g_hi = value - log_target, -math.inf
    x = 0.5 * hi if start is None or not (0.0 < start < hi) else float(start)
    top_tried = False
    widths = [hi - lo]
    fixed_tol = tol
    for _ in range(MAX_EVALUATIONS):
        tol = max(fixed_tol, rtol * hi)
        if hi - lo <= tol:
            break
        value, slope = log_delta(x)
        g = value - log_target
        if g <= 0:
            hi, g_hi = x, g
        else:
            lo, g_lo = x, g
        tol = max(fixed_tol, rtol * hi)
        if hi - lo <= tol:
            break
        widths.append(hi - lo)
        points = _newton_points(x, value, slope, log_target, root_target, tol)
        inside = [p for p in points if lo < p < hi]
        if g > 0 and not top_tried and math.isinf(g_hi) and not inside:
            # above the last point delta is only known to be 0 at upper, and Newton points
            # there or nowhere: the bound may show no amplification at all (eps = upper, a
            # jump of delta to 0 there); one point just below upper settles it
            top_tried = True
            x = max(hi - 0.5 * tol, 0.5 * (lo + hi))
            continue
        if inside and not (len(widths) > 3 and widths[-1] > 0.5 * widths[-4]):
            # both are Newton steps; the bracket bounds overshoot
            x = (max if g < 0 else min)(inside, key=lambda p: abs(p - x))
        elif not inside and math.isfinite(g_lo) and math.isfinite(g_hi) and g_lo > g_hi:
            x = hi - g_hi * (hi - lo) / (g_hi - g_lo)      # the secant of the bracket
        else:                       # three steps without halving the bracket: its midpoint
            x = math.sqrt(lo * hi) if lo > 0 and hi > 4 * lo else 0.5 * (lo + hi)
        x = min(max(x, lo + 0.125 * tol), hi - 0.125 * tol)
    return hi, hi - lo


def _newton_points(x, value, slope, log_target, root_target, tol) -> list[float]:
    """Newton's steps from x, each pushed tol/4 past the root it predicts, on two forms of
    the equation: sqrt(-ln delta(eps)) = sqrt(-ln delta) (nearly linear in eps where the
    sub-Gaussian factor dominates, -ln delta ~ c eps^2) and ln delta(eps) = ln delta in ln eps
    (nearly linear where the prefactor ~ 1/eps dominates, at roots near 0)."""
    if not (math.isfinite(value) and math.isfinite(slope) and slope < 0):
        return []
    points = []
    depth = math.sqrt(max(-value, 0.0))
    if depth > 0:
        # h = sqrt(L) - sqrt(-ln delta(eps)), dh = d ln delta / (2 sqrt(-ln delta(eps)))
        points.append(x - (root_target - depth) / (0.5 * slope / depth))
    if x > 0:
        # ln delta(x e^s) ~ value + x slope s
        points.append(x * math.exp(min(-(value - log_target) / (x * slope), 30.0)))
    return [p + math.copysign(0.25 * tol, p - x) for p in points]
