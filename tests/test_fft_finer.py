"""fft.fft_bounds: a too-wide randomized-rounding bracket is first narrowed by a finer
randomized rounding (one convolution) instead of the plain rounding's two at up to L_FEW points
(issue 32: at exact-lower's subset (6, 2), eps0 = 4, n = 1000 the coarse call cost 6x the fine
one). Every bracket must still hold the truth."""

import numpy as np
import pytest

from shufflesim.protocols.bounds.engine import fft as F
from shufflesim.protocols.bounds.engine.common import Categories
from shufflesim.protocols.bounds.engine.enumerate import enumeration_bounds

# G's law at the named point (subset (6, 2), eps0 = 4, eps ~ 1.517), to 9 digits: any law does
C = np.array([-247.096492, -193.498342, -4.52573012, -3.54404576, -0.0649114624, 0.916772899,
              50.0541043])
W = np.array([0.01060105, 0.00353368, 0.19293263, 0.01060105, 0.57879789, 0.19293263,
              0.01060105])
W = W / W.sum()
COARSE, FINE = 5e-3, 1.67e-4


@pytest.fixture
def passes(monkeypatch):
    seen = []
    spread, rounded = F._spread_bounds, F._rounded_bounds

    def spy(kind, fun):
        def inner(cats, h, length, scale, k_window):
            seen.append((kind, length))
            return fun(cats, h, length, scale, k_window)
        return inner
    monkeypatch.setattr(F, "_spread_bounds", spy("spread", spread))
    monkeypatch.setattr(F, "_rounded_bounds", spy("rounded", rounded))
    return seen


@pytest.mark.parametrize("n", [20, 40])
@pytest.mark.parametrize("rtol", [COARSE, FINE])
def test_finer_pass_brackets_the_enumeration(passes, n, rtol):
    cats = [Categories(C, W, n, 0.0)]
    e_lo, e_hi = enumeration_bounds(cats)
    lo, hi = F.fft_bounds(cats, rtol)
    assert lo <= e_hi and e_lo <= hi
    assert [kind for kind, _ in passes] == ["spread", "spread"]   # the finer pass ran
    assert passes[1][1] > passes[0][1]
    assert hi - lo <= rtol * hi


def test_coarse_call_skips_the_plain_rounding_and_meets_rtol(passes):
    cats = [Categories(C, W, 1000, 0.0)]
    lo, hi = F.fft_bounds(cats, COARSE)
    assert [kind for kind, _ in passes] == ["spread", "spread"]
    assert passes[1][1] <= F.L_FEW
    assert 0 < hi - lo <= COARSE * hi
    # the fine call's bracket (a valid one too) must meet it
    f_lo, f_hi = F.fft_bounds(cats, FINE)
    assert f_lo <= hi and lo <= f_hi and f_hi - f_lo < hi - lo


def test_finer_length():
    assert F._finer_spread_length(1000, 0.02, 0.005, 10**6) >= 2000   # sqrt(0.02 / 0.0025) = 2.8
    assert F._finer_spread_length(1000, 0.02, 0.005, 1500) == 1500      # capped at the limit
    assert F._finer_spread_length(1000, 0.02, 0.005, 900) is None       # no longer grid allowed
    assert F._finer_spread_length(1000, 0.001, 0.005, 10**6) is None    # no finer grid needed
    for gap in (0.0, float("nan"), float("inf")):
        assert F._finer_spread_length(1000, gap, 0.005, 10**6) is None
