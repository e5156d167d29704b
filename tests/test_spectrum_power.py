"""spectrum_power.power_or_zero (issue 32, session 17): the n-th power of a spectrum with the
entries that would fall below the FFT's flush level skipped. Those entries are exactly the ones
binary powering leaves below the floor, and engine/fft.py's bracket is unchanged bit for bit."""

import numpy as np
import pytest

from shufflesim.protocols.bounds.engine import fft as F
from shufflesim.protocols.bounds.engine import spectrum_power as sp
from shufflesim.protocols.bounds.engine.common import Categories


def _spectrum(length=1 << 14, seed=3):
    rng = np.random.default_rng(seed)
    arr = np.zeros(length)
    arr[rng.integers(0, 40, size=6)] += rng.random(6)
    return np.fft.rfft(arr / arr.sum())


@pytest.mark.parametrize("n", [0, 1, 7, 300, 20000])
def test_kept_entries_are_the_power_and_skipped_ones_are_below_the_floor(n):
    z = _spectrum()
    floor = 1e-200
    full = sp.integer_power(z, n)
    got = sp.power_or_zero(z, n, floor)
    kept = got != 0
    assert np.array_equal(got[kept], full[kept])
    assert np.all(np.abs(full[~kept]) < floor * np.exp(-1.9))
    if n >= 20000:
        assert 0 < kept.sum() < z.size // 2       # it does skip most of a long spectrum


def test_growth_only_keeps_more():
    z = _spectrum()
    a = sp.power_or_zero(z, 300, 1e-200) != 0
    b = sp.power_or_zero(z, 300, 1e-200, growth=50.0) != 0
    assert np.all(b[a]) and b.sum() > a.sum()


@pytest.mark.parametrize("n", [5000, 20000])
def test_fft_bracket_is_unchanged(monkeypatch, n):
    c = np.array([-64.07, -34.27, -1.1498, 0.0, 29.78])
    w = np.array([0.0168, 0.0147, 0.0626, 0.85, 0.045])
    cats = [Categories(c, w / w.sum(), n, 0.0),
            Categories(np.array([-5.0, 40.0]), np.array([0.5, 0.5]), 7, 0.0)]
    kept = []

    def spy(z, k, floor, growth=0.0):
        out = sp.power_or_zero(z, k, floor, growth)
        kept.append((np.count_nonzero(out), z.size))
        return out
    monkeypatch.setattr(F, "power_or_zero", spy)
    new = F.fft_bounds(cats, 1e-3)
    assert new[0] > 0 and any(k < size // 4 for k, size in kept)   # most entries skipped
    monkeypatch.setattr(F, "power_or_zero", lambda z, k, floor, growth=0.0: sp.integer_power(z, k))
    assert F.fft_bounds(cats, 1e-3) == new
