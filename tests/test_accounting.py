"""Composition over rounds (protocols.accounting, issue 16).

Fast subset: T = 1 agreement with the single-round catalogue bounds, monotonicity in T, the
independent binary-RR check against dp_accounting on the exact pmfs of the count of ones,
heterogeneous rounds, refusals, baselines. The full soundness grid is marked slow."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pldm
from scipy import stats

from shufflesim.protocols.accounting import pairs
from shufflesim.protocols.accounting.baselines import naive_epsilon
from shufflesim.protocols.accounting.compose import (
    Round,
    compose_rounds,
    composed_method_names,
    composition_support,
    get_composed_method,
)
from shufflesim.protocols.accounting.pld import round_plds
from shufflesim.protocols.bounds.catalogue import evaluate
from shufflesim.protocols.bounds.result import BoundKind
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import make_randomizer

DELTA = 1e-6


def _r(name: str, eps0: float, k: int | None = None):
    return make_randomizer(name, epsilon0=eps0, **({} if k is None else {"domain_size": k}))


SINGLE = [("brr", None, 1.0, 1000), ("krr", 3, 0.5, 10_000), ("krr", 10, 4.0, 1000),
          ("krr", 10, 1.0, 100_000)]


@pytest.mark.parametrize("name,k,eps0,n", SINGLE)
def test_one_round_matches_single_round_bounds(name, k, eps0, n):
    """T = 1: the composed upper bound is never below the single-round upper bound's certified
    bracket, nor below the exact value, and agrees with it to the discretisation (2e-3)."""
    r = _r(name, eps0, k)
    up = compose_rounds([Round(r, n)], DELTA, "optimal-blanket")
    lo = compose_rounds([Round(r, n)], DELTA, "exact-lower")
    ref_up = evaluate("optimal-blanket", r, n, DELTA).result
    ref_lo = evaluate("exact-lower", r, n, DELTA).result
    assert up.epsilon >= ref_up.epsilon - ref_up.epsilon_error
    assert up.epsilon >= ref_lo.epsilon
    assert up.epsilon <= ref_up.epsilon * (1 + 2e-3)
    assert lo.epsilon <= ref_lo.epsilon + ref_lo.epsilon_error
    # k-RR's Thm 14 pair (0, 1, 2) has two neutral groups (outputs x2 and "other"), merged
    # into one here (a post-processing): a slightly weaker lower bound at large eps0.
    assert lo.epsilon >= ref_lo.epsilon * (1 - (5e-3 if eps0 > 2 else 2e-3))
    assert lo.kind is BoundKind.LOWER and up.kind is BoundKind.UPPER


@pytest.mark.parametrize("eps0,n", [(1.0, 1000), (4.0, 10_000)])
def test_one_round_clone_matches_fmt21_numerical(eps0, n):
    r = _r("krr", eps0, 10)
    got = compose_rounds([Round(r, n)], DELTA, "fmt21-clone").epsilon
    ref = evaluate("fmt21_numerical", r, n, DELTA).result
    assert ref.epsilon - ref.epsilon_error <= got <= ref.epsilon * (1 + 2e-3)


@pytest.mark.parametrize("method", ["optimal-blanket", "exact-lower", "fmt21-clone"])
def test_monotone_in_rounds(method):
    r = _r("krr", 1.0, 10)
    values = [compose_rounds([Round(r, 10_000, t)], DELTA, method).epsilon
              for t in (1, 2, 5, 20, 100)]
    assert all(b >= a for a, b in zip(values, values[1:], strict=False)), values


def _exact_brr_pair(eps0: float, n: int):
    """Exact pmfs of the number of ones for X0 = (0, 1, ..., 1), X1 = (1, 1, ..., 1) under
    binary RR (independently of protocols.bounds): Bin(n - 1, q) plus user 1's bit."""
    q = math.exp(eps0) / (1 + math.exp(eps0))
    others = stats.binom.pmf(np.arange(n), n - 1, q)
    def with_user(p1):
        pmf = np.zeros(n + 1)
        pmf[:-1] += (1 - p1) * others
        pmf[1:] += p1 * others
        return pmf
    return with_user(1 - q), with_user(q)


@pytest.mark.parametrize("eps0,rounds", [(1.0, 1), (1.0, 10), (1.0, 100), (4.0, 30)])
def test_binary_rr_exact_lower_matches_independent_computation(eps0, rounds):
    """The composed exact lower bound for binary RR at n = 1000 agrees to 1% with dp_accounting
    applied to the exact pmfs of the count of ones (both directions), composed T times, and is
    not above that computation's pessimistic estimate."""
    n = 1000
    p0, p1 = _exact_brr_pair(eps0, n)
    log0 = {i: math.log(v) for i, v in enumerate(p0) if v > 0}
    log1 = {i: math.log(v) for i, v in enumerate(p1) if v > 0}
    results = {}
    for pessimistic in (True, False):
        fwd = pldm.from_two_probability_mass_functions(
            log1, log0, pessimistic_estimate=pessimistic, value_discretization_interval=1e-4)
        bwd = pldm.from_two_probability_mass_functions(
            log0, log1, pessimistic_estimate=pessimistic, value_discretization_interval=1e-4)
        with np.errstate(over="ignore"):  # dp_accounting's truncation bound overflows
            eps = max(fwd.self_compose(rounds).get_epsilon_for_delta(DELTA),
                      bwd.self_compose(rounds).get_epsilon_for_delta(DELTA))
        results[pessimistic] = eps
    ours = compose_rounds([Round(_r("brr", eps0), n, rounds)], DELTA, "exact-lower").epsilon
    assert ours <= results[True] + 1e-9
    assert abs(ours / results[False] - 1) < 0.01, (ours, results)


