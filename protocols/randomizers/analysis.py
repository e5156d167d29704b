"""What a randomizer declares about its own analysis (docs/architecture.md, "What a randomizer
declares").

The bound engine, the variation-ratio bounds, the estimators, the personalized path and the
auditor learn everything randomizer-specific from the randomizer itself, never from a table keyed
by its name. The declarations are class variables and methods of
:class:`~protocols.randomizers.base.Randomizer`, each with a default that is either correct for
every randomizer or a clear "not supported" answer:

========================================  ==========================================================
declaration (on the randomizer)           default / "not supported"
========================================  ==========================================================
``decomposition: ClassVar``               None: :data:`DISCRETE_PMF` when the output space is
  (a :class:`DecompositionFamily`)        finite and enumerable, else ParameterError
                                          "<name> declares no decomposition"
``neighbour_candidates(pair_grid)``       ``input_symmetry = "permutation"``: the pair (0, 1);
                                          other categorical inputs (up to
                                          :data:`MAX_ENUMERATED_INPUTS`): every pair enumerated;
                                          else ParameterError "declares no neighbour candidates"
``blanket_inputs()``                      categorical: every input; else ParameterError
``variation_ratio_parameters()``          None: the generic row of 001 Table 1
  (a :class:`VariationRatioRow`)
``support_arrays(epsilon)``               None: not a frequency oracle with per-budget support
                                          probabilities (personalized frequency estimators)
``weighted_support(reports, scale)``      None: the reports' support sets are not available
                                          (tagged personalized weightings)
``supports_personalized: ClassVar``       False: ``randomize`` refuses per-user budgets
``bytes_per_user`` (property)             one report's bytes, from ``report_dtype`` and
                                          ``output_shape``
========================================  ==========================================================

The decomposition families are generic: each names the structure of the output distribution
that protocols.bounds.numerical.decompositions turns into atoms, and the few randomizer methods
it reads (the typed protocols below). A new randomizer picks a family (or none, for the discrete
default) and implements the methods that family reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import numpy as np

from shufflesim.protocols.randomizers.domains import OutputGroups

#: Largest categorical input domain whose neighbour pairs the default enumerates.
MAX_ENUMERATED_INPUTS = 16


# ----------------------------------------------------------------------------------------------
# Decomposition families (000 Sec. 4-5; protocols.bounds.numerical.decompositions builds the atoms)
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DecompositionFamily:
    """A generic structure of output distributions that the bound engine can decompose.

    ``continuous``: the atoms discretize continuous ratios (rounded atoms, Rounding.UP/DOWN);
    otherwise the groups are finite and the atoms exact.
    """

    name: str
    continuous: bool
    reads: str

    def __repr__(self) -> str:
        return f"DecompositionFamily({self.name})"


#: Categorical inputs, outputs grouped by ``output_groups(anchors)`` (closed forms for huge
#: output spaces; the default enumerates ``output_pmf``).
OUTPUT_GROUPS = DecompositionFamily(
    "output-groups", False, "output_groups(anchors) (categorical inputs)")
#: Finite enumerable outputs: rows of ``output_pmf(inputs)``; the blanket is the pointwise minimum
#: over ``blanket_inputs()`` (every R(x) a mixture of them). The default family.
DISCRETE_PMF = DecompositionFamily(
    "discrete-pmf", False, "output_pmf(inputs) and blanket_inputs()")
#: Densities constant between ``density_breakpoints(inputs)``; blanket = min over
#: ``blanket_inputs()``. Finitely many groups: exact atoms.
PIECEWISE_CONSTANT = DecompositionFamily(
    "piecewise-constant", False, "log_prob, density_breakpoints(inputs) and blanket_inputs()")
#: Log densities linear between ``log_density_kinks(inputs)``, with equal slopes in the tails
#: (Laplace-type); blanket = min over ``blanket_inputs()``, whose extra kinks are
#: ``blanket_kinks()``. Rounded atoms on ``cells`` cells.
LOG_LINEAR = DecompositionFamily(
    "log-linear", True,
    "log_prob, log_density_kinks(inputs), blanket_inputs() and blanket_kinks()")

FAMILIES = (OUTPUT_GROUPS, DISCRETE_PMF, PIECEWISE_CONSTANT, LOG_LINEAR)


class GroupedOutputs(Protocol):
    """What :data:`OUTPUT_GROUPS` reads."""

    def output_groups(self, anchors: tuple) -> OutputGroups: ...


class EnumerableOutputs(Protocol):
    """What :data:`DISCRETE_PMF` reads."""

    def output_pmf(self, inputs: np.ndarray | None = None) -> np.ndarray: ...

    def blanket_inputs(self) -> np.ndarray: ...


class PiecewiseConstantDensity(Protocol):
    """What :data:`PIECEWISE_CONSTANT` reads (besides ``log_prob``)."""

    def density_breakpoints(self, inputs) -> np.ndarray: ...

    def blanket_inputs(self) -> np.ndarray: ...


class LogLinearDensity(Protocol):
    """What :data:`LOG_LINEAR` reads (besides ``log_prob``)."""

    def log_density_kinks(self, inputs) -> tuple: ...

    def blanket_kinks(self) -> tuple: ...

    def blanket_inputs(self) -> np.ndarray: ...


# ----------------------------------------------------------------------------------------------
# Neighbour pairs (000 Sec. 8: input symmetry makes one pair enough)
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NeighbourCandidates:
    """Neighbour pairs for the blanket bound and triples for 000 Thm 14.

    ``pairs``: ordered pairs (x0, x1); bounds take both directions of each. The first pair is the
    canonical one. ``exhaustive``: the maximum over ``pairs`` (both directions) is the maximum
    over all neighbour pairs (argued in ``argument``). ``triples``: (x0, x1, x2) candidates for the
    exact lower bound (any triple gives a valid lower bound; both directions are taken).
    ``same``: inputs x whose "same pair" (x, x) covers the unchanged coordinates of a joint
    composition. ``symmetry``: a label; compositions of components with one shared label inherit
    ``exhaustive``.
    """

    pairs: tuple
    triples: tuple
    same: tuple
    exhaustive: bool
    symmetry: str
    argument: str


PERMUTATION = "permutation"
_ARG_PERMUTATION = ("input-symmetric: invariant under permutations of the domain, so every pair "
                    "has the GPARV of (0, 1)")


def permutation_candidates(domain_size: int) -> NeighbourCandidates:
    """Randomizers symmetric under every permutation of a categorical domain (permuting inputs
    permutes outputs and leaves inf_x R(x)(y) invariant): the GPARV of (x0, x1) is that of
    (0, 1) and that of a "same" pair (x, x) that of (0, 0)."""
    triples = ((0, 1, 2),) if domain_size >= 3 else ()
    return NeighbourCandidates(((0, 1),), triples + ((0, 1, 1), (0, 1, 0)), (0,), True,
                               PERMUTATION, _ARG_PERMUTATION)


def enumerated_candidates(domain_size: int) -> NeighbourCandidates:
    """No symmetry assumed: every unordered pair x0 < x1 of a categorical domain (bounds take
    both directions), so the maximum is over all neighbour pairs by enumeration; triples
    (x0, x1, x2) for every pair and every x2. The label names the domain: any mixture of
    components over the same domain is covered by the same enumeration."""
    d = int(domain_size)
    pairs = tuple((x0, x1) for x0 in range(d) for x1 in range(x0 + 1, d))
    if len(pairs) == 1:  # a single canonical pair would claim a symmetry argument in joint
        pairs = pairs + ((1, 0),)  # compositions; listing both orders keeps them unclaimed
    triples = tuple((x0, x1, x2) for x0, x1 in pairs if x0 < x1 for x2 in range(d))
    return NeighbourCandidates(pairs, triples, tuple(range(d)), True, f"all-pairs:{d}",
                               f"every pair of the {d} inputs enumerated")


# ----------------------------------------------------------------------------------------------
# Variation-ratio parameters (001 Sec. 4.1, Tables 1, 2, 5)
# ----------------------------------------------------------------------------------------------
class VariationRatioRow(NamedTuple):
    """(p, beta, q) of 001 Sec. 4 for one randomizer, and the row it comes from.
    protocols.bounds.numerical.variation_ratio rounds beta up (never beyond the generic row) and
    validates it."""

    p: float
    beta: float
    q: float
    source: str


def ldp_row(epsilon0: float, beta: float, source: str) -> VariationRatioRow:
    """A row with p = q = e^eps0 (identical eps0-LDP users, 001 Sec. 4.1)."""
    e = math.exp(epsilon0)
    return VariationRatioRow(e, float(beta), e, source)


def grr_total_variation(epsilon: float, size: int) -> float:
    """(e^eps - 1)/(e^eps + size - 1): TV of randomized response over ``size`` values
    (001 Table 1, GRR)."""
    return math.expm1(epsilon) / (math.exp(epsilon) + size - 1)


def vertex_candidates(vertices, x2_grid, label: str) -> NeighbourCandidates:
    """Every R(x) a mixture of the extreme inputs' distributions (``vertices``): the blanket
    reduction pair is linear in R(x), so by joint convexity of the hockey-stick divergence the
    extreme pair (first, last vertex) is worst; the same argument with R(x2) fixed holds for
    000 Thm 14, whose x2 runs over ``x2_grid``."""
    x0, x1 = float(vertices[0]), float(vertices[-1])
    triples = tuple((x0, x1, float(x2)) for x2 in x2_grid)
    return NeighbourCandidates(((x0, x1),), triples, (x0,), True, label,
                               "R(x) is a mixture of the extreme inputs' distributions: extreme "
                               "pairs are worst by joint convexity (module docstring)")
