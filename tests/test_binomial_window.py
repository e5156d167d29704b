"""Issue 32: the binomial windows of exact_band and zero_mixture (engine/binomial_window.py) at
Chernoff's relative-entropy span: each side leaves at most TAIL of mass outside (checked with
scipy's exact tails), they are never wider than Bernstein's windows, much narrower at small sd
and skewed p, and a window one standard deviation narrower would leave more than TAIL out."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from shufflesim.protocols.bounds.engine import binomial_window as bw

SIZES = np.array([0, 1, 5, 17, 60, 100, 600, 2683, 6362, 37276, 200_000], dtype=float)


@pytest.mark.parametrize("p", [1e-4, 0.01, 0.05, 0.3, 0.5, 0.82, 0.97, 0.999])
def test_windows_leave_at_most_tail_outside_each_side(p):
    lo, width = bw._window(SIZES, p)
    hi = lo + width - 1
    below = binom.cdf(lo - 1, SIZES, p)
    above = binom.sf(np.minimum(hi, SIZES), SIZES, p)
    assert np.all(below <= bw.TAIL) and np.all(above <= bw.TAIL)
    # every row's own span (not only the widest) is within Chernoff's guarantee
    up = np.ceil(SIZES * p + bw._upper_span(SIZES, p) + 1.0)
    down = np.floor(SIZES * p - bw._upper_span(SIZES, 1.0 - p) - 1.0)
    assert np.all(binom.sf(np.minimum(up, SIZES), SIZES, p) <= bw.TAIL)
    assert np.all(binom.cdf(down - 1, SIZES, p) <= bw.TAIL)


@pytest.mark.parametrize("p", [0.01, 0.3, 0.5, 0.82])
def test_spans_are_never_wider_than_bernstein(p):
    bern = bw._half_width(np.sqrt(SIZES * p * (1 - p)))
    for side in (p, 1.0 - p):
        span = bw._upper_span(SIZES, side)
        assert np.all(span <= bern + 1e-9)
    small = np.array([100.0])
    assert bw._upper_span(small, 0.01)[0] < 0.7 * bw._half_width(np.sqrt(100 * 0.01 * 0.99))


def test_a_window_one_sd_narrower_leaves_more_than_tail():
    """Negative control: the check above fails for spans one standard deviation short."""
    size, p = np.array([6362.0, 37276.0]), 0.5
    short = bw._upper_span(size, p) - np.sqrt(size * p * (1 - p))
    above = binom.sf(np.ceil(size * p + short), size, p)
    assert np.all(above > bw.TAIL)


def _spans_twelve_steps(size, p, tail):
    """_upper_span as written before its early exit: always twelve Newton steps."""
    import math
    size = np.asarray(size, dtype=float)
    target = math.log(1.0 / tail)
    room = size * (1.0 - p)
    span = np.minimum(bw._half_width(np.sqrt(size * p * (1.0 - p)), tail), room)
    whole = size * -math.log(p) <= target
    live = (size > 0) & ~whole
    m = np.where(live, size, 1.0)
    a = np.where(live, p + span / m, p)
    a = np.minimum(a, 1.0 - 1e-15)
    a = np.where(live, np.maximum(a, p), p)
    odds = math.log((1.0 - p) / p)
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(12):
            kl = a * np.log(a / p) + (1.0 - a) * np.log((1.0 - a) / (1.0 - p))
            slope = np.log(a / (1.0 - a)) + odds
            step = (m * kl - target) / (m * slope)
            a = np.where(live & (step > 0) & (slope > 0), a - step, a)
    out = np.where(live, (a - p) * m, room)
    return np.minimum(np.where(np.isfinite(out), out, room), room)


@pytest.mark.parametrize("p", [0.01, 0.13, 0.3679, 0.5, 0.556, 0.987, 0.999])
@pytest.mark.parametrize("tail", [1e-20, 1e-12])
def test_spans_stop_at_a_fixed_point_with_the_same_numbers(p, tail):
    """_upper_span stops once a Newton step moves no entry (issue 32: ~0.1 ms of ~0.4 a call
    at 1300 rows): bit for bit the spans of twelve steps."""
    for size in (np.arange(0.0, 3000.0), np.arange(10_452.0, 11_800.0),
                 np.array([1.0, 2.0, 5.0, 1e6, 1e8])):
        assert np.array_equal(bw._upper_span(size, p, tail), _spans_twelve_steps(size, p, tail))
