"""Tests of eps0 and n calibration against registered bounds (000 Table 4)."""

from __future__ import annotations

import pytest

from shufflesim.protocols.bounds import calibration as cal
from shufflesim.protocols.bounds.catalogue import evaluate, get_bound
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import make_randomizer

TARGETS = (0.01, 0.05, 0.10, 0.20, 0.50, 1.00)
#: 000 Table 4, 10-RR, n = 1000, delta = 1e-6: eps0 crossings on a 0.01 grid.
BENNETT = (0.170, 0.620, 1.000, 1.510, 2.370, 3.060)
OPTIMAL = (0.210, 0.730, 1.150, 1.700, 2.650, 3.510)


def ten_rr(eps0: float):
    return make_randomizer("krr", epsilon0=eps0, domain_size=10)


def _certifies(name, randomizer, n, target, delta=1e-6) -> bool:
    """The bound certifies (target, delta): its eps is at most target or, for a bound with a
    delta_at, its delta at target is at most delta (the question calibration asks it)."""
    outcome = evaluate(name, randomizer, n, delta)
    if not outcome.ok:
        return False
    delta_at = get_bound(name).delta_at
    return outcome.result.epsilon <= target or (
        delta_at is not None and delta_at(randomizer, n, target, delta) <= delta)


@pytest.mark.parametrize("target,published", list(zip(TARGETS, BENNETT, strict=True)))
def test_table4_blanket_bennett_column(target, published):
    result = cal.largest_epsilon0("blanket_bennett", ten_rr, 1000, target, 1e-6)
    assert abs(result.value - published) <= 0.01
    assert result.epsilon <= target
    assert result.parameter == "epsilon0" and result.record()["status"] == "proven"


@pytest.mark.parametrize("name,target", [
    ("variation-ratio", 0.05), ("variation-ratio", 0.5), ("fmt21_numerical", 0.05),
    ("fmt21_numerical", 0.5),
    # 003's bound has a floor as eps0 -> 0 (mu -> sqrt(4/(n-1))): eps ~ 0.17 for n = 2000
    ("gspa-gdp", 0.5),
])
def test_largest_epsilon0_is_certified_and_tight(name, target):
    result = cal.largest_epsilon0(name, ten_rr, 2000, target, 1e-6, rtol=1e-4)
    low, high = result.bracket
    assert low == result.value and high is not None and high <= low * (1 + 1e-4) + 1e-12
    assert _certifies(name, ten_rr(low), 2000, target)
    assert not _certifies(name, ten_rr(high), 2000, target)
    assert result.evaluations < 60


def test_regime_limits_count_as_not_certified():
    # EFMRTT19 holds only for eps0 <= 1/2: the calibration stops there even for a loose target
    result = cal.largest_epsilon0("efmrtt19", ten_rr, 10**6, 5.0, 1e-6)
    assert result.value <= 0.5 and result.bracket[1] <= 0.5 * (1 + 1e-4)


def test_search_limit():
    result = cal.largest_epsilon0("variation-ratio", ten_rr, 10**4, 100.0, 1e-6, eps0_max=3.0)
    assert result.value == 3.0 and result.bracket[1] is None and "limit" in result.note


@pytest.mark.parametrize("name", ["variation-ratio", "gspa-gdp", "variation-ratio-thm4.8"])
def test_smallest_n(name):
    randomizer = make_randomizer("rappor", epsilon0=2.0, domain_size=16)
    result = cal.smallest_n(name, randomizer, 0.3, 1e-6)
    n = int(result.value)
    assert result.parameter == "n" and result.bracket == (n, n - 1)
    assert _certifies(name, randomizer, n, 0.3)
    assert not _certifies(name, randomizer, n - 1, 0.3)
    # consistent with the eps0 calibration at that n
    by_eps0 = cal.largest_epsilon0(name, lambda e: make_randomizer("rappor", epsilon0=e,
                                                                    domain_size=16),
                                   n, 0.3, 1e-6)
    assert by_eps0.value >= 2.0 * (1 - 1e-9)


def test_errors():
    with pytest.raises(ParameterError, match="^method = 'variation-ratio-lower'.*lower bound"):
        cal.largest_epsilon0("variation-ratio-lower", ten_rr, 100, 0.5, 1e-6)
    with pytest.raises(ParameterError, match="^method = 'nope'"):
        cal.largest_epsilon0("nope", ten_rr, 100, 0.5, 1e-6)
    with pytest.raises(ParameterError, match="^target_epsilon"):
        cal.largest_epsilon0("efmrtt19", ten_rr, 100, 0.5, 1e-6)  # its regime needs n >= 1000
    with pytest.raises(ParameterError, match="^target_epsilon"):
        cal.smallest_n("variation-ratio", ten_rr(4.0), 1e-4, 1e-6, n_max=10**4)
    with pytest.raises(ParameterError, match="^delta"):
        cal.largest_epsilon0("variation-ratio", ten_rr, 100, 0.5, 1.0)
    with pytest.raises(ParameterError, match="^n "):
        cal.largest_epsilon0("variation-ratio", ten_rr, 1, 0.5, 1e-6)


@pytest.mark.parametrize("target,published", list(zip(TARGETS, OPTIMAL, strict=True)))
def test_table4_optimal_column(target, published):
    """000 Table 4, Optimal (FFT). The published crossings are on a 0.01 grid and "not always on
    the conservative side"; ours is certified, so it may sit a little lower (at target 1.0 the
    optimal blanket bound certifies eps0 = 3.48 where 000 prints 3.51). ~0.2 s each since
    calibration asks optimal-blanket's delta_at (issue 18): no longer a slow test."""
    result = cal.largest_epsilon0("optimal-blanket", ten_rr, 1000, target, 1e-6, rtol=1e-3)
    assert published - 0.03 <= result.value <= published + 0.01
