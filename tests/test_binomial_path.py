"""engine/binomial_path: binomial tails along consecutive rows from anchors and pmfs agree with
the direct tails within their stated error, which is about common.REL_SPECIAL relative; the
path is refused where its identities do not hold (issue 32, exact-lower at n = 1e9)."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from shufflesim.protocols.bounds.engine import binomial_path as bp
from shufflesim.protocols.bounds.engine import common
from shufflesim.protocols.distributions import binom


def _rows(t0, rho, slope, offset, rows=6000, cols=1):
    t = np.arange(t0, t0 + rows, dtype=float)[:, None] + np.zeros(cols)
    k = np.floor(slope * (t - t0) + t0 * rho + offset + 7.3 * np.arange(cols)) + 1.0
    return k, t


CASES = [
    (2e8, 0.5, 0.5000088, 7000.0, 1),      # 10-RR (0, 1, 2) at n = 1e9: k up by 0 or 1
    (2e8, 0.2689, 0.26894, 3e4, 1),        # far in the upper tail (z ~ 5)
    (5e6, 0.73, 0.74, -2000.0, 2),         # below the mean, two columns
    (3e4, 0.3, -0.6, 10.0, 1),             # k moving down by 0 or 1
    (2e4, 0.4, 1.0, -400.0, 3),            # k up by one every row
]


@pytest.mark.parametrize("t0, rho, slope, offset, cols", CASES)
def test_path_tails_match_the_direct_tails_within_the_stated_error(t0, rho, slope, offset,
                                                                      cols):
    k, t = _rows(t0, rho, slope, offset, cols=cols)
    assert bp.path_applies(k, t, rho)
    pk = binom.pmf(k - 1, t - 1, rho)
    tail, err = bp.tails_along_rows(k, t, rho, pk, common.binom_ge, common.REL_SPECIAL)
    direct = common.binom_ge(k, t, rho)
    # both are within REL_SPECIAL of the truth: they differ by at most the sum of the two
    assert np.all(np.abs(tail - direct) <= err + common.REL_SPECIAL * direct)
    # the stated error is about REL_SPECIAL relative (not a vacuous bound)
    floor = bp.STRIDE * bp.FLOOR                     # values below the normal range
    assert np.all(err <= 1.1 * common.REL_SPECIAL * tail + floor)
    # and in fact the two agree far closer (Boost's error is ~1e-11 here)
    assert np.all(np.abs(tail - direct) <= 1e-10 * direct + floor)


def test_path_tails_against_a_40_digit_sum():
    """A few rows of the n = 1e9 path against sum_j P[Bin(t, rho) = j] in 40 digits."""
    k, t = _rows(2e8, 0.2689, 0.26894, 3e4, rows=4200)
    pk = binom.pmf(k - 1, t - 1, 0.2689)
    tail, err = bp.tails_along_rows(k, t, 0.2689, pk, common.binom_ge, common.REL_SPECIAL)
    mpmath.mp.dps = 40
    r = mpmath.mpf(0.2689)
    for i in (1, 63, 4199):
        tt, kk = int(t[i, 0]), int(k[i, 0])
        p = mpmath.exp(mpmath.loggamma(tt + 1) - mpmath.loggamma(kk + 1)
                       - mpmath.loggamma(tt - kk + 1) + kk * mpmath.log(r)
                       + (tt - kk) * mpmath.log(1 - r))
        total, j = mpmath.mpf(0), kk
        while p > total * mpmath.mpf(10) ** -25:
            total += p
            p = p * (tt - j) / (j + 1) * r / (1 - r)
            j += 1
        assert abs(tail[i, 0] - total) <= err[i, 0]
        assert abs(tail[i, 0] - total) <= 1e-11 * total


def test_a_wrong_pmf_is_caught():
    """Negative control: pmfs 1e-6 too large move the rows between anchors beyond the error."""
    k, t = _rows(3e4, 0.3, -0.6, 10.0)
    pk = binom.pmf(k - 1, t - 1, 0.3) * (1 + 1e-6)
    tail, err = bp.tails_along_rows(k, t, 0.3, pk, common.binom_ge, common.REL_SPECIAL)
    direct = common.binom_ge(k, t, 0.3)
    assert np.any(np.abs(tail - direct) > err + common.REL_SPECIAL * direct)


def test_the_path_is_refused_where_its_identities_do_not_hold():
    k, t = _rows(1e6, 0.3, 0.3, 50.0)
    assert bp.path_applies(k, t, 0.3)
    assert not bp.path_applies(k[: bp.MIN_ROWS - 1], t[: bp.MIN_ROWS - 1], 0.3)
    gap = t.copy()
    gap[100:] += 1.0                                   # rows not consecutive
    assert not bp.path_applies(k, gap, 0.3)
    jump = k.copy()
    jump[200:] += 2.0                                  # k moves by two
    assert not bp.path_applies(jump, t, 0.3)
    zero = k.copy()
    zero[:1] = 0.0                                     # k = 0: tail 1 (no pmf identity)
    assert not bp.path_applies(zero, t, 0.3)
    beyond = k.copy()
    beyond[-1] = t[-1] + 1.0                           # k > t: tail 0
    assert not bp.path_applies(beyond, t, 0.3)
    assert not bp.path_applies(k + 0.5, t, 0.3)        # not integers
    assert not bp.path_applies(k, t, 1.0)


def test_leaf_values_with_and_without_the_path_agree():
    """common.leaf_with_slope on 6000 consecutive rows (path) and on the same rows split in two
    halves below MIN_ROWS (direct tails): the values agree within both stated errors."""
    t = np.arange(2e8, 2e8 + 6000.0)[:, None]
    v = -2.4e4 + 1e-5 * (t - 2e8)
    cb, d, rho = -1.7183617471196002, 3.4366141751464614, 0.5
    h, err, slope = common.leaf_with_slope(t, v, cb, d, rho)
    halves = [common.leaf_with_slope(t[s], v[s], cb, d, rho)
              for s in (slice(0, 3000), slice(3000, None))]
    h2 = np.concatenate([x[0] for x in halves])
    err2 = np.concatenate([x[1] for x in halves])
    assert np.all(np.abs(h - h2) <= err + err2)
    assert np.all(err <= 2 * err2)
    assert np.all((slope >= 0) & (slope <= 1))
