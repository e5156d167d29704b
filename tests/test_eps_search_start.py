"""The eps search's start from a guess and its steps near the crossing (issue 18, fifth round):
protocols/bounds/engine/eps_search.py. Synthetic delta(eps) with known crossings, counted
evaluations, certificates checked against the true function."""

from __future__ import annotations

import math

import pytest

from shufflesim.protocols.bounds.engine import eps_search
from shufflesim.protocols.bounds.engine.common import Estimate
from shufflesim.protocols.bounds.engine.eps_search import epsilon_of_delta

DELTA = 1e-6


class Counted:
    """delta_fn over a true function, with a relative bracket ``blur`` around it (lower
    = true (1 - blur), upper = true (1 + blur); lower = 0 where the true value is below
    ``zero_lower_below``), recording the points evaluated."""

    def __init__(self, fun, blur: float = 0.0, zero_lower_below: float = 0.0):
        self.fun, self.blur, self.zero_lower_below = fun, blur, zero_lower_below
        self.points: list[float] = []

    def __call__(self, eps: float) -> Estimate:
        self.points.append(eps)
        v = self.fun(eps)
        lo, hi = v * (1 - self.blur), v * (1 + self.blur)
        if v < self.zero_lower_below:
            lo = 0.0                        # a lower estimate that says nothing out there
        return Estimate(hi, lo, hi, "synthetic")


def gaussian_tail(c: float):
    """delta(eps) = exp(-c eps^2): crossing at sqrt(ln(1/DELTA) / c)."""
    return (lambda e: math.exp(-c * e * e)), math.sqrt(math.log(1 / DELTA) / c)


def _check(res, crossing, side, rtol):
    assert res.lower <= crossing <= res.upper
    assert res.upper - res.lower <= rtol * res.upper * (1 + 1e-12)
    assert res.value == (res.upper if side == "upper" else res.lower)


@pytest.mark.parametrize("side", ["upper", "lower"])
@pytest.mark.parametrize("miss", [1e-6, 1e-3, 0.05])
def test_start_from_a_guess_skips_zero_and_eps_max(side, miss):
    """A guess off by ``miss`` (relative) with the true slope: neither 0 nor eps_max is
    evaluated, and the search takes a handful of evaluations."""
    fun, crossing = gaussian_tail(40.0)
    slope = 2 * 40.0 * crossing                    # -d ln delta / d eps at the crossing
    fn = Counted(fun)
    res = epsilon_of_delta(fn, DELTA, side, eps_max=5.0, rtol=1e-7, xtol=1e-15,
                           guess=crossing * (1 + miss), guess_slope=slope)
    _check(res, crossing, side, 1e-7)
    assert 0.0 not in fn.points and 5.0 not in fn.points
    assert res.evaluations == len(fn.points) <= 7


@pytest.mark.parametrize("side", ["upper", "lower"])
def test_start_from_a_guess_beats_the_start_from_zero(side):
    """Fewer evaluations than the search from [0, eps_max] with the guess evaluated first
    (the former start), to the same tolerance."""
    fun, crossing = gaussian_tail(40.0)
    old, new = Counted(fun), Counted(fun)
    guess = crossing * (1 + 1e-3)
    a = epsilon_of_delta(old, DELTA, side, eps_max=5.0, rtol=1e-7, xtol=1e-15, guess=guess)
    b = epsilon_of_delta(new, DELTA, side, eps_max=5.0, rtol=1e-7, xtol=1e-15, guess=guess,
                         guess_slope=2 * 40.0 * crossing)
    _check(a, crossing, side, 1e-7)
    _check(b, crossing, side, 1e-7)
    assert len(new.points) < len(old.points)


@pytest.mark.parametrize("side", ["upper", "lower"])
def test_a_wrong_guess_or_slope_still_finds_the_crossing(side):
    """A guess 3x too large and a slope 100x too small: the local steps fail to bracket and
    the search goes on from [0, eps_max], narrowed by the points it has."""
    fun, crossing = gaussian_tail(40.0)
    fn = Counted(fun)
    res = epsilon_of_delta(fn, DELTA, side, eps_max=5.0, rtol=1e-7, xtol=1e-15,
                           guess=3 * crossing, guess_slope=0.8 * crossing)
    _check(res, crossing, side, 1e-7)


def test_local_steps_reach_zero_when_delta_at_zero_is_below():
    """delta(0) <= delta: a guess and slope that step down to 0 return 0, as the search from
    [0, eps_max] does."""
    fn = Counted(lambda e: 0.5 * DELTA * math.exp(-e))
    res = epsilon_of_delta(fn, DELTA, "upper", eps_max=5.0, rtol=1e-7, guess=0.01,
                           guess_slope=1.0)
    assert res.value == 0.0 and res.upper == 0.0


