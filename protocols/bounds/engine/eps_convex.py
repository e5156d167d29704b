"""Certificates of the eps search from convexity (issue 32, session 17): points certified
below or above the target delta without an engine evaluation there
(``epsilon_of_delta(..., convex=True)``, engine/eps_search.py; core.epsilon_bound passes it to
its upper-side coarse searches).

Not to the polish (core._polish), whose upper end is the value callers receive: that end stays
a point the polish evaluated. A point certified from convexity lies just past the crossing,
where a fresh evaluation of a nearly equal function cannot confirm it; so the start from below
that settles a mirror-image direction in one probe (core.epsilon_bound's ``bracket``, e.g.
laplace_metric's two directions, whose atoms differ in the last bits) failed there, and the
mirror was searched in full (laplace_metric eps0 = 2, n = 1e4: 25 evaluations instead of 11,
2.4 s of CPU instead of 1.0). The polish's chord points had tightened its end by at most
1.8e-9 relative on the optimal-blanket sweeps (27 of 2880 two-level points, 16 of 2160 k-RR).

Why delta is convex in x = e^eps. The hockey-stick divergence of a pair (P, Q) (000 Def. 1),
D_x(P || Q) = sup_E P(E) - x Q(E), is a supremum of affine functions of x, hence convex and
non-increasing in x >= 0. The engine evaluates it for one fixed dominating pair (000 Thm 12-14:
the blanket pair of Feldman et al.'s and Balle et al.'s reductions, 002 and 004, is one):
delta(eps) = (1/n) E[(S_x)_+] with S_x = A - x B, A and B the sums of the users' a and b
(RatioAtoms.values: G = a - e^eps b). An expectation of the convex functions
x -> max(0, A - x B) is convex in x, for any atoms, and the atoms do not depend on eps. Every
engine Estimate at eps brackets that same function there, rounding included (engine/common.py:
Categories.c_err is measured against the exact e^eps). For evaluated points x_p < x_q with
brackets [L_p, U_p] and [L_q, U_q]:

* chord (upper side): for x in [x_p, x_q], delta(x) <= U_p + t (U_q - U_p) with
  t = (x - x_p)/(x_q - x_p), since delta lies under its chord and delta(x_p) <= U_p,
  delta(x_q) <= U_q. Where U_p > target >= U_q, every x with t >= (U_p - target)/(U_p - U_q)
  is certified below the target (:func:`chord_below`);
* secant extended beyond x_q (lower side): for x > x_q, convexity gives slope(x_p, x_q) <=
  slope(x_q, x), so delta(x) >= delta(x_q) - (x - x_q)(delta(x_p) - delta(x_q))/(x_q - x_p)
  >= L_q - t (U_p - L_q) with t = (x - x_q)/(x_q - x_p). Where L_q > target, every x with
  t < (L_q - target)/(U_p - L_q) is certified above (:func:`extension_above`).

Floating point (u = 2^-53):

* the fraction t (a subtraction, a subtraction, a division: relative error <= 3u) is rounded
  outward by 8u;
* x_q / x_p = e^d with d = eps_q - eps_p is carried as expm1(d), and the certified point's eps
  as eps_p + log1p(t expm1(d)). d's own rounding moves expm1(d) by <= (|d| + 1)u relative; the
  product and the two functions add <= 3u; and log1p's argument r >= 0 has
  r / (1 + r) <= log1p(r). So the log term's relative error is <= (|d| + 4)u, and the point is
  moved outward by 2 (|d| + 8)u of the log term plus 4u of eps;
* the bound reported at a chord point is the target itself (the chord is <= it there); at an
  extended point, target + 2^-21 (L_q - target), where the line is at least
  target + 2^-20 (L_q - target) (:func:`extension_above`).

A virtual point whose bracket would be inverted (lower > upper: impossible for valid brackets
of a convex function) is not used. Values: the search ends on such points where they are close
enough (:func:`accepted`); every value compared on the optimal-blanket sweeps (session 17).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from shufflesim.protocols.bounds.engine.common import Estimate, U

#: False: ``convex=True`` is ignored (the former search; for comparisons)
ENABLED = True
#: the search stops on a chord-certified upper end once it lies within about this many of its
#: units (eps_upper.precision: the search's tolerance) past the crossing, and the certified
#: bracket is within the tolerance (a point evaluated to move the end would land within
#: eps_upper.STOP = 6e-3 units)
CHORD_STOP = 0.02
#: ... where the unit is 1 % of the estimates' eps-blur instead (eps_upper.precision; the
#: stated error is then ~150 units, from eps_upper.certify_other_side): this many units
CHORD_STOP_BLUR = 0.15
#: two ends' log-widths that differ by at most this share of the narrower are one method's
#: (its width jitters: 2.060e-3 and 2.072e-3 for two FFT estimates 7.8e-5 apart at blh d = 4,
#: eps0 = 8, n = 268270, delta = 1e-12, whose 1.2e-5 difference in log counted as 2.2e-7 of
#: eps against a stop at 6.4e-8 and cost an FFT of 0.17 s); beyond it, the mismatch counts
WIDTH_NOISE = 0.1
#: ... and only where the chord's ends' upper estimates lie within this log-distance of each
#: other (near the crossing; farther, a blur measured at a loose far end, e.g. 0.94 wide at
#: rappor d = 4, eps0 = 8, n = 2683, made the unit 3e-3 and ended the search 1.8 from it)
CHORD_NEAR = 0.05
#: the above point retreats this share of its step from the extended line's crossing, so that
#: the line is strictly above the target there by a margin that survives the rounding
RETREAT = 2.0 ** -20


@dataclass(frozen=True)
class Certified(Estimate):
    """A bracket certified from convexity at a point that was not evaluated; ``source`` is the
    evaluated estimate it rests on (the chord's or the secant's end nearest to it): a caller
    that reads an estimate's method or width to choose its next step reads that one
    (core._polish), and a search measures its estimates' blur only on evaluated points
    (eps_search.resolution)."""

    source: Estimate | None = None


def _points(seen: dict) -> list[tuple[float, Estimate]]:
    return sorted((e, est) for e, est in seen.items()
                  if math.isfinite(e) and math.isfinite(est.upper) and est.lower <= est.upper)


def _eps_at(eps_p: float, d: float, t: float, outward: float) -> float:
    """eps of x = x_p (1 + t (e^d - 1)) (d = eps_q - eps_p, may be negative), moved outward
    (``outward`` = +1 right, -1 left) by the rounding margin of the module docstring."""
    log_term = math.log1p(t * math.expm1(d))
    eps = eps_p + log_term
    return eps + outward * (2 * (abs(d) + 8) * U * abs(log_term) + 4 * U * abs(eps))


def _log_width(est: Estimate) -> float:
    return math.log(est.upper / est.lower) if est.lower > 0 else math.inf


def _excess(est_p: Estimate, est_q: Estimate, t: float, h: float) -> float:
    """How far past the crossing of the tighter upper estimate a chord's point lies, about
    (:func:`chord_below`): inf unless both ends' upper estimates lie within CHORD_NEAR of each
    other in log."""
    fall = math.log(est_p.upper / est_q.upper) if est_q.upper > 0 else math.inf
    if not 0 < fall <= CHORD_NEAR:
        return math.inf
    slope = fall / h                                   # -d ln delta / d eps between the ends
    w_p, w_q = _log_width(est_p), _log_width(est_q)
    noise = WIDTH_NOISE * min(w_p, w_q)
    mismatch = t * max(0.0, w_q - w_p - noise) + (1 - t) * max(0.0, w_p - w_q - noise)
    return 0.5 * t * (1 - t) * slope * h * h + mismatch / slope


def chord_below(seen: dict, delta: float) -> tuple[float, Estimate, float] | None:
    """The smallest eps certified below ``delta`` by a chord of two evaluated points' upper
    estimates (module docstring), with its Estimate (upper = delta; lower: the largest lower
    estimate at or right of it, delta being non-increasing; source: the chord's right end),
    and an estimate of how far it lies past the crossing of the tighter upper estimate
    (:func:`_excess`; only a guide: the search stops on it). None if no chord certifies a point
    left of every evaluated point certified below.

    The excess: for delta ~ e^(-s eps) between the chord's ends (s from their upper
    estimates), the chord exceeds delta by about t (1 - t) (s h)^2 / 2 at the fraction t of
    their distance h, which is t (1 - t) s h^2 / 2 in eps. Where one end's estimate is the
    wider (log-widths w_p, w_q: another method, e.g. the single style beside the exact-pool
    one), its excess weighs in with its share of the chord, beyond WIDTH_NOISE of the narrower
    width: (t max(0, w_q - w_p - z) + (1 - t) max(0, w_p - w_q - z)) / s with
    z = WIDTH_NOISE min(w_p, w_q) (subset d = 10, eps0 = 1, n = 1e4,
    delta = 1e-9: ends 1.9 % and 1.0 % wide put the chord's point 5.4e-7 past the narrower
    estimate's crossing, 12 times the curvature term). inf where the ends' upper estimates
    differ by more than CHORD_NEAR in log."""
    pts = _points(seen)
    first_below = min((e for e, est in pts if est.upper <= delta), default=None)
    if first_below is None:
        return None
    best = None
    for i, (e_p, est_p) in enumerate(pts):
        if not est_p.upper > delta:
            continue
        for e_q, est_q in pts[i + 1:]:
            if not (est_q.upper <= delta and e_q > e_p):
                continue
            t = (est_p.upper - delta) / (est_p.upper - est_q.upper) * (1 + 8 * U)
            if not 0 < t < 1:
                continue
            eps = _eps_at(e_p, e_q - e_p, t, +1.0)
            if e_p < eps < e_q and (best is None or eps < best[0]):
                best = (eps, est_q, _excess(est_p, est_q, t, e_q - e_p))
    if best is None or best[0] >= first_below:
        return None
    lower = max((est.lower for e, est in pts if e >= best[0]), default=0.0)
    if lower > delta:
        return None                 # an inverted bracket: an estimate is not what it claims
    return (best[0], Certified(delta, max(lower, 0.0), delta, "convex-chord", best[1]),
            best[2])


def extension_above(seen: dict, delta: float) -> tuple[float, Estimate] | None:
    """The largest eps certified above ``delta`` by a secant of two evaluated points extended
    to the right of the second (module docstring), with its Estimate (lower: target plus a
    margin the line keeps there; upper: the smallest upper estimate at or left of it; source:
    the extended end); None
    if none is right of every evaluated point certified above.

    The retreat: t_cross = (L_q - target)/(U_p - L_q) is computed as t_c <= t_cross (1 + 3u);
    the point is taken at t = t_c (1 - RETREAT) (1 - 8u) <= t_cross (1 - RETREAT), where the
    line's value is >= target + RETREAT (L_q - target); the point's eps is moved left, so
    its x is at most x_q (1 + t (1 - x_p/x_q)) and the line there is higher still."""
    pts = _points(seen)
    last_above = max((e for e, est in pts if est.lower > delta), default=None)
    if last_above is None:
        return None
    best = None
    for j, (e_q, est_q) in enumerate(pts):
        if not est_q.lower > delta:
            continue
        for e_p, est_p in pts[:j]:
            if not (e_p < e_q and est_p.upper > est_q.lower):
                continue
            t = ((est_q.lower - delta) / (est_p.upper - est_q.lower)
                 * (1 - RETREAT) * (1 - 8 * U))
            if not t > 0:
                continue
            eps = _eps_at(e_q, e_p - e_q, -t, -1.0)     # x_q (1 + t (1 - e^(eps_p - eps_q)))
            if eps > e_q and (best is None or eps > best[0]):
                best = (eps, est_q)
    if best is None or best[0] <= last_above:
        return None
    eps, est_q = best
    # the line is >= delta + RETREAT (L_q - delta) there; half of it, rounded to nearest, adds
    # at most U (delta + margin) <= margin where margin >= 4 U delta
    margin = 0.5 * RETREAT * (est_q.lower - delta) * (1 - 4 * U)
    lower = delta + margin
    upper = min((est.upper for e, est in pts if e <= eps), default=math.inf)
    if not (margin >= 4 * U * delta and lower > delta and lower <= upper
            and math.isfinite(upper)):
        return None
    return eps, Certified(lower, lower, upper, "convex-extension", est_q)


def other_side_anchor(below: float, est: Certified, excess: float,
                      ends: tuple[tuple[float, Estimate | None], ...], delta: float,
                      slope: float | None) -> tuple[float, Estimate | None]:
    """Where eps_upper.certify_other_side steps from when the upper end ``below`` is a chord's
    point (estimate ``est``, ``excess`` past the crossing: :func:`chord_below`): from it, with
    a lower estimate as wide (log) as its source's plus the excess (slope x excess), or from
    one of the search's evaluated ``ends`` (eps, estimate: its bracket's ends, the former
    start) whose lower estimate is in (0, delta], whichever puts the point nearest the crossing
    (1.5 ln(delta / lower) / slope to the left). Only where the point lands changes: it is
    evaluated and certifies as before."""
    options = [(e, end) for e, end in ends if end is not None and 0 < end.lower <= delta]
    width = (_log_width(est.source) if est.source is not None else math.inf) + (
        slope * excess if slope is not None else math.inf)
    if math.isfinite(width):
        options.append((below, Estimate(delta, delta * math.exp(-width), delta, est.method)))
    if not options or slope is None or not 0 < slope < math.inf:
        return ends[-1][0], None
    return max(options, key=lambda o: o[0] - 1.5 * math.log(delta / o[1].lower) / slope)


def accepted(excess: float, unit: float, tol: float) -> bool:
    """Whether a chord-certified upper end ``below`` ends the search: its ``excess`` past the
    crossing (:func:`chord_below`) is within CHORD_STOP units ``unit`` (the search's
    tolerance), or CHORD_STOP_BLUR units where the unit comes from the estimates' blur
    (unit > tol). The other side is then certified from it (:func:`other_side_anchor`,
    eps_upper.certify_other_side) where [above, below] is wider than the tolerance."""
    return excess <= (CHORD_STOP_BLUR if unit > tol else CHORD_STOP) * unit
