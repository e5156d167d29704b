"""Joint and parallel composition and Poisson subsampling of decompositions (000 Sec. 4.5-4.6,
Thm 9, Thm 11, Sec. 5.3), checked against brute force on the explicit composed randomizer: its
full output distribution is built from the components' output_pmf and decomposed per output.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from shufflesim.protocols.bounds.atoms import RatioAtoms, Rounding
from shufflesim.protocols.bounds.numerical.atom_sets import (
    atoms_from_masses,
    check_decomposition,
    merge_atoms,
)
from shufflesim.protocols.bounds.numerical.composition import (
    combined_rounding,
    hamming_patterns,
    joint_atoms,
    joint_blanket_atoms,
    joint_exact_atoms,
    parallel_atoms,
    parallel_blanket_atoms,
    parallel_exact_atoms,
    subsampled_atoms,
    subsampled_blanket_atoms,
    subsampled_exact_atoms,
)
from shufflesim.protocols.bounds.numerical.decompositions import blanket_atoms
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import make_randomizer


def same_atoms(x: RatioAtoms, y: RatioAtoms, rtol: float = 1e-12) -> bool:
    x, y = merge_atoms(x), merge_atoms(y)
    if x.a.size != y.a.size:
        return False
    ox = np.lexsort((np.round(x.b, 9), np.round(x.a, 9)))
    oy = np.lexsort((np.round(y.b, 9), np.round(y.a, 9)))
    return all(np.allclose(u[ox], v[oy], rtol=rtol, atol=1e-15)
               for u, v in ((x.a, y.a), (x.b, y.b), (x.weight, y.weight)))


def product_pmf(*pmfs: np.ndarray) -> np.ndarray:
    """P[(x^1..x^m), (y^1..y^m)] = prod_i P_i[x^i, y^i], inputs and outputs in C order."""
    out = np.ones((1, 1))
    for p in pmfs:
        out = np.einsum("ia,jb->ijab", out, p).reshape(out.shape[0] * p.shape[0], -1)
    return out


def flat_input(shape: tuple, coords: tuple) -> int:
    return int(np.ravel_multi_index(coords, shape))


R1 = make_randomizer("krr", epsilon0=0.7, domain_size=3)
R2 = make_randomizer("rappor", epsilon0=0.9, domain_size=2)
R3 = make_randomizer("oue", epsilon0=1.3, domain_size=3)


def test_joint_blanket_matches_explicit_product_for_every_pattern():
    comps = [R1, R2, R3]
    pmfs = [r.output_pmf() for r in comps]
    big = product_pmf(*pmfs)
    shape = tuple(p.shape[0] for p in pmfs)
    blanket_min = big.min(axis=0)
    for x0 in itertools.product(*[range(s) for s in shape]):
        for x1 in [(1, 0, 2), (0, 1, 0), x0, (2, 1, 1)]:
            i0, i1 = flat_input(shape, x0), flat_input(shape, x1)
            brute = atoms_from_masses(big[i0], big[i1], blanket_min)
            composed = joint_blanket_atoms(comps, list(zip(x0, x1, strict=True)))
            assert same_atoms(composed, brute), (x0, x1)


def test_joint_exact_matches_explicit_product():
    comps = [R1, R2]
    big = product_pmf(*[r.output_pmf() for r in comps])
    shape = (3, 2)
    cases = [((0, 0), (1, 1), (2, 0)), ((0, 1), (1, 1), (2, 1)), ((2, 0), (0, 1), (2, 0))]
    for t0, t1, t2 in cases:
        rows = [big[flat_input(shape, t)] for t in (t0, t1, t2)]
        brute = atoms_from_masses(*rows)
        composed = joint_exact_atoms(comps, list(zip(t0, t1, t2, strict=True)))
        assert same_atoms(composed, brute)


def test_two_joint_krr_example_4_2():
    """000 Example 4.2: two eps0/2 k-RR; the product atoms have the 3 x 3 ratio pairs."""
    e0, k = 1.6, 5
    half = make_randomizer("krr", epsilon0=e0 / 2, domain_size=k)
    atoms = joint_blanket_atoms([half, half], [(0, 1), (0, 1)])
    p, s = 1 / (np.exp(e0 / 2) + k - 1), np.exp(e0 / 2)
    q = (k - 2) * p
    single = {(s, 1.0): p, (1.0, s): p, (1.0, 1.0): q}
    want = {}
    for (a1, b1), w1 in single.items():
        for (a2, b2), w2 in single.items():
            key = (round(a1 * a2, 12), round(b1 * b2, 12))
            want[key] = want.get(key, 0.0) + w1 * w2
    got = {(round(a, 12), round(b, 12)): w
           for a, b, w in zip(atoms.a, atoms.b, atoms.weight, strict=True)}
    assert set(got) == set(want)
    for key, w in want.items():
        assert got[key] == pytest.approx(w, rel=1e-12)
    assert atoms.weight.sum() == pytest.approx((k * p) ** 2, rel=1e-12)  # gamma^2


def test_parallel_matches_explicit_mixture():
    comps = [make_randomizer("krr", epsilon0=1.1, domain_size=3),
             make_randomizer("blh", epsilon0=0.6, domain_size=3)]
    probs = [0.35, 0.65]
    big = np.hstack([p * r.output_pmf() for p, r in zip(probs, comps, strict=True)])
    for x0, x1 in itertools.permutations(range(3), 2):
        brute = atoms_from_masses(big[x0], big[x1], big.min(axis=0))
        assert same_atoms(parallel_blanket_atoms(comps, probs, x0, x1), brute)
        for x2 in range(3):
            brute = atoms_from_masses(big[x0], big[x1], big[x2])
            assert same_atoms(parallel_exact_atoms(comps, probs, x0, x1, x2), brute)


@pytest.mark.parametrize("rate", [0.05, 0.5, 1.0])
def test_poisson_subsampling_matches_explicit_null_output(rate):
    r = make_randomizer("krr", epsilon0=2.0, domain_size=4)
    big = np.hstack([rate * r.output_pmf(), np.full((4, 1), 1.0 - rate)])
    brute = atoms_from_masses(big[0], big[1], big.min(axis=0))
    atoms = subsampled_blanket_atoms(r, rate, 0, 1)
    assert same_atoms(atoms, brute)
    check_decomposition(atoms, r.epsilon0, "blanket")
    brute = atoms_from_masses(big[0], big[1], big[2])
    assert same_atoms(subsampled_exact_atoms(r, rate, 0, 1, 2), brute)


def test_rounded_atoms_compose_conservatively():
    lap = make_randomizer("laplace_binary", epsilon0=0.8)
    up = blanket_atoms(lap, 0, 1, cells=64)
    krr = blanket_atoms(R1, 0, 1)
    joint = joint_atoms([up, krr])
    assert joint.rounding is Rounding.UP
    assert np.dot(joint.weight, joint.a) >= 1 >= np.dot(joint.weight, joint.b)
    mix = parallel_atoms([up, krr], [0.5, 0.5])
    assert mix.rounding is Rounding.UP
    assert subsampled_atoms(up, 0.3).rounding is Rounding.UP
    down = blanket_atoms(lap, 0, 1, cells=64, rounding=Rounding.DOWN)
    with pytest.raises(ParameterError, match="rounding"):
        joint_atoms([up, down])
    assert combined_rounding([Rounding.EXACT, Rounding.EXACT]) is Rounding.EXACT


def test_joint_atom_set_is_merged():
    """Merging keeps the m-fold joint of a 3-atom set small: ratios e^(i s) e^(j s)."""
    half = make_randomizer("krr", epsilon0=0.25, domain_size=10)
    atoms = joint_blanket_atoms([half] * 4, [(0, 1)] * 4)
    assert atoms.a.size == 15  # pairs (s^i, s^j) with i + j <= 4
    check_decomposition(atoms, 1.0, "blanket")


def test_hamming_patterns():
    assert len(hamming_patterns([R1, R1, R1])) == 3
    assert len(hamming_patterns([R1, R2])) == 3
    assert len(hamming_patterns([R1, R1, R2])) == 5
    assert all(any(p) for p in hamming_patterns([R1, R2, R3]))
    assert len(hamming_patterns([R1, R2, R3])) == 7


def test_bad_arguments():
    atoms = blanket_atoms(R1, 0, 1)
    with pytest.raises(ParameterError, match="probabilities"):
        parallel_atoms([atoms, atoms], [0.5, 0.6])
    with pytest.raises(ParameterError, match="probabilities"):
        parallel_atoms([atoms, atoms], [1.0])
    with pytest.raises(ParameterError, match="rate"):
        subsampled_atoms(atoms, 0.0)
    with pytest.raises(ParameterError, match="input domain"):
        parallel_blanket_atoms([R1, R2], [0.5, 0.5], 0, 1)
    with pytest.raises(ParameterError, match="pairs"):
        joint_blanket_atoms([R1, R2], [(0, 1)])
