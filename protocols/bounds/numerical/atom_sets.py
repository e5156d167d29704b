"""Atom sets of decompositions (module docstring of protocols.bounds.numerical.decompositions):
merging, building from masses and checking them, and the building blocks per output structure
(categorical masses here; piecewise-constant and log-linear densities in
numerical/density_atoms.py) that the decomposition families of
protocols.bounds.numerical.decompositions assemble.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from shufflesim.protocols.bounds.atoms import RatioAtoms, Rounding
from shufflesim.protocols.errors import require
from shufflesim.protocols.randomizers.analysis import (
    NeighbourCandidates,  # noqa: F401  (re-exported: defined beside the randomizers)
)

#: Default number of cells for discretizing continuous ratios (Laplace).
DEFAULT_CELLS = 2048
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
