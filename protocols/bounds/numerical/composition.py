"""Decompositions of composed randomizers (000 Sec. 4.5-4.6, Thm 9 and Thm 11; Sec. 5.3).

All three operations act on atom sets (:class:`~protocols.bounds.atoms.RatioAtoms`): a set holds
the ratio pairs (a_j, b_j) = (R(x0)(S_j), R(x1)(S_j)) / c(S_j) of the groups S_j of outputs and
their reference masses c(S_j) (the blanket inf_x R(x) for upper bounds, R(x2) for 000 Thm 14).
The same operations apply to both kinds of reference, because each reference composes in the
same way as the randomizer (inf of a product of non-negative factors depending on separate
inputs is the product of the infs; the inf of p_i R_i(x)(y) on the i-th branch is p_i inf R_i).

* Joint composition R^x(x^1, ..., x^m) = (R_1(x^1), ..., R_m(x^m)) (000 Sec. 4.5). Theorem 9:
  the Cartesian product of the components' optimal decompositions is an optimal decomposition of
  R^x: on S^1_i x S^2_j the ratios multiply and the reference masses multiply, so the atoms are
  (a_i a'_j, b_i b'_j, w_i w'_j); the left-over parts combine into one left-over (the zero atom,
  of mass 1 - prod gamma_i). Equal ratio pairs are merged afterwards (Remark 4, Thm 7). A
  component whose input does not change between the neighbours contributes its "same pair"
  atoms (a = b); 000 Sec. 8 asks to consider every Hamming pattern of changed coordinates.
  For 000 Thm 14 the component decompositions at (x0^i, x1^i, x2^i) multiply the same way
  (000 Sec. 5.3).
* Parallel composition R^{||,p}(x) = (i, R_i(x)) with probability p_i (000 Sec. 4.6). Theorem 11:
  the weighted combination of the components' optimal decompositions with weights p_i is
  optimal; outputs of different branches are distinct, so the atom sets are concatenated with
  weights scaled by p_i (and equal ratio pairs merged). All components see the same input pair.
* Poisson subsampling with rate lambda (000 Sec. 1.1 and Example 4.4): each user reports with
  probability lambda and otherwise sends nothing. This is the parallel composition of R (prob.
  lambda) with the null randomizer that always outputs "no report" (prob. 1 - lambda); the null
  randomizer's decomposition is the single atom (1, 1) of weight 1 (its only output has the same
  probability 1 under every input), for the blanket and for Thm 14 alike. The count of missing
  reports is part of the shuffled output, exactly like a symbol "no report".

Rounding: products and mixtures of atoms rounded the same way stay rounded that way (a up and
b down are preserved by multiplying with positive factors); mixing UP with DOWN is refused.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from shufflesim.protocols.bounds.atoms import RatioAtoms, Rounding
from shufflesim.protocols.bounds.numerical.atom_sets import check_decomposition, merge_atoms
from shufflesim.protocols.bounds.numerical.decompositions import blanket_atoms, exact_pair_atoms
from shufflesim.protocols.errors import ParameterError, require

#: Largest product atom set built before merging (memory guard).
MAX_PRODUCT_ATOMS = 1 << 22


def combined_rounding(roundings: Sequence[Rounding]) -> Rounding:
    """The rounding of a product or mixture of atom sets (EXACT is neutral)."""
    kinds = {Rounding(r) for r in roundings} - {Rounding.EXACT}
    if len(kinds) > 1:
        raise ParameterError("rounding", sorted(k.value for k in kinds),
                             "cannot combine atoms rounded up with atoms rounded down")
    return kinds.pop() if kinds else Rounding.EXACT


def joint_atoms(components: Sequence[RatioAtoms]) -> RatioAtoms:
    """Atoms of the joint composition: the Cartesian product of the components' atoms
    (000 Thm 9), merged over equal (a, b)."""
    require(len(components) >= 1, "components", len(components), "needs at least one atom set")
    rounding = combined_rounding([c.rounding for c in components])
    a = np.ones(1)
    b = np.ones(1)
    w = np.ones(1)
    for comp in components:
        size = a.size * comp.a.size
        if size > MAX_PRODUCT_ATOMS:
            raise ParameterError("components", len(components),
                                 f"joint composition has {size} atoms before merging "
                                 f"(limit {MAX_PRODUCT_ATOMS})")
        a = np.outer(a, comp.a).ravel()
        b = np.outer(b, comp.b).ravel()
        w = np.outer(w, comp.weight).ravel()
        merged = merge_atoms(RatioAtoms(a, b, w, rounding))
        a, b, w = merged.a, merged.b, merged.weight
    return RatioAtoms(a, b, w, rounding)


def _check_probabilities(probabilities, count: int) -> np.ndarray:
    p = np.asarray(probabilities, dtype=float).reshape(-1)
    require(p.size == count, "probabilities", list(p),
            f"needs one probability per component ({count})")
    require(bool(np.all(np.isfinite(p)) and np.all(p >= 0)), "probabilities", list(p),
            "must be finite and >= 0")
    require(abs(p.sum() - 1.0) <= 1e-12, "probabilities", list(p), "must sum to 1")
    return p


def parallel_atoms(components: Sequence[RatioAtoms], probabilities) -> RatioAtoms:
    """Atoms of the parallel composition (i, R_i(x)) w.p. p_i: the components' atoms with weights
    scaled by p_i (000 Thm 11), merged over equal (a, b)."""
    require(len(components) >= 1, "components", len(components), "needs at least one atom set")
    p = _check_probabilities(probabilities, len(components))
    rounding = combined_rounding([c.rounding for c in components])
    a = np.concatenate([c.a for c in components])
    b = np.concatenate([c.b for c in components])
    w = np.concatenate([pi * c.weight for pi, c in zip(p, components, strict=True)])
    return merge_atoms(RatioAtoms(a, b, w, rounding))


#: The decomposition of the null randomizer ("no report" with probability 1).
NULL_ATOMS = RatioAtoms(np.ones(1), np.ones(1), np.ones(1))


def subsampled_atoms(atoms: RatioAtoms, rate: float) -> RatioAtoms:
    """Atoms under Poisson subsampling with participation probability ``rate``: the parallel
    composition of the randomizer (prob. rate) with the null randomizer (000 Sec. 1.1, Ex. 4.4)."""
    require(isinstance(rate, (int, float)) and not isinstance(rate, bool) and 0 < rate <= 1,
            "rate", rate, "must lie in (0, 1]")
    if rate == 1:
        return atoms
    null = RatioAtoms(NULL_ATOMS.a, NULL_ATOMS.b, NULL_ATOMS.weight, Rounding.EXACT)
    return parallel_atoms([atoms, null], [float(rate), 1.0 - float(rate)])


# ----------------------------------------------------------------------------------------------
# Randomizer-level helpers
# ----------------------------------------------------------------------------------------------
def _components(randomizers) -> list:
    randomizers = list(randomizers)
    require(len(randomizers) >= 1, "randomizers", len(randomizers), "needs at least one")
    return randomizers


def _same_domain(randomizers) -> None:
    domains = {repr(r.input_domain) for r in randomizers}
    require(len(domains) == 1, "randomizers", [r.name for r in randomizers],
            f"parallel composition needs one shared input domain, got {sorted(domains)}")


def joint_epsilon0(randomizers) -> float:
    """LDP level of the joint composition: sum of the components' (000 Thm 8)."""
    return float(sum(r.epsilon0 for r in randomizers))


