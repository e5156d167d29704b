"""Atom sets of continuous randomizers' decompositions (module docstring of
protocols.bounds.numerical.decompositions; 000 Sec. 5.2-5.3 for the rounding of continuous
ratios into cells): exact atoms of densities constant between breakpoints, the piecewise
mechanism's cells from its geometry, and log-linear densities (Laplace) rounded into cells in
the conservative direction.

Moved out of numerical/atom_sets.py (issue 32, session 16) so that the categorical
randomizers' bounds do not compile them; decompositions.py binds them on first use."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cmp_to_key

import numpy as np
from scipy.special import exprel

from shufflesim.protocols.bounds.atoms import RatioAtoms, Rounding
from shufflesim.protocols.bounds.numerical.atom_sets import (
    DecompositionError,
    atoms_from_masses,
    merge_atoms,
)
from shufflesim.protocols.errors import require

#: Relative nudge applied to rounded atoms in their conservative direction (absorbs the
#: floating-point error of log densities, ~1e-16).
_ROUNDING_NUDGE = 1e-13


def _piecewise_constant_atoms(
    logpdfs: Sequence[Callable], logref: Callable, breakpoints: np.ndarray
) -> RatioAtoms:
    """Exact atoms for densities that are constant between consecutive ``breakpoints``.

    Each density is read from the declared log density at three interior points of every cell
    (constancy is verified). Returns atoms (f0/fref, f1/fref, fref * length).

    Breakpoints that coincide in exact arithmetic can differ by an ulp once computed (piecewise
    at eps0 = 4: l(-1) and l(1) + C - 1 land an ulp inside [-C, C]), and on a cell one ulp wide
    the declared density's own rounding makes it jump. Breakpoints closer than 16 ulps of the
    largest |breakpoint| are therefore merged (the first and last are kept exactly, otherwise
    the earlier one): the mass this moves is below that width times the largest density, the
    floating-point resolution of the densities themselves.
    """
    bp = _merge_close(np.unique(np.asarray(breakpoints, dtype=float)))
    u, v = bp[:-1], bp[1:]
    width = v - u
    probes = u[:, None] + width[:, None] * np.array([0.25, 0.5, 0.75])
    values = [np.asarray(f(probes), dtype=float) for f in (*logpdfs, logref)]
    for vals in values:
        finite = np.isfinite(vals[:, 1])
        spread = np.abs(vals - vals[:, 1:2])
        if (np.isfinite(vals) != finite[:, None]).any() or (spread[finite] > 1e-9).any():
            raise DecompositionError("density not constant between the expected breakpoints")
    f0, f1, fr = (vals[:, 1] for vals in values)
    with np.errstate(divide="ignore", over="ignore"):
        ref_mass = np.exp(fr) * width
        mass0 = np.exp(f0) * width
        mass1 = np.exp(f1) * width
    return atoms_from_masses(mass0, mass1, ref_mass)


def piecewise_interval_atoms(
    gap: float, high_mass: float, low_mass: float, inputs: Sequence[float],
    reference_inputs: Sequence[float],
) -> RatioAtoms:
    """Exact atoms of the piecewise mechanism (001 Table 1; protocols.randomizers.piecewise),
    from its cell geometry instead of from differences of breakpoints.

    With g = C - 1 (``gap``, the high interval's length), every breakpoint is affine in g:
    l(x) = x + g (x - 1)/2, r(x) = x + g (x + 1)/2, and +-C = +-(1 + g); a point is kept as
    (alpha, beta) with value alpha + beta g, and a cell's width as
    (alpha' - alpha) + (beta' - beta) g. Near eps0 = 30 the output range is [-1 - g, 1 + g]
    with g ~ 2 e^{-eps0/2} ~ 6e-7, so a width taken as a difference of computed breakpoints
    (e.g. C - l(1) = g) kept only ~g / ulp digits and the masses stopped summing to 1; here
    it is exact (alpha' = alpha) or a difference of inputs. A cell's mass under R(x) is
    high_mass * width / g inside [l(x), r(x)] (width / g = (alpha' - alpha) / g + beta' - beta)
    and low_mass * width / (2 + g) outside (the low part has length C + 1 = 2 + g); the masses
    come from the randomizer's accessors (expit(+-eps0 / 2), no cancellation).

    ``inputs`` = (x0, x1); ``reference_inputs``: (x2,) for 000 Thm 14, or the blanket inputs
    (the reference is the pointwise minimum of their densities, 000 Def. of the blanket).
    """
    def point_cmp(p, q) -> int:
        d = (p[0] - q[0]) + (p[1] - q[1]) * gap
        return (d > 0) - (d < 0)

    xs = [float(x) for x in (*inputs, *reference_inputs)]
    points = [(-1.0, -1.0), (1.0, 1.0)]
    for x in xs:
        points += [(x, (x - 1.0) / 2.0), (x, (x + 1.0) / 2.0)]
    points.sort(key=cmp_to_key(point_cmp))
    kept = [points[0]]
    for p in points[1:]:
        if point_cmp(p, kept[-1]) > 0:
            kept.append(p)
    lefts, rights = kept[:-1], kept[1:]
    d_alpha = np.array([r[0] - q[0] for q, r in zip(lefts, rights, strict=True)])
    d_beta = np.array([r[1] - q[1] for q, r in zip(lefts, rights, strict=True)])

    def masses(x: float) -> np.ndarray:
        low_end, high_end = (x, (x - 1.0) / 2.0), (x, (x + 1.0) / 2.0)
        inside = np.array([point_cmp(low_end, q) <= 0 and point_cmp(r, high_end) <= 0
                           for q, r in zip(lefts, rights, strict=True)])
        high = high_mass * (d_alpha / gap + d_beta)
        low = low_mass * (d_alpha + d_beta * gap) / (2.0 + gap)
        return np.where(inside, high, low)

    mass0, mass1 = masses(xs[0]), masses(xs[1])
    reference = np.min([masses(x) for x in xs[2:]], axis=0)
    return atoms_from_masses(mass0, mass1, reference)


def _merge_close(sorted_points: np.ndarray) -> np.ndarray:
    """``sorted_points`` without the interior points closer than 16 ulps (of the largest
    |point|) to the point kept before them or to the last point; the first and last are kept."""
    gap = 16.0 * np.spacing(np.abs(sorted_points).max())
    first, last = sorted_points[0], sorted_points[-1]
    kept = [first]
    for p in sorted_points[1:-1]:
        if p - kept[-1] > gap and last - p > gap:
            kept.append(p)
    return np.array(kept + [last])


def _tail_slope(f: Callable, y0: float, direction: float) -> float:
    """Change per unit step of a log density that is linear beyond y0, moving away from y0 in
    ``direction`` (negative for a decaying tail; verified on two unit steps)."""
    y = y0 + direction * np.array([0.0, 1.0, 2.0])
    vals = np.asarray(f(y), dtype=float)
    s1, s2 = vals[1] - vals[0], vals[2] - vals[1]
    if abs(s1 - s2) > 1e-9 * max(1.0, abs(s1)):
        raise DecompositionError("log density not linear in the tail")
    return s1


def _log_linear_atoms(
    logpdf0: Callable, logpdf1: Callable, logref: Callable, kinks: Sequence[float],
    cells: int, rounding: Rounding,
) -> RatioAtoms:
    """Atoms for log densities that are linear in y between ``kinks`` (Laplace-type).

    Middle [min kink, max kink]: ``cells`` uniform cells plus the kinks; on a cell log a and log b
    are linear, so their extremes are at the ends; UP takes (max a, min b), DOWN (min a, max b).
    Weight = exact reference mass of the cell, int_u^v e^f = L e^{max f} exprel(-|f(v) - f(u)|)
    (L = v - u; symmetric in the two ends, so a cell and its mirror image get bitwise equal
    weights, and mirror-image configurations, e.g. Laplace's (0, 1, x2) and (1, 0, 1 - x2) on
    the dyadic grid, give equal atom multisets that the engine computes once). Tails: all three
    log densities have the same slope beyond the outer kinks (verified), so the ratios are
    constant: one exact atom each, with mass e^{f(edge)} / |slope|.
    """
    require(rounding in (Rounding.UP, Rounding.DOWN), "rounding", rounding,
            "continuous ratios need Rounding.UP (upper bounds) or Rounding.DOWN (lower bounds)")
    require(isinstance(cells, int) and cells >= 1, "cells", cells, "must be an integer >= 1")
    kinks = np.unique(np.asarray(kinks, dtype=float))
    lo, hi = float(kinks[0]), float(kinks[-1])
    funcs = (logpdf0, logpdf1, logref)
    a_parts, b_parts, w_parts = [], [], []
    up = rounding is Rounding.UP
    if hi > lo:
        grid = np.union1d(np.linspace(lo, hi, cells + 1), kinks)
        grid = grid[np.concatenate([[True], np.diff(grid) > 1e-12 * (hi - lo)])]
        grid[-1] = hi
        f = [np.asarray(fn(grid), dtype=float) for fn in funcs]
        mid = 0.5 * (grid[:-1] + grid[1:])
        for fn, fv in zip(funcs, f, strict=True):
            deviation = np.asarray(fn(mid), dtype=float) - 0.5 * (fv[:-1] + fv[1:])
            if (np.abs(deviation) > 1e-9 * np.maximum(1.0, np.abs(fv[:-1]))).any():
                raise DecompositionError("log density not linear between the expected kinks")
        l0, l1 = f[0] - f[2], f[1] - f[2]
        pick_a = np.maximum if up else np.minimum
        pick_b = np.minimum if up else np.maximum
        a_parts.append(np.exp(pick_a(l0[:-1], l0[1:])))
        b_parts.append(np.exp(pick_b(l1[:-1], l1[1:])))
        f_ref = f[2]
        w_parts.append(np.diff(grid) * np.exp(np.maximum(f_ref[:-1], f_ref[1:]))
                       * exprel(-np.abs(np.diff(f_ref))))
    for edge, direction in ((lo, -1.0), (hi, 1.0)):
        slopes = [_tail_slope(fn, edge, direction) for fn in funcs]
        if not slopes[2] < 0 or max(abs(s - slopes[2]) for s in slopes) > 1e-9:
            raise DecompositionError("tail ratios are not constant (slopes differ)")
        fe = [float(np.asarray(fn(np.array([edge])), dtype=float)[0]) for fn in funcs]
        a_parts.append(np.array([np.exp(fe[0] - fe[2])]))
        b_parts.append(np.array([np.exp(fe[1] - fe[2])]))
        w_parts.append(np.array([np.exp(fe[2]) / -slopes[2]]))
    nudge = (1 + _ROUNDING_NUDGE) if up else (1 - _ROUNDING_NUDGE)
    a = np.concatenate(a_parts) * nudge
    b = np.concatenate(b_parts) / nudge
    return merge_atoms(RatioAtoms(a, b, np.concatenate(w_parts), rounding))


def _logpdf(randomizer, x) -> Callable:
    return lambda y: randomizer.log_prob(np.full(np.shape(y), x, dtype=float), y)


def _min_logpdf(randomizer, xs) -> Callable:
    return lambda y: np.min([randomizer.log_prob(np.full(np.shape(y), x, dtype=float), y)
                             for x in xs], axis=0)
