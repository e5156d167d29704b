"""The certified FFT convolution (protocols/bounds/numerical/certified_fft.py) and its use by
brr-exact at large n: the stated 2-norm error bound holds against the direct sum, and the
FFT path's bracket of D(eps) contains the direct path's."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from shufflesim.protocols.bounds.numerical import brr_exact as be
from shufflesim.protocols.bounds.numerical.certified_fft import fft_convolve, fft_error_bound


def _cases(rng):
    yield rng.random(300), rng.random(700)
    yield (binom.pmf(np.arange(3001), 3000, 0.3), binom.pmf(np.arange(5001), 5000, 0.95))
    spiky_x, spiky_y = np.exp(-700 * rng.random(2000)), np.exp(-700 * rng.random(900))
    spiky_x[0] = 1.0
    yield spiky_x, spiky_y
    yield np.array([1.0]), rng.random(50)


def test_error_bound_holds_against_the_direct_sum():
    rng = np.random.default_rng(7)
    for x, y in _cases(rng):
        z, bound = fft_convolve(x, y)
        exact = np.convolve(x, y)          # non-negative terms: relative error <= len * u
        assert z.shape == exact.shape and (z >= 0).all()
        assert bound == fft_error_bound(x, y)
        observed = float(np.linalg.norm(z - exact))
        slack = len(x) * np.finfo(float).eps * float(np.linalg.norm(exact))
        assert observed <= bound + slack
        assert bound <= 1e-11 * max(1.0, float(np.sum(x) * np.sum(y)))  # and it is small


@pytest.mark.parametrize("ones,zeros,uniform", [(3000, 4000, 0), (2000, 6000, 900)])
@pytest.mark.parametrize("epsilon", [0.05, 0.2])
def test_brr_pair_bracket_through_the_fft_contains_the_direct_one(monkeypatch, ones, zeros,
                                                                   uniform, epsilon):
    be._pair_pmf.cache_clear()
    direct = be.pair_delta(epsilon, 1.0, ones, zeros, uniform)
    monkeypatch.setattr(be, "FFT_MIN_WORK", 0)
    be._pair_pmf.cache_clear()
    via_fft = be.pair_delta(epsilon, 1.0, ones, zeros, uniform, budget=1.0)
    assert be._pair_pmf(ones, zeros, 1.0, uniform, 1.0).abs2 > 0      # the FFT was used
    be._pair_pmf.cache_clear()
    assert via_fft.upper >= direct.lower and via_fft.lower <= direct.upper
    assert via_fft.upper >= direct.upper * (1 - 1e-8)
    # the FFT's absolute slack (sqrt(window) x its 2-norm bound) is ~1e-12 here
    assert via_fft.upper - direct.upper <= 1e-6 * direct.upper + 1e-11


def test_no_budget_means_no_fft(monkeypatch):
    monkeypatch.setattr(be, "FFT_MIN_WORK", 0)
    be._pair_pmf.cache_clear()
    assert be._pair_pmf(500, 700, 1.0, 0, 0.0).abs2 == 0.0
    be._pair_pmf.cache_clear()
