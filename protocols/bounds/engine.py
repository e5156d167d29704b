"""The hockey-stick engine: delta(eps) = (1/n) E[(G_1 + ... + G_n)_+] and its inverse eps(delta).

000 (Su, Cheng, Wang) Thm 12-14 reduce every decomposition-based shuffle bound (clone, blanket,
general clone) and the exact value for a fixed neighbour pair with x_2 = ... = x_n to

    D_{e^eps}(P0 || P1) = (1/n) E[(sum_i G_i)_+],

where the G_i are independent GPARVs (000 Def. 9) described by :class:`RatioAtoms`. Users in a
group are i.i.d.; groups are independent (heterogeneous users). Every number returned here is a
guaranteed bracket ``lower <= true <= upper`` that includes the floating-point slack stated in
:mod:`protocols.bounds.engine_common`; ``value`` is the requested side.

Methods (picked automatically, or forced with ``method=``):

- ``"enumerate"``: all count vectors, for tiny problems (<= 20 000 joint count vectors).
- ``"conditioning"``: one large group (plus a few enumerated outcomes of other small groups),
  any n; see :mod:`protocols.bounds.engine_conditioning`. The default whenever it applies.
- ``"fft"``: 000 Alg. 7 (values rounded up / down to a grid, n-fold convolution by FFT) with
  the wrap-around, truncation and FFT rounding bounded; for several large groups at moderate
  n (the rounding error grows like n * grid step); see :mod:`protocols.bounds.engine_fft`.

eps(delta) (:func:`epsilon_of_delta`) brackets the crossing of the non-increasing function
delta(eps) with a safeguarded regula falsi on log delta, keeping only certified points.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from protocols.bounds import engine_fft
from protocols.bounds.atoms import RatioAtoms
from protocols.bounds.engine_common import (
    Categories,
    Estimate,
    U,
    categories,
    check_epsilon,
    check_groups,
    check_side,
    trivial_estimate,
)
from protocols.bounds.engine_conditioning import conditioning_bounds
from protocols.bounds.engine_enumerate import composition_count, enumeration_bounds, joint_outcomes
from protocols.errors import ParameterError

__all__ = [
    "Estimate",
    "EpsilonEstimate",
    "hockey_stick",
    "delta_of_epsilon",
    "epsilon_of_delta",
    "epsilon_bound",
    "default_eps_max",
]

Group = tuple[RatioAtoms, int]

ENUMERATE_MAX = 20_000       # joint count vectors for the "enumerate" method
SHIFT_OUTCOMES_MAX = 256     # enumerated outcomes of the small groups beside the main one
MULTI_BLOCKS = (8, 32)       # refinements of the conditioning method, in order
LEAF_BUDGET = 2_000_000      # leaf evaluations allowed for one refinement
METHODS = ("auto", "enumerate", "conditioning", "fft")


def _enumeration_size(cats: Sequence[Categories]) -> int:
    size = 1
    for cat in cats:
        size *= composition_count(cat.count, cat.c.size)
    return size


def _main_group(cats: Sequence[Categories]) -> int:
    return int(np.argmax([cat.count * cat.variance for cat in cats]))


def _conditioning(cats: list[Categories], rtol: float, atol: float) -> tuple[float, float]:
    main = _main_group(cats)
    others = [cat for i, cat in enumerate(cats) if i != main]
    if others:
        values, value_err, probs, rel = joint_outcomes(others)
        p_lo, p_hi = probs * (1 - rel), probs * (1 + rel)
    else:
        values, value_err, p_lo, p_hi = np.zeros(1), np.zeros(1), np.ones(1), np.ones(1)
    cat = cats[main]
    best_lo, best_hi = -math.inf, math.inf
    n_t = max(1.0, 20 * math.sqrt(cat.count * 0.25))
    for n_blocks in (0, *MULTI_BLOCKS):
        if n_blocks and n_t * (n_blocks + 4) * values.size > LEAF_BUDGET:
            break
        # The shift probabilities are bracketed: the lower bound uses the lower probabilities,
        # the upper bound the upper ones (every term is >= 0).
        lo, hi = conditioning_bounds(cat, values, p_lo, value_err, n_blocks)
        if others:
            hi = conditioning_bounds(cat, values, p_hi, value_err, n_blocks)[1]
        best_lo, best_hi = max(best_lo, lo), min(best_hi, hi)
        if best_hi - best_lo <= max(rtol * best_hi, atol):
            break
    return best_lo, best_hi


def _applicable(method: str, cats: list[Categories]) -> bool:
    if method == "enumerate":
        return _enumeration_size(cats) <= ENUMERATE_MAX * 50
    if method == "conditioning":
        main = _main_group(cats)
        others = [cat for i, cat in enumerate(cats) if i != main]
        return _enumeration_size(others) <= SHIFT_OUTCOMES_MAX
    return True


def _select(cats: list[Categories]) -> str:
    if _enumeration_size(cats) <= ENUMERATE_MAX:
        return "enumerate"
    if _applicable("conditioning", cats):
        return "conditioning"
    return "fft"


def hockey_stick(groups: Sequence[Group], epsilon: float, side: str = "upper", *,
                 rtol: float = 1e-3, atol: float = 0.0, method: str = "auto") -> Estimate:
    """E[(sum_i G_i)_+] for independent groups of i.i.d. GPARVs (000 Thm 12-14).

    ``groups``: sequence of (RatioAtoms, count). ``side``: "upper" or "lower" selects
    ``Estimate.value``; both sides are always returned. ``rtol`` / ``atol``: the refinement
    stops once upper - lower <= max(rtol * upper, atol) (a request, not a guarantee: the bracket
    is always valid, and its width is what the method reached). ``method``: see the module doc.
    """
    groups = check_groups(groups)
    epsilon = check_epsilon(epsilon)
    side = check_side(side)
    if method not in METHODS:
        raise ParameterError("method", method, f"must be one of {METHODS}")
    if not (isinstance(rtol, (int, float)) and rtol >= 0) or not (isinstance(atol, (int, float)) and atol >= 0):
        raise ParameterError("rtol/atol", (rtol, atol), "must be numbers >= 0")
    cats = [categories(atoms, count, epsilon) for atoms, count in groups if count > 0]
    if not cats:
        return Estimate(0.0, 0.0, 0.0, "trivial")
    triv = trivial_estimate(cats)
    if triv is not None:
        lo, hi = triv
        return Estimate(hi if side == "upper" else lo, lo, hi, "trivial")
    # Groups whose G is a constant only shift the sum; fold them into one deterministic shift.
    active = [cat for cat in cats if cat.c.size > 1]
    const = sum(cat.count * float(cat.c[0]) for cat in cats if cat.c.size == 1)
    const_err = sum(cat.count * abs(float(cat.c[0])) for cat in cats if cat.c.size == 1) * 4 * U
    if const != 0.0:
        active.append(Categories(np.array([const]), np.array([1.0]), 1, 0.0))
    chosen = _select(active) if method == "auto" else method
    if not _applicable(chosen, active):
        raise ParameterError("method", method, "is not applicable to these groups (too many outcomes)")
    if chosen == "enumerate":
        lo, hi = enumeration_bounds(active)
    elif chosen == "conditioning":
        lo, hi = _conditioning(active, rtol, atol)
    else:
        lo, hi = engine_fft.fft_bounds(active, rtol)
    # Inputs: |computed c - exact c| <= c_err for every user; E[(.)_+] is 1-Lipschitz per user.
    slack = sum(cat.count * cat.c_err for cat in cats) + const_err
    lo, hi = max(lo - slack, 0.0), hi + slack
    return Estimate(hi if side == "upper" else lo, lo, hi, chosen)


def delta_of_epsilon(groups: Sequence[Group], n: int, epsilon: float, side: str = "upper",
                     **kwargs) -> Estimate:
    """delta(eps) = E[(sum_i G_i)_+] / n (000 Thm 12-14); ``n`` is the normaliser of the
    theorem (the total number of users). Keyword arguments go to :func:`hockey_stick`."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ParameterError("n", n, "must be an integer >= 1")
    return hockey_stick(groups, epsilon, side, **kwargs).scaled(1.0 / int(n))


