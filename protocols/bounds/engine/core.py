"""The hockey-stick engine: delta(eps) = (1/n) E[(G_1 + ... + G_n)_+] and its inverse eps(delta).

000 (Su, Cheng, Wang) Thm 12-14 reduce every decomposition-based shuffle bound (clone, blanket,
general clone) and the exact value for a fixed neighbour pair with x_2 = ... = x_n to

    D_{e^eps}(P0 || P1) = (1/n) E[(sum_i G_i)_+],

where the G_i are independent GPARVs (000 Def. 9) described by :class:`RatioAtoms`. Users in a
group are i.i.d.; groups are independent (heterogeneous users). Every number returned here is a
guaranteed bracket ``lower <= true <= upper`` that includes the floating-point slack stated in
:mod:`shufflesim.protocols.bounds.engine.common`; ``value`` is the requested side.

Methods (picked automatically, or forced with ``method=``):

- ``"enumerate"``: all count vectors, for small problems (<= 300 000 joint count vectors).
- ``"conditioning"``: one large group (plus a few enumerated outcomes of other small groups),
  any n; exact up to a second-order bracket when G has few atoms (k-RR, binary RR, the
  5-atom "extreme" decompositions of 000 App. A); see :mod:`protocols.bounds.engine.conditioning`.
  The default whenever it applies.
- ``"fft"``: 000 Alg. 7 on a grid, tilted, with randomized rounding (second-order bracket) or
  the paper's rounding up / down; for several large groups and many-atom GPARVs up to
  n ~ 1e6 (rtol ~ 1e-3); see :mod:`shufflesim.protocols.bounds.engine.fft`.

"auto": enumeration if tiny; else conditioning if the other groups are small; its bracket is
intersected with the FFT's when it is wider than ``rtol`` and the FFT is expected to do better
(e.g. a discretized Laplace mechanism); else the FFT. Every result is also intersected with
Chernoff's bound E[S_+] <= min_lam E e^{lam S} / (lam e), which alone settles evaluations far in
the tail (and any comparison with ``threshold`` it decides).

eps(delta) (:func:`epsilon_of_delta`, in engine/eps_search.py) brackets the crossing of the
non-increasing function delta(eps) with a safeguarded Illinois regula falsi on sqrt(-ln delta)
(nearly linear in eps for Gaussian-like tails), keeping only certified points;
:func:`epsilon_bound` starts it from the normal approximation's crossing and asks the engine
only to decide delta(eps) <= delta.

Performance (bench_engine.py, 10-RR, eps0 = 1, delta = 1e-6, both directions, 2 cores):
n = 1e6 in ~0.3 s, n = 1e8 in ~2 s, peak memory ~20 MiB.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import special

from shufflesim.protocols.bounds.atoms import RatioAtoms
from shufflesim.protocols.bounds.engine.common import (
    Categories,
    Estimate,
    U,
    categories,
    check_epsilon,
    check_groups,
    check_side,
    chernoff_upper,
    input_slack,
    trivial_estimate,
)
from shufflesim.protocols.bounds.engine.conditioning import conditioning_bounds
from shufflesim.protocols.bounds.engine.eps_estimate import EpsilonEstimate
from shufflesim.protocols.bounds.engine.fft_gap import L_MAX, expected_gap
from shufflesim.protocols.bounds.engine.input_error import tilted_input_slack
from shufflesim.protocols.bounds.engine.methods import (
    BLOCKS_WORTH,
    _applicable,
    _conditioning,
    _select,
    enumeration_bounds,
    exact_sum,
    needs_blocks,
)
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.lazy import lazy_functions, lazy_module

engine_fft = lazy_module("shufflesim.protocols.bounds.engine.fft")  # on first use (issue 32)
levels = lazy_module("shufflesim.protocols.bounds.engine.levels")
(epsilon_of_delta,) = lazy_functions("shufflesim.protocols.bounds.engine.eps_search",
                                     "epsilon_of_delta")
(falling_root,) = lazy_functions("shufflesim.protocols.bounds.engine.roots", "falling_root")

__all__ = ["Estimate", "EpsilonEstimate", "hockey_stick", "delta_of_epsilon", "epsilon_of_delta",
           "epsilon_bound", "default_eps_max"]

Group = tuple[RatioAtoms, int]

#: epsilon_bound polishes a coarse bracket wider than this (relative). 1e-4 until the fifth
#: round of issue 18: the search from a guess then certified narrower coarse brackets
#: (1.5e-5 - 5e-5 at n = 1e5, delta = 1e-8) and skipped polishes that the former search made,
#: e.g. exact-lower at 10-RR, eps0 = 2, n = 1e5, delta = 1e-8 came out 1.6e-5 looser
POLISH_ABOVE = 1e-5
#: ... and, on the upper side by default, wider than this where the polish's finer estimates
#: would need the conditioning method's block refinements (methods.needs_blocks; issue 32):
#: k-RR at n = 3e4-5e5, delta <= 1e-6 took 1-5 s for the last <= 2e-5 of eps, two-level
#: randomizers at n = 1e4 1.3-5.6 s for the last <= 2.5e-4. 2e-3, not 1e-3: their coarse
#: brackets at n = 5e3-1e6 are 1.0-1.3e-3 (hr16 eps0 = 1, n = 1e4: 5.1 s for the last 4.8e-4)
POLISH_COSTLY_ABOVE = 2e-3
#: the single style's relative width above which many-level atoms merge (lower side; levels.py)
SINGLE_WIDE = 0.05
METHODS = ("auto", "enumerate", "conditioning", "fft")
#: the polish's estimates are this many times finer than the coarse search's (delta_rtol)
POLISH_FINER = 30
#: the polish stops once its bracket is narrower than this fraction of the eps-width that its
#: estimates' own brackets blur (as the coarse search, 0.5): with FFT estimates (relative
#: width ~2e-4) the default 0.05 spent ~3 evaluations moving the upper end by ~1e-8 relative
#: while the stated error (the other end) stayed ~2e-5 (laplace_metric, n = 1e4)
POLISH_RESOLUTION_STOP = 0.5


def hockey_stick(groups: Sequence[Group], epsilon: float, side: str = "upper", *,
                 rtol: float = 1e-3, atol: float = 0.0, threshold: float | None = None,
                 method: str = "auto", fft_step: float | None = None,
                 decide_only: bool = False) -> Estimate:
    """E[(sum_i G_i)_+] for independent groups of i.i.d. GPARVs (000 Thm 12-14).

    ``groups``: sequence of (RatioAtoms, count). ``side``: "upper" or "lower" selects
    ``Estimate.value``; both sides are always returned. ``rtol`` / ``atol``: the refinement
    stops once upper - lower <= max(rtol * upper, atol), or once the bracket lies on one side of
    ``threshold`` (the caller only needs that comparison). These are requests, not guarantees:
    the bracket is always valid, and its width is what the method reached. ``method``: see the
    module docstring. ``fft_step`` fixes the grid step of the "fft" method (e.g. to reproduce
    000 Sec. 6's discretization l = (e^eps0 - 1)/1000). ``decide_only``: the caller needs
    only the comparison with ``threshold`` (e.g. a candidate screened at one eps), so the
    conditioning method's cheap single style is tried before the exact band sum, whose tables
    cost ~10-40 ms at n = 1e4; the bracket returned is valid either way.
    """
    groups = check_groups(groups)
    epsilon = check_epsilon(epsilon)
    side = check_side(side)
    if method not in METHODS:
        raise ParameterError("method", method, f"must be one of {METHODS}")
    for name, val in (("rtol", rtol), ("atol", atol)):
        if isinstance(val, bool) or not (isinstance(val, (int, float)) and val >= 0):
            raise ParameterError(name, val, "must be a number >= 0")
    cats = [categories(atoms, count, epsilon) for atoms, count in groups if count > 0]
    if not cats:
        return Estimate(0.0, 0.0, 0.0, "trivial")
    triv = trivial_estimate(cats)
    if triv is not None:
        lo, hi = triv
        if hi > 0.0 and all(cat.c.max() <= 0 for cat in cats):   # hi: the input slack alone
            hi = min(hi, tilted_input_slack(groups, epsilon))
        return Estimate(hi if side == "upper" else lo, lo, hi, "trivial")
    # many likelihood-ratio levels (engine/levels.py): where the FFT would be next, the merged
    # variable's exact lower side takes its place on the lower side (and in a screening)
    merge_levels = (method == "auto" and len(groups) == 1 and fft_step is None
                    and (side == "lower" or decide_only))
    # Groups whose G is a constant only shift the sum; fold them into one deterministic shift.
    active = [cat for cat in cats if cat.c.size > 1]
    const = sum(cat.count * float(cat.c[0]) for cat in cats if cat.c.size == 1)
    const_err = sum(cat.count * abs(float(cat.c[0])) for cat in cats if cat.c.size == 1) * 4 * U
    if const != 0.0:
        active.append(Categories(np.array([const]), np.array([1.0]), 1, 0.0))
    if not active:                     # every group constant, summing to exactly 0
        hi = input_slack(cats) + const_err
        return Estimate(hi if side == "upper" else 0.0, 0.0, hi, "trivial")
    # Inputs: |computed c - exact c| <= c_err for every user (engine/common.py: input_slack).
    slack = input_slack(cats)
    if slack > 0.0:     # per-atom rounding, relative in the tail (issue 31: large eps0)
        slack = min(slack, tilted_input_slack(groups, epsilon))
    slack += const_err
    chosen = _select(active) if method == "auto" else method
    if not _applicable(chosen, active):
        raise ParameterError("method", method, "is not applicable to these groups "
                             "(too many outcomes)")
    # Below this absolute width no method can tighten the bracket (the input slack), so no
    # refinement is asked for beyond it.
    atol = max(atol, 4 * slack)
    chern = chernoff_upper(active)
    if chern + slack <= max(threshold if threshold is not None else 0.0, atol):
        return Estimate(chern + slack if side == "upper" else 0.0, 0.0, chern + slack, "chernoff")
    if chosen == "enumerate":
        lo, hi = enumeration_bounds(active)
    elif chosen == "conditioning":
        reach = expected_gap(active, L_MAX) if method == "auto" else math.inf
        lo, hi, pooled = _conditioning(active, rtol, atol, threshold, decide_only, reach)
        chosen = "conditioning+pool" if pooled else chosen
        # the exact band sum's bracket is rounding only: the FFT does not narrow it (issue 32)
        undecided = (threshold is None or lo <= threshold < hi) and not exact_sum(active)
        # within BLOCKS_WORTH of the request the bracket is kept (methods.BLOCKS_WORTH)
        if (method == "auto" and undecided and hi - lo > BLOCKS_WORTH * max(rtol * hi, atol)
                and reach < 0.5 * (hi - lo) / hi):
            # Both brackets are valid: keep their intersection.
            merged = _levels_lower(groups, epsilon, rtol, atol, threshold, merge_levels)
            if merged is not None:
                lo, chosen = max(lo, merged), "conditioning+levels"
            else:
                f_lo, f_hi = engine_fft.fft_bounds(active, max(rtol, reach))
                lo, hi = max(lo, f_lo), min(hi, f_hi)
                chosen = "conditioning+fft"
    else:
        merged = _levels_lower(groups, epsilon, rtol, atol, threshold, merge_levels)
        if merged is not None:
            lo, hi, chosen = merged, chern, "levels"
        else:
            lo, hi = engine_fft.fft_bounds(active, rtol, fft_step)
    hi = min(hi, chern)
    lo, hi = max(lo - slack, 0.0), hi + slack
    return Estimate(hi if side == "upper" else lo, lo, hi, chosen)


def _levels_lower(groups, epsilon, rtol, atol, threshold, allowed) -> float | None:
    """The merged variables' best exact lower side (engine/levels.py) where the merge
    applies, else None. Valid for the lower side of the unmerged group at any eps."""
    if not (allowed and levels.applies(*groups[0], epsilon)):
        return None
    atoms, count = groups[0]
    return max(hockey_stick([(merged, count)], epsilon, "lower", rtol=rtol, atol=atol,
                            threshold=threshold).lower for merged in levels.candidates(atoms))


def delta_of_epsilon(groups: Sequence[Group], n: int, epsilon: float, side: str = "upper",
                     **kwargs) -> Estimate:
    """delta(eps) = E[(sum_i G_i)_+] / n (000 Thm 12-14); ``n`` is the normaliser of the
    theorem (the total number of users). Keyword arguments go to :func:`hockey_stick`
    (``atol`` and ``threshold`` are in delta units here)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ParameterError("n", n, "must be an integer >= 1")
    n = int(n)
    if kwargs.get("atol"):
        kwargs["atol"] = kwargs["atol"] * n
    if kwargs.get("threshold") is not None:
        kwargs["threshold"] = kwargs["threshold"] * n
    return hockey_stick(groups, epsilon, side, **kwargs).scaled(1.0 / n)


# ---------------------------------------------------------------------------------------------
# eps(delta) for n users (the search itself: engine/eps_search.py)
# ---------------------------------------------------------------------------------------------

def _polish(coarse: EpsilonEstimate, atoms: RatioAtoms, n: int, delta: float, side: str,
            eps_max: float, rtol: float, delta_rtol: float, method: str,
            fft_step: float | None, costly_above: float = 0.0) -> EpsilonEstimate:
    """Second pass of :func:`epsilon_bound`: the coarse search asks the engine only to decide
    delta(eps) <= delta to ``delta_rtol``, which leaves the crossing blurred by about
    delta_rtol / |d ln delta / d eps|. If the coarse bracket is wider than POLISH_ABOVE
    (relative), re-run inside it with estimates 30x finer; keep the better certificate of each
    kind. Not where it is narrower than ``costly_above`` (relative) and the finer estimates would
    need block refinements: the stated error is then the coarse bracket's."""
    if (coarse.saturated or not math.isfinite(coarse.upper) or coarse.upper <= coarse.lower
            or coarse.upper_probed):
        # upper_probed: a lower-side search whose upper end only its last probe certified
        # (the bracket of the lower estimates had no point below delta; upper = inf before
        # that probe, issue 32). Its lower end is kept: re-searching with 30x finer FFT
        # estimates cost 6 evaluations (oue d = 4, n = 1e6: 10.9 -> 25.9 s) for +6.6e-4.
        return coarse
    if coarse.error <= max(1e-10, rtol * coarse.upper, POLISH_ABOVE * coarse.upper):
        return coarse
    fine_rtol = delta_rtol / POLISH_FINER
    end = dict(coarse.ends).get(coarse.upper)
    end = getattr(end, "source", None) or end   # a point certified from convexity: its source
    if (coarse.error <= costly_above * coarse.upper and end is not None and end.upper > 0
            and method in ("auto", "conditioning")
            and needs_blocks(categories(atoms, n, coarse.upper), (end.upper - end.lower)
                             / end.upper, fine_rtol, end.method.startswith("conditioning+pool"))):
        return coarse

    def fine(eps):
        return delta_of_epsilon([(atoms, n)], n, eps, side, rtol=fine_rtol, threshold=delta,
                                method=method, fft_step=fft_step)

    width = coarse.upper - coarse.lower
    known = dict(coarse.ends)
    if coarse.lower > 0 and coarse.lower in known and coarse.upper in known:
        # The coarse certificates are valid brackets of the same function: the lower end has a
        # lower estimate > delta, the upper end an upper estimate <= delta, so the side's
        # estimate is > delta at a and <= delta at b, as the bracket requires; no evaluation.
        a, b = coarse.lower, coarse.upper
    else:
        known = None
        a = max(coarse.lower - 0.1 * width, 0.5 * coarse.lower)
        b = min(coarse.upper + 0.1 * width, eps_max)
    # the normal approximation's slope at the crossing: the search's hint for its last point,
    # which certifies the other side near the crossing (without one, a polish whose points
    # all lie near the crossing has no slope and keeps the coarse far end: laplace_metric,
    # n = 1e4, an error of 1.4e-5 instead of 4e-7)
    slope = gaussian_slope(atoms, n, delta, b) if a > 0 else None
    polished = epsilon_of_delta(fine, delta, side, eps_max=eps_max, rtol=rtol,
                                bracket=(a, b) if a > 0 else None, max_evaluations=30,
                                known=known, xtol=SEARCH_XTOL, guess_slope=slope,
                                resolution_stop=POLISH_RESOLUTION_STOP, convex=False)
    lower = max(coarse.lower, polished.lower)
    upper = min(coarse.upper, polished.upper)
    value = upper if side == "upper" else lower
    ends = tuple((e, est) for e, est in (*coarse.ends, *polished.ends) if e in (lower, upper))
    return EpsilonEstimate(value, lower, upper, upper - lower, False,
                           coarse.evaluations + polished.evaluations, ends)


_SQRT_2PI = np.sqrt(2 * np.pi)


def _gaussian_log_excess(atoms: RatioAtoms, n: int, delta: float):
    """eps -> ln(delta_N(eps) / delta) for the normal approximation S ~ N(n E G, n Var G),
    E[S_+] = s phi(m/s) + m Phi(m/s), delta_N = E[S_+] / n."""
    def log_ratio(eps: float) -> float:
        vals = atoms.values(eps)
        w = atoms.weight
        m1 = float(w @ vals)
        var = float(w @ vals ** 2) - m1 ** 2
        m, s = n * m1, math.sqrt(max(n * var, 1e-300))
        z = np.array([m / s])
        # scipy.stats.norm's pdf and cdf, without its per-call overhead (~0.5 ms a call)
        pdf, cdf = np.exp(-z ** 2 / 2.0) / _SQRT_2PI, special.ndtr(z)
        z = float(z[0])
        e_pos = float(s * (pdf[0] + z * cdf[0]))
        if e_pos <= 0:        # underflow far in the tail: log of the tail asymptote
            return -0.5 * z * z + math.log(s) - 2 * math.log(abs(z)) - math.log(n * delta)
        return math.log(e_pos / (n * delta))
    return log_ratio


def gaussian_guess(atoms: RatioAtoms, n: int, delta: float, eps_max: float) -> float | None:
    """A starting point for the eps search: the crossing of delta for the normal approximation
    (:func:`_gaussian_log_excess`; only a guess: nothing relies on it)."""
    log_ratio = _gaussian_log_excess(atoms, n, delta)
    try:
        # far tails overflow z^2 (e^eps0 ~ 1e13 at eps0 = 30): a guess may fail, quietly
        with np.errstate(all="ignore"):
            if log_ratio(0.0) <= 0 or log_ratio(eps_max) >= 0:
                return None
            guess = falling_root(log_ratio, 0.0, eps_max)
        return guess if guess is not None and math.isfinite(guess) else None
    except (ValueError, ZeroDivisionError, OverflowError, FloatingPointError):
        return None


def gaussian_slope(atoms: RatioAtoms, n: int, delta: float, eps: float) -> float | None:
    """-d ln delta / d eps of the normal approximation at eps (a central difference): the
    slope hint of the search's start from the guess (only a hint: nothing relies on it)."""
    log_ratio = _gaussian_log_excess(atoms, n, delta)
    h = 1e-4 * eps
    try:
        with np.errstate(all="ignore"):
            slope = (log_ratio(eps - h) - log_ratio(eps + h)) / (2 * h)
    except (ValueError, ZeroDivisionError, OverflowError, FloatingPointError):
        return None
    return slope if 0 < slope < math.inf else None


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


def atoms_key(atoms: RatioAtoms) -> tuple:
    """The atom multiset of one direction: directions with equal keys have equal delta(eps)."""
    return tuple(sorted(zip(atoms.a.tolist(), atoms.b.tolist(), atoms.weight.tolist(),
                            strict=True)))


#: eps-search tolerance (relative) by default (forced methods, one-signed values), and for the
#: automatic and conditioning methods, whose delta brackets are ~1e-8 wide where they apply (the
#: exact sums of engine/exact_band.py and enumerate.py, the conditioning method's single style):
#: a finer search costs 2-3 cheap evaluations and keeps each end at or beyond the former one
SEARCH_RTOL = 1e-5
EXACT_SEARCH_RTOL = 1e-7
#: absolute eps tolerance of the searches (eps is ~1e-6 at n = 1e6, eps0 = 0.01: the relative
#: tolerance decides)
SEARCH_XTOL = 1e-15


def _search_rtol(atoms: RatioAtoms, n: int, top: float, method: str, side: str) -> float:
    if method not in ("auto", "conditioning"):
        return SEARCH_RTOL
    cat = categories(atoms, n, 0.5 * top)
    if cat.c.size < 2 or not (cat.c.min() < 0 < cat.c.max()):
        return SEARCH_RTOL
    return EXACT_SEARCH_RTOL


def _needs_fft(atoms: RatioAtoms, n: int, delta: float, top: float) -> bool:
    """Whether the former methods would need the FFT near the crossing (the normal
    approximation's): the conditioning method does not apply, or its single style leaves a
    bracket wider than SINGLE_WIDE there (its block refinements then rarely reach the search's
    precision: 0.86-0.99 on the Laplace and cyclic geometric examples, ~4e-8 on Hadamard
    response). Only then is the merge worth its loss of tightness; either way every value
    stays valid."""
    guess = gaussian_guess(atoms, n, delta, top) or 0.5 * top
    cat = categories(atoms, n, guess)
    if not _applicable("conditioning", [cat]):
        return True
    lo, hi = conditioning_bounds(cat, np.zeros(1), np.ones(1), np.zeros(1), 0)
    return not hi > 0 or hi - lo > SINGLE_WIDE * hi


def _merged_lower(atoms: RatioAtoms, n: int, delta: float, top: float, rtol: float | None,
                  delta_rtol: float) -> EpsilonEstimate:
    """eps(delta) of many-level atoms on the lower side (engine/levels.py): the merge with the
    larger delta at the normal approximation's crossing, searched exactly; its lower end is a
    lower bound for the unmerged atoms, Chernoff's crossing of the unmerged atoms an upper end
    (the bracket states the merge's error)."""
    guess = gaussian_guess(atoms, n, delta, top) or 0.5 * top
    merged = max(levels.candidates(atoms), key=lambda m: delta_of_epsilon(
        [(m, n)], n, guess, "lower", rtol=delta_rtol).lower)
    inner = epsilon_bound([merged], n, delta, "lower", eps_max=top, rtol=rtol,
                          delta_rtol=delta_rtol)
    upper = levels.chernoff_crossing(atoms, n, delta, top, inner.lower)
    upper = max(upper, inner.lower)
    return EpsilonEstimate(inner.lower, inner.lower, upper, upper - inner.lower,
                           inner.saturated, inner.evaluations)


def epsilon_bound(atoms_both_directions: Sequence[RatioAtoms], n: int, delta: float,
                  side: str = "upper", *, eps_max: float | None = None,
                  rtol: float | None = None, delta_rtol: float = 5e-3, method: str = "auto",
                  fft_step: float | None = None,
                  bracket: tuple[float, float] | None = None) -> EpsilonEstimate:
    """eps(delta) for n i.i.d. users, maximised over directions.

    ``atoms_both_directions``: the GPARV atoms of each direction to check, e.g. [atoms,
    atoms.swapped()] for D(P0 || P1) and D(P1 || P0) (a symmetric reference). Directions whose
    atom multisets coincide are computed once. The bracket of the maximum is
    [max of lowers, max of uppers]. ``delta_rtol`` is the relative precision requested from
    the engine for each delta(eps). ``rtol`` (relative width of the eps bracket): by default
    EXACT_SEARCH_RTOL for the automatic and conditioning methods, SEARCH_RTOL otherwise.
    ``bracket`` (optional): an eps bracket to start each direction's search from (e.g. that of
    a direction with the same delta(eps) by symmetry; an upper end beyond the direction's
    eps_max means eps_max); the search checks it (two evaluations) and starts afresh where it
    does not hold. On the upper side its lower end is first probed with the polish's
    precision: where delta(bracket[0]) <= delta is certified, that direction's result is the
    bracket [0, bracket[0]] (its crossing is not above the start; the caller keeps the
    maximum of the directions' ends).
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
        key = atoms_key(atoms)
        if key in seen:
            continue
        seen.append(key)
        top = default_eps_max(atoms) if eps_max is None else eps_max
        if (side == "lower" and method == "auto" and fft_step is None
                and levels.applies(atoms, n, 0.5 * top) and _needs_fft(atoms, n, delta, top)):
            # many likelihood-ratio levels: merged into a few (engine/levels.py)
            results.append(_merged_lower(atoms, n, delta, top, rtol, delta_rtol))
            continue
        known = None
        if side == "upper" and bracket is not None and 0 < bracket[0] < top:
            # A start from below (e.g. the best eps of other directions): with the polish's
            # precision, one evaluation there often settles that this direction's crossing is
            # not above it (a mirror image of a searched direction, whose atoms differ in the
            # last bits, is otherwise searched in full: laplace_metric, n = 1e4, 17 FFTs).
            # Its crossing then lies in [0, bracket[0]]: that bracket is returned.
            probe = delta_of_epsilon([(atoms, n)], n, float(bracket[0]), side,
                                     rtol=delta_rtol / POLISH_FINER, threshold=delta,
                                     method=method, fft_step=fft_step)
            if probe.upper <= delta:
                end = float(bracket[0])
                results.append(EpsilonEstimate(end, 0.0, end, end, False, 1, ((end, probe),)))
                continue
            known = {float(bracket[0]): probe}
        tol = _search_rtol(atoms, n, top, method, side) if rtol is None else rtol

        def fn(eps, atoms=atoms):
            return delta_of_epsilon([(atoms, n)], n, eps, side, rtol=delta_rtol,
                                    threshold=delta, method=method, fft_step=fft_step)

        # A start: a bracket given, else the normal approximation's crossing and slope (the
        # search steps from there and evaluates eps = 0 and eps_max only if it must: those
        # cost a table build each at n = 1e4, and 1.1 s of 2.8 at n = 1e8).
        start, guess, slope = None, None, None
        if bracket is not None and 0 < bracket[0] < min(bracket[1], top):
            start = (bracket[0], min(bracket[1], top))
        else:
            guess = gaussian_guess(atoms, n, delta, top)
            if guess is not None:
                slope = gaussian_slope(atoms, n, delta, guess)
        coarse = epsilon_of_delta(fn, delta, side, eps_max=top, rtol=tol, guess=guess,
                                  guess_slope=slope, bracket=start, resolution_stop=0.5,
                                  xtol=SEARCH_XTOL, known=known, trust_width=delta_rtol,
                                  convex=True)
        costly = POLISH_COSTLY_ABOVE if side == "upper" and rtol is None else 0.0
        results.append(_polish(coarse, atoms, n, delta, side, top, tol, delta_rtol, method,
                               fft_step, costly))
    lower = max(r.lower for r in results)
    upper = max(r.upper for r in results)
    value = upper if side == "upper" else lower
    return EpsilonEstimate(value, lower, upper, upper - lower, any(r.saturated for r in results),
                           sum(r.evaluations for r in results))
