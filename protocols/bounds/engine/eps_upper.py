"""The eps search's upper side where the engine's estimates are tight (issue 32, session 16):
the hooks of ``epsilon_of_delta(..., trust_width=w)`` (engine/eps_search.py), which
core.epsilon_bound passes for its searches (w = the relative precision it asks of the engine).

An upper-side search returns the smallest eps whose upper estimate of delta(eps) is <= delta
(000 Thm 13: the bound is certified there), so its steps should home in on the crossing of the
*upper* estimate. eps_search takes, at a point certified above delta, the lower estimate that
certifies it (an engine that stops refining once the comparison is decided may leave a loose
upper one there). Where the estimate is tight, that put the secant on the other function: the
next point landed between the two crossings, and the search then closed its bracket in steps of
EDGE tolerances (brr, eps0 = 2, n = 268270, delta = 1e-12: 9 evaluations, four of them within
2e-10 of the crossing; 3-RR, n = 1e6: 7). With ``trust_width``:

* at a point certified above whose estimate is at most ``trust_width`` wide (log scale), the
  upper estimate is used (:func:`trusted`);
* near the crossing the secant aims AIM units past it (:func:`aimed`), so that its point is
  certified below; a unit is the search's tolerance or, where the estimates are wider,
  BLUR_SHARE of the eps-width they blur (:func:`precision`);
* the bracket loop ends once the secant of the two points nearest the crossing puts it within
  STOP units of the upper end (:func:`at_crossing`): the returned end cannot move by more
  than that (the finer steps cannot come closer than eps_search.EDGE to an end anyway), a
  move of at most 6e-5 of the stated error where that is the blur;
* the stated error then comes from one point left of the lower estimate's crossing, placed from
  the upper end (:func:`certify_other_side`), where it narrows the bracket;
* away from the crossing, a step bisects after STALL steps in a row were held 1 % of the
  bracket from its upper end (their regula falsi or shaped step lay beyond) without halving
  that end's log-distance to delta (:func:`stalled`; Brent's method guards regula falsi by a
  similar rule): 50-RR,
  eps0 = 8, n = 2683, delta = 1e-4 (no guess) took 21 steps of 1 % of the bracket from eps_max
  with a secant of delta itself (eps_search._shaped_root) that the tiny values there kept
  near the right end;
* a Newton step of the start uses a secant only where its two points' fall is at least NOISE
  times the sum of their estimates' log-widths (:func:`resolved`): blh d = 4, eps0 = 4,
  n = 37276 stepped twice far to the left from a secant through a 9 %-wide estimate.

Every point is evaluated by the caller's function and certifies exactly as before: only where
the search looks changes, so the values move within the search's tolerance (compared on the
optimal-blanket sweep: docs/performance.md, session 16).
"""

from __future__ import annotations

import math

#: the steps' unit near the crossing (:func:`precision`): the search's tolerance, or this
#: share of the eps-width that the estimates' own brackets blur where that is larger (the
#: stated error is about that width; the upper estimates jitter on a finer scale, ~1e-8
#: relative for the exact-pool style at hr d = 16, eps0 = 4, n = 1e4, which an aim of
#: AIM tolerances missed twice)
BLUR_SHARE = 0.01
#: the secant near the crossing aims this many units past it (eps_search.POLISH_EDGE)
AIM = 1e-3
#: the loop ends when the secant puts the crossing within this many units of the upper end
#: (eps_search.EDGE + AIM)
STOP = 6e-3
#: the other side's point: 1.5 times the lower estimate's eps-gap plus this many tolerances
#: (eps_search.EDGE), doubled at most TRIES - 1 times while it is not certified
OTHER_EDGE = 5e-3
TRIES = 2
#: a start's secant needs a fall of at least this many times the two log-widths
NOISE = 4.0
#: a step away from the crossing bisects after STALL steps in a row were held 1 % of the
#: bracket from one of its ends (the step they aimed at lay beyond) and moved the upper end
#: without halving |ln(side value / delta)| (:func:`stalled`)
STALL = 2


def _log_width(est) -> float:
    return math.log(est.upper / est.lower) if est.lower > 0 else math.inf


def trusted(est, delta: float, trust: float | None) -> bool:
    """Whether a point certified above delta (lower estimate > delta) steps by its upper
    estimate: its log-width is at most ``trust`` (the engine reached its request there)."""
    return trust is not None and est.lower > delta and _log_width(est) <= trust


def resolved(seen, side_value, e1: float, e2: float) -> bool:
    """Whether the fall of the side's values between two points is at least NOISE times the sum
    of their estimates' log-widths (a closer pair measures the estimates, not the slope)."""
    fall = abs(math.log(side_value(e1) / side_value(e2)))
    return fall >= NOISE * (_log_width(seen[e1]) + _log_width(seen[e2]))


def precision(tol: float, blur: float) -> float:
    """The unit of the steps near the crossing: the tolerance ``tol``, or BLUR_SHARE of the
    estimates' eps-blur where that is larger."""
    return max(tol, BLUR_SHARE * blur)


def aimed(local: float, unit: float) -> float:
    """The point a near secant step takes: AIM units past its crossing ``local``."""
    return local + AIM * unit


def at_crossing(local: float | None, hi: float, unit: float) -> bool:
    """Whether the upper end ``hi`` (certified below) is within STOP units of the crossing
    ``local`` that the secant of the nearest points predicts (on either side: a crossing
    predicted right of a certified end is jitter of the estimates)."""
    return local is not None and abs(local - hi) <= STOP * unit


def stalled(moves: list[tuple[bool, int, float]]) -> bool:
    """Whether the last STALL steps were held 1 % from an end and, with the step before them,
    moved the upper end (values below delta) without halving its |ln(side value / delta)|
    (``moves``: per step, whether it was held, the end it moved (+1 upper, -1 lower) and that
    log-distance). The lower end is left alone: where delta falls linearly to 0 at eps_max
    its steps held next to the upper end are right (2-RR, eps0 = 4, n = 100, delta = 1e-12:
    the crossing lies ~1e-12 below eps_max), and its log-distance falls by ln 2 a step."""
    last = moves[-STALL - 1:]
    return (len(last) == STALL + 1 and all(held for held, _, _ in last[1:])
            and all(end == 1 for _, end, _ in last) and last[-1][2] > 0.5 * last[0][2])


def certify_other_side(evaluate, seen, delta: float, hi: float, above: float, below: float,
                       slope: float | None, tol: float, budget: int, est=None) -> None:
    """Certify a point above delta close to the lower estimate's crossing: from the upper end
    ``hi``, 1.5 times the lower estimate's eps-gap there (ln(delta / lower) over ``slope``,
    -d ln delta / d eps) plus OTHER_EDGE tolerances to the left, doubled if that point is not
    certified; only where it narrows the stated bracket [above, below] at least twofold and
    that is wider than ``tol`` (the search's tolerance, which a closed bracket meets).
    ``est``: the estimate at ``hi`` if it is not in ``seen`` (engine/eps_convex.py)."""
    est = seen.get(hi) if est is None else est
    if est is None or not (est.lower > 0 and slope is not None and 0 < slope < math.inf):
        return
    step = 1.5 * math.log(max(delta / est.lower, 1.0)) / slope + OTHER_EDGE * tol
    for _ in range(min(TRIES, budget)):
        x = hi - step
        if not (x > above and below - above > max(2 * step, tol)):
            return
        evaluate(x)
        if seen[x].lower > delta:
            return
        step *= 2
