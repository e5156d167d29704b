"""The eps search's resolution stop with jagged estimates (issue 32, session 14):
protocols/bounds/engine/eps_search.py. A lower-side search without a guess over estimates whose
lower side jumps by up to ~2 % between neighbouring eps (as FFT brackets do) has no far point
with lower estimate <= delta / 2 (eps_max's lower estimate is 0): it used to see no slope and
crawl to its tolerance. Synthetic delta(eps) with a known crossing; certificates checked
against the true function."""

from __future__ import annotations

import math

import pytest

from shufflesim.protocols.bounds.engine import eps_search
from shufflesim.protocols.bounds.engine.common import Estimate
from shufflesim.protocols.bounds.engine.eps_search import epsilon_of_delta

DELTA = 1e-8
SLOPE = 10.6          # -d ln delta / d eps: delta(0) = 0.1, crossing near eps = 1.52
EPS_MAX = 4.0


def true_delta(eps: float) -> float:
    return 0.1 * math.exp(-SLOPE * eps)


CROSSING = math.log(0.1 / DELTA) / SLOPE


class Jagged:
    """lower = true (1 - 0.005 - 0.02 u(eps)) with u(eps) in [0, 1) pseudo-random at a scale
    of 1e-8 in eps, upper = true (1 + 0.01); at eps_max (lower 0, upper tiny) as the FFT
    engine returns there. Records the points evaluated."""

    def __init__(self):
        self.points: list[float] = []

    def __call__(self, eps: float) -> Estimate:
        self.points.append(eps)
        if eps >= EPS_MAX:
            return Estimate(1e-293, 0.0, 1e-293, "synthetic")
        t = true_delta(eps)
        u = (math.sin(eps * 1.0e8) * 43758.5453) % 1.0
        return Estimate(t * 1.01, t * (1 - 0.005 - 0.02 * u), t * 1.01, "synthetic")


def test_jagged_lower_side_stops_on_its_resolution():
    fn = Jagged()
    found = epsilon_of_delta(fn, DELTA, "lower", eps_max=EPS_MAX, rtol=1e-7,
                             resolution_stop=0.5, xtol=1e-15)
    # sound: the true crossing lies in the stated bracket, the value on the lower side
    assert found.lower <= CROSSING <= found.upper
    assert found.value == found.lower
    # resolved to what the estimates allow: their ~2.5 % lower width over the slope is
    # ~2.4e-3 in eps; the value is within that of the crossing, the bracket not much wider
    resolution = math.log(1.01 / 0.975) / SLOPE
    assert CROSSING - found.value <= resolution
    assert found.error <= 2 * resolution
    # ... and it stops there: the former search took 40+ evaluations crawling in steps of
    # ~1e-7 towards rtol = 1e-7 (the jagged lower estimate has no clean crossing)
    assert found.evaluations == len(fn.points)
    assert found.evaluations <= 15


def test_bracket_slope_ignores_pairs_inside_the_noise():
    """A pair whose fall is smaller than SLOPE_NOISE times its log-widths gives no slope; a
    farther pair does, and the narrowest qualifying pair is used. Without one, the steepest
    average slope the pairs' brackets allow (the smallest over the pairs)."""
    def est(v, w):
        return Estimate(v * (1 + w), v, v * (1 + w), "synthetic")

    seen = {1.0: est(1.02e-8, 0.02), 1.1: est(0.99e-8, 0.02), 1.5: est(1e-10, 0.02),
            0.5: est(1e-4, 0.02)}
    side = {e: s.lower for e, s in seen.items()}.__getitem__
    # (1.0, 1.1): fall 0.03 < 4 * 0.04; (1.0, 1.5): fall 4.62 qualifies and is narrowest
    slope, _ = eps_search._bracket_slope(seen, side, 1.0, 1.1)
    assert slope == pytest.approx(math.log(1.02e-8 / 1e-10) / 0.5)
    noisy = {1.0: seen[1.0], 1.1: seen[1.1], 0.9: est(1.05e-8, 0.02)}
    steepest = min(math.log(1.02 * 1.02e-8 / 0.99e-8) / 0.1,
                   math.log(1.02 * 1.05e-8 / 0.99e-8) / 0.2)
    side = {e: s.lower for e, s in noisy.items()}.__getitem__
    assert eps_search._bracket_slope(noisy, side, 1.0, 1.1) == (None, pytest.approx(steepest))
    assert eps_search._bracket_slope({1.0: seen[1.0]}, side, 1.0, 1.1) == (None, None)


def test_polish_start_from_coarse_ends_is_not_stopped_by_their_width():
    """Known points (a coarser search's ends) do not set the resolution: a search started
    from them with sharper estimates still steps (formerly, once the coarse search stopped on
    its own resolution, their width stopped the finer one before its first step)."""
    coarse = Jagged()
    a, b = CROSSING - 1e-3, CROSSING + 1e-3
    known = {a: coarse(a), b: coarse(b)}
    assert known[a].lower > DELTA >= known[b].lower

    def sharp(eps):
        t = true_delta(eps)
        return Estimate(t * (1 + 1e-3), t * (1 - 1e-3), t * (1 + 1e-3), "synthetic")

    found = epsilon_of_delta(sharp, DELTA, "lower", eps_max=EPS_MAX, rtol=1e-7,
                             bracket=(a, b), known=known, resolution_stop=0.5, xtol=1e-15,
                             guess_slope=SLOPE / 3)
    assert found.lower <= CROSSING <= found.upper
    # sharp estimates resolve eps to ~2e-3 / SLOPE ~ 2e-4, far below the known ends' width
    assert CROSSING - found.value <= 3e-4
