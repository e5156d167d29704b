"""eps(delta): the certified search for the crossing of a non-increasing delta(eps)
(:func:`epsilon_of_delta`, :class:`EpsilonEstimate`), used by
:func:`shufflesim.protocols.bounds.engine.core.epsilon_bound` and by any caller that inverts its
own delta function. Moved out of core.py (issue 18, the 500-line house rule); core re-exports
both names.

A safeguarded Illinois regula falsi on sqrt(-ln delta) (nearly linear in eps for Gaussian-like
tails), keeping only certified points: a point is "below" when its upper estimate is <= delta
and "above" when its lower estimate is > delta. Issue 18 (fifth round) cut the evaluations
(90 searches of optimal-blanket and exact-lower on 10-RR, 3-RR and binary RR: 1109 -> 774)
with five steps that change no certificate, only where the search looks:

* from a guess with a slope hint, Newton steps on ln delta bracket the crossing without
  evaluating 0 or eps_max (engine/eps_start.py; those two cost a table build each);
* near the crossing, the secant of the two nearest points (:func:`_secant_root`) instead of
  regula falsi across a bracket whose far end makes it crawl, kept EDGE tolerances from the
  ends so that a crossing next to one closes the bracket;
* farther out, the secant in whichever coordinate (delta, ln delta, root) the three nearest
  points are most nearly linear in (:func:`_shaped_root`), where one is: delta falls linearly to
  ~0 at eps_max for large eps0 and small n, and the root coordinate took a step per factor ~3;
* a side value of 0 (a lower estimate) steps by the upper estimate's shape instead of by
  bisection;
* one polishing point just past the crossing on the side the result comes from (a second
  if the first lands short).

Issue 32 (session 15): a lower-side search with neither far points nor a slope hint had no
resolution stop and crawled over jagged FFT estimates to its tolerance; it now takes the slope
from its bracket's own points (:func:`_bracket_slope`; ahead of a hint only where it
contradicts the hint by more than HINT_TRUST) and the estimates' width only from points it
evaluated itself. Upper-side searches are unchanged (bit-identical).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from shufflesim.protocols.bounds.engine import eps_convex, eps_upper
from shufflesim.protocols.bounds.engine.common import Estimate, check_side
from shufflesim.protocols.bounds.engine.eps_estimate import EpsilonEstimate
from shufflesim.protocols.bounds.engine.eps_start import local_start, side_bracket
from shufflesim.protocols.errors import ParameterError

__all__ = ["EpsilonEstimate", "epsilon_of_delta"]

#: a secant point this close to an end (in tolerances) is moved to this distance from it
EDGE = 0.005
#: root coordinates (:func:`_root_coordinate`) this small count as near the crossing
#: (delta within ~8% of the target at delta = 1e-6): the secant of two such points is trusted
#: (1e-3: 799 evaluations on the 90 searches of the module docstring, 1e-2: 782, 3e-2: 777,
#: before LINEAR)
NEAR = 1e-2
#: polishing points at most (the second only if the first lands short of the crossing)
POLISH_POINTS = 2
#: ... placed this many tolerances past the secant's crossing (90 searches: 0.005: 739
#: evaluations, 18 values looser than the former search's by <= 5e-10 relative; 0.001: 774,
#: 13 by <= 1e-10; 0.0002: 790, 10 by <= 2.3e-11)
POLISH_EDGE = 0.001
#: three points lie "nearly on a line" in a coordinate when their two slopes differ by at most
#: this (relative): then the secant in that coordinate is trusted (:func:`_shaped_root`; on
#: the 90 searches: 0.1 and 0.2: 747 evaluations, 0.4: 737, 0.7: 735)
LINEAR = 0.4
#: side="lower" without a far pair: two points measure the slope of ln delta for the
#: resolution stop when it falls between them by at least this many times the sum of their
#: estimates' log-widths (:func:`_bracket_slope`; a closer pair measures the noise)
SLOPE_NOISE = 4.0
#: ... and that measured slope replaces a hint ``guess_slope`` only where they differ by more
#: than this factor (the normal approximation's slope was 3.7 at subset (6, 2), eps0 = 4,
#: n = 1000, delta = 1e-8, where the points give ~16: its final probe then stepped 4x too far)
HINT_TRUST = 2.0


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
                     guess_slope: float | None = None,
                     bracket: tuple[float, float] | None = None,
                     resolution_stop: float = 0.05,
                     known: dict[float, Estimate] | None = None,
                     trust_width: float | None = None,
                     convex: bool = False) -> EpsilonEstimate:
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
    saves the first steps, a bad one costs one evaluation. With ``guess_slope`` (a hint of
    -d ln delta / d eps near the guess, > 0) the search starts at the guess instead
    (engine/eps_start.py): Newton steps on ln delta until the crossing is bracketed, without
    evaluating 0 or eps_max unless a step reaches them; if LOCAL_STEPS steps do not bracket it,
    the search goes on from [0, eps_max] narrowed to the points already certified.
    ``bracket`` = (a, b) (optional): start from [a, b] instead of [0, eps_max] if the side's
    estimate is > delta at a and <= delta at b (two evaluations); otherwise the search starts
    afresh. Where the side's estimate is 0 (its root coordinate is infinite) the steps use
    the upper estimate's, and where that is 0 too, they are geometric towards the lower end.
    ``known`` maps eps to estimates of the same function computed earlier (valid brackets,
    e.g. a coarser search's certified ends): they are used instead of evaluating there. The
    search also stops once its bracket is narrower than ``resolution_stop`` times the eps-width
    that the estimates' own brackets blur (noisy estimates must not drive it into tiny steps).
    ``trust_width`` (side="upper" only): estimates at most this wide (log scale) are tight,
    and the search homes in on the upper estimate's crossing (engine/eps_upper.py).
    ``convex`` (side="upper"): delta is convex in e^eps (a hockey-stick divergence of a fixed
    pair); points between and beyond the evaluated ones are certified from that
    (engine/eps_convex.py), and the search ends on them where they are close enough.

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
    trust = trust_width if side == "upper" else None      # engine/eps_upper.py
    convex = convex and side == "upper" and eps_convex.ENABLED       # engine/eps_convex.py
    virtual: dict[float, Estimate] = {}     # points certified from convexity (not in seen)
    excess: dict[float, float] = {}         # a chord point's estimated distance past crossing
    above = 0.0          # largest eps with lower(eps) > delta (eps* >= 0 holds trivially)
    below = math.inf     # smallest eps with upper(eps) <= delta
    evaluations = 0

    seen: dict[float, Estimate] = {}
    own: set[float] = set()     # the points this search evaluated (not taken from ``known``)

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
            return est.upper if eps_upper.trusted(est, delta, trust) else est.lower
        if est.upper <= delta:
            return est.upper
        return est.upper if side == "upper" else est.lower

    def evaluate(eps: float) -> float:
        """Record the certificates at eps; return the side's estimate there."""
        nonlocal above, below, evaluations
        if eps in seen:
            est = seen[eps]
        elif known is not None and eps in known:
            est = known[eps]
        else:
            est = delta_fn(eps)
            evaluations += 1
            own.add(eps)
        seen[eps] = est
        if est.upper <= delta:
            below = min(below, eps)
        if est.lower > delta:
            above = max(above, eps)
        for found in (eps_convex.chord_below(seen, delta) if convex else None,
                      eps_convex.extension_above(seen, delta) if convex else None):
            if found is not None:
                virtual[found[0]] = found[1]
                excess[found[0]] = found[2] if len(found) > 2 else 0.0
                below = min(below, found[0]) if found[1].upper <= delta else below
                above = max(above, found[0]) if found[1].lower > delta else above
        return side_value(eps)

    def chord_done(unit: float, tol: float) -> bool:
        """convex: the upper end is a chord's point close enough to the crossing."""
        return convex and below in virtual and eps_convex.accepted(excess[below], unit, tol)

    def result(saturated: bool, upper_probed: bool = False) -> EpsilonEstimate:
        value = below if side == "upper" else above
        ends = tuple((e, seen.get(e) or virtual[e]) for e in (above, below)
                     if e in seen or e in virtual)
        return EpsilonEstimate(value, above, below, below - above, saturated, evaluations, ends,
                               upper_probed and math.isfinite(below))

    lo = hi = None
    pending = guess if guess is not None and 0 < guess < eps_max else None
    if (pending is not None and bracket is None and guess_slope is not None
            and 0 < guess_slope < math.inf):
        pending = None
        found = local_start(evaluate, side_value, seen, delta, guess, guess_slope, eps_max,
                            xtol, rtol, EDGE, None if trust is None else
                            lambda e1, e2: eps_upper.resolved(seen, side_value, e1, e2))
        if found is not None:
            lo, hi = found
            f_lo, f_hi = side_value(lo), side_value(hi)
    if lo is None and bracket is not None and 0 < bracket[0] < bracket[1] <= eps_max:
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
        # points a local start evaluated narrow the bracket (where they are consistent)
        left, right = side_bracket(seen, side_value, delta)    # 0 and eps_max among them
        if left < right:
            lo, hi, f_lo, f_hi = left, right, side_value(left), side_value(right)

    def step_coordinate(eps: float) -> float:
        """The root coordinate the steps use at an evaluated eps: of the side's value, or of
        the upper estimate where the side's value is 0 (a lower estimate of 0 carries no
        shape; the upper one still does, and steps need not be certified)."""
        value = side_value(eps)
        if value <= 0:
            value = seen[eps].upper
        return _root_coordinate(value, delta)

    g_lo, g_hi = step_coordinate(lo), step_coordinate(hi)
    kept = 0                                # -1: lo kept at the last step, +1: hi kept
    moves: list[tuple[bool, int, float]] = []   # per step: held 1 % from an end, the end
    #                                         it moved, |ln(side value / delta)| there


    def log_slope(measure: bool = True) -> float | None:
        """-d ln(delta)/d eps near the crossing, from the nearest evaluated points with side
        estimates >= 2 delta (left) and <= delta / 2 (right); else see below."""
        left = [e for e in seen if e <= lo and side_value(e) >= 2 * delta]
        right = [e for e in seen if e >= hi and 0 < side_value(e) <= 0.5 * delta]
        if not left or not right:
            # no far point (a start from a guess; side="lower": lower estimates > delta / 2
            # right of the crossing but eps_max's 0): the hint. side="lower" with ``measure``
            # measures it on the bracket (:func:`_bracket_slope`; without, no resolution stop:
            # a crawl over jagged FFT estimates, issue 32), ahead of a hint it contradicts by
            # > HINT_TRUST; else the hint, else the steepest slope the brackets allow
            if side == "upper" or not measure:
                return guess_slope
            resolved, steepest = _bracket_slope(seen, side_value, lo, hi)
            if resolved is not None and (guess_slope is None or not (
                    1 / HINT_TRUST <= resolved / guess_slope <= HINT_TRUST)):
                return resolved
            return steepest if guess_slope is None else guess_slope
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
        # side="lower": only a point this search evaluated; a ``known`` one may come from
        # coarser estimates (the polish starts from the coarse search's ends, whose width
        # would stop it before its first step once the coarse search stopped on resolution)
        end = hi if side == "upper" else lo
        points = seen if side == "upper" else own
        widths = [math.log(seen[e].upper / seen[e].lower) for e in (end,)
                  if e in points and seen[e].lower > 0
                  and not isinstance(seen[e], eps_convex.Certified)]
        return max(widths, default=0.0) / slope

    resolved_stop = False       # the loop ended on the resolution stop (not the tolerance)
    aimed = False               # trust: it ended with hi at the crossing (no polish)
    while evaluations < max_evaluations:
        width = hi - lo
        if width <= max(xtol, rtol * hi) or (convex and below - lo <= max(xtol, rtol * hi)):
            break
        blur = resolution()
        if width < resolution_stop * blur:
            resolved_stop = True
            break
        prec = eps_upper.precision(max(xtol, rtol * hi), blur)      # trust only
        if trust is not None and (((hi == below or below in virtual) and eps_upper.at_crossing(
                _secant_root(seen, side_value, delta), hi, prec))
                                     or chord_done(prec, max(xtol, rtol * hi))):
            aimed = True
            break
        x = lo + 0.5 * width
        held = False
        if pending is not None:
            x, pending = pending, None
        elif math.isfinite(g_hi) and g_hi > g_lo:
            local = _secant_root(seen, side_value, delta)
            if local is not None and lo < local < hi:
                # near the crossing: the secant of the two nearest points, at least EDGE
                # tolerances from either end (if the crossing is that close to one, the next
                # bracket is narrow enough to stop)
                edge = EDGE * max(xtol, rtol * hi)
                if trust is not None:
                    local = eps_upper.aimed(local, prec)
                x = lo + min(max(local - lo, edge), width - edge)
            else:
                step = width * (-g_lo) / (g_hi - g_lo)
                shaped = _shaped_root(seen, side_value, delta)
                if shaped is not None and lo < shaped < hi:
                    step = shaped - lo
                x = lo + min(max(step, 0.01 * width), 0.99 * width)
                held = not 0.01 * width < step < 0.99 * width
                if trust is not None and eps_upper.stalled(moves):
                    x = lo + 0.5 * width
        elif not math.isfinite(g_hi):
            x = math.sqrt(lo * hi) if lo > 0 else 0.125 * hi
        fx = evaluate(x)
        gx = step_coordinate(x)
        moves.append((held, 1 if fx <= delta else -1,
                      abs(math.log(fx / delta)) if fx > 0 else math.inf))
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
    # Polish the returned end: a point just past the secant's crossing, on the side the
    # result comes from (right of it for side="upper", left for "lower"), if it would move
    # that end by more than POLISH_EDGE tolerances; a second one inside the narrower bracket if the
    # first lands short. The end moves only if certified.
    unit = tol_now = max(xtol, rtol * hi)
    if trust is not None:             # engine/eps_upper.py: its unit; done at the crossing?
        unit = eps_upper.precision(unit, resolution())
        aimed = aimed or ((hi == below or below in virtual) and eps_upper.at_crossing(
            _secant_root(seen, side_value, delta), hi, unit)) or chord_done(unit, tol_now)
    for _ in range(0 if aimed else POLISH_POINTS):
        width = hi - lo
        edge = POLISH_EDGE * (unit if trust is not None else max(xtol, rtol * hi))
        if not (evaluations < max_evaluations and math.isfinite(g_hi) and g_hi > g_lo
                and width > 2 * edge):
            break
        crossing = lo + width * (-g_lo) / (g_hi - g_lo)
        local = _secant_root(seen, side_value, delta) if trust is not None else None
        crossing = local if local is not None and lo < local < hi else crossing
        if side == "upper" and crossing + edge < hi - edge:
            x = max(crossing + edge, lo + edge)
        elif side == "lower" and crossing - edge > lo + edge:
            x = min(crossing - edge, hi - edge)
        else:
            break
        fx = evaluate(x)
        if fx <= delta:
            hi, g_hi = x, step_coordinate(x)
            if side == "upper" and trust is None:
                break                       # the returned end moved (trust: if far, again)
        else:
            lo, g_lo = x, step_coordinate(x)
            if side == "lower":
                break
        if chord_done(unit, tol_now):
            break
    # One more point to certify the other side close to the crossing. For side="upper": the
    # lower estimate crosses delta left of lo; step left by the log-gap between the two
    # estimates divided by the slope of ln delta, with a 50% margin. Symmetrically for
    # side="lower".
    # side="lower" also when no point is certified below yet (below = inf): the bracket of the
    # lower estimates can close on points whose upper estimates all exceed delta (10-RR,
    # n = 1e9: an error of inf without this point)
    # A slope measured on the bracket places it only after a stop on the resolution: closed to
    # the tolerance, the former ending (the caller's polish narrows its wide error; the 2 tol
    # margin left hr (7), eps0 = 1, n = 100, 1e-8 an error of 8.4e-8 instead of 2.1e-10)
    tol = max(xtol, rtol * hi)
    slope = log_slope(measure=resolved_stop)
    if trust is not None:             # from the upper end (engine/eps_upper.py)
        slope = _bracket_slope(seen, side_value, lo, hi)[0] or slope
        start, est = hi, None
        if below in virtual:            # a chord's point: engine/eps_convex.py
            start, est = eps_convex.other_side_anchor(
                below, virtual[below], excess[below], ((lo, seen.get(lo)), (hi, seen.get(hi))),
                delta, slope)
        eps_upper.certify_other_side(evaluate, seen, delta, start, above, below, slope, tol,
                                     max_evaluations - evaluations, est)
        return result(False)
    probed = side == "lower" and not math.isfinite(below)
    if (evaluations < max_evaluations and below - above > 4 * tol
            and (math.isfinite(below) or side == "lower")
            and slope is not None and slope > 0 and lo in seen and hi in seen):
        e_lo, e_hi = seen[lo], seen[hi]
        if side == "upper" and e_lo.lower > 0 and lo > above:
            gap = math.log(max(delta / e_lo.lower, 1.0)) / slope
            evaluate(max(lo - 1.5 * gap - 2 * tol, above))
        elif side == "lower" and e_hi.upper > 0 and hi < below:
            gap = math.log(max(e_hi.upper / delta, 1.0)) / slope
            evaluate(min(hi + 1.5 * gap + 2 * tol, below))
            return result(False, probed)
    return result(False)


