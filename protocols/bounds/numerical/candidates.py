"""The maximum over candidate neighbour pairs behind the optimal bounds
(protocols.bounds.numerical.optimal): the adapter to the hockey-stick engine (eps(delta) and
delta(eps) of one candidate's two directions), screening of candidates against the best value so
far, the eps0 cap and the result record.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from shufflesim.protocols.bounds.atoms import RatioAtoms
from shufflesim.protocols.bounds.engine import core as engine
from shufflesim.protocols.bounds.numerical.pair_question import (  # noqa: F401  (re-exported)
    REFERENCE_LOWER,
    REFERENCE_UPPER,
    _Candidate,
    _delta,
    _fmt,
    _pair_label,
    _rebuild,
    _Value,
)
from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.errors import require_int_at_least, require_probability_open
from shufflesim.protocols.lazy import lazy_module

screen = lazy_module("shufflesim.protocols.bounds.engine.screen")  # several candidates only

#: precision asked of the engine when a direction is screened against the best eps (the
#: searches' own coarse precision); an undecided screen is searched in full, so this only
#: trades a cheaper evaluation against the chance of a needless search
SCREEN_RTOL = 5e-3


# ----------------------------------------------------------------------------------------------
# Engine adapter
# ----------------------------------------------------------------------------------------------
def _epsilon(directions: Sequence[RatioAtoms], n: int, delta: float, side: str,
             method: str = "auto", bracket: tuple[float, float] | None = None) -> _Value:
    """Smallest eps with max over directions of delta(eps) <= delta, on the engine's ``side``
    (upper: the smallest certified eps, inf if none below the engine's eps_max; lower: the
    largest eps certified to have delta(eps) > delta); ``bracket``: a start for the search."""
    est = engine.epsilon_bound(list(directions), n, delta, side, method=method,
                               bracket=bracket)
    error = est.error if math.isfinite(est.error) else math.inf
    return _Value(float(est.value), float(error))


# ----------------------------------------------------------------------------------------------
# Candidate evaluation
# ----------------------------------------------------------------------------------------------
def _bracket(value: _Value, side: str) -> tuple[float, float]:
    """(lower, upper) of an eps search result: the value is its ``side`` end."""
    if side == "upper":
        return (value.value - value.error if math.isfinite(value.error) else 0.0), value.value
    return value.value, value.value + value.error


def _guess_order(directions: Sequence[RatioAtoms], n: int, delta: float) -> list[RatioAtoms]:
    """Directions sorted by the normal approximation's eps (largest first; no guess first):
    only an order, so the first full search is likely to be the maximum and the others are
    screened against it."""
    def key(atoms):
        guess = engine.gaussian_guess(atoms, n, delta, engine.default_eps_max(atoms))
        return -math.inf if guess is None else -guess
    return sorted(directions, key=key)


def _near_key(atoms: RatioAtoms) -> tuple:
    """The atom multiset to 10 significant digits (lower side only: see _max_epsilon)."""
    def sig(values):
        return [float(f"{v:.10g}") for v in values.tolist()]
    return tuple(sorted(zip(sig(atoms.a), sig(atoms.b), sig(atoms.weight), strict=True)))


def _start(best: _Value, lower: float, upper: float, side: str):
    """Where the search of a direction that passed :func:`_can_exceed` starts: it matters only
    above ``best``. Lower side: best's bracket (the mirror direction of a symmetric pair has
    the same delta(eps): 3 evaluations instead of a full search); upper side: from best up.
    The engine checks a start (two evaluations) and searches afresh where it does not hold."""
    if not (math.isfinite(best.value) and best.value > 0):
        return None
    if side == "lower":
        return (lower, upper) if math.isfinite(upper) and upper > lower else None
    return (best.value, math.inf)


def _can_exceed(atoms: RatioAtoms, n: int, delta: float, best: _Value, method: str) -> bool:
    """False only when this direction provably cannot beat ``best``: its certified upper
    estimate of delta(best) is <= delta, so its crossing eps* <= best (delta(eps) is
    non-increasing), and both its upper and lower search values would be <= best. Exact for
    either side: skipping it changes no number."""
    if _cheaply_excluded(atoms, n, best.value, delta):
        return False
    est = engine.delta_of_epsilon([(atoms, n)], n, best.value, "upper", method=method,
                                  threshold=delta, rtol=SCREEN_RTOL, decide_only=True)
    return est.upper > delta


def _cheaply_excluded(atoms: RatioAtoms, n: int, epsilon: float, delta: float) -> bool:
    """True when the screen's cheap certified upper bound on delta(eps) (engine/screen.py,
    large n only) is <= delta: the direction's crossing is then <= eps, exactly as when the
    engine's own upper estimate decides it (within ~1 % of it for k-RR at n >= 1e7, at a
    fifth of the cost)."""
    up = screen.screen_delta_upper(atoms, n, epsilon, threshold=delta)
    return up is not None and up <= delta


def _screened(directions: Sequence[RatioAtoms], n: int, best: float, delta: float, side: str,
              method: str) -> list[engine.Estimate]:
    """Each direction's bracket of delta(best) as far as the screening needs it: [0, bound]
    where the cheap bound excludes it, else the engine's (decide_only)."""
    out = []
    for atoms in directions:
        up = screen.screen_delta_upper(atoms, n, best, threshold=delta)
        if up is not None and up <= delta:
            out.append(engine.Estimate(up if side == "upper" else 0.0, 0.0, up, "screen"))
        else:
            out.append(engine.delta_of_epsilon([(atoms, n)], n, best, side, method=method,
                                               threshold=delta, decide_only=True))
    return out


