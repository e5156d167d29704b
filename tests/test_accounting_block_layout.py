"""protocols.accounting.block_layout: blocks of S of width ~ pi^(-1/2) (issue 32).

The layout: contiguous blocks covering the window, at most the budget, narrow where the law
of S has its mass and at most WIDEST times wider in the tails. Any layout gives a valid pair,
so the composed values are checked on both sides against the pair with one S per block (the
pair itself): a dominating block pair (upper) is never below it, a dominated one (lower)
never above it, and with the default budgets both are within 1e-4 of it (at n = 1e5 the
default budgets make blocks; at n = 2e4 every S is its own block).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom as sbinom

from shufflesim.protocols.accounting import blocks, convolution, lower_grid, pairs, pld
from shufflesim.protocols.accounting.block_layout import WIDEST, block_ends, block_starts
from shufflesim.protocols.randomizers import make_randomizer


def test_blocks_cover_the_window_and_follow_the_law():
    S = np.arange(30_000, 40_001, dtype=float)
    pi = sbinom.pmf(S, 100_000, 0.35)
    starts = block_starts(pi, 300)
    ends = block_ends(starts, S.size)
    assert starts[0] == 0 and ends[-1] == S.size - 1
    assert np.all(np.diff(starts) > 0) and np.all(ends[:-1] + 1 == starts[1:])
    assert 280 <= starts.size <= 300
    width = ends - starts + 1
    mode = int(np.argmax(pi))
    middle = width[np.searchsorted(starts, mode, side="right") - 1]
    # the narrowest blocks hold the mode; the tails are wider, by at most about WIDEST
    assert middle <= width.min() + 1
    assert width.max() >= 5 * middle
    assert width.max() <= WIDEST * (middle + 1) + 1


def test_a_budget_of_every_s_gives_single_s_blocks():
    pi = sbinom.pmf(np.arange(100.0), 200, 0.5)
    assert np.array_equal(block_starts(pi, 100), np.arange(100))
    assert np.array_equal(block_starts(pi, 10**6), np.arange(100))
    assert np.array_equal(block_starts(np.zeros(5), 2), np.array([0, 3]))


def _eps(model, n, rounds, side, entries):
    agg = blocks.block_aggregates(model, n, side, tail=1e-15, max_entries=entries)
    interval = pld.grid_interval([(model, n)], side, rounds)
    if side == "upper":
        low, values = pld.upper_split(agg, interval, 0)
        piece = convolution.Piece(low, values, agg.outside0, rounds)
    else:
        low, values = lower_grid.balanced_floor(agg.p0, agg.p1, agg.ell, interval, 0.0)
        piece = convolution.Piece(low, values, 0.0, rounds)
    return convolution.epsilon_for_delta(convolution.compose([piece], interval, side), 1e-6)


def _deltas(model, n, side, entries, eps):
    """The hockey-stick divergence of the enumerated outcomes at each eps (no grid)."""
    agg = blocks.block_aggregates(model, n, side, tail=1e-15, max_entries=entries)
    return np.array([np.maximum(agg.p0 - np.exp(e) * agg.p1, 0.0).sum() for e in eps])


@pytest.mark.parametrize(("eps0", "n", "rounds"), [(1.0, 100_000, 30), (0.5, 20_000, 3)])
def test_block_pairs_bracket_the_pair_itself(eps0, n, rounds):
    """Clone pair (upper: dominating blocks) and the k-RR 000 Thm 14 pair (x0, x1, x2)
    (lower: dominated blocks) against one S per block: the hockey-stick curves are ordered
    (post-processing), and the composed values agree within 1e-4 with the default budget
    (each composed value has its own grid, so they are not ordered to the last digits)."""
    r = make_randomizer("krr", epsilon0=eps0, domain_size=10)
    cases = [(pairs.clone_model(eps0), "upper"), (pairs.exact_models(r)[0], "lower")]
    eps = np.linspace(0.0, 0.1, 11)
    for model, side in cases:
        assert blocks.block_pairs_apply(model, side)
        curves = {e: _deltas(model, n, side, e, eps) for e in (1 << 26, None, 1 << 13)}
        exact = curves[1 << 26]
        for entries in (None, 1 << 13):
            if side == "upper":
                assert np.all(curves[entries] >= exact - 1e-13)
            else:
                assert np.all(curves[entries] <= exact + 1e-13)
        exact, default, coarse = (_eps(model, n, rounds, side, e) for e in (1 << 26, None,
                                                                            1 << 13))
        assert default == pytest.approx(exact, rel=1e-4)
        assert abs(coarse - exact) > abs(default - exact)      # the budget matters