def _bracket_slope(seen, side_value, lo: float,
                   hi: float) -> tuple[float | None, float | None]:
    """-d ln delta / d eps across the bracket [lo, hi] from evaluated points a <= lo < hi <= b
    with positive side values and lower estimates: (resolved, steepest). ``resolved``: the
    secant of ln(side value) through the narrowest pair whose fall ln(f(a) / f(b)) is at least
    SLOPE_NOISE times the sum of the two points' log-widths ln(upper / lower) (FFT lower
    estimates jump by ~2 % between eps 1e-8 apart and are not even monotone: a closer pair
    measures that noise). ``steepest``: the smallest over the pairs of ln(upper(a) /
    lower(b)) / (b - a), the steepest average slope the brackets allow; a steep slope means a
    narrow resolution, so the stop comes late rather than early. None where no pair gives one.
    Used by side="lower" without a far pair (issue 32: without a hint either, subset (6, 2),
    eps0 = 4, n = 1000, delta = 1e-8 took 31 FFT evaluations crawling in steps of ~1e-7)."""
    def log_width(e: float) -> float:
        return math.log(seen[e].upper / seen[e].lower)

    left = [e for e in seen if e <= lo and side_value(e) > 0 and seen[e].lower > 0]
    right = [e for e in seen if e >= hi and side_value(e) > 0 and seen[e].lower > 0]
    resolved = steepest = None
    for a in sorted(left):
        for b in sorted(right):
            if b <= a:
                continue
            fall = math.log(side_value(a) / side_value(b))
            if (fall > 0 and fall >= SLOPE_NOISE * (log_width(a) + log_width(b))
                    and (resolved is None or b - a < resolved[0])):
                resolved = (b - a, fall / (b - a))
            most = math.log(seen[a].upper / seen[b].lower) / (b - a)
            if most > 0 and (steepest is None or most < steepest):
                steepest = most
    return (None if resolved is None else resolved[1]), steepest