def test_blanket_pair_masses_sum_to_one_and_losses_bounded():
    model = pairs.blanket_model(_r("krr", 1.0, 10))
    for side in ("upper", "lower"):
        for p in round_plds(model, 5000, 1e-3, side):
            total = p.probs.sum() + p.infinity
            assert total <= 1 + 1e-12
            assert total >= (1 - 1e-9 if side == "upper" else 1 - 1e-6)
            assert np.all(np.abs(p.losses()[p.probs > 0]) <= model.loss_max + 2e-3)


def test_heterogeneous_rounds_order_free_and_between():
    a, b = Round(_r("krr", 1.0, 10), 10_000), Round(_r("brr", 0.5), 1000)
    abab = compose_rounds([a, b, a, b], DELTA, "optimal-blanket").epsilon
    aabb = compose_rounds([Round(a.randomizer, a.n, 2), Round(b.randomizer, b.n, 2)], DELTA,
                          "optimal-blanket").epsilon
    assert abs(abab / aabb - 1) < 1e-3
    only_a = compose_rounds([Round(a.randomizer, a.n, 2)], DELTA, "optimal-blanket").epsilon
    assert aabb > only_a
    lower = compose_rounds([a, b, a, b], DELTA, "exact-lower").epsilon
    assert lower <= aabb


def test_unsupported_randomizer_is_refused_by_name():
    oue = make_randomizer("oue", epsilon0=1.0, domain_size=4)
    with pytest.raises(ParameterError, match="oue"):
        compose_rounds([Round(oue, 1000)], DELTA, "optimal-blanket")
    # The clone pair is generic: it applies to any eps0-LDP randomizer.
    assert compose_rounds([Round(oue, 1000)], DELTA, "fmt21-clone").epsilon > 0


def test_registry_and_why_not():
    names = composed_method_names()
    for name in ("optimal-blanket", "exact-lower", "fmt21-clone", "basic", "advanced",
                 "rdp-clone", "rdp-blanket"):
        assert name in names
        spec = get_composed_method(name)
        assert spec.reference and spec.status.value == "proven"
    assert get_composed_method("exact-lower").kind is BoundKind.LOWER
    assert composition_support("optimal-blanket") == ("optimal-blanket", "")
    method, why = composition_support("blanket_hoeffding")
    assert method is None and "basic" in why
    with pytest.raises(ParameterError, match="method"):
        get_composed_method("nope")


def test_baselines_are_above_the_composed_pld_bound():
    """Every baseline is a valid bound on the same composed pair, so none may be below the
    (nearly exact) composed PLD of the blanket pair; naive T x eps is below the sound value at
    delta for large T only because it is not a guarantee at delta."""
    r = _r("krr", 1.0, 10)
    rounds = [Round(r, 100_000, 100)]
    pld = compose_rounds(rounds, DELTA, "optimal-blanket").epsilon
    for name in ("basic", "advanced", "rdp-blanket", "rdp-clone", "fmt21-clone"):
        assert compose_rounds(rounds, DELTA, name).epsilon >= pld * (1 - 1e-3), name
    naive = naive_epsilon(rounds, DELTA)
    assert 5 * pld < naive < 15 * pld  # the "about 9x"


@pytest.mark.slow  # ~22 s; tests/test_cli_rounds.py calibrates over rounds end to end by default
def test_calibration_over_rounds_returns_a_certified_eps0():
    from shufflesim.protocols.accounting.calibrate import largest_epsilon0

    def factory(e):
        return _r("krr", e, 10)
    cal = largest_epsilon0(factory, 0.5, DELTA, n=2000, rounds=10, rtol=5e-2)
    assert cal.result.epsilon <= 0.5
    low, high = cal.bracket
    assert low == cal.value and high is not None and high <= low * 1.0501
    above = compose_rounds([Round(factory(high), 2000, 10)], DELTA, "optimal-blanket")
    assert above.epsilon > 0.5
    longer = largest_epsilon0(factory, 0.5, DELTA, n=2000, rounds=30, rtol=5e-2)
    assert longer.value < cal.value
    with pytest.raises(ParameterError, match="target_epsilon"):
        largest_epsilon0(factory, 1e-6, DELTA, n=1000, rounds=10, rtol=5e-2)
    with pytest.raises(ParameterError, match="lower bound"):
        largest_epsilon0(factory, 0.5, DELTA, n=1000, rounds=10, method="exact-lower")
