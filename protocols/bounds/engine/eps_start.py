"""The eps search's start from a guess (engine/eps_search.py, issue 18 fifth round): Newton
steps on ln delta(eps) from the normal approximation's crossing until the crossing is
bracketed, without evaluating 0 or eps_max unless a step reaches them. Moved out of
eps_search.py (issue 32, session 16: the 500-line house rule); the numbers are unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Callable

#: at most this many Newton steps from a guess (:func:`local_start`)
LOCAL_STEPS = 4
#: a Newton step from a guess goes this much further than the predicted distance (and ``edge``
#: tolerances more), so that it lands on the other side of the crossing
OVERSHOOT = 0.25


def local_start(evaluate, side_value, seen, delta: float, guess: float, slope: float,
                eps_max: float, xtol: float, rtol: float, edge: float,
                steady: Callable[[float, float], bool] | None = None,
                ) -> tuple[float, float] | None:
    """Bracket the crossing from a guess: evaluate it, then step by Newton on ln delta,
    x' = x + (1 + OVERSHOOT) ln(f(x) / delta) / s + edge tol (towards the crossing), with
    s = -d ln delta / d eps: the hint at first, then the secant of the two points of positive
    value nearest to x (delta is non-increasing, so the secant slope is >= 0); with
    ``steady``, only a secant whose two points it accepts (engine/eps_upper.py: a fall
    above the estimates' widths). A step that reaches 0 or eps_max evaluates there. Returns
    (a, b) with the side's value > delta at a and <= delta at b (the nearest such points), or
    None when LOCAL_STEPS steps do not bracket the crossing, a step would not move, or the
    values are not monotone."""
    x = guess
    for step_count in range(LOCAL_STEPS + 1):
        f = evaluate(x)
        above, below = side_bracket(seen, side_value, delta)
        if above is not None and below is not None:
            return (above, below) if above < below else None
        if above is None and x == 0.0:
            return None                       # delta(0) <= delta: the caller returns 0
        if below is None and x == eps_max:
            return None                       # saturated: the caller says so
        if step_count == LOCAL_STEPS:
            break                                # no bracket after LOCAL_STEPS steps
        positive = sorted((e for e in seen if side_value(e) > 0), key=lambda e: abs(e - x))
        if len(positive) >= 2:
            e1, e2 = positive[0], positive[1]
            secant = math.log(side_value(e1) / side_value(e2)) / (e2 - e1)
            if 0 < secant < math.inf and (steady is None or steady(e1, e2)):
                slope = secant
        tol = max(xtol, rtol * x)
        if f > 0:
            dist = math.log(f / delta) / slope   # > 0: the crossing lies to the right
            step = (1 + OVERSHOOT) * dist + math.copysign(edge * tol, dist)
        else:
            step = -0.5 * x                      # a value of 0 carries no slope: halve eps
        x_new = min(max(x + step, 0.0), eps_max)
        if x_new == x:
            return None
        x = x_new
    return None


def side_bracket(seen, side_value, delta: float) -> tuple[float | None, float | None]:
    """(largest evaluated eps whose side value is > delta, smallest whose side value is
    <= delta); None for a side without such a point."""
    above = max((e for e in seen if side_value(e) > delta), default=None)
    below = min((e for e in seen if side_value(e) <= delta), default=None)
    return above, below
