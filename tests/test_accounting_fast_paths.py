"""The faster paths of composition over rounds (issue 32, session 11), each against the path
it replaces:

* rdp-blanket of k-RR takes the neutral block pairs (neutral_blocks.py) once the pair's own
  enumeration is large (rdp.NEUTRAL_BLOCKS_FROM; further up over few rounds): within 1e-4
  relative of the enumeration just above the switch, and never below the composed exact lower
  bound;
* exact-lower screens its candidate pairs on a coarser grid with smaller block pairs: the same
  value as refining every candidate, and the screened value of a candidate is never above its
  fine one by more than float noise (both are lower bounds; the fine one is the tighter);
* enumeration.binomial_pmf_around (the block pairs' pmfs, by running products of ratios) agrees
  with Boost's pmf to 1e-12 relative (pld.mass_relative_error allows 4e-11 and more) and is
  exactly 0 off the support;
* calibration of basic over T identical rounds by one engine delta question per eps0 finds the
  eps0 of the search through compose_rounds (within the search's tolerance), certified;
* basic's per-round eps by engine delta questions (baselines.round_epsilon) is the engine's eps
  search result within 2e-4 relative, and certified (upper delta <= delta_t there).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from shufflesim.protocols.accounting import baselines, compose, neutral_blocks, pairs, rdp
from shufflesim.protocols.accounting.calibrate import largest_epsilon0
from shufflesim.protocols.accounting.compose import Round, compose_rounds
from shufflesim.protocols.accounting.enumeration import binomial_pmf_around
from shufflesim.protocols.bounds.numerical.optimal import (
    optimal_blanket_delta,
    optimal_blanket_epsilon,
)
from shufflesim.protocols.distributions import binom
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import make_randomizer


def test_rdp_blanket_switches_to_neutral_blocks_only_for_large_enumerations(monkeypatch):
    r = make_randomizer("krr", epsilon0=1.0, domain_size=3)
    model = pairs.blanket_model(r)
    assert neutral_blocks.applies(model)
    small, large = 200, 20_000             # a switch between them (the real one: n ~ 1.3e5)
    monkeypatch.setattr(rdp, "NEUTRAL_BLOCKS_FROM", math.sqrt(
        rdp.enumeration_entries(model, small) * rdp.enumeration_entries(model, large)))
    assert rdp.enumeration_entries(model, small) < rdp.NEUTRAL_BLOCKS_FROM
    assert rdp.enumeration_entries(model, large) > rdp.NEUTRAL_BLOCKS_FROM
    calls = []
    real = neutral_blocks.cached_neutral_block_aggregates
    monkeypatch.setattr(neutral_blocks, "cached_neutral_block_aggregates",
                        lambda *a: calls.append(a[1]) or real(*a))
    rdp._dominating_aggregates(model, small, 0.002)
    rdp._dominating_aggregates(model, large, 0.002)
    assert calls == [large]
    # over fewer than FEW_ROUNDS rounds the switch is further up
    monkeypatch.setattr(rdp, "NEUTRAL_BLOCKS_FROM_FEW", 2 * rdp.enumeration_entries(model, large))
    rdp._dominating_aggregates(model, large, 0.002, rounds=rdp.FEW_ROUNDS - 1)
    rdp._dominating_aggregates(model, large, 0.002, rounds=rdp.FEW_ROUNDS)
    assert calls == [large, large]


@pytest.mark.parametrize(("k", "eps0", "n", "rounds"), [
    pytest.param(3, 1.0, 130_000, 100, marks=pytest.mark.slow), (10, 0.5, 10_000, 100),
    pytest.param(3, 1.0, 1000, 30, marks=pytest.mark.slow)])
def test_rdp_blanket_from_neutral_blocks_is_within_1e4_of_the_enumeration(monkeypatch, k, eps0,
                                                                          n, rounds):
    r = make_randomizer("krr", epsilon0=eps0, domain_size=k)
    model = pairs.blanket_model(r)
    assert rounds >= rdp.FEW_ROUNDS
    assert rdp.enumeration_entries(model, n) > rdp.NEUTRAL_BLOCKS_FROM
    fast = rdp.epsilon_from_rdp(rdp.composed_curve([(model, n, rounds)], 1e-6), 1e-6)[0]
    monkeypatch.setattr(rdp, "NEUTRAL_BLOCKS_FROM", math.inf)
    own = rdp.epsilon_from_rdp(rdp.composed_curve([(model, n, rounds)], 1e-6), 1e-6)[0]
    assert abs(fast - own) <= 1e-4 * own
    lower = compose_rounds([Round(r, n, rounds)], 1e-6, "exact-lower").epsilon
    assert fast >= lower


@pytest.mark.parametrize(("name", "kw", "n", "rounds"), [("krr", {"domain_size": 3}, 20_000, 50),
                                                         ("brr", {}, 20_000, 50)])
def test_exact_lower_screening_gives_the_refined_maximum(monkeypatch, name, kw, n, rounds):
    r = make_randomizer(name, epsilon0=1.0, **kw)
    assert n * rounds >= compose.SCREEN_FROM_WORK
    screened = compose_rounds([Round(r, n, rounds)], 1e-6, "exact-lower").epsilon
    monkeypatch.setattr(compose, "SCREEN_FROM_WORK", math.inf)
    every = compose_rounds([Round(r, n, rounds)], 1e-6, "exact-lower").epsilon
    assert screened == every
    # the screen (coarser grid, smaller block budget) gives a lower (or equal) value for every
    # candidate, within 1 %
    for model in pairs.exact_models(r):
        fine, step, _ = compose.compose_models([(model, n, rounds)], 1e-6, "lower")
        coarse, _, _ = compose.compose_models([(model, n, rounds)], 1e-6, "lower",
                                              interval=step * compose.SCREEN_COARSENING,
                                              screen=True)
        assert fine * (1 - 1e-2) <= coarse <= fine * (1 + 1e-9)


@pytest.mark.parametrize("p", [0.5, 0.1, 0.77, 0.0123])
def test_binomial_pmf_around_matches_boost(p):
    S = np.arange(1, 3000, 7, dtype=float)
    c = np.floor(p * S)
    t = np.arange(-250, 251, dtype=float)
    pmf = binomial_pmf_around(S, p, c, t)
    h = c[None, :] + t[:, None]
    inside = (h >= 0) & (h <= S[None, :])
    ref = binom.pmf(np.where(inside, h, 0.0), S[None, :], p)
    live = inside & (ref > 1e-280)
    rel = np.abs(pmf[live] - ref[live]) / ref[live]
    assert rel.max() < 1e-12
    assert np.all(pmf[~inside] == 0.0)
    assert np.all(pmf >= 0.0)


def test_basic_calibration_by_question_matches_the_composed_search():
    def factory(eps0):
        return make_randomizer("krr", epsilon0=eps0, domain_size=10)

    n, rounds, target = 2000, 10, 0.5
    fast = largest_epsilon0(factory, target, 1e-6, n=n, rounds=rounds, method="basic")
    # any option sends basic through compose_rounds (its eps search per evaluation)
    slow = largest_epsilon0(factory, target, 1e-6, n=n, rounds=rounds, method="basic",
                            tail=1e-15)
    assert "certified by one round's optimal-blanket delta" in fast.result.note
    assert "certified" not in slow.result.note
    assert abs(fast.value - slow.value) <= 2e-3 * slow.value
    assert fast.result.epsilon <= target
    low, high = fast.bracket
    at_low = compose_rounds([Round(factory(low), n, rounds)], 1e-6, "basic").epsilon
    at_high = compose_rounds([Round(factory(high), n, rounds)], 1e-6, "basic").epsilon
    assert at_low <= target * (1 + 1e-3) and at_high > target * (1 - 1e-3)


@pytest.mark.parametrize(("name", "kw", "eps0", "n", "delta_t"), [
    ("krr", {"domain_size": 10}, 1.0, 1000, 1e-6), ("krr", {"domain_size": 3}, 4.0, 10_000, 1e-9),
    ("brr", {}, 1.0, 10_000, 1e-8)])
def test_round_epsilon_by_questions_is_the_engines_eps_certified(name, kw, eps0, n, delta_t):
    r = make_randomizer(name, epsilon0=eps0, **kw)
    by_questions = baselines.round_epsilon(r, n, delta_t)
    searched = optimal_blanket_epsilon(r, n, delta_t).epsilon
    assert abs(by_questions - searched) <= 2e-4 * searched
    # a certified point: the engine's upper delta there is at most delta_t
    assert optimal_blanket_delta(r, n, by_questions, threshold=delta_t).delta <= delta_t
    assert optimal_blanket_delta(r, n, by_questions * (1 - 2e-4)).delta > delta_t


def test_basic_calibration_by_question_refuses_what_compose_refuses():
    def factory(eps0):
        return make_randomizer("gaussian", epsilon0=eps0, delta0=1e-7)

    reasons = []
    for options in ({}, {"tail": 1e-15}):        # the question path, the compose path
        with pytest.raises(ParameterError) as error:
            largest_epsilon0(factory, 1.0, 1e-6, n=1000, rounds=10, method="basic", **options)
        reasons.append(str(error.value))
    assert reasons[0] == reasons[1] and "pure eps0-LDP rounds" in reasons[0]
