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
