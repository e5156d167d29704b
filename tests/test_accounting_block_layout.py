"""protocols.accounting.block_layout: blocks of S of width ~ pi^(-1/2) (issue 32).

The layout: contiguous blocks covering the window, at most the budget, narrow where the law
of S has its mass and at most WIDEST times wider in the tails. Any layout gives a valid pair,
so the composed values are checked on both sides against the pair with one S per block (the
pair itself): a dominating block pair (upper) is never below it, a dominated one (lower)
never above it, and with the default budgets both are within 1e-4 of it.
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
    assert width.max() >= 8 * middle
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


@pytest.mark.parametrize(("eps0", "n", "rounds"), [(1.0, 30_000, 30), (0.5, 20_000, 3)])
def test_block_pairs_bracket_the_pair_itself(eps0, n, rounds):
    """Clone pair (upper: dominating blocks) and the k-RR 000 Thm 14 pair (x0, x1, x2)
    (lower: dominated blocks) against one S per block."""
    r = make_randomizer("krr", epsilon0=eps0, domain_size=10)
    cases = [(pairs.clone_model(eps0), "upper"), (pairs.exact_models(r)[0], "lower")]
    for model, side in cases:
        assert blocks.block_pairs_apply(model, side)
        exact = _eps(model, n, rounds, side, 1 << 26)
        default = _eps(model, n, rounds, side, None)
        coarse = _eps(model, n, rounds, side, 1 << 13)
        for value in (default, coarse):
            if side == "upper":
                assert value >= exact * (1 - 1e-12)
            else:
                assert value <= exact * (1 + 1e-12)
        assert default == pytest.approx(exact, rel=1e-4)
        assert abs(coarse - exact) > abs(default - exact)      # the budget matters
