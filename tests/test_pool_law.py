"""engine/pool_law.py (issue 32): the conditioning method's kink terms E(+-Y_m - a)_+ with the
exact law of the main pool count, against a brute-force sum over the pool's count vectors,
and the exact-pool single style against the engine's exact sums."""

import math

import numpy as np
import pytest
from engine_probes import count_block_refinements
from scipy.stats import multinomial

import shufflesim.protocols.bounds.engine.methods as methods
from shufflesim.protocols.bounds import catalogue
from shufflesim.protocols.bounds.engine import pool_law
from shufflesim.protocols.bounds.engine.common import categories
from shufflesim.protocols.bounds.engine.conditioning import conditioning_bounds
from shufflesim.protocols.bounds.engine.enumerate import enumeration_bounds
from shufflesim.protocols.bounds.numerical.decompositions import blanket_atoms
from shufflesim.protocols.randomizers import make_randomizer


def _pool(q, c_main, rest_c, rest_w):
    """(alpha, m_r, v_r, bound_r) of a pool: main category c_main with probability q, the rest
    categories rest_c with probabilities (1 - q) rest_w."""
    rest_c, rest_w = np.asarray(rest_c, float), np.asarray(rest_w, float)
    m_r = float(rest_w @ rest_c)
    v_r = float(rest_w @ (rest_c - m_r) ** 2)
    return c_main - m_r, m_r, v_r, float(np.abs(rest_c - m_r).max())


def _exact(m, q, c_main, rest_c, rest_w, a, sign):
    """E(sign Y_m - a)_+ by summing over every count vector of m pool users (Y_m centred)."""
    probs = np.concatenate(([q], (1 - q) * np.asarray(rest_w, float)))
    values = np.concatenate(([c_main], rest_c))
    mean = m * float(probs @ values)
    out = np.zeros_like(a, dtype=float)
    k = values.size
    for counts in _compositions(m, k):
        p = multinomial.pmf(counts, m, probs)
        y = sign * (float(np.dot(counts, values)) - mean)
        out += p * np.maximum(y - a, 0.0)
    return out


def _compositions(m, k):
    if k == 1:
        yield (m,)
        return
    for first in range(m + 1):
        for rest in _compositions(m - first, k - 1):
            yield (first, *rest)


CASES = [
    # q, c_main, rest categories, their weights
    (0.2, -3.0, [-0.4, 0.0], [0.3, 0.7]),         # remainder spread below the lattice step
    (0.05, 5.0, [-1.5, 0.5], [0.5, 0.5]),          # a remainder wider than the lattice step
    (0.4, -1.0, [0.0], [1.0]),                     # no remainder (k-RR's blanket)
]


@pytest.mark.parametrize("q, c_main, rest_c, rest_w", CASES)
def test_tables_bracket_the_brute_force_sum(q, c_main, rest_c, rest_w):
    alpha, _, v_r, bound_r = _pool(q, c_main, rest_c, rest_w)
    law = pool_law.pool_law(np.arange(30, 41), q, alpha, v_r, bound_r)
    assert law is not None
    a = np.concatenate((np.linspace(0.0, 25.0, 41), [0.123, 3.3, 60.0]))
    for m in (30, 35, 40):                       # every row of the range
        for up in (True, False):
            exact = _exact(m, q, c_main, rest_c, rest_w, a, 1.0 if up else -1.0)
            side = np.full((a.size, 1), up)
            rows = law.rows(np.full(a.size, m))
            lo = rows.lower(a[:, None], side)[:, 0]
            hi = rows.upper(a[:, None], side)[:, 0]
            assert np.all(lo <= exact * (1 + 1e-9) + 1e-15), (m, up)
            assert np.all(exact <= hi * (1 + 1e-9) + 1e-15), (m, up)
            if m == 40:                          # not vacuous: the upper near the mean
                assert np.all(hi[:5] <= 2.0 * exact[:5] + 1e-12)
            if v_r == 0 and m == 30:             # exact without a remainder, at the table's m
                np.testing.assert_allclose(lo, exact, rtol=3e-9, atol=1e-13)
            if v_r == 0 and m == 40:
                np.testing.assert_allclose(hi, exact, rtol=3e-9, atol=1e-10)


