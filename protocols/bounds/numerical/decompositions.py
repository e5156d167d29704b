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

from collections.abc import Callable

import numpy as np

from shufflesim.protocols.bounds.atoms import RatioAtoms, Rounding
from shufflesim.protocols.bounds.numerical.atom_sets import (
    DEFAULT_CELLS,
    DecompositionError,
    _categorical_masses,
    _min_rows,
    atoms_from_masses,
    check_decomposition,
)
from shufflesim.protocols.errors import ParameterError, require
from shufflesim.protocols.lazy import lazy_functions
from shufflesim.protocols.randomizers.analysis import (
    DISCRETE_PMF,
    LOG_LINEAR,
    OUTPUT_GROUPS,
    PIECEWISE_CONSTANT,
    DecompositionFamily,
    NeighbourCandidates,  # noqa: F401  (re-exported: defined beside the randomizers)
)
from shufflesim.protocols.randomizers.base import MAX_ENUMERABLE_OUTPUTS, Categorical, Randomizer
from shufflesim.protocols.randomizers.registry import randomizer_class, randomizer_names

#: re-exported; the Laplace randomizers' module is imported on its first call (issue 32: a
#: k-RR bound never loads it)
(laplace_pair_grid,) = lazy_functions("shufflesim.protocols.randomizers.laplace",
                                      "laplace_pair_grid")
#: continuous densities' atoms (numerical/density_atoms.py), on first use (issue 32: the
#: categorical randomizers' bounds never build them)
(_log_linear_atoms, _logpdf, _min_logpdf, _piecewise_constant_atoms,
 piecewise_interval_atoms) = lazy_functions(
    "shufflesim.protocols.bounds.numerical.density_atoms", "_log_linear_atoms", "_logpdf",
    "_min_logpdf", "_piecewise_constant_atoms", "piecewise_interval_atoms")


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
    # The cell masses come from the randomizer's accessors (density_atoms.piecewise_interval_atoms:
    # no breakpoint differences, which cancelled from eps0 ~ 30 on).
    return _piecewise_cells(r, (x0, x1), _float_inputs(r))


def _piecewise_exact(r, x0, x1, x2, cells, rounding):
    return _piecewise_cells(r, (x0, x1), (x2,))


def _piecewise_cells(r, inputs, reference_inputs):
    """Exact atoms from the piecewise cell geometry when the randomizer declares it
    (high_interval_length, high_mass, low_mass: protocols.randomizers.piecewise), else from its
    log density between its breakpoints."""
    if all(hasattr(r, name) for name in ("high_interval_length", "high_mass", "low_mass")):
        return piecewise_interval_atoms(
            float(r.high_interval_length()), float(r.high_mass()), float(r.low_mass()),
            inputs, reference_inputs)
    logref = (_logpdf(r, reference_inputs[0]) if len(reference_inputs) == 1
              else _min_logpdf(r, reference_inputs))
    breaks = r.density_breakpoints((*inputs, *reference_inputs))
    return _piecewise_constant_atoms(tuple(_logpdf(r, x) for x in inputs), logref, breaks)


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
