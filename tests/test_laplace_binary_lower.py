"""laplace_binary's proven lower bound (issue 31): `exact-lower`, 000 Thm 14 for
X0 = (0, x2, ..., x2) vs X1 = (1, x2, ..., x2), x2 in {0, 1}, with the Laplace density
discretized on its conservative (lower) side by the engine's log-linear builder.

It used to fail after the engine had its value: the Thm 5.1 post-processing (001) asked the
continuous output for its output groups. Checked here against

* a brute-force 2-D integral of the shuffled pair's densities at n = 2 (the divergence of the
  unordered pair {y1, y2} under X0 and X1, both directions), where Thm 14 is exact;
* data processing at n = 1e3: thresholding every report at 1/2 turns laplace_binary into binary
  RR with e^eps' = 2 e^{eps0/2} - 1, so that pair's exact divergence is at most laplace_binary's;
* the order exact-lower <= optimal-blanket (proven for laplace_binary: the pair (0, 1)) and
  <= 004 Lemma 5.8's Bennett bound.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from shufflesim.protocols.bounds import catalogue as cat
from shufflesim.protocols.bounds.numerical import optimal
from shufflesim.protocols.randomizers import make_randomizer


def _density(eps0: float, x: float, y: np.ndarray) -> np.ndarray:
    return eps0 / 2.0 * np.exp(-eps0 * np.abs(y - x))


def _brute_delta(eps0: float, x2: float, eps: float, reverse: bool, per_unit: int = 64,
                 half_width: int = 16) -> float:
    """D_{e^eps} of the shuffled pair at n = 2 by the midpoint rule on [-L, L + 1]^2, cells of
    side 1 / per_unit (the kinks 0 and 1 on cell edges; the mass outside is below
    2 e^{-eps0 L}): the symmetrised density of (y1, y2) is (p_x(a) p_x2(b) + p_x(b) p_x2(a)) / 2
    for the distinguished user at x. At eps0 = 2.5 it moves by 3e-5 from 64 to 128 per unit."""
    h = 1.0 / per_unit
    y = -half_width + h * (np.arange((2 * half_width + 1) * per_unit) + 0.5)
    a, b = y[:, None], y[None, :]
    g0 = _density(eps0, 0, a) * _density(eps0, x2, b) + _density(eps0, 0, b) * _density(eps0, x2, a)
    g1 = _density(eps0, 1, a) * _density(eps0, x2, b) + _density(eps0, 1, b) * _density(eps0, x2, a)
    if reverse:
        g0, g1 = g1, g0
    return float(0.5 * np.maximum(g0 - math.exp(eps) * g1, 0.0).sum() * h * h)


#: the distance between the discretized problem's delta and the continuous one at DEFAULT_CELLS
#: cells on these settings (measured 1.1e-4 at eps0 = 2.5; see the test)
CELLS_GAP = 2e-4


@pytest.mark.parametrize("eps0,x2,eps", [(1.0, 1, 0.3), (1.0, 0, 0.7), (2.5, 1, 1.75)])
def test_exact_lower_against_brute_force_at_n2(eps0, x2, eps):
    r = make_randomizer("laplace_binary", epsilon0=eps0)
    truth = max(_brute_delta(eps0, x2, eps, False), _brute_delta(eps0, x2, eps, True))
    lower = optimal.exact_lower_delta(r, 2, eps, triples=[(0, 1, x2)])
    stated = float(re.search(r"delta error <= ([0-9.e+-]+)", lower.note).group(1))
    # on its side (the midpoint rule's own error is below 1e-4 here)
    assert 0 < lower.delta <= truth + 1e-4
    # the stated error is the engine's bracket of the discretized problem (DEFAULT_CELLS cells, a
    # post-processing of the continuous output), not of the continuous truth: at eps0 = 2.5 that
    # bracket's upper end is 0.216015 at every engine rtol (1e-5 included), on 783fd21 as now,
    # while the midpoint truth is 0.216126. So the cells lose ~1.1e-4 there, and CELLS_GAP
    # allows for it (the former pass at +1e-4 relied on a looser coarse FFT bracket, 0.21614)
    assert truth <= lower.delta + stated + CELLS_GAP + 1e-4


@pytest.mark.parametrize("eps0", [1.0, 4.0])
def test_exact_lower_dominates_the_thresholded_report(eps0):
    """Data processing: reports thresholded at 1/2 are binary RR with
    e^eps' = (1 - q) / q, q = e^{-eps0/2} / 2, and the pair keeps its labels."""
    n = 1000
    r = make_randomizer("laplace_binary", epsilon0=eps0)
    binary = make_randomizer("brr", epsilon0=math.log(2 * math.exp(eps0 / 2) - 1))
    for eps in (0.02, 0.1):
        ours = optimal.exact_lower_delta(r, n, eps, triples=[(0, 1, 0)])
        thresholded = optimal.exact_lower_delta(binary, n, eps, triples=[(0, 1, 0)])
        assert ours.delta > 0
        assert thresholded.delta <= ours.delta * (1 + 1e-9)


@pytest.mark.parametrize("uppers", [
    ("blanket_bennett_laplace", "blanket_hoeffding_laplace"),
    pytest.param(("optimal-blanket",), marks=pytest.mark.slow),
])
def test_exact_lower_is_proven_and_below_the_upper_bounds(uppers):
    r = make_randomizer("laplace_binary", epsilon0=1.0)
    n, delta = 1000, 1e-6
    lower = cat.evaluate("exact-lower", r, n, delta)
    assert lower.ok, lower.error
    assert lower.result.status.value == "proven"
    assert 0 < lower.result.epsilon
    for upper in uppers:
        ev = cat.evaluate(upper, r, n, delta)
        assert ev.ok and ev.result.status.value == "proven"
        assert lower.result.epsilon <= ev.result.epsilon