def test_a_lower_table_of_the_largest_m_would_fail():
    """The convex order matters: the table of m = 40 is above the exact value at m = 30 (so the
    lower side must use the rows' smallest m, as pool_law does)."""
    q, c_main, rest_c, rest_w = CASES[2]
    alpha, _, v_r, bound_r = _pool(q, c_main, rest_c, rest_w)
    wrong = pool_law.pool_law(np.array([40]), q, alpha, v_r, bound_r)
    a = np.linspace(0.0, 5.0, 11)
    exact = _exact(30, q, c_main, rest_c, rest_w, a, 1.0)
    lower = wrong.rows(np.full(a.size, 40)).lower(a[:, None], np.full((a.size, 1), True))[:, 0]
    assert np.any(lower > exact * (1 + 1e-6))


def test_declined_shapes():
    rows = np.arange(10, 21)
    assert pool_law.pool_law(rows, 0.0, 1.0, 0.1, 1.0) is None           # no main category
    assert pool_law.pool_law(rows, 0.3, 0.0, 0.1, 1.0) is None           # no lattice
    assert pool_law.pool_law(rows[:0], 0.3, 1.0, 0.1, 1.0) is None       # no rows
    assert not pool_law.applies(10**9, 0.5, 1.0)                          # window too large


@pytest.mark.parametrize("name, kwargs", [("oue", {"domain_size": 4}),
                                          ("hr", {"domain_size": 16}),
                                          ("blh", {"domain_size": 4})])
@pytest.mark.parametrize("eps0", [1.0, 4.0])
def test_exact_pool_style_brackets_the_enumeration(name, kwargs, eps0):
    """n = 24 (every count vector enumerated: exact), at three eps: the exact-pool single style
    holds the exact value, and its lower side is at least the plain style's."""
    atoms = blanket_atoms(make_randomizer(name, epsilon0=eps0, **kwargs), 0, 1)
    z, one = np.zeros(1), np.ones(1)
    for direction in (atoms, atoms.swapped()):
        for eps in (0.1 * eps0, 0.3 * eps0, 0.6 * eps0):
            cat = categories(direction, 24, eps)
            if not methods.exact_pool_applies(cat):
                continue
            ex_lo, ex_hi = enumeration_bounds([cat])
            lo, hi = methods.exact_pool_bounds(cat, z, one, z)
            p_lo, p_hi = conditioning_bounds(cat, z, one, z, 0)
            assert lo <= ex_hi * (1 + 1e-12) and ex_lo <= hi * (1 + 1e-12), (eps, lo, hi)
            assert p_lo <= lo * (1 + 1e-12)          # its lower side adds to Jensen's
            # the caller (methods._conditioning) keeps the intersection with the plain style


def test_hr_eps0_4_coarse_search_needs_no_blocks(monkeypatch):
    """hr d = 16, eps0 = 4, n = 71969, delta = 1e-6: the plain single style is 5.3e-2 wide, and
    the coarse search ran 8- and 32-block refinements (1.07 s CPU at 783fd21, value
    0.09730695821235782 with a stated error of 1.16e-5). The exact-pool style is ~6e-4 wide:
    no block refinement, and the bracket overlaps the former one."""
    calls = count_block_refinements(monkeypatch)
    r = make_randomizer("hr", epsilon0=4.0, domain_size=16)
    result = catalogue.evaluate("optimal-blanket", r, 71_969, 1e-6).result
    assert calls and max(calls) == 0
    old, old_error = 0.09730695821235782, 1.16e-5
    assert result.epsilon >= old - old_error
    assert result.epsilon - result.epsilon_error <= old
    assert result.epsilon_error <= 1e-4 * result.epsilon
    assert math.isfinite(result.epsilon)
