"""protocols.accounting.lower_blocks: dominated block pairs of the 000 Thm 14 pairs with two
informative groups of unequal weights, for lower bounds (issue 32).

Checked against the cell enumeration (enumeration.cell_aggregates, the pair itself): the
composed optimistic eps is the same where every block holds one S, never above it (up to
float noise, 1e-9), and within 1e-4 relative below it with blocks; the masses are the pair's
(totals 1 up to the tails).
"""

from __future__ import annotations

import numpy as np
import pytest

from shufflesim.protocols.accounting import convolution as cv
from shufflesim.protocols.accounting import enumeration, lower_blocks, pairs
from shufflesim.protocols.accounting.pld import _Accumulator, _widen, grid_interval
from shufflesim.protocols.randomizers import make_randomizer


def _eps(agg, model, n, rounds, direction):
    interval = grid_interval([(model, n)], "lower", rounds)
    acc = _Accumulator()
    mass, ell = (agg.p0, agg.ell) if direction == 0 else (agg.p1, -agg.ell)
    acc.add(np.floor(_widen(ell, False) / interval).astype(np.int64), mass)
    piece = cv.Piece(acc.low, acc.values, 0.0, rounds)
    return cv.epsilon_for_delta(cv.compose([piece], interval, "lower"), 1e-6)


@pytest.mark.parametrize(("n", "rounds", "rel"), [(3000, 10, 1e-9), (100_000, 100, 1e-4)])
def test_matches_the_cell_enumeration_from_below(n, rounds, rel):
    r = make_randomizer("krr", epsilon0=1.0, domain_size=10)
    model = pairs.exact_models(r)[1]             # the triple (0, 1, 1): unequal weights
    assert lower_blocks.applies(model) and model.w[0] != model.w[1]
    new = lower_blocks.lower_block_aggregates(model, n, tail=1e-15)
    old = enumeration.cell_aggregates(model, n, tail=1e-15, weak_rtol=0.002)
    for agg in (new, old):
        assert abs(agg.p0.sum() - 1) < 1e-9 and abs(agg.p1.sum() - 1) < 1e-9
    for direction in (0, 1):
        e_new, e_old = _eps(new, model, n, rounds, direction), _eps(old, model, n, rounds,
                                                                     direction)
        assert e_new <= e_old * (1 + 1e-9)            # float noise only
        assert e_new == pytest.approx(e_old, rel=rel)