def test_local_steps_reach_eps_max_when_saturated():
    """delta(eps) > delta up to eps_max: saturated, as the search from [0, eps_max]."""
    fn = Counted(lambda e: 10 * DELTA)
    up = epsilon_of_delta(fn, DELTA, "upper", eps_max=2.0, guess=1.0, guess_slope=1.0)
    lo = epsilon_of_delta(Counted(lambda e: 10 * DELTA), DELTA, "lower", eps_max=2.0,
                          guess=1.0, guess_slope=1.0)
    assert up.saturated and up.value == math.inf
    assert lo.saturated and lo.value == 2.0


@pytest.mark.parametrize("blur", [1e-9, 1e-6])
def test_certificates_hold_with_blurred_estimates(blur):
    """Estimates with a relative bracket: the returned value is certified (its upper estimate
    <= delta for side="upper", its lower > delta for "lower") and brackets the true crossing."""
    fun, crossing = gaussian_tail(25.0)
    slope = 2 * 25.0 * crossing
    for side in ("upper", "lower"):
        fn = Counted(fun, blur)
        res = epsilon_of_delta(fn, DELTA, side, eps_max=5.0, rtol=1e-7, xtol=1e-15,
                               guess=crossing * 1.002, guess_slope=slope)
        assert res.lower <= crossing <= res.upper
        if side == "upper":
            assert fun(res.value) * (1 + blur) <= DELTA
        else:
            assert fun(res.value) * (1 - blur) > DELTA


def test_zero_lower_estimates_step_by_the_upper_shape():
    """A lower estimate of 0 beyond the crossing (as exact-lower's far out): the steps follow
    the upper estimate instead of bisecting, for delta linear near eps_max (the blanket at
    eps0 = 8, n = 1000): far fewer evaluations, the same crossing."""
    top = 8.0
    fun = lambda e: 0.05 * (top - e) + 2e-9                 # noqa: E731
    crossing = top - (DELTA - 2e-9) / 0.05
    fn = Counted(fun, blur=1e-9, zero_lower_below=1e-7)
    res = epsilon_of_delta(fn, DELTA, "lower", eps_max=top, rtol=1e-7, xtol=1e-15,
                           bracket=(7.9, top))
    assert res.lower <= crossing <= res.upper
    assert res.evaluations <= 12
    # negative control: where the upper estimate is 0 too there is no shape, and the search
    # bisects (the former rule for a lower estimate of 0)
    blind = Counted(lambda e: fun(e) if fun(e) >= 1e-7 else 0.0)
    ref = epsilon_of_delta(blind, DELTA, "lower", eps_max=top, rtol=1e-7, xtol=1e-15,
                           bracket=(7.9, top))
    assert ref.lower <= crossing <= ref.upper
    assert ref.evaluations > res.evaluations + 4


def test_secant_root_needs_two_near_points():
    """The near-crossing secant is trusted only between points within NEAR of the crossing
    (in root coordinate): from afar it returns None and regula falsi steps instead."""
    seen = {0.1: Estimate(2e-6, 2e-6, 2e-6, "x"), 0.2: Estimate(5e-7, 5e-7, 5e-7, "x")}
    assert eps_search._secant_root(seen, lambda e: seen[e].upper, DELTA) is None
    near = {0.1: Estimate(1.001e-6, 1.001e-6, 1.001e-6, "x"),
            0.2: Estimate(0.999e-6, 0.999e-6, 0.999e-6, "x")}
    root = eps_search._secant_root(near, lambda e: near[e].upper, DELTA)
    assert root == pytest.approx(0.15, rel=1e-3)


def test_shaped_secant_follows_a_linear_fall_to_eps_max(monkeypatch):
    """delta linear in eps up to eps_max (the blanket at large eps0, small n): the secant in
    delta itself takes fewer steps than regula falsi on the root coordinate (LINEAR = 0
    switches it off: negative control), to the same crossing."""
    top = 8.0
    fun = lambda e: 0.05 * (top - e) + 2e-9                 # noqa: E731
    crossing = top - (DELTA - 2e-9) / 0.05
    shaped = Counted(fun)
    res = epsilon_of_delta(shaped, DELTA, "upper", eps_max=top, rtol=1e-7, xtol=1e-15,
                           bracket=(7.9, top))
    monkeypatch.setattr(eps_search, "LINEAR", 0.0)
    plain = Counted(fun)
    ref = epsilon_of_delta(plain, DELTA, "upper", eps_max=top, rtol=1e-7, xtol=1e-15,
                           bracket=(7.9, top))
    for r in (res, ref):
        assert r.lower <= crossing <= r.upper
    assert res.evaluations <= 7 < ref.evaluations


def test_shaped_root_needs_three_points_on_a_line():
    """Three points on no line in any of the three coordinates: no shaped step."""
    def est(v):
        return Estimate(v, v, v, "x")
    bent = {0.1: est(1e-2), 0.2: est(1.1e-2), 0.3: est(1e-8)}     # up, then a cliff
    assert eps_search._shaped_root(bent, lambda e: bent[e].upper, DELTA) is None
    line = {0.1: est(3e-6), 0.2: est(2e-6), 0.3: est(1.5e-6)}
    assert eps_search._shaped_root(line, lambda e: line[e].upper, DELTA) is not None