def _max_epsilon(candidates: Sequence[_Candidate], n: int, delta: float, side: str,
                 method: str = "auto"):
    """The maximum over candidates of eps(delta), on the engine's ``side``; returns
    (value, label of the maximising candidate).

    The directions of the first (canonical) candidate are ordered by the normal approximation;
    the first gets a full eps search and each other one a full search only if it can beat the
    current best (:func:`_can_exceed`: certified delta(best) <= delta rules it out exactly);
    the best is the maximum of the searched brackets, [max of lowers, max of uppers].
    Every other candidate is first screened with one delta evaluation per direction at the
    current best eps and searched only if it can beat it. Upper side: a candidate with
    certified delta_c(best) <= delta has eps_c <= best since delta_c is non-increasing, so
    skipping it is exact. Lower side: a candidate whose certified lower estimates at best are
    all <= delta is skipped; that can only cost tightness, never validity (every candidate's
    value is a valid lower bound); of a candidate that passes, the directions that provably
    cannot beat best are dropped (exact).

    A direction whose atom multiset was already searched (or screened out) for an earlier
    candidate is not searched again: its eps is at most best. This drops mirror images exactly,
    e.g. the other users at x0 against at x1 for a randomizer symmetric in the two values, whose
    forward and backward atoms are the earlier candidate's backward and forward ones. On the
    lower side, multisets equal to 10 significant digits count as equal (the two directions of
    a symmetric pair, e.g. 10-RR's (0, 1, 2), whose atoms differ in the last bits): skipping a
    direction only costs tightness there, at most the difference of two delta(eps) functions
    that agree to ~1e-10 (each search costs 7-8 evaluations of ~0.3 s at n = 1e8).
    """
    best: _Value | None = None
    label = candidates[0].label
    searched: set = set()
    for cand in candidates:
        directions = []
        for atoms in cand.build():
            key = engine.atoms_key(atoms) if side == "upper" else _near_key(atoms)
            if key not in searched:
                searched.add(key)
                directions.append(atoms)
        if not directions:
            continue
        if best is None:
            directions = _guess_order(directions, n, delta)
            best = _epsilon(directions[:1], n, delta, side, method)
            lower, upper = _bracket(best, side)
            for atoms in directions[1:]:
                if math.isfinite(best.value) and not _can_exceed(atoms, n, delta, best, method):
                    continue
                start = _start(best, lower, upper, side)
                lo_d, up_d = _bracket(_epsilon([atoms], n, delta, side, method, start), side)
                lower, upper = max(lower, lo_d), max(upper, up_d)
                value = upper if side == "upper" else lower
                best = _Value(value, upper - lower if math.isfinite(upper) else math.inf)
            continue
        if math.isfinite(best.value):
            ests = _screened(directions, n, best.value, delta, side, method)
            if side == "lower" and all(not (e.lower > delta) for e in ests):
                continue
            directions = [atoms for atoms, e in zip(directions, ests, strict=True)
                          if e.upper > delta]
            if not directions:
                continue
        value = _epsilon(directions, n, delta, side, method,
                         (best.value, math.inf) if best.value > 0 else None)
        if value.value > best.value:
            best, label = value, cand.label
    return best, label


#: the engine's bracket below which the Thm 5.1 post-processing is not tried (see
#: :func:`_engine_is_precise`)
POST_SKIP_ABS = 1e-9
POST_SKIP_REL = 1e-6


def _engine_is_precise(best: _Value) -> bool:
    """True when the engine's certified bracket [value, value + error] of the same pairs is
    narrower than POST_SKIP_ABS and POST_SKIP_REL * value: the post-processed pair's eps is at
    most the pairs' true eps <= value + error, so it could raise the value by less than that
    (the post-processing, numerical/optimal.py, costs ~0.6 s at n = 1e9 and matters where the
    engine's rounding slack grows, eps0 >= 8 at small n, where the bracket is ~1e-6 wide)."""
    return (0 < best.value and math.isfinite(best.error)
            and best.error <= min(POST_SKIP_ABS, POST_SKIP_REL * best.value))


def _certified_zero(items, n: int, delta: float, best: _Value, method: str) -> bool:
    """True when every candidate's certified upper delta(0) is <= delta (both directions):
    delta(eps) is non-increasing, so no eps > 0 can be certified for these pairs, nor for
    their Thm 5.1 post-processings (whose divergence is at most theirs). Asked only where the
    search certified eps = 0 exactly; at eps = 0 the engine's Chernoff bound usually decides
    in ~1 ms, against ~1 s for the post-processing's search at n = 1e9."""
    if not (best.value == 0 and best.error == 0):
        return False
    return all(_delta(c.build(), n, 0.0, "upper", method, threshold=delta).value <= delta
               for c in items)


def _capped(value: _Value, epsilon0: float) -> _Value:
    """min(eps, eps0) for an upper bound: by 000 Property 2 the blanket GPARV is <= e^eps0 - e^eps
    <= 0 at eps = eps0, so delta(eps0) = 0 and the true bound never exceeds eps0 (the engine's
    search stops at eps0 (1 + 1e-9))."""
    if value.value <= epsilon0:
        return value
    lower_end = value.value - value.error
    return _Value(float(epsilon0), max(0.0, float(epsilon0) - lower_end))


def _result(method: str, kind: BoundKind, value: _Value, delta: float, status: BoundStatus,
            start: float, note: str) -> BoundResult:
    return BoundResult(method=method, kind=kind, epsilon=float(value.value), delta=float(delta),
                       epsilon_error=float(value.error), status=status,
                       reference=REFERENCE_UPPER if kind is BoundKind.UPPER else REFERENCE_LOWER,
                       seconds=time.perf_counter() - start, note=note)


def _check_common(n: int, delta: float) -> None:
    require_int_at_least("n", n, 1)
    require_probability_open("delta", delta)
