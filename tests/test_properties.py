"""Hypothesis properties of the numerical invariants of the bounds (protocols/bounds): upper
bounds lie above the exact lower bound and below eps0, a cheap upper bound is monotone in n and
eps0, and calibration finds an eps0 whose bound meets the target. Examples are derandomized
(the same on every run) and few enough for the default suite (about 10 s)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from shufflesim.protocols.bounds.calibration import largest_epsilon0
from shufflesim.protocols.bounds.catalogue import evaluate, get_bound
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import make_randomizer

#: Cheap upper bounds (milliseconds per evaluation).
UPPER = ("blanket_hoeffding", "fmt21_numerical")
SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow])

epsilon0s = st.floats(min_value=0.05, max_value=6.0)
deltas = st.floats(min_value=1e-9, max_value=1e-2)
domains = st.integers(min_value=2, max_value=10)


def randomizer(d: int, epsilon0: float):
    """Binary randomized response for d = 2, d-ary randomized response otherwise."""
    if d == 2:
        return make_randomizer("brr", epsilon0=epsilon0)
    return make_randomizer("krr", epsilon0=epsilon0, domain_size=d)


def certified(name: str, r, n: int, delta: float) -> tuple[float, float]:
    """(epsilon, its numerical error) of an evaluation that must succeed."""
    outcome = evaluate(name, r, n, delta)
    assert outcome.ok, (name, outcome.error)
    return outcome.result.epsilon, outcome.result.epsilon_error


@settings(max_examples=12, **SETTINGS)
@given(d=domains, epsilon0=epsilon0s, n=st.integers(min_value=2, max_value=400), delta=deltas)
def test_upper_bounds_lie_between_the_exact_lower_bound_and_eps0(d, epsilon0, n, delta):
    r = randomizer(d, epsilon0)
    lower, lower_error = certified("exact-lower", r, n, delta)
    for name in UPPER:
        upper, error = certified(name, r, n, delta)
        assert upper + error >= lower - lower_error, (name, upper, lower)
        assert 0 <= upper <= epsilon0 * (1 + 1e-9) + error, (name, upper)


@settings(max_examples=40, **SETTINGS)
@given(d=domains, epsilon0=epsilon0s, n=st.integers(min_value=2, max_value=5000),
       factor=st.integers(min_value=2, max_value=20), delta=deltas)
def test_a_cheap_upper_bound_does_not_grow_with_n(d, epsilon0, n, factor, delta):
    r = randomizer(d, epsilon0)
    for name in UPPER:
        few, few_error = certified(name, r, n, delta)
        many, many_error = certified(name, r, n * factor, delta)
        assert many <= few + few_error + many_error + 1e-12, (name, few, many)


@settings(max_examples=40, **SETTINGS)
@given(d=domains, epsilon0=epsilon0s, ratio=st.floats(min_value=1.01, max_value=3.0),
       n=st.integers(min_value=2, max_value=5000), delta=deltas)
def test_a_cheap_upper_bound_does_not_fall_as_eps0_grows(d, epsilon0, ratio, n, delta):
    for name in UPPER:
        small, small_error = certified(name, randomizer(d, epsilon0), n, delta)
        large, large_error = certified(name, randomizer(d, min(6.0, epsilon0 * ratio)), n,
                                       delta)
        assert large + large_error + small_error + 1e-12 >= small, (name, small, large)


@settings(max_examples=12, **SETTINGS)
@given(d=domains, target=st.floats(min_value=0.1, max_value=2.0),
       n=st.integers(min_value=50, max_value=5000), delta=st.floats(min_value=1e-9,
                                                                    max_value=1e-3))
@pytest.mark.parametrize("name", UPPER)
def test_calibration_round_trip(name, d, target, n, delta):
    """The eps0 calibration returns is certified and the other end of its bracket is not. Both
    bounds here answer calibration's question (BoundSpec.delta_at): the bound's delta at the
    target is at most delta at the value and above it at the other end; its full eps search at
    the value stops within its tolerance of the target, and the record gives the smaller."""
    try:
        found = largest_epsilon0(name, lambda e: randomizer(d, e), n, target, delta)
    except ParameterError:
        assume(False)  # not even the smallest eps0 is certified: nothing to round-trip
    question = get_bound(name).delta_at
    epsilon, error = certified(name, randomizer(d, found.value), n, delta)
    assert question(randomizer(d, found.value), n, target, delta) <= delta
    assert epsilon <= target + error + 1e-12 and found.epsilon == min(epsilon, target)
    low, high = found.bracket
    assert low == found.value
    if high is not None:
        assert question(randomizer(d, high), n, target, delta) > delta
