"""Many likelihood-ratio levels merged into a few (protocols/bounds/engine/levels.py, issue 32):
the merged variable's delta is a lower bound at every eps, the search's bracket states the
merge's error, and upper sides are untouched."""

from __future__ import annotations

import numpy as np
import pytest

from shufflesim.protocols.bounds.atoms import RatioAtoms, Rounding
from shufflesim.protocols.bounds.engine import core, levels


def _cyclic(eps0: float = 1.0, k: int = 7, triple=(0, 3, 1)) -> RatioAtoms:
    dist = np.array([[min((x - y) % k, (y - x) % k) for y in range(k)] for x in range(k)])
    r = np.exp(-eps0 / 3 * dist)
    r /= r.sum(axis=1, keepdims=True)
    x0, x1, x2 = triple
    return RatioAtoms(r[x0] / r[x2], r[x1] / r[x2], r[x2])


def test_merge_is_a_convex_order_reduction():
    at = _cyclic()
    for merged in levels.candidates(at):
        assert merged.rounding is Rounding.DOWN
        assert merged.a.size <= levels.BINS
        # means of a and b (and the total weight) are kept: G' = E[G | bin]
        assert merged.weight.sum() == pytest.approx(at.weight.sum(), rel=1e-14)
        assert merged.weight @ merged.a == pytest.approx(at.weight @ at.a, rel=1e-13)
        assert merged.weight @ merged.b == pytest.approx(at.weight @ at.b, rel=1e-13)


@pytest.mark.parametrize("eps", [0.05, 0.2, 0.5])
def test_merged_delta_below_exact_enumeration(eps):
    at = _cyclic()
    n = 20   # few enough users for the exact enumeration of the unmerged atoms
    exact = core.hockey_stick([(at, n)], eps, "lower", method="enumerate")
    for merged in levels.candidates(at):
        low = core.hockey_stick([(merged, n)], eps, "upper", method="enumerate")
        assert low.upper <= exact.lower * (1 + 1e-9) + 1e-15


def test_levels_path_bracket_and_sides():
    at = _cyclic()
    n = 1000
    assert levels.applies(at, n, 0.3)
    est = core.epsilon_bound([at, RatioAtoms(at.b, at.a, at.weight)], n, 1e-6, "lower")
    assert 0 < est.lower == est.value <= est.upper
    # the upper end is Chernoff's crossing of the unmerged atoms: a proven upper bound, so the
    # bracket contains the exact value; the merge's loss is stated in the error
    assert est.error == pytest.approx(est.upper - est.lower)
    # delta at the lower end: certified above delta by the merged variable
    d = core.delta_of_epsilon([(at, n)], n, est.lower * (1 - 1e-9), "lower")
    assert "levels" in d.method and d.lower > 1e-6 * (1 - 1e-3)
    # the upper side never takes the merged path
    up = core.delta_of_epsilon([(at, n)], n, 0.2, "upper", rtol=0.05)
    assert "levels" not in up.method
    # below MIN_USERS, or with few levels, the former methods run
    assert not levels.applies(at, levels.MIN_USERS - 1, 0.3)
    few = RatioAtoms(at.a[:3], at.b[:3], at.weight[:3])
    assert not levels.applies(few, n, 0.3)


@pytest.mark.slow
def test_levels_bracket_contains_the_unmerged_value():
    """The former path (conditioning and FFT, ~10 s here) lands inside the levels bracket."""
    at = _cyclic()
    n = 1000
    directions = [at, RatioAtoms(at.b, at.a, at.weight)]
    fast = core.epsilon_bound(directions, n, 1e-6, "lower")
    full = core.epsilon_bound(directions, n, 1e-6, "lower", method="conditioning")
    assert fast.lower <= full.upper and full.lower <= fast.upper
