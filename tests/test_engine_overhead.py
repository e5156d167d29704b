"""The per-evaluation shortcuts of the hockey-stick engine (issue 32, session 16) change no
number: conditioning.choose_roles' memo is keyed by the exact bytes of (c, w), and
common.minimise_unimodal's grid and common.log_sum_exp keep numpy's arithmetic."""

import numpy as np
import pytest
from scipy.special import logsumexp

from shufflesim.protocols.bounds.engine import common, conditioning
from shufflesim.protocols.bounds.engine.common import Categories


def _roles_direct(c, w):
    """choose_roles written out again (the rule of its docstring), without any memo."""
    score = w * c * c
    neg = [k for k in range(c.size) if c[k] < 0]
    b = max(neg, key=lambda k: (score[k], -k)) if neg else int(np.argmin(c))
    pos = [k for k in range(c.size) if c[k] > 0] or [k for k in range(c.size) if c[k] > c[b]]
    a = max(pos, key=lambda k: (score[k], -k)) if pos else int(np.argmax(c))
    pool = [k for k in range(c.size) if k not in (a, b)]
    if len(pool) < 2:
        return a, b, -1
    wp = w[pool] / w[pool].sum()
    mean = float(wp @ c[pool])
    spread = w[pool] * (c[pool] - mean) ** 2
    return a, b, pool[int(np.argmax(spread))]


def test_roles_match_a_direct_computation_on_random_groups():
    rng = np.random.default_rng(7)
    for _ in range(300):
        size = int(rng.integers(2, 9))
        c = rng.normal(size=size) * 10.0 ** rng.integers(-3, 3)
        w = rng.random(size)
        w /= w.sum()
        roles = conditioning.choose_roles(Categories(c, w, 10, 0.0))
        assert (roles.a, roles.b, roles.main) == _roles_direct(c, w)


def test_memo_never_serves_other_inputs():
    """Groups that differ only in w (or in one bit of c) get their own roles, in either order,
    and a caller's later change of its arrays does not reach a memoised result."""
    conditioning._roles.cache_clear()
    c = np.array([2.0, -1.0, 0.5, -0.2, 0.1])
    w1 = np.array([0.1, 0.2, 0.4, 0.2, 0.1])
    w2 = np.array([0.1, 0.2, 0.1, 0.2, 0.4])      # moves the main pool category
    r1 = conditioning.choose_roles(Categories(c, w1, 5, 0.0))
    r2 = conditioning.choose_roles(Categories(c, w2, 5, 0.0))
    assert (r1.a, r1.b, r1.main) == _roles_direct(c, w1)
    assert (r2.a, r2.b, r2.main) == _roles_direct(c, w2)
    assert r1.main != r2.main
    c_next = c.copy()
    c_next[2] = np.nextafter(c[2], 0.0)
    c_next[4] = 3.0                                # now the largest positive w c^2
    r3 = conditioning.choose_roles(Categories(c_next, w1, 5, 0.0))
    assert (r3.a, r3.b, r3.main) == _roles_direct(c_next, w1) and r3.a != r1.a
    w_mut = w1.copy()
    cat = Categories(c, w_mut, 5, 0.0)
    assert conditioning.choose_roles(cat) == r1
    w_mut[:] = w2                                  # the same object, other contents
    assert conditioning.choose_roles(cat) == r2


@pytest.mark.parametrize("lo, hi", [(-12.3, 5.7), (0.0, 1e-9), (3.0, 3.0), (-1e6, 2e6),
                                    (1.0 / 3.0, 2.0 / 3.0)])
def test_grid_is_linspace_bit_for_bit(lo, hi):
    assert np.array_equal(common._grid(lo, hi), np.linspace(lo, hi, common.MIN_GRID))


def test_grid_is_linspace_on_random_ends():
    rng = np.random.default_rng(3)
    for _ in range(2000):
        lo = rng.normal() * 10.0 ** rng.integers(-8, 8)
        hi = lo + abs(rng.normal()) * 10.0 ** rng.integers(-12, 8)
        assert np.array_equal(common._grid(lo, hi), np.linspace(lo, hi, common.MIN_GRID))


def test_log_sum_exp_against_scipy_and_its_edges():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(65, 4)) * 30.0
    b = rng.random(4)
    np.testing.assert_allclose(common.log_sum_exp(x, b), logsumexp(x, axis=-1, b=b),
                               rtol=1e-13)
    one = rng.normal(size=4)
    assert np.ndim(common.log_sum_exp(one, b)) == 0
    with np.errstate(all="ignore"):
        edge = np.array([[np.inf, 0.0, 1.0, 2.0], [-np.inf] * 4, [1e308, 1e308, 0.0, 0.0],
                         [np.nan, 0.0, 0.0, 0.0]])
        out = common.log_sum_exp(edge, np.ones(4))
    assert out[0] == np.inf and out[1] == -np.inf and out[3] == np.inf
    assert out[2] == pytest.approx(1e308 + np.log(2.0))