# ---------------------------------------------------------------------------------------------
# eps(delta)
# ---------------------------------------------------------------------------------------------

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


def _log_or_none(x: float) -> float | None:
    return math.log(x) if x > 0 else None


def epsilon_of_delta(delta_fn: Callable[[float], Estimate], delta: float, side: str = "upper", *,
                     eps_max: float = 20.0, xtol: float = 1e-9, rtol: float = 1e-5,
                     max_evaluations: int = 100) -> EpsilonEstimate:
    """Smallest eps in [0, eps_max] with delta(eps) <= delta, bracketed.

    ``delta_fn(eps)`` returns an :class:`Estimate` of a non-increasing function delta(eps).
    A point is certified "below" when its upper estimate is <= delta (then eps* <= eps) and
    "above" when its lower estimate is > delta (then eps* > eps). The search runs on the
    estimate of the requested side (the upper one for side="upper") and stops when that bracket
    is narrower than max(xtol, rtol * eps). Returned: for side="upper", value = the smallest
    certified-below eps (conservative); for side="lower", value = the largest certified-above
    eps (0 if none); ``error`` = width between the certified points of both kinds.

    eps = 0 is returned directly when delta(0) <= delta is certified. If the upper estimate at
    eps_max still exceeds delta, the result is ``saturated``: value = inf for side="upper";
    for side="lower", the largest certified-above eps (eps_max when delta(eps_max) > delta).
    """
    side = check_side(side)
    if not (isinstance(delta, (int, float)) and 0 < delta < math.inf):
        raise ParameterError("delta", delta, "must be a number > 0")
    if not (isinstance(eps_max, (int, float)) and 0 < eps_max < math.inf):
        raise ParameterError("eps_max", eps_max, "must be a finite number > 0")
    log_delta = math.log(delta)
    certified_above = 0.0     # largest eps with lower(eps) > delta (0: trivially eps* >= 0)
    certified_below = math.inf
    evaluations = 0
    cache: dict[float, Estimate] = {}

    def evaluate(eps: float) -> float:
        """Records certificates; returns the side's estimate at eps."""
        nonlocal certified_above, certified_below, evaluations
        est = delta_fn(eps)
        evaluations += 1
        cache[eps] = est
        if est.upper <= delta:
            certified_below = min(certified_below, eps)
        if est.lower > delta:
            certified_above = max(certified_above, eps)
        return est.upper if side == "upper" else est.lower

    def result(saturated: bool) -> EpsilonEstimate:
        if side == "upper":
            value = certified_below
        else:
            value = certified_above
        return EpsilonEstimate(value, certified_above, certified_below,
                               certified_below - certified_above, saturated, evaluations)

    f0 = evaluate(0.0)
    if f0 <= delta:
        return result(False)
    f_max = evaluate(float(eps_max))
    if f_max > delta:
        return result(True)
    # Bracket of the side's estimate: > delta at lo, <= delta at hi. Regula falsi on
    # g = log(estimate) - log(delta), Illinois variant (halve the retained end's g when the same
    # end is kept twice); bisection when g is undefined (estimate 0) or the step is degenerate.
    lo, hi = 0.0, float(eps_max)
    g_lo = _log_or_none(f0)
    g_hi = _log_or_none(f_max)
    g_lo = None if g_lo is None else g_lo - log_delta
    g_hi = None if g_hi is None else g_hi - log_delta
    kept = 0                                   # -1: lo was kept last step, +1: hi was kept
    while evaluations < max_evaluations and hi - lo > max(xtol, rtol * hi):
        width = hi - lo
        x = None
        if g_lo is not None and g_hi is not None and g_lo > 0 >= g_hi and g_lo > g_hi:
            x = lo + width * g_lo / (g_lo - g_hi)
        if x is None or not (lo + 0.01 * width < x < hi - 0.01 * width):
            x = lo + 0.5 * width
        fx = evaluate(x)
        gx = _log_or_none(fx)
        gx = None if gx is None else gx - log_delta
        if fx <= delta:
            hi, g_hi = x, gx
            if kept == -1 and g_lo is not None:
                g_lo *= 0.5
            kept = -1
        else:
            lo, g_lo = x, gx
            if kept == 1 and g_hi is not None:
                g_hi *= 0.5
            kept = 1
    return result(False)


