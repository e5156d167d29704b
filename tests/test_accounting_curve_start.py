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
    ours = cv.integer_power(f.copy(), times, overwrite=True)
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
    from shufflesim.protocols.accounting.aggregate_parts import bin_edges
    rng = np.random.default_rng(5)
    N = rng.integers(5, 4000, 300).astype(float)
    p = 0.37
    lo, hi = en.window(N, p, 1e-12)
    blo, bhi = bin_edges(N, lo, hi, 7)   # neutral_bins' bins
    NN = np.broadcast_to(N[:, None], blo.shape)
    for shift in (0, 1):
        ours = en.row_interval_masses(blo - shift, bhi - shift, np.maximum(NN - shift, 0), p)
        plain = en.interval_mass(blo - shift, bhi - shift, np.maximum(NN - shift, 0), p)
        assert np.array_equal(ours, plain)
        assert (blo > bhi).any()                         # some empty intervals were covered


def _share_parts(model):
    (a1, a2), (b1, b2) = model.a, model.b
    return 0.25 * (a1 + a2 + b1 + b2), max(abs(a1 - a2), abs(b1 - b2)) / 2.0


@pytest.mark.parametrize("share", [0.5, 0.25, 0.12, 0.06, 0.03])
def test_share_event_mass_bound_holds_exactly(share):
    """M(|D| > s S) <= 2 (1 - (w1 + w2) (1 - e^{-s^2 / 2}))^n (rdp.outside_log_moment's
    charge for the share event, shrink = 1), against the exact multinomial sum."""
    from scipy.special import gammaln, logsumexp

    from shufflesim.protocols.accounting import pairs
    for eps0, n in ((0.5, 300), (2.0, 400), (4.0, 2000)):
        model = pairs.clone_model(eps0)
        w1, w2 = model.w
        h1, h2 = (v.ravel().astype(float) for v in np.meshgrid(np.arange(n + 1),
                                                               np.arange(n + 1), indexing="ij"))
        ok = (h1 + h2 <= n) & (np.abs(h1 - h2) > share * (h1 + h2))
        h1, h2 = h1[ok], h2[ok]
        log_m = (gammaln(n + 1) - gammaln(h1 + 1) - gammaln(h2 + 1) - gammaln(n - h1 - h2 + 1)
                 + h1 * math.log(w1) + h2 * math.log(w2) + (n - h1 - h2) * math.log(1 - w1 - w2))
        exact = float(logsumexp(log_m))
        charged = math.log(2.0) + n * math.log1p((w1 + w2) * math.expm1(-0.5 * share * share))
        assert exact <= charged


def test_share_event_denominators():
    """On |D| <= s S both denominators of a symmetric pair are at least
    (sbar - max(|alpha|, |beta|) s) S + r h3 (the Y_s of rdp.outside_log_moment)."""
    from shufflesim.protocols.accounting import pairs
    from shufflesim.protocols.randomizers import make_randomizer
    models = [pairs.clone_model(2.75),
              pairs.blanket_model(make_randomizer("krr", epsilon0=3.0, domain_size=10)),
              pairs.blanket_model(make_randomizer("krr", epsilon0=1.0, domain_size=3))]
    h1, h2, h3 = (v.ravel().astype(float) for v in np.meshgrid(np.arange(60), np.arange(60),
                                                               np.arange(0, 60, 7),
                                                               indexing="ij"))
    for model in models:
        (a1, a2), (b1, b2) = model.a, model.b
        sbar, tilt = _share_parts(model)
        A = a1 * h1 + a2 * h2 + model.r * h3
        B = b1 * h1 + b2 * h2 + model.r * h3
        for share in (1.0, 0.5, 0.12, 0.03):
            inside = np.abs(h1 - h2) <= share * (h1 + h2)
            floor = (sbar - tilt * share) * (h1 + h2) + model.r * h3
            assert np.all(np.minimum(A, B)[inside] >= floor[inside] * (1 - 1e-12) - 1e-12)


def test_outside_bound_stays_above_the_exact_outside_moments():
    """rdp.outside_log_moment against the exact E_P[e^{(alpha - 1) L}; O] of the clone pair at
    n = 1000 (O: every outcome outside the enumeration's windows, taken per S, a superset of
    the outcomes the aggregates leave out), at every order. (At such n the bound has slack;
    the share events' own claims are checked exactly above.)"""
    from scipy.special import gammaln, logsumexp

    from shufflesim.protocols.accounting import enumeration, pairs, rdp
    eps0, n = 0.7, 1000
    model = pairs.clone_model(eps0)
    agg = rdp._dominating_aggregates(model, n, rdp.DEFAULT_WEAK_RTOL, rounds=100)
    bound = rdp.outside_log_moment(model, n, agg.outside_mass, rdp.ORDERS, agg.shrink)
    (a1, a2), (b1, b2), (w1, w2) = model.a, model.b, model.w
    h1, h2 = (v.ravel().astype(float) for v in np.meshgrid(np.arange(n + 1), np.arange(n + 1),
                                                           indexing="ij"))
    ok = (h1 + h2 <= n) & (h1 + h2 > 0)
    h1, h2 = h1[ok], h2[ok]
    S = h1 + h2
    s_lo, s_hi = (int(v[0]) for v in enumeration.window(np.array([n]), 2 * w1, 1e-15))
    lo, hi = enumeration.window(S, 0.5, 1e-15)
    out = (S < s_lo) | (S > s_hi) | (h1 < lo) | (h1 > hi)
    log_m = (gammaln(n + 1) - gammaln(h1 + 1) - gammaln(h2 + 1) - gammaln(n - S + 1)
             + h1 * math.log(w1) + h2 * math.log(w2) + (n - S) * math.log(model.w_null))[out]
    A, B = (a1 * h1 + a2 * h2)[out], (b1 * h1 + b2 * h2)[out]
    exact = np.array([max(logsumexp(log_m + np.log(X / n) + (order - 1) * np.log(X / Y))
                          for X, Y in ((A, B), (B, A))) for order in rdp.ORDERS])
    assert np.all(bound >= exact)
