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
