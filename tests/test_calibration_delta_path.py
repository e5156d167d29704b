"""Calibration asks a bound with a ``BoundSpec.delta_at`` one question per step (issue 18): is
its delta at the target eps at most delta? These tests check that the question agrees with the
bound's own eps, that the answers calibrate at least as far as the full evaluations did, with
fewer engine calls, and that a refusal counts as not certified."""

from __future__ import annotations

import dataclasses
import math

import pytest

from shufflesim.protocols.bounds import calibration as cal
from shufflesim.protocols.bounds import catalogue
from shufflesim.protocols.bounds.engine import core as engine
from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.bounds.spec import BOUNDS, BoundSpec, any_ldp, register
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import make_randomizer

WITH_DELTA_AT = ["optimal-blanket", "brr-exact", "fmt21_numerical", "stronger_clone_numerical",
                 "variation-ratio", "variation-ratio-generic", "blanket_bennett",
                 "blanket_hoeffding", "blanket_bennett_generic", "blanket_hoeffding_generic",
                 "blanket_bennett_laplace", "blanket_hoeffding_laplace"]


def ten_rr(eps0: float):
    return make_randomizer("krr", epsilon0=eps0, domain_size=10)


def test_the_bounds_with_delta_at():
    have = sorted(spec.name for spec in catalogue.all_bounds() if spec.delta_at is not None)
    assert have == sorted(WITH_DELTA_AT)
    assert all(catalogue.get_bound(name).kind is BoundKind.UPPER for name in have)


@pytest.mark.parametrize("name", WITH_DELTA_AT)
@pytest.mark.parametrize("randomizer,n,delta", [
    (ten_rr(1.0), 1000, 1e-6), (ten_rr(4.0), 10**4, 1e-8),
    (make_randomizer("brr", epsilon0=0.5), 10**5, 1e-4),
    (make_randomizer("krr", epsilon0=0.01, domain_size=3), 10**5, 1e-6),
])
def test_delta_at_agrees_with_the_bound(name, randomizer, n, delta):
    """Never certifies what the bound's own search ruled out: below the lower end of its eps
    bracket (where the search saw delta's lower estimate above delta) delta_at is above delta,
    whatever the threshold. And it certifies a little above the bound's eps (the question
    refines to 1e-4 in delta where it is undecided, the search's polish to 1.7e-4)."""
    spec = catalogue.get_bound(name)
    if not spec.applies_to(randomizer):
        pytest.skip(f"{name} does not apply to {randomizer.name}")
    result = catalogue.evaluate(name, randomizer, n, delta).result
    below = (result.epsilon - result.epsilon_error) * (1 - 1e-9)
    if below > 0 and result.epsilon < randomizer.epsilon0:
        assert spec.delta_at(randomizer, n, below, delta) > delta
        assert spec.delta_at(randomizer, n, below, delta / 10) > delta
    above = result.epsilon * (1 + 1e-3)
    assert spec.delta_at(randomizer, n, above, delta) <= delta


def _without_delta_at(monkeypatch, name):
    spec = catalogue.get_bound(name)
    monkeypatch.setitem(BOUNDS._items, name, dataclasses.replace(spec, delta_at=None))


@pytest.mark.parametrize("name,target,n", [
    ("optimal-blanket", 0.5, 1000), ("fmt21_numerical", 0.5, 1000),
    ("variation-ratio", 0.05, 2000), ("stronger_clone_numerical", 0.2, 5000),
    ("blanket_bennett", 0.5, 1000), ("blanket_hoeffding_generic", 0.1, 10**4),
])
def test_the_question_calibrates_at_least_as_far_with_fewer_engine_calls(monkeypatch, name,
                                                                        target, n):
    calls = []
    original = engine.hockey_stick

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(engine, "hockey_stick", counted)
    asked = cal.largest_epsilon0(name, ten_rr, n, target, 1e-6)
    asked_calls = len(calls)
    with monkeypatch.context() as m:
        _without_delta_at(m, name)
        calls.clear()
        full = cal.largest_epsilon0(name, ten_rr, n, target, 1e-6)
        full_calls = len(calls)
    assert asked.value >= full.value * (1 - 1e-12)
    assert asked.bracket[1] <= asked.value * (1 + cal.DELTA_PATH_RTOL) + 1e-15
    assert asked.epsilon <= target and full.epsilon <= target
    if name == "optimal-blanket":                   # the engine's calls: one per question
        assert asked_calls < 0.5 * full_calls
    # the record comes from a full evaluation at the value
    assert asked.result.result.method == name and asked.result.ok


