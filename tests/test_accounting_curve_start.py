"""convolution.py's shortcuts (issue 32): the spectrum's power by repeated squaring, and the
hockey-stick curve computed from the entry _curve_start on (with its fallback to the whole
grid); simulator/calls/heap.py's malloc thresholds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from shufflesim.protocols.accounting import convolution as cv
from shufflesim.simulator.calls import heap


def _piece(size: int = 3000, repeat: int = 400) -> tuple[cv.Piece, float]:
    """A round PLD of a Gaussian-like shape (mean loss above 0, as a real PLD's)."""
    interval = 1e-3
    j = np.arange(size)
    probs = np.exp(-0.5 * ((j - 0.5 * size) / (0.08 * size)) ** 2)
    probs /= probs.sum() * (1 + 1e-9)
    return cv.Piece(-size // 2 + 2, probs, 0.0, repeat), interval


@pytest.mark.parametrize("times", [1, 2, 7, 100, 1000])
def test_power_by_squaring_matches_numpy(times):
    f = np.fft.rfft(_piece()[0].probs, 1 << 14)
    ours = cv._power(f.copy(), times)
    np.testing.assert_allclose(ours, f ** times, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("side", ["upper", "lower"])
def test_curve_from_its_start_equals_the_whole_curve(side, monkeypatch):
    piece, interval = _piece()
    composed = cv.compose([piece], interval, side)
    assert composed.probs.size >= 1 << 16            # large enough for a start > 0
    start = cv._curve_start(composed, 1e-6)
    assert 0 < start < composed.probs.size
    fast = cv.epsilon_for_delta(composed, 1e-6)
    monkeypatch.setattr(cv, "_curve_start", lambda c, d: 0)
    whole = cv.epsilon_for_delta(composed, 1e-6)
    assert math.isclose(fast, whole, rel_tol=1e-10)
    if side == "lower":
        assert fast <= whole * (1 + 1e-12)


@pytest.mark.parametrize("side", ["upper", "lower"])
def test_a_start_above_the_crossing_falls_back_to_the_whole_curve(side, monkeypatch):
    piece, interval = _piece()
    composed = cv.compose([piece], interval, side)
    whole_start = cv._curve_start
    monkeypatch.setattr(cv, "_curve_start", lambda c, d: 0)
    whole = cv.epsilon_for_delta(composed, 1e-6)
    # a start past the crossing (its first entry is already below delta): the whole grid
    crossing = int(round(whole / interval)) - composed.lower_index
    monkeypatch.setattr(cv, "_curve_start", lambda c, d: crossing + 50)
    assert cv.epsilon_for_delta(composed, 1e-6) == whole
    assert whole_start(composed, 1e-6) < crossing


def test_heap_thresholds_are_set_once():
    first = heap.reuse_freed_memory()
    assert isinstance(first, bool)
    assert heap.reuse_freed_memory() is first


def test_row_interval_masses_equal_interval_mass_bitwise():
    """enumeration.row_interval_masses shares the binomial tails of neighbouring intervals;
    its values must be interval_mass's exactly (contiguous rows, empty intervals, both sides
    of the mean, the two end intervals)."""
    from shufflesim.protocols.accounting import enumeration as en
    rng = np.random.default_rng(5)
    N = rng.integers(5, 4000, 300).astype(float)
    p = 0.37
    lo, hi = en.window(N, p, 1e-12)
    inner = 7
    width = np.ceil((hi - lo + 1) / inner)
    starts = lo[:, None] + width[:, None] * np.arange(inner)[None, :]
    ends = np.minimum(starts + width[:, None] - 1, hi[:, None])
    blo = np.concatenate([np.zeros((N.size, 1)), starts, hi[:, None] + 1], axis=1)
    bhi = np.concatenate([lo[:, None] - 1, ends, N[:, None]], axis=1)
    NN = np.broadcast_to(N[:, None], blo.shape)
    for shift in (0, 1):
        ours = en.row_interval_masses(blo - shift, bhi - shift, np.maximum(NN - shift, 0), p)
        plain = en.interval_mass(blo - shift, bhi - shift, np.maximum(NN - shift, 0), p)
        assert np.array_equal(ours, plain)
        assert (blo > bhi).any()                         # some empty intervals were covered
