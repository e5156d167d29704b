"""eps(delta): the certified search for the crossing of a non-increasing delta(eps)
(:func:`epsilon_of_delta`, :class:`EpsilonEstimate`), used by
:func:`shufflesim.protocols.bounds.engine.core.epsilon_bound` and by any caller that inverts its
own delta function. Moved out of core.py (issue 18, the 500-line house rule); core re-exports
both names.

A safeguarded Illinois regula falsi on sqrt(-ln delta) (nearly linear in eps for Gaussian-like
tails), keeping only certified points: a point is "below" when its upper estimate is <= delta
and "above" when its lower estimate is > delta.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from shufflesim.protocols.bounds.engine.common import Estimate, check_side
from shufflesim.protocols.errors import ParameterError

__all__ = ["EpsilonEstimate", "epsilon_of_delta"]

@dataclass(frozen=True)
class EpsilonEstimate:
    """Result of an eps(delta) search.

    The true crossing eps* = min{eps : delta(eps) <= delta} satisfies lower <= eps* <= upper
    (``upper`` is inf when no eps <= eps_max was certified). ``value`` is the requested side;
    ``error = upper - lower``. ``saturated`` is True when the crossing was not found below
    ``eps_max``: then the upper side is inf and the lower side is the largest certified eps.
    """

    value: float
    lower: float
    upper: float
    error: float
    saturated: bool
    evaluations: int
    #: the estimates behind ``lower`` and ``upper`` ((eps, Estimate) pairs), for a follow-up
    #: search that starts from this bracket without evaluating its ends again
    ends: tuple = field(default=(), compare=False, repr=False)


def _root_coordinate(x: float, delta: float) -> float:
    """sqrt(-ln x) - sqrt(-ln delta): increasing as x decreases, +inf at x = 0, and close to
    linear in eps for Gaussian-like tails (-ln delta(eps) ~ c eps^2), so regula falsi on it
    converges in a few steps."""
    if x <= 0:
        return math.inf
    return math.sqrt(max(-math.log(x), 0.0)) - math.sqrt(max(-math.log(delta), 0.0))


def epsilon_of_delta(delta_fn: Callable[[float], Estimate], delta: float, side: str = "upper", *,
                     eps_max: float = 20.0, xtol: float = 1e-10, rtol: float = 1e-5,
                     max_evaluations: int = 60, guess: float | None = None,
                     bracket: tuple[float, float] | None = None,
                     resolution_stop: float = 0.05,
                     known: dict[float, Estimate] | None = None) -> EpsilonEstimate:
    """Smallest eps in [0, eps_max] with delta(eps) <= delta, bracketed.

    ``delta_fn(eps)`` returns an :class:`Estimate` of a non-increasing function delta(eps).
    A point is certified "below" when its upper estimate is <= delta (then eps* <= eps) and
    "above" when its lower estimate is > delta (then eps* > eps). The search brackets the
    crossing of the requested side's estimate (the upper one for side="upper") with a
    safeguarded Illinois regula falsi on sqrt(-ln estimate) (bisection when the estimate is 0)
    and stops when that bracket is narrower than max(xtol, rtol * eps). Returned: for
    side="upper", value = the smallest certified-below eps (conservative); for side="lower",
    value = the largest certified-above eps (0 if none); ``error`` = the distance between the
    two kinds of certified points, so the true crossing lies in [lower, upper].

    ``guess`` (optional, in (0, eps_max)) is evaluated first inside the bracket: a good guess
    saves the first steps, a bad one costs one evaluation. ``bracket`` = (a, b) (optional):
    start from [a, b] instead of [0, eps_max] if the side's estimate is > delta at a and
    <= delta at b (two evaluations); otherwise the search starts afresh. Where the estimate is
    0 (the root coordinate is infinite), the step is geometric towards the lower end.
    ``known`` maps eps to estimates of the same function computed earlier (valid brackets,
    e.g. a coarser search's certified ends): they are used instead of evaluating there. The
    search also stops once its bracket is narrower than ``resolution_stop`` times the eps-width
    that the estimates' own brackets blur (noisy estimates must not drive it into tiny steps).

    eps = 0 is returned when delta(0) <= delta is certified. If the upper estimate at eps_max
    still exceeds delta, the result is ``saturated``: value = inf for side="upper"; for
    side="lower", the largest certified-above eps (eps_max when delta(eps_max) > delta).
    """
    side = check_side(side)
    if isinstance(delta, bool) or not (isinstance(delta, (int, float)) and 0 < delta < math.inf):
        raise ParameterError("delta", delta, "must be a number > 0")
    if isinstance(eps_max, bool) or not (isinstance(eps_max, (int, float))
                                         and 0 < eps_max < math.inf):
        raise ParameterError("eps_max", eps_max, "must be a finite number > 0")
    above = 0.0          # largest eps with lower(eps) > delta (eps* >= 0 holds trivially)
    below = math.inf     # smallest eps with upper(eps) <= delta
    evaluations = 0

    seen: dict[float, Estimate] = {}

    def side_value(eps: float) -> float:
        """The value the steps use at eps. side="upper": the upper estimate, except at a point
        certified above delta, where the lower estimate that certifies it is used (the upper
        one may be loose there: an engine stops refining once the comparison is decided, and a
        loose value would skew the secant steps towards that end). side="lower": the lower
        estimate everywhere, so the steps home in on the crossing of the estimate that
        certifies the returned value (the certifying-bound rule on this side left exact-lower
        at n = 1e6, eps0 = 1 5.6e-7 (relative) looser)."""
        est = seen[eps]
        if side == "lower":
            return est.lower
        if est.lower > delta:
            return est.lower
        if est.upper <= delta:
            return est.upper
        return est.upper if side == "upper" else est.lower

    def evaluate(eps: float) -> float:
        """Record the certificates at eps; return the side's estimate there."""
        nonlocal above, below, evaluations
        if known is not None and eps in known:
            est = known[eps]
        else:
            est = delta_fn(eps)
            evaluations += 1
        seen[eps] = est
        if est.upper <= delta:
            below = min(below, eps)
        if est.lower > delta:
            above = max(above, eps)
        return side_value(eps)

    def result(saturated: bool) -> EpsilonEstimate:
        value = below if side == "upper" else above
        ends = tuple((e, seen[e]) for e in (above, below) if e in seen)
        return EpsilonEstimate(value, above, below, below - above, saturated, evaluations, ends)

    lo = hi = None
    if bracket is not None and 0 < bracket[0] < bracket[1] <= eps_max:
        # Start from a bracket found earlier (e.g. with coarser estimates), if it still holds.
        f_a, f_b = evaluate(float(bracket[0])), evaluate(float(bracket[1]))
        if f_a > delta >= f_b:
            lo, hi, f_lo, f_hi = float(bracket[0]), float(bracket[1]), f_a, f_b
    if lo is None:
        f_lo = evaluate(0.0)
        if f_lo <= delta:
            return result(False)
        f_hi = evaluate(float(eps_max))
        if f_hi > delta:
            return result(True)
        lo, hi = 0.0, float(eps_max)       # side estimate > delta at lo, <= delta at hi
    g_lo, g_hi = _root_coordinate(f_lo, delta), _root_coordinate(f_hi, delta)
    kept = 0                                # -1: lo kept at the last step, +1: hi kept
    pending = guess if guess is not None and 0 < guess < eps_max else None


    def log_slope() -> float | None:
        """-d ln(delta)/d eps near the crossing, from the nearest evaluated points with side
        estimates >= 2 delta (left) and <= delta / 2 (right); None if there are none."""
        left = [e for e in seen if e <= lo and side_value(e) >= 2 * delta]
        right = [e for e in seen if e >= hi and 0 < side_value(e) <= 0.5 * delta]
        if not left or not right:
            return None
        a, b = max(left), min(right)
        return math.log(side_value(a) / side_value(b)) / (b - a)

    def resolution() -> float:
        """The eps width below which the estimates' own brackets blur the crossing: the
        relative width of the estimates at the bracket ends over the slope of ln delta."""
        slope = log_slope()
        if slope is None or slope <= 0:
            return 0.0
        # the end the side certifies (hi for side="upper": its upper estimate <= delta; lo for
        # "lower"): an end certified by the other bound may carry a loose side estimate (the
        # engine stops once the comparison is decided) without blurring the crossing
        end = hi if side == "upper" else lo
        widths = [math.log(seen[e].upper / seen[e].lower) for e in (end,)
                  if e in seen and seen[e].lower > 0]
        return max(widths, default=0.0) / slope

    while evaluations < max_evaluations:
        width = hi - lo
        if width <= max(xtol, rtol * hi) or width < resolution_stop * resolution():
            break
        x = lo + 0.5 * width
        if pending is not None:
            x, pending = pending, None
        elif math.isfinite(g_hi) and g_hi > g_lo:
            step = width * (-g_lo) / (g_hi - g_lo)
            x = lo + min(max(step, 0.01 * width), 0.99 * width)
        elif not math.isfinite(g_hi):
            x = math.sqrt(lo * hi) if lo > 0 else 0.125 * hi
        fx = evaluate(x)
        gx = _root_coordinate(fx, delta)
        if fx <= delta:
            hi, g_hi = x, gx
            if kept == -1:
                g_lo *= 0.5          # Illinois: the retained end's value is halved
            kept = -1
        else:
            lo, g_lo = x, gx
            if kept == 1 and math.isfinite(g_hi):
                g_hi *= 0.5
            kept = 1
    # One more point to certify the other side close to the crossing. For side="upper": the
    # lower estimate crosses delta left of lo; step left by the log-gap between the two
    # estimates divided by the slope of ln delta, with a 50% margin. Symmetrically for
    # side="lower".
    tol = max(xtol, rtol * hi)
    slope = log_slope()
    if (evaluations < max_evaluations and below - above > 4 * tol and math.isfinite(below)
            and slope is not None and slope > 0 and lo in seen and hi in seen):
        e_lo, e_hi = seen[lo], seen[hi]
        if side == "upper" and e_lo.lower > 0 and lo > above:
            gap = math.log(max(delta / e_lo.lower, 1.0)) / slope
            evaluate(max(lo - 1.5 * gap - 2 * tol, above))
        elif side == "lower" and e_hi.upper > 0 and hi < below:
            gap = math.log(max(e_hi.upper / delta, 1.0)) / slope
            evaluate(min(hi + 1.5 * gap + 2 * tol, below))
    return result(False)
