"""Decompositions of a local randomizer as GPARV atoms (000 Sec. 4-5, Thm 13-14).

Two decompositions are produced, both as :class:`~protocols.bounds.atoms.RatioAtoms`:

* the **blanket** (optimal) decomposition relative to a neighbour pair (x0, x1) (000 Sec. 3.2,
  Thm 5-7, Thm 13): with m(y) = inf_x R(x)(y) the blanket mass,
  a(y) = R(x0)(y) / m(y), b(y) = R(x1)(y) / m(y), weight m(y); outputs with equal (a, b) are
  merged (the simplified optimal decomposition, 000 Sec. 4.4, Thm 7). The remaining mass
  1 - gamma is the atom G = 0. Upper bound: delta(eps) <= (1/n) E[(G_1 + ... + G_n)_+].
* the **exact pair** decomposition for X0 = (x0, x2, ..., x2), X1 = (x1, x2, ..., x2)
  (000 Thm 14, from Ghazi et al.): a(y) = R(x0)(y) / R(x2)(y), b(y) = R(x1)(y) / R(x2)(y), weight
  R(x2)(y). Then delta(eps) = (1/n) E[(sum G_i)_+] exactly, a lower bound on the mechanism.

Checks (000 Property 2): a valid decomposition has sum w a = sum w b = 1, i.e.
E[G_eps] = 1 - e^eps for every eps; the blanket atoms satisfy 1 <= a, b <= e^eps0 and the exact
pair atoms e^-eps0 <= a, b <= e^eps0.

Decomposition families
----------------------
Each randomizer declares its family in its class variable ``decomposition``
(protocols.randomizers.analysis; none declared: :data:`DISCRETE_PMF` for a finite enumerable
output space); this module dispatches on the family, never on a randomizer's name:

* ``OUTPUT_GROUPS`` (krr, brr, subset, rappor, oue, blh, olh, hr): from ``output_groups``
  (groups share their ratio triple by contract).
* ``DISCRETE_PMF`` (duchi, summation, and the default): from ``output_pmf`` rows, with the
  pointwise minimum over ``blanket_inputs()`` as the blanket (every R(x) is a mixture of them;
  every categorical input by default).
* ``PIECEWISE_CONSTANT`` (piecewise): the density is constant between the randomizer's
  ``density_breakpoints``, so the groups are finite and exact (:func:`_piecewise_constant_atoms`).
* ``LOG_LINEAR`` (laplace, laplace_binary): the log densities are linear between the
  randomizer's ``log_density_kinks`` (and ``blanket_kinks``), so the ratios
  vary continuously inside [min kink, max kink] and are constant in the two tails. The middle is
  cut into ``cells`` cells; on each cell the atom takes the extreme ratios at the cell ends:
  Rounding.UP sets a to its maximum and b to its minimum (so a - e^eps b >= the true value for
  every y in the cell and every eps >= 0: pointwise, hence stochastic, domination for all eps at
  once), Rounding.DOWN the reverse. Weights are the exact reference masses of the cells, so they
  stay the masses of a valid decomposition. NB: ``RatioAtoms.swapped()`` of a rounded atom set
  rounds the wrong way; the reverse direction is always built afresh here.

Which neighbour pairs (see :func:`neighbour_candidates`)
-------------------------------------------------------
The bound must hold for every neighbour pair; 000 Sec. 8 notes that input symmetry makes one pair
enough. Each randomizer declares its candidates (``Randomizer.neighbour_candidates``: the
default takes (0, 1) for ``input_symmetry = "permutation"`` and enumerates every pair of a small
categorical domain otherwise). The arguments for the built-in randomizers:

* ``krr``, ``brr``, ``subset``, ``rappor``, ``oue``, ``blh``, ``olh``: symmetric under every
  permutation of the domain (permuting inputs permutes outputs and leaves inf_x R(x)(y)
  invariant), so the GPARV of (x0, x1) is that of (0, 1) and the GPARV of a "same" pair (x, x)
  that of (0, 0).
* ``hr``: the outputs are linear functionals y of the row index (000 App. A.4). For distinct
  nonzero rows the map y -> (x0.y, x1.y) is onto F_2^2, so every pattern holds D/4 outputs and
  the atoms do not depend on the pair; the blanket mass is the same for every y != 0 as long as
  the used rows span F_2^r (they do: rows 1..d with d >= D/2 contain 1, 2, 4, ...).
  For Thm 14 the third row matters only through its linear relation with (x0, x1) (x2 = x0 ^ x1,
  independent, or equal to one of them), so x2 runs over the first four inputs.
* ``duchi`` (P[+B | x] affine in x) and ``summation`` (randomized rounding: R(x) is a mixture of
  the grid inputs R(j/k)): every R(x) is a convex combination of the extreme inputs' R(v), and
  the blanket reduction pair P^B_x is linear in R(x). For a coupling pi of the mixing weights,
  joint convexity of the hockey-stick divergence gives
  D(P^B_x0 || P^B_x1) <= sum_{v,v'} pi(v,v') D(P^B_v || P^B_v') <= max_{v,v'} D(P^B_v || P^B_v'),
  so the extreme pairs are worst. Duchi: (-1, 1) and its reverse. Summation: the RR over
  {0..k} is permutation symmetric, so every pair of distinct grid points is equivalent to
  (0, 1). The same argument with R(x2) fixed shows (x0, x1) extreme is worst for Thm 14; x2 runs
  over a grid.
* ``piecewise``: with s(x0, x1) = overlap length of the two high-density intervals, going from s
  to s - t moves blanket mass t*lo from the (e^eps0, e^eps0) and (1, 1) atoms to the (e^eps0, 1)
  and (1, e^eps0) atoms. Both pairs of values have the same sum (1 + e^eps0)(1 - e^eps) and the
  new pair brackets the old one, so the GPARV at overlap s - t is a mean-preserving spread of the
  one at s (convex order), which survives i.i.d. sums and the convex map (.)_+: the smaller the
  overlap, the larger delta. (-1, 1) has overlap 0 and is worst. (The same computation with the
  atoms multiplied by another component's atoms shows it inside joint compositions.)
* ``laplace_binary``: pairs (0, 1) and (1, 0) (reflection y -> 1 - y maps one to the other).
* ``laplace`` on [0, 1]: the worst pair is unknown (000 Sec. 8). The candidates are a grid of
  pairs (reduced by the reflection x -> 1 - x, y -> 1 - y) and the bound built on them is labelled
  as such; ``optimal.py`` can add the cover slack that makes it valid for all pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy.special import exprel

from protocols.bounds.atoms import RatioAtoms, Rounding
from protocols.errors import ParameterError, require
from protocols.randomizers.analysis import (
    DISCRETE_PMF,
    LOG_LINEAR,
    OUTPUT_GROUPS,
    PIECEWISE_CONSTANT,
    DecompositionFamily,
    NeighbourCandidates,  # noqa: F401  (re-exported: defined beside the randomizers)
)
from protocols.randomizers.base import MAX_ENUMERABLE_OUTPUTS, Categorical, Randomizer
from protocols.randomizers.laplace import (  # noqa: F401  (re-exported)
    LAPLACE_PAIR_GRID,
    laplace_pair_grid,
)
from protocols.randomizers.registry import randomizer_class, randomizer_names

#: Default number of cells for discretizing continuous ratios (Laplace).
DEFAULT_CELLS = 2048
#: Relative nudge applied to rounded atoms in their conservative direction (absorbs the
#: floating-point error of log densities, ~1e-16).
_ROUNDING_NUDGE = 1e-13
#: Atoms whose (a, b) agree to this relative precision are merged.
_MERGE_RELATIVE = 2.0**-40
#: Tolerance of the consistency checks (sum w a = 1 etc.).
_CHECK_TOL = 1e-9


class DecompositionError(RuntimeError):
    """A randomizer's declared distribution does not give a valid decomposition (an internal
    inconsistency, never a user input error)."""


# ----------------------------------------------------------------------------------------------
# Atom-set utilities
# ----------------------------------------------------------------------------------------------
def merge_atoms(atoms: RatioAtoms) -> RatioAtoms:
    """Merge atoms with equal (a, b) (000 Sec. 4.4, Thm 7) and drop zero-weight atoms.

    Atoms are merged when their (a, b) agree to ~1e-12 relative to the largest ratio. The merged
    value is the weighted mean for exact atoms (preserving E[G] exactly), the conservative
    extreme for rounded ones (UP: max a, min b; DOWN: min a, max b).
    """
    keep = atoms.weight > 0
    a, b, w = atoms.a[keep], atoms.b[keep], atoms.weight[keep]
    if a.size == 0:
        return RatioAtoms(a, b, w, atoms.rounding)
    scale = max(float(a.max()), float(b.max()), 1e-300)
    keys = np.rint(np.stack([a, b], axis=1) / (scale * _MERGE_RELATIVE)).astype(np.int64)
    _, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    count = int(inverse.max()) + 1
    weight = np.bincount(inverse, weights=w, minlength=count)
    if atoms.rounding is Rounding.EXACT:
        a_new = np.bincount(inverse, weights=w * a, minlength=count) / weight
        b_new = np.bincount(inverse, weights=w * b, minlength=count) / weight
    else:
        up = atoms.rounding is Rounding.UP
        a_new = np.full(count, -np.inf if up else np.inf)
        b_new = np.full(count, np.inf if up else -np.inf)
        (np.maximum if up else np.minimum).at(a_new, inverse, a)
        (np.minimum if up else np.maximum).at(b_new, inverse, b)
    return RatioAtoms(a_new, b_new, weight, atoms.rounding)  # sorted by (a, b) key


def atoms_from_masses(
    mass0: np.ndarray, mass1: np.ndarray, reference: np.ndarray,
    rounding: Rounding = Rounding.EXACT,
) -> RatioAtoms:
    """Atoms a = mass0 / reference, b = mass1 / reference, weight = reference (merged).

    Entries are groups of outputs sharing their ratio triple. Groups of zero reference mass must
    carry no mass under x0 and x1 (absolute continuity, 000 Thm 12); an eps0-LDP randomizer
    guarantees it.
    """
    mass0, mass1, reference = (np.asarray(v, dtype=float).reshape(-1)
                               for v in (mass0, mass1, reference))
    positive = reference > 0
    total = max(float(mass0.sum()), float(mass1.sum()), 1.0)
    stray = max(float(mass0[~positive].sum(initial=0.0)), float(mass1[~positive].sum(initial=0.0)))
    if stray > 1e-12 * total:
        raise DecompositionError(
            f"mass {stray:.3g} on outputs of zero reference mass: not absolutely continuous")
    with np.errstate(divide="ignore", invalid="ignore"):
        a = mass0[positive] / reference[positive]
        b = mass1[positive] / reference[positive]
    return merge_atoms(RatioAtoms(a, b, reference[positive], rounding))


def check_decomposition(atoms: RatioAtoms, epsilon0: float, kind: str) -> None:
    """000 Property 2 for a blanket (``kind="blanket"``) or exact-pair (``"exact"``) atom set.

    Exact atoms: sum w a = sum w b = 1 (E[G_eps] = 1 - e^eps for all eps). UP atoms: sum w a >= 1
    >= sum w b; DOWN: the reverse. Support: 1 <= a, b <= e^eps0 (blanket),
    e^-eps0 <= a, b <= e^eps0 (exact pair). Exact pair: weights sum to 1.
    Raises DecompositionError on failure.
    """
    require(kind in ("blanket", "exact"), "kind", kind, "must be 'blanket' or 'exact'")
    tol = _CHECK_TOL
    mean_a = float(np.dot(atoms.weight, atoms.a))
    mean_b = float(np.dot(atoms.weight, atoms.b))
    problems = []
    if atoms.rounding is Rounding.EXACT:
        if abs(mean_a - 1) > tol or abs(mean_b - 1) > tol:
            problems.append(f"sum w a = {mean_a!r}, sum w b = {mean_b!r} (need 1)")
    elif atoms.rounding is Rounding.UP:
        if mean_a < 1 - tol or mean_b > 1 + tol:
            problems.append(f"rounded up but sum w a = {mean_a!r}, sum w b = {mean_b!r}")
    elif mean_a > 1 + tol or mean_b < 1 - tol:
        problems.append(f"rounded down but sum w a = {mean_a!r}, sum w b = {mean_b!r}")
    high = np.exp(epsilon0) * (1 + tol)
    low = (1.0 if kind == "blanket" else np.exp(-epsilon0)) * (1 - tol)
    for label, v in (("a", atoms.a), ("b", atoms.b)):
        if v.size and (v.min() < low or v.max() > high):
            problems.append(f"{label} in [{v.min()!r}, {v.max()!r}] outside [{low!r}, {high!r}]")
    if kind == "exact" and abs(float(atoms.weight.sum()) - 1) > tol:
        problems.append(f"exact-pair weights sum to {atoms.weight.sum()!r}")
    if problems:
        raise DecompositionError(f"invalid {kind} decomposition: " + "; ".join(problems))


# ----------------------------------------------------------------------------------------------
# Building blocks per output structure
# ----------------------------------------------------------------------------------------------
def _categorical_masses(randomizer, anchors: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """(mass[a, g] for the given anchors, mass_min[g]) via ``output_groups`` on distinct
    anchors (duplicates are mapped back)."""
    anchors = [int(x) for x in anchors]
    distinct = sorted(set(anchors))
    groups = randomizer.output_groups(tuple(distinct))
    index = [distinct.index(x) for x in anchors]
    return np.asarray(groups.mass)[index], np.asarray(groups.mass_min)


def _min_rows(randomizer, vertices: np.ndarray, chunk: int = 512) -> np.ndarray:
    """Pointwise minimum over ``vertices`` of the output pmf rows (chunked)."""
    result = None
    for start in range(0, len(vertices), chunk):
        rows = np.asarray(randomizer.output_pmf(vertices[start:start + chunk])).min(axis=0)
        result = rows if result is None else np.minimum(result, rows)
    return result


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


# ----------------------------------------------------------------------------------------------
# Decomposition families: each randomizer declares its own (protocols.randomizers.analysis)
# ----------------------------------------------------------------------------------------------
# -- blanket / exact builders per decomposition family -----------------------------------------
def _categorical_blanket(r, x0, x1, cells, rounding):
    mass, mass_min = _categorical_masses(r, (x0, x1))
    return atoms_from_masses(mass[0], mass[1], mass_min)


def _categorical_exact(r, x0, x1, x2, cells, rounding):
    mass, _ = _categorical_masses(r, (x0, x1, x2))
    return atoms_from_masses(mass[0], mass[1], mass[2])


def _input_array(r, xs) -> np.ndarray:
    """Inputs as an array for ``output_pmf``: integers on a categorical domain, else floats."""
    if isinstance(r.input_domain, Categorical):
        return np.array([int(x) for x in xs])
    return np.array(xs, dtype=float)


def _discrete_blanket(r, x0, x1, cells, rounding):
    rows = np.asarray(r.output_pmf(_input_array(r, (x0, x1))))
    return atoms_from_masses(rows[0], rows[1], _min_rows(r, np.asarray(r.blanket_inputs())))


def _discrete_exact(r, x0, x1, x2, cells, rounding):
    rows = np.asarray(r.output_pmf(_input_array(r, (x0, x1, x2))))
    return atoms_from_masses(rows[0], rows[1], rows[2])


def _float_inputs(r) -> tuple:
    return tuple(float(x) for x in np.asarray(r.blanket_inputs()).reshape(-1))


def _piecewise_blanket(r, x0, x1, cells, rounding):
    # inf_x R(x)(y) = min over the blanket inputs (piecewise: R(-1), R(1), whose high intervals
    # are disjoint; every density is >= lo).
    vertices = _float_inputs(r)
    breaks = r.density_breakpoints((x0, x1, *vertices))
    return _piecewise_constant_atoms((_logpdf(r, x0), _logpdf(r, x1)),
                                     _min_logpdf(r, vertices), breaks)


def _piecewise_exact(r, x0, x1, x2, cells, rounding):
    breaks = r.density_breakpoints((x0, x1, x2))
    return _piecewise_constant_atoms((_logpdf(r, x0), _logpdf(r, x1)), _logpdf(r, x2), breaks)


def _log_linear_blanket(r, x0, x1, cells, rounding):
    # Laplace: a location family with density decreasing in |y - x|, so inf over x in [0, 1] is
    # attained at the endpoint farthest from y, min(R(0)(y), R(1)(y)) (000 App. B), kink at 1/2.
    kinks = (*r.blanket_kinks(), *r.log_density_kinks((float(x0), float(x1))))
    return _log_linear_atoms(_logpdf(r, x0), _logpdf(r, x1), _min_logpdf(r, _float_inputs(r)),
                             kinks, cells, rounding)


def _log_linear_exact(r, x0, x1, x2, cells, rounding):
    kinks = r.log_density_kinks((float(x0), float(x1), float(x2)))
    return _log_linear_atoms(_logpdf(r, x0), _logpdf(r, x1), _logpdf(r, x2), kinks, cells,
                             rounding)


#: Atom builders (blanket, exact pair) of every generic decomposition family. A new family is a
#: new DecompositionFamily in protocols.randomizers.analysis and its two builders here; a new
#: randomizer only declares its family.
_BUILDERS: dict[DecompositionFamily, tuple[Callable, Callable]] = {
    OUTPUT_GROUPS: (_categorical_blanket, _categorical_exact),
    DISCRETE_PMF: (_discrete_blanket, _discrete_exact),
    PIECEWISE_CONSTANT: (_piecewise_blanket, _piecewise_exact),
    LOG_LINEAR: (_log_linear_blanket, _log_linear_exact),
}


def decomposition_family(randomizer) -> DecompositionFamily:
    """The family ``randomizer`` declares (``decomposition``), or :data:`DISCRETE_PMF` for a
    randomizer with a finite enumerable output space that declares none; ParameterError
    "<name> declares no decomposition" otherwise."""
    name = getattr(randomizer, "name", None)
    family = getattr(randomizer, "decomposition", None)
    if family is None and isinstance(randomizer, Randomizer):
        size = randomizer.output_size
        if randomizer.output_kind == "discrete" and size is not None \
                and size <= MAX_ENUMERABLE_OUTPUTS:
            family = DISCRETE_PMF
    if family is None:
        raise ParameterError("randomizer.name", name,
                             f"{name} declares no decomposition (a DecompositionFamily in its "
                             "class variable 'decomposition', or a finite enumerable output "
                             "space for the discrete default)")
    if family not in _BUILDERS:
        raise ParameterError("randomizer.name", name,
                             f"{name} declares an unknown decomposition family {family!r}")
    return family


def has_decomposition(randomizer) -> bool:
    """True when ``randomizer`` has a decomposition and neighbour candidates."""
    try:
        decomposition_family(randomizer)
        randomizer.neighbour_candidates()
    except ParameterError:
        return False
    return True


def supported_randomizers() -> list[str]:
    """Registry names whose randomizer declares (or defaults to) a decomposition."""
    names = []
    for name in randomizer_names():
        family = getattr(randomizer_class(name), "decomposition", None)
        if family is not None and family in _BUILDERS:
            names.append(name)
        elif family is None and getattr(randomizer_class(name), "output_kind", "") == "discrete":
            names.append(name)  # the discrete default, when its output space is enumerable
    return names


def is_continuous(randomizer) -> bool:
    """True when the decomposition discretizes continuous ratios (rounded atoms)."""
    return decomposition_family(randomizer).continuous


def neighbour_candidates(randomizer, pair_grid: int | None = None) -> NeighbourCandidates:
    """Candidate neighbour pairs / triples for ``randomizer``, as it declares them
    (``Randomizer.neighbour_candidates``; module docstring for the arguments per randomizer).

    ``pair_grid``: grid points per axis for randomizers whose worst pair is unknown (laplace).
    """
    decomposition_family(randomizer)
    return randomizer.neighbour_candidates(pair_grid)


def _default_rounding(randomizer, rounding: Rounding | None, default: Rounding) -> Rounding:
    if not decomposition_family(randomizer).continuous:
        require(rounding in (None, Rounding.EXACT), "rounding", rounding,
                f"{randomizer.name} has exact (finite) groups: use Rounding.EXACT")
        return Rounding.EXACT
    return default if rounding is None else rounding


def _check_inputs(randomizer, *inputs) -> None:
    domain = randomizer.input_domain
    for x in inputs:
        if hasattr(domain, "size"):
            ok = float(x) == int(x) and 0 <= int(x) < domain.size
            require(ok, "input", x, f"must be an integer in [0, {domain.size})")
        else:
            require(domain.low <= float(x) <= domain.high, "input", x,
                    f"must lie in [{domain.low}, {domain.high}]")


#: Largest eps0 of any decomposition-based bound: the GPARV's values reach e^eps0 and the
#: engine squares them (variances, Chernoff exponents), so e^(2 eps0) times n must stay a
#: finite float. Beyond it the engine's rounding slack (~u e^eps0 per user) leaves nothing
#: useful anyway. Continuous (discretized) randomizers: :data:`EPSILON0_MAX_CONTINUOUS`.
EPSILON0_MAX = 150.0
#: Laplace-type discretizations put almost all mass on one cell beyond this eps0.
EPSILON0_MAX_CONTINUOUS = 50.0
#: eps0 range in which a failed consistency check is a bug (DecompositionError); outside it, a
#: randomizer's declared distribution may lose the digits a decomposition needs (probabilities
#: like 1/2 - tanh(eps0/2)/2 cancel at large eps0; Laplace's tails flatten at tiny eps0), and
#: the failure is reported as a ParameterError on eps0.
ORDINARY_EPSILON0 = (1e-3, 20.0)


def check_epsilon0_range(randomizer) -> None:
    """ParameterError when eps0 exceeds :data:`EPSILON0_MAX` (or, for continuous randomizers,
    :data:`EPSILON0_MAX_CONTINUOUS`)."""
    eps0 = float(randomizer.epsilon0)
    top = EPSILON0_MAX_CONTINUOUS if decomposition_family(randomizer).continuous else EPSILON0_MAX
    require(eps0 <= top, "epsilon0", randomizer.epsilon0,
            f"decomposition-based bounds for {randomizer.name} handle eps0 <= {top:g} (the "
            f"GPARV reaches e^eps0 and its square must be a finite float); eps0 itself is a "
            f"valid eps (eps0-LDP implies eps0-DP after shuffling)")


class _edge_errors:
    """Context manager: outside :data:`ORDINARY_EPSILON0`, a decomposition that fails its checks
    (DecompositionError, or atoms refused by RatioAtoms) becomes a ParameterError on eps0: the
    randomizer's declared distribution does not carry enough digits there, and no bound may be
    built on it. Inside the range the error propagates (it is a bug)."""

    def __init__(self, randomizer) -> None:
        self.randomizer = randomizer

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback) -> bool:
        if error is None or not isinstance(error, (DecompositionError, ValueError)):
            return False
        if isinstance(error, ParameterError):
            return False
        eps0 = float(self.randomizer.epsilon0)
        low, high = ORDINARY_EPSILON0
        if low <= eps0 <= high:
            return False
        raise ParameterError(
            "epsilon0", self.randomizer.epsilon0,
            f"{self.randomizer.name}: its declared distribution is not accurate enough at this "
            f"eps0 for a valid decomposition ({str(error)[:120]})") from None


def blanket_atoms(
    randomizer, x0, x1, *, rounding: Rounding | None = None, cells: int = DEFAULT_CELLS,
    check: bool = True,
) -> RatioAtoms:
    """Blanket (optimal) decomposition atoms of ``randomizer`` for the pair (x0, x1)
    (000 Thm 7 and Thm 13); x0 == x1 is allowed (an unchanged coordinate of a joint composition).

    Exact for finite groups; continuous outputs default to Rounding.UP (``cells`` cells).
    Validated against 000 Property 2 unless ``check`` is False.
    """
    _check_inputs(randomizer, x0, x1)
    check_epsilon0_range(randomizer)
    rounding = _default_rounding(randomizer, rounding, Rounding.UP)
    with _edge_errors(randomizer):
        build = _BUILDERS[decomposition_family(randomizer)][0]
        atoms = build(randomizer, x0, x1, cells, rounding)
        if check:
            check_decomposition(atoms, randomizer.epsilon0, "blanket")
    return atoms


def exact_pair_atoms(
    randomizer, x0, x1, x2, *, rounding: Rounding | None = None, cells: int = DEFAULT_CELLS,
    check: bool = True,
) -> RatioAtoms:
    """Atoms of the lower-bound GPARV of 000 Thm 14 for X0 = (x0, x2, ..., x2),
    X1 = (x1, x2, ..., x2): a = R(x0)/R(x2), b = R(x1)/R(x2), weight R(x2).

    Exact for finite groups; continuous outputs default to Rounding.DOWN (lower bounds).
    """
    _check_inputs(randomizer, x0, x1, x2)
    check_epsilon0_range(randomizer)
    rounding = _default_rounding(randomizer, rounding, Rounding.DOWN)
    with _edge_errors(randomizer):
        build = _BUILDERS[decomposition_family(randomizer)][1]
        atoms = build(randomizer, x0, x1, x2, cells, rounding)
        if check:
            check_decomposition(atoms, randomizer.epsilon0, "exact")
    return atoms


def blanket_gamma(randomizer) -> float:
    """gamma = sum_y inf_x R(x)(y), the blanket mass (000 Sec. 3.2): the total atom weight."""
    first = neighbour_candidates(randomizer).pairs[0][0]
    return float(blanket_atoms(randomizer, first, first, check=False).weight.sum())
