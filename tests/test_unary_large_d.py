"""Unary encodings (OUE, RAPPOR) at large d (issue 14): the grouping of outputs must give the
same decomposition, hence the same bounds, for every d >= 3 and the triple (0, 1, 2).

The shuffled pair X0 = (0, 2, ..., 2), X1 = (1, 2, ..., 2) only sees the bits at 0, 1, 2: the
other d - 3 bits have the same law under every input of the pair, so 000 Thm 14's value cannot
depend on d. The blanket (000 Thm 13) depends on d only through the all-ones output, of mass
a b^(d-1)."""

from __future__ import annotations

import numpy as np
import pytest

from shufflesim.protocols.bounds.numerical import optimal
from shufflesim.protocols.bounds.numerical.decompositions import blanket_atoms, exact_pair_atoms
from shufflesim.protocols.randomizers import make_randomizer


def _sorted(atoms):
    order = np.lexsort((atoms.b, atoms.a))
    return atoms.a[order], atoms.b[order], atoms.weight[order]


@pytest.mark.parametrize("name", ["oue", "rappor"])
@pytest.mark.parametrize("eps0", [0.1, 1.0, 8.0, 20.0, 30.0])
@pytest.mark.parametrize("d", [1024, 65536])
def test_exact_pair_atoms_do_not_depend_on_d(name, eps0, d):
    small = exact_pair_atoms(make_randomizer(name, epsilon0=eps0, domain_size=3), 0, 1, 2)
    large = exact_pair_atoms(make_randomizer(name, epsilon0=eps0, domain_size=d), 0, 1, 2)
    for u, v in zip(_sorted(small), _sorted(large), strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-13, atol=0)


@pytest.mark.parametrize("name", ["oue", "rappor"])
@pytest.mark.parametrize("eps0", [0.1, 4.0, 20.0])
@pytest.mark.parametrize("d", [1024, 65536])
def test_blanket_ratios_are_the_ldp_ratios(name, eps0, d):
    """Every blanket ratio lies in [1, e^eps0] (000 Property 2) and the top one is e^eps0 to a
    few ulps (it came out as 3.0, 4.0, 73.0 from subnormal binomial masses)."""
    atoms = blanket_atoms(make_randomizer(name, epsilon0=eps0, domain_size=d), 0, 1)
    assert atoms.a.max() == pytest.approx(np.exp(eps0), rel=1e-13)
    assert atoms.a.min() >= 1 - 1e-13
    assert abs(float(atoms.weight @ atoms.a) - 1) < 1e-12


@pytest.mark.parametrize("name", ["oue", "rappor"])
def test_exact_lower_same_for_d_3_1024_65536(name):
    values = [optimal.exact_lower_epsilon(make_randomizer(name, epsilon0=6.0, domain_size=d),
                                          5, 1e-6, triples=[(0, 1, 2)]).epsilon
              for d in (3, 1024, 65536)]
    assert values[0] > 0
    assert values[1] == values[0] and values[2] == values[0]
