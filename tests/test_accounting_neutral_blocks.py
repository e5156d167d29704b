"""protocols.accounting.neutral_blocks: the dominating block pair of a symmetric pair with a
neutral group (the k-RR blanket pair), O(blocks x D) instead of O(n) (issue 32).

Checked against the former enumeration (enumeration.symmetric_aggregates, the pair itself with
(S, h3) aggregated): the composed upper eps agrees to 1e-4 relative (the blocks' first-order
error) and, where every block holds one S, to 1e-5 (the cells are aggregated differently);
the masses are the pair's own (totals 1 up to the windows' tails); and the composed upper
bound stays above the composed exact lower bound.
"""

from __future__ import annotations

import numpy as np
import pytest

from shufflesim.protocols.accounting import convolution as cv
from shufflesim.protocols.accounting import enumeration, neutral_blocks, pairs
from shufflesim.protocols.accounting.compose import Round, compose_rounds
from shufflesim.protocols.accounting.pld import _Accumulator, _upper_direction, grid_interval
from shufflesim.protocols.randomizers import make_randomizer


def _eps(agg, model, n, rounds):
    interval = grid_interval([(model, n)], "upper", rounds)
    acc = _Accumulator()
    _upper_direction(acc, agg.p0, agg.ell, agg.lo, agg.hi, interval)
    piece = cv.Piece(acc.low, acc.values, agg.outside0, rounds)
    return cv.epsilon_for_delta(cv.compose([piece], interval, "upper"), 1e-6)


@pytest.mark.parametrize(("k", "eps0", "n", "rounds"), [(10, 1.0, 100_000, 100),
                                                        (10, 0.5, 5000, 10), (10, 4.0, 2000, 1)])
def test_agrees_with_the_former_enumeration(k, eps0, n, rounds):
    model = pairs.blanket_model(make_randomizer("krr", epsilon0=eps0, domain_size=k))
    assert neutral_blocks.applies(model)
    new = neutral_blocks.neutral_block_aggregates(model, n, tail=1e-15, weak_rtol=0.002)
    old = enumeration.symmetric_aggregates(model, n, tail=1e-15, weak_rtol=0.002)
    for agg in (new, old):
        assert abs(agg.p0.sum() - 1) < 1e-9 and abs(agg.p1.sum() - 1) < 1e-9
        assert np.all(agg.lo <= agg.ell) and np.all(agg.ell <= agg.hi)
    e_new, e_old = _eps(new, model, n, rounds), _eps(old, model, n, rounds)
    assert e_new == pytest.approx(e_old, rel=1e-4)


def test_single_s_blocks_are_the_pair_itself():
    model = pairs.blanket_model(make_randomizer("krr", epsilon0=1.0, domain_size=10))
    n = 20_000
    exact = neutral_blocks.neutral_block_aggregates(model, n, tail=1e-15, weak_rtol=0.002,
                                                    max_entries=1 << 24)
    old = enumeration.symmetric_aggregates(model, n, tail=1e-15, weak_rtol=0.002)
    assert _eps(exact, model, n, 30) == pytest.approx(_eps(old, model, n, 30), rel=1e-5)


def test_composed_upper_stays_above_exact_lower():
    r = make_randomizer("krr", epsilon0=1.0, domain_size=10)
    for n, t in ((100_000, 10), (1_000_000, 100)):
        upper = compose_rounds([Round(r, n, t)], 1e-6, "optimal-blanket").epsilon
        lower = compose_rounds([Round(r, n, t)], 1e-6, "exact-lower").epsilon
        assert lower <= upper <= lower * 1.01


@pytest.mark.parametrize(("k", "eps0", "n", "tail"), [(3, 1.0, 400, 1e-15), (10, 4.0, 300, 1e-60),
                                                      (10, 0.5, 2000, 1e-15)])
def test_neutral_bins_masses_and_partial_means_are_exact(k, eps0, n, tail):
    """enumeration.neutral_bins: P[h3 in bin | N] and E[h3; bin | N] against the sums of the
    binomial pmf over each bin (the means come from the masses and two pmfs, issue 32)."""
    from scipy.special import gammaln

    model = pairs.blanket_model(make_randomizer("krr", epsilon0=eps0, domain_size=k))
    wsum = model.w_neutral + model.w_null
    rho = model.w_neutral / wsum
    n_min, n_max = n // 3, n - n // 4
    bins = enumeration.neutral_bins(model, n, n_min, n_max, tail, 0.002)
    assert bins.mass.shape[1] >= 4
    for N in range(n_min, n_max + 1, 7):
        row = N - n_min
        h = np.arange(N + 1, dtype=float)
        log_pmf = (gammaln(N + 1) - gammaln(h + 1) - gammaln(N - h + 1) + h * np.log(rho)
                   + (N - h) * np.log1p(-rho))
        pmf = np.exp(log_pmf)
        for b in range(bins.mass.shape[1]):
            lo, hi = bins.lo[row, b], bins.hi[row, b]
            inside = (h >= lo) & (h <= hi)
            mass, mean = pmf[inside].sum(), (h * pmf)[inside].sum()
            if bins.mass[row, b] == 0.0 and lo == hi == 0.0:     # an empty bin
                assert bins.mean[row, b] == 0.0
                continue
            assert bins.mass[row, b] == pytest.approx(mass, rel=1e-9, abs=1e-300)
            assert bins.mean[row, b] == pytest.approx(mean, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize(("n_min", "n_max", "rho"), [(58_000, 60_000, 0.37), (300, 900, 0.2),
                                                     (10, 50, 0.6), (5, 5, 0.3)])
def test_sampled_windows_hold_every_rows_window(n_min, n_max, rho):
    """neutral_bins' windows come from every WINDOW_EVERY-th row (issue 32); each holds the
    row's own window and stays within {0 .. N}, at most a few values wider."""
    N = np.arange(n_min, n_max + 1, dtype=float)
    lo, hi = enumeration.window(N, rho, 1e-15)
    s_lo, s_hi = enumeration._sampled_window(N, rho, 1e-15)
    assert np.all(s_lo <= lo) and np.all(s_hi >= hi)
    assert np.all(s_lo >= 0) and np.all(s_hi <= N)
    every = enumeration.WINDOW_EVERY
    assert np.all(lo - s_lo <= every) and np.all(s_hi - hi <= every)