def test_the_question_finds_the_same_smallest_n():
    randomizer = make_randomizer("rappor", epsilon0=2.0, domain_size=16)
    asked = cal.smallest_n("variation-ratio", randomizer, 0.3, 1e-6)
    spec = catalogue.get_bound("variation-ratio")
    n = int(asked.value)
    assert spec.delta_at(randomizer, n, 0.3, 1e-6) <= 1e-6
    assert spec.delta_at(randomizer, n - 1, 0.3, 1e-6) > 1e-6


def _toy_delta_at(randomizer, n, epsilon, threshold):
    """delta = e^-(n eps / eps0) up to eps0 = 1; a refusal beyond (the regime)."""
    if randomizer.epsilon0 > 1.0:
        raise ParameterError("epsilon0", randomizer.epsilon0, "toy regime: at most 1")
    return math.exp(-n * epsilon / randomizer.epsilon0)


def _toy_compute(randomizer, n, delta):
    if randomizer.epsilon0 > 1.0:
        raise ParameterError("epsilon0", randomizer.epsilon0, "toy regime: at most 1")
    eps = -math.log(delta) * randomizer.epsilon0 / n
    return BoundResult("toy-delta-at", BoundKind.UPPER, eps, delta, 0.0, BoundStatus.PROVEN,
                       "test", 0.0)


@pytest.fixture
def toy_bound():
    register(BoundSpec("toy-delta-at", BoundKind.UPPER, "test", BoundStatus.PROVEN,
                       "eps0 <= 1", any_ldp, _toy_compute, delta_at=_toy_delta_at))
    yield "toy-delta-at"
    BOUNDS.remove("toy-delta-at")


def test_a_refusal_is_not_certified(toy_bound):
    """Negative control: the toy bound certifies every eps0 <= 1 at this target (delta e^-...
    is tiny) and refuses eps0 > 1: calibration stops at 1, with the full evaluation's reason
    available for the messages."""
    result = cal.largest_epsilon0(toy_bound, ten_rr, 1000, 0.5, 1e-6)
    assert 1.0 * (1 - 1e-6) <= result.value <= 1.0
    assert result.bracket[1] > 1.0
    certifier = cal._Certifier(toy_bound, lambda e: (ten_rr(e), 1000), 0.5, 1e-6)
    assert not certifier(2.0)
    assert "toy regime" in certifier.reason(2.0)
    assert certifier(1.0) and certifier.score(1.0) < 0


def test_a_question_that_certifies_where_compute_refuses_is_reported():
    """A bound whose delta_at is wider than its compute's regime (a defect of that bound):
    calibration still returns the value the question certified, with the target as its eps and
    the full evaluation's refusal in the note, instead of failing."""
    register(BoundSpec("toy-wide-question", BoundKind.UPPER, "test", BoundStatus.PROVEN,
                       "eps0 <= 1", any_ldp, _toy_compute,
                       delta_at=lambda r, n, eps, threshold: 0.0))
    try:
        result = cal.largest_epsilon0("toy-wide-question", ten_rr, 1000, 0.5, 1e-6,
                                      eps0_max=3.0)
    finally:
        BOUNDS.remove("toy-wide-question")
    assert result.value == 3.0 and result.epsilon == 0.5
    assert "toy regime" in result.note and not result.result.ok
    assert result.record()["status"] == "proven"