def default_eps_max(atoms: RatioAtoms) -> float:
    """An eps beyond which delta(eps) = 0: every value a_j - e^eps b_j is <= 0 once
    eps >= max_j ln(a_j / b_j) (000 Property 2: G <= e^eps0 - e^eps for an eps0-LDP
    randomizer). Atoms with b_j = 0 < a_j make delta positive for every eps: 30 is used then."""
    keep = (atoms.weight > 0) & (atoms.a > 0)
    if not keep.any():
        return 1e-6
    a, b = atoms.a[keep], atoms.b[keep]
    if (b <= 0).any():
        return 30.0
    top = float(np.max(np.log(a) - np.log(b)))
    return max(top, 0.0) * (1 + 1e-9) + 1e-9


def epsilon_bound(atoms_both_directions: Sequence[RatioAtoms], n: int, delta: float,
                  side: str = "upper", *, eps_max: float | None = None, rtol: float = 1e-5,
                  delta_rtol: float = 1e-3, method: str = "auto") -> EpsilonEstimate:
    """eps(delta) for n i.i.d. users, maximised over directions.

    ``atoms_both_directions``: the GPARV atoms of each direction to check, e.g. [atoms,
    atoms.swapped()] for D(P0 || P1) and D(P1 || P0) (a symmetric reference). Directions whose
    atom multisets coincide are computed once. The bracket of the maximum is
    [max of lowers, max of uppers]. ``delta_rtol`` is the relative precision requested from
    the engine for each delta(eps).
    """
    side = check_side(side)
    if isinstance(atoms_both_directions, RatioAtoms):
        atoms_both_directions = [atoms_both_directions]
    if len(atoms_both_directions) == 0:
        raise ParameterError("atoms_both_directions", atoms_both_directions, "must not be empty")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ParameterError("n", n, "must be an integer >= 1")
    n = int(n)
    seen: list[tuple] = []
    results = []
    for atoms in atoms_both_directions:
        if not isinstance(atoms, RatioAtoms):
            raise ParameterError("atoms_both_directions", atoms, "must contain RatioAtoms")
        key = tuple(sorted(zip(atoms.a.tolist(), atoms.b.tolist(), atoms.weight.tolist(), strict=True)))
        if key in seen:
            continue
        seen.append(key)
        top = default_eps_max(atoms) if eps_max is None else eps_max

        def fn(eps, atoms=atoms):
            return delta_of_epsilon([(atoms, n)], n, eps, side, rtol=delta_rtol, method=method)

        results.append(epsilon_of_delta(fn, delta, side, eps_max=top, rtol=rtol))
    lower = max(r.lower for r in results)
    upper = max(r.upper for r in results)
    value = upper if side == "upper" else lower
    return EpsilonEstimate(value, lower, upper, upper - lower, any(r.saturated for r in results),
                           sum(r.evaluations for r in results))
