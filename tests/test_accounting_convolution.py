"""protocols.accounting.convolution: composition of discretised PLDs by one FFT (issue 32).

Checked against an exact composition by direct convolution (numpy.convolve of the pmfs, the
hockey-stick divergence summed term by term, eps by bisection): the upper eps is never below
the exact one, the lower eps never above it, and both are within 1e-6 relative; and against
dp_accounting's self-composition of a round's pessimistic PLD.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from shufflesim.protocols.accounting import convolution as cv


def _exact(pieces, interval):
    """(lower index, pmf, infinity) of the composition by direct convolution."""
    pmf, low, keep = np.ones(1), 0, 1.0
    for p in pieces:
        for _ in range(p.repeat):
            pmf = np.convolve(pmf, p.probs)
            low += p.lower_index
            keep *= 1.0 - p.infinity
    return low, pmf, 1.0 - keep


def _exact_delta(low, pmf, inf, interval, eps):
    loss = (low + np.arange(pmf.size)) * interval
    above = loss > eps
    return inf + float(np.dot(pmf[above], -np.expm1(eps - loss[above])))


def _exact_eps(low, pmf, inf, interval, delta):
    lo, hi = 0.0, (low + pmf.size) * interval + 1.0
    if _exact_delta(low, pmf, inf, interval, 0.0) <= delta:
        return 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _exact_delta(low, pmf, inf, interval, mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def _random_piece(rng, size, lower, infinity, repeat):
    x = np.linspace(-3, 3, size)
    probs = np.exp(-0.5 * (x - 0.3) ** 2) * rng.uniform(0.5, 1.5, size)
    probs *= (1.0 - infinity) / probs.sum()
    return cv.Piece(lower, probs, infinity, repeat)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_composition_brackets_the_exact_value(seed):
    rng = np.random.default_rng(seed)
    interval = 0.01
    pieces = [_random_piece(rng, 41, -15, 1e-9, 3), _random_piece(rng, 25, -5, 0.0, 2)]
    low, pmf, inf = _exact(pieces, interval)
    for delta in (1e-2, 1e-4, 1e-6):
        truth = _exact_eps(low, pmf, inf, interval, delta)
        upper = cv.epsilon_for_delta(cv.compose(pieces, interval, "upper"), delta)
        lower = cv.epsilon_for_delta(cv.compose(pieces, interval, "lower"), delta)
        assert lower <= truth <= upper
        assert upper - truth <= 1e-6 * max(truth, 1e-3)
        assert truth - lower <= 1e-6 * max(truth, 1e-3)


def test_one_round_needs_no_fft_and_infinity_decides():
    piece = cv.Piece(-2, np.array([0.2, 0.3, 0.3, 0.2 - 1e-3]), 1e-3, 1)
    composed = cv.compose([piece], 0.1, "upper")
    assert composed.slack == 0.0 and composed.circle == 4
    assert math.isinf(cv.epsilon_for_delta(composed, 5e-4))    # below the mass at +inf
    many = cv.compose([cv.Piece(-2, piece.probs, 1e-3, 50)], 0.1, "upper")
    assert many.infinity >= 1 - (1 - 1e-3) ** 50


def test_long_range_and_circle_fold():
    """A round whose pmf is longer than the composed range needs (folded onto the circle), over
    many rounds: the Chernoff range holds the composed law."""
    rng = np.random.default_rng(5)
    piece = _random_piece(rng, 301, -150, 0.0, 40)
    interval = 0.002
    low, pmf, inf = _exact([piece], interval)
    composed = cv.compose([piece], interval, "upper")
    assert composed.probs.size < pmf.size
    truth = _exact_eps(low, pmf, inf, interval, 1e-6)
    assert truth <= cv.epsilon_for_delta(composed, 1e-6) <= truth * (1 + 1e-5)


def test_agrees_with_dp_accounting_on_a_round_pld():
    pldm = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    from shufflesim.protocols.accounting import pairs
    from shufflesim.protocols.accounting.pld import cached_round_plds, grid_interval, power
    from shufflesim.protocols.randomizers import make_randomizer

    model = pairs.blanket_model(make_randomizer("krr", epsilon0=1.0, domain_size=10))
    interval = grid_interval([(model, 10000)], "upper", 100)
    (pld,) = cached_round_plds(model, 10000, interval, "upper", 1e-15, 0.002)
    ours = cv.epsilon_for_delta(
        cv.compose([cv.Piece(pld.lower_index, pld.probs, pld.infinity, 100)], interval,
                   "upper"), 1e-6)
    theirs = power(pldm.PrivacyLossDistribution.create_from_rounded_probability(
        pld.rounded_pmf(), pld.infinity, interval, True), 100, True).get_epsilon_for_delta(1e-6)
    assert ours == pytest.approx(theirs, rel=1e-4)
