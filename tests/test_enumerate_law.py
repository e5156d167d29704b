"""engine/enumerate.py: the count vectors built with array operations, their eps-independent
law kept between evaluations, and the hand-over of large single groups to the exact band sum
(engine/methods.py, ENUMERATE_BAND_ABOVE; issue 32)."""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import stats

from shufflesim.protocols.bounds.atoms import RatioAtoms
from shufflesim.protocols.bounds.engine import enumerate as en
from shufflesim.protocols.bounds.engine import methods
from shufflesim.protocols.bounds.engine.common import Categories, categories
from shufflesim.protocols.bounds.engine.core import hockey_stick


def _brute(total: int, parts: int) -> list[tuple[int, ...]]:
    rows = [c for c in itertools.product(range(total + 1), repeat=parts) if sum(c) == total]
    return sorted(rows, reverse=True)          # decreasing lexicographic order


def test_compositions_are_every_vector_once_in_decreasing_order():
    for total in range(0, 9):
        for parts in range(1, 6):
            got = en.compositions(total, parts)
            assert got.shape == (math.comb(total + parts - 1, parts - 1), parts)
            assert [tuple(r) for r in got.tolist()] == _brute(total, parts), (total, parts)
    big = en.compositions(60, 4)
    assert (big.sum(axis=1) == 60).all()
    assert len({tuple(r) for r in big.tolist()}) == big.shape[0] == math.comb(63, 3)


def test_law_is_the_multinomial_and_kept_between_evaluations():
    w = np.array([0.1, 0.25, 0.05, 0.6])
    cat = Categories(np.array([2.0, -1.0, -0.5, 0.0]), w, 40, 0.0)
    en._count_law.cache_clear()
    values, value_err, probs, rel = en.group_outcomes(cat)
    counts = en.compositions(40, 4)
    exact = stats.multinomial.pmf(counts, 40, w)
    assert np.all(np.abs(probs - exact) <= rel * exact + 1e-300)
    assert abs(probs.sum() - 1.0) < 1e-12
    np.testing.assert_array_equal(values, counts @ cat.c)
    # a second evaluation at other values reuses the law: one miss, one hit
    other = Categories(np.array([1.0, -2.0, -0.5, 0.0]), w, 40, 0.0)
    values2, _, probs2, _ = en.group_outcomes(other)
    info = en._count_law.cache_info()
    assert (info.hits, info.misses) == (1, 1)
    assert probs2 is probs
    np.testing.assert_array_equal(values2, counts @ other.c)
    # other weights: another law
    en.group_outcomes(Categories(cat.c, np.array([0.2, 0.2, 0.0999, 0.5001]), 40, 0.0))
    assert en._count_law.cache_info().misses == 2


def test_cached_law_gives_the_same_bounds_as_a_fresh_one():
    e = math.e
    atoms = RatioAtoms(np.array([1.0, e, 1.0]), np.array([e, 1.0, 1.0]),
                       np.array([0.2, 0.2, 0.3]))
    cat = categories(atoms, 150, 0.3)
    en._count_law.cache_clear()
    first = en.enumeration_bounds([cat])
    again = en.enumeration_bounds([cat])
    en._count_law.cache_clear()
    fresh = en.enumeration_bounds([cat])
    assert first == again == fresh
    assert 0 < first[0] <= first[1] <= first[0] * (1 + 1e-9)


def test_large_single_groups_go_to_the_exact_band_with_the_same_value():
    e = math.e
    p = 1 / (e + 2)                                  # 3-RR, eps0 = 1: the blanket atoms
    atoms = RatioAtoms(np.array([e, 1.0, 1.0]), np.array([1.0, e, 1.0]),
                       np.array([p, p, p]))
    small, large = categories(atoms, 20, 0.4), categories(atoms, 100, 0.4)
    assert methods._select([small]) == "enumerate"
    assert en.composition_count(100, large.c.size) > methods.ENUMERATE_BAND_ABOVE
    assert methods._select([large]) == "conditioning"
    auto = hockey_stick([(atoms, 100)], 0.4, rtol=1e-9)
    full = hockey_stick([(atoms, 100)], 0.4, rtol=1e-9, method="enumerate")
    assert auto.method == "conditioning" and full.method == "enumerate"
    # both brackets hold the same true value
    assert auto.lower <= full.upper and full.lower <= auto.upper
    assert auto.upper - auto.lower <= 1e-8 * auto.upper