def joint_blanket_atoms(randomizers, pairs, **options) -> RatioAtoms:
    """Blanket atoms of the joint composition for per-component pairs (x0^i, x1^i) (a component
    with x0^i == x1^i is unchanged); options go to ``blanket_atoms`` (000 Thm 9)."""
    randomizers = _components(randomizers)
    require(len(pairs) == len(randomizers), "pairs", len(pairs), "needs one pair per component")
    atoms = joint_atoms([blanket_atoms(r, x0, x1, **options)
                         for r, (x0, x1) in zip(randomizers, pairs, strict=True)])
    check_decomposition(atoms, joint_epsilon0(randomizers), "blanket")
    return atoms


def joint_exact_atoms(randomizers, triples, **options) -> RatioAtoms:
    """Thm 14 atoms of the joint composition for per-component triples (x0^i, x1^i, x2^i)
    (000 Sec. 5.3: the component decompositions multiply)."""
    randomizers = _components(randomizers)
    require(len(triples) == len(randomizers), "triples", len(triples),
            "needs one triple per component")
    atoms = joint_atoms([exact_pair_atoms(r, *t, **options)
                         for r, t in zip(randomizers, triples, strict=True)])
    check_decomposition(atoms, joint_epsilon0(randomizers), "exact")
    return atoms


def parallel_blanket_atoms(randomizers, probabilities, x0, x1, **options) -> RatioAtoms:
    """Blanket atoms of the parallel composition (i, R_i(x)) w.p. p_i for the pair (x0, x1)
    (000 Thm 11); the components must share their input domain."""
    randomizers = _components(randomizers)
    _same_domain(randomizers)
    atoms = parallel_atoms([blanket_atoms(r, x0, x1, **options) for r in randomizers],
                           probabilities)
    check_decomposition(atoms, max(r.epsilon0 for r in randomizers), "blanket")
    return atoms


def parallel_exact_atoms(randomizers, probabilities, x0, x1, x2, **options) -> RatioAtoms:
    """Thm 14 atoms of the parallel composition: the weighted mixture of the components'
    (000 Sec. 5.3)."""
    randomizers = _components(randomizers)
    _same_domain(randomizers)
    atoms = parallel_atoms([exact_pair_atoms(r, x0, x1, x2, **options) for r in randomizers],
                           probabilities)
    check_decomposition(atoms, max(r.epsilon0 for r in randomizers), "exact")
    return atoms


def subsampled_blanket_atoms(randomizer, rate, x0, x1, **options) -> RatioAtoms:
    """Blanket atoms of ``randomizer`` under Poisson subsampling with rate ``rate``."""
    return subsampled_atoms(blanket_atoms(randomizer, x0, x1, **options), rate)


def subsampled_exact_atoms(randomizer, rate, x0, x1, x2, **options) -> RatioAtoms:
    """Thm 14 atoms of ``randomizer`` under Poisson subsampling with rate ``rate``."""
    return subsampled_atoms(exact_pair_atoms(randomizer, x0, x1, x2, **options), rate)


def hamming_patterns(randomizers) -> list[tuple[bool, ...]]:
    """The patterns of changed coordinates to examine for a joint composition (000 Sec. 8):
    every non-empty subset, one per orbit under exchanging equal components (identical
    components in the same role give identical atom sets)."""
    randomizers = _components(randomizers)
    classes: list[list[int]] = []
    for i, r in enumerate(randomizers):
        for members in classes:
            if randomizers[members[0]] == r:
                members.append(i)
                break
        else:
            classes.append([i])
    patterns = []
    for counts in itertools.product(*[range(len(m) + 1) for m in classes]):
        if sum(counts) == 0:
            continue
        changed = [False] * len(randomizers)
        for members, count in zip(classes, counts, strict=True):
            for i in members[:count]:
                changed[i] = True
        patterns.append(tuple(changed))
    return patterns
