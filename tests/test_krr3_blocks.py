"""krr3_blocks (3-RR at any n by dominated blocks) against an independent 50-digit truth.

The oracle: mpmath over the full 3-count histogram of every neighbouring dataset pair (user 1 at
x0 vs x1; the others any multiset of the three values; both directions), computed by adding the
users one at a time. Checked: a one-point block is the exact pair; every block's upper estimate
is >= the truth of every dataset pair inside it (the domination itself, at several eps);
the search's bracket contains the truth's eps(delta); it agrees with krr_exact's enumeration at
n = 40; krr-exact beyond n = 100 sits between the proven lower bounds and optimal-blanket.
"""

from __future__ import annotations

import itertools

import mpmath as mp
import pytest

from shufflesim.protocols.bounds import catalogue as cat
from shufflesim.protocols.bounds.numerical import krr3_blocks as kb
from shufflesim.protocols.bounds.numerical import krr_exact as ke
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers.krr import KRR

MP_DIGITS = 50  # every test here runs at this many digits (tests/conftest.py)


def _law(epsilon0: float, values: list[int]) -> dict:
    """Histogram law (counts of 0, 1, 2) of 3-RR users holding ``values``."""
    e0 = mp.e ** mp.mpf(epsilon0)
    law = {(0, 0, 0): mp.mpf(1)}
    for x in values:
        row = [e0 / (e0 + 2) if y == x else 1 / (e0 + 2) for y in range(3)]
        new: dict = {}
        for h, pr in law.items():
            for y in range(3):
                g = list(h)
                g[y] += 1
                new[tuple(g)] = new.get(tuple(g), mp.mpf(0)) + pr * row[y]
        law = new
    return law


def pair_truth(epsilon: float, epsilon0: float, n0: int, n1: int, nr: int) -> mp.mpf:
    """D_{e^eps}(P0 || P1) of dataset pair (n0, n1, nr), 50 digits."""
    others = [0] * n0 + [1] * n1 + [2] * nr
    p0, p1 = _law(epsilon0, others + [0]), _law(epsilon0, others + [1])
    e = mp.e ** mp.mpf(epsilon)
    return sum(max(p0[h] - e * p1.get(h, 0), 0) for h in p0)


def truth_delta(epsilon: float, epsilon0: float, n: int) -> mp.mpf:
    return max(pair_truth(epsilon, epsilon0, a, b, n - 1 - a - b)
               for a in range(n) for b in range(n - a))


@pytest.mark.parametrize("epsilon0, epsilon", [(1.0, 0.3), (2.5, 1.2)])
def test_one_point_blocks_are_the_exact_pair(epsilon0, epsilon):
    n = 7
    search = kb.BlockSearch(epsilon0, n, 1e-6)
    for a in range(n):
        for b in range(n - a):
            lower, upper = search.block_delta(epsilon, (a, a, b, b))
            truth = pair_truth(epsilon, epsilon0, a, b, n - 1 - a - b)
            assert lower <= truth <= upper
            assert upper - lower <= 1e-6 * truth + 1e-30


@pytest.mark.parametrize("epsilon0, epsilon, delta", [
    (1.0, 0.2, 1e-3), (2.0, 0.9, 1e-4), (3.0, 1.5, 1e-6)])
def test_blocks_dominate_every_pair_inside(epsilon0, epsilon, delta):
    """Every rectangle (all of them at n = 8) bounds the truth of each pair it holds: the
    revealing-domination inequality of the module docstring, with its tail term."""
    n = 8
    search = kb.BlockSearch(epsilon0, n, delta)
    truths = {(a, b): pair_truth(epsilon, epsilon0, a, b, n - 1 - a - b)
              for a in range(n) for b in range(n - a)}
    checked = 0
    for a0, b0 in itertools.combinations_with_replacement(range(n), 2):
        for a1, b1 in itertools.combinations_with_replacement(range(n), 2):
            if a0 + a1 > n - 1:
                continue
            _, upper = search.block_delta(epsilon, (a0, b0, a1, b1))
            inside = [truths[(a, b)] for a in range(a0, b0 + 1) for b in range(a1, b1 + 1)
                      if a + b <= n - 1]
            assert max(inside) <= upper
            checked += 1
    assert checked > 300


@pytest.mark.parametrize("epsilon0, n, delta", [(1.0, 6, 1e-2), (3.0, 7, 1e-4)])
def test_search_brackets_the_truth(epsilon0, n, delta):
    """The truth's delta is > delta at the lower end (so the truth's eps is above it), <= delta
    at the upper end, and > delta 1e-5 below the upper end (the bracket is tight)."""
    lower, upper, _, _ = kb.krr3_epsilon(epsilon0, n, delta, ke._corner_configs(n))
    assert 0 < lower <= upper
    assert truth_delta(lower, epsilon0, n) > delta
    assert truth_delta(upper, epsilon0, n) <= delta
    assert truth_delta(upper * (1 - 1e-5), epsilon0, n) > delta


def test_agrees_with_the_enumeration():
    """n = 40: the blocks' bracket and krr_exact's full enumeration overlap, both tight."""
    randomizer = KRR(epsilon0=2.0, domain_size=3)
    full = ke.krr_exact_epsilon(randomizer, 40, 1e-8).epsilon
    lower, upper, _, _ = kb.krr3_epsilon(2.0, 40, 1e-8, ke._corner_configs(40))
    assert lower <= full * (1 + 1e-8)
    assert upper >= full * (1 - 1e-6)
    assert upper <= full * (1 + 1e-5)


@pytest.mark.parametrize("names", [
    ("exact-lower", "krr-exact", "optimal-blanket"),
    pytest.param(("exact-lower", "krr-exact-lower", "krr-exact", "optimal-blanket"),
                 marks=pytest.mark.slow)])
def test_krr_exact_beyond_the_enumeration(names):
    """n = 200 (blocks): proven lower bounds <= krr-exact <= optimal-blanket, and the bracket
    is tight (krr-exact-lower's corner pairs cost ~15 s at n = 200: slow)."""
    randomizer = KRR(epsilon0=3.0, domain_size=3)
    values = {name: cat.get_bound(name).compute(randomizer, 200, 1e-8) for name in names}
    upper = values["krr-exact"]
    assert "dominated blocks" in upper.note
    for name in names[:-2]:
        assert values[name].epsilon <= upper.epsilon
    # the blanket is the loose side here (2.8339 against 2.8118)
    assert upper.epsilon <= values["optimal-blanket"].epsilon * 0.995
    assert upper.epsilon_error <= 1e-5 * upper.epsilon


def test_refuses_windows_too_large():
    with pytest.raises(ParameterError, match="n"):
        ke.krr_exact_epsilon(KRR(epsilon0=0.1, domain_size=3), 10**6, 1e-8)
    with pytest.raises(ParameterError, match="n"):
        ke.krr_exact_epsilon(KRR(epsilon0=4.0, domain_size=3), ke.MAX_N_BLOCKS + 1, 1e-8)