def _secant_root(seen, side_value, delta: float) -> float | None:
    """The crossing of the secant through the two evaluated points nearest to it (smallest
    |root coordinate|, finite and distinct): superlinear near the crossing, where a bracket's
    far end would make regula falsi crawl. None if there are no two such points or one of
    them is not NEAR (from afar the secant can crawl too, e.g. where delta falls to 0 near
    eps_max far from any Gaussian shape: the Illinois steps do better there)."""
    near = sorted((abs(g), e, g) for e in seen
                  if math.isfinite(g := _root_coordinate(side_value(e), delta)))
    if len(near) < 2:
        return None
    (_, e1, g1), (_, e2, g2) = near[:2]
    if g1 == g2 or max(abs(g1), abs(g2)) > NEAR:
        return None
    return e1 - g1 * (e2 - e1) / (g2 - g1)


def _shaped_root(seen, side_value, delta: float) -> float | None:
    """The crossing by the secant of the two points nearest to it in the coordinate -- delta,
    ln delta or the root coordinate -- in which the three nearest points lie most nearly on a
    line (their two slopes within LINEAR of each other, relative); None if none does. Far
    from the crossing the root coordinate suits Gaussian-like tails, but where delta falls
    linearly to ~0 at eps_max (large eps0, small n) regula falsi on it takes a step per
    factor ~3 of delta; delta itself is linear there."""
    near = sorted((abs(g), e) for e in seen
                  if side_value(e) > 0
                  and math.isfinite(g := _root_coordinate(side_value(e), delta)))[:3]
    if len(near) < 3:
        return None
    xs = sorted(e for _, e in near)
    best = None
    for coordinate in (lambda f: f - delta, lambda f: math.log(f / delta),
                       lambda f: -_root_coordinate(f, delta)):
        ys = [coordinate(side_value(e)) for e in xs]
        s1 = (ys[1] - ys[0]) / (xs[1] - xs[0])
        s2 = (ys[2] - ys[1]) / (xs[2] - xs[1])
        if not (s1 < 0 and s2 < 0):
            continue
        bend = abs(s2 - s1) / max(abs(s1), abs(s2))
        if bend <= LINEAR and (best is None or bend < best[0]):
            (e1, y1), (e2, y2) = sorted(zip(xs, ys, strict=True), key=lambda p: abs(p[1]))[:2]
            best = (bend, e1 - y1 * (e2 - e1) / (y2 - y1))
    return None if best is None else best[1]
