"""Privacy accounting of shuffled DP-SGD runs (protocols.learning.accounting, issue 19)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from shufflesim.protocols.accounting.compose import compose_rounds
from shufflesim.protocols.accounting.rounds import Round
from shufflesim.protocols.bounds.closed_form.fmt21 import fmt21_approx_dp
from shufflesim.protocols.bounds.closed_form.gdp import gdp_epsilon, gdp_mu
from shufflesim.protocols.learning.accounting import (
    BOUND_COLUMNS,
    RunPrivacy,
    account,
    clone_composed,
    clone_with_tv,
    deletion_pure_epsilon,
    gaussian_local_epsilon,
)
from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.protocols.randomizers.gaussian import analytic_gaussian_sigma, gaussian_delta


@pytest.mark.parametrize("rounds", [1, 7, 50])
def test_local_gaussian_composition_is_exact(rounds):
    """T Gaussian releases = one Gaussian with sensitivity sqrt(T) Delta: the returned eps meets
    the exact condition and is the smallest that does (up to the search's bracket)."""
    sigma, sens, delta = 3.0, 0.8, 1e-5
    eps = float(gaussian_local_epsilon(sens, sigma, rounds, delta))
    big = math.sqrt(rounds) * sens
    assert gaussian_delta(sigma, eps, big) <= delta
    assert gaussian_delta(sigma, eps * (1 - 1e-4), big) > delta


def test_local_gaussian_composition_against_dp_accounting():
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant

    sigma, sens, rounds, delta = 2.0, 1.0, 20, 1e-4
    accountant = pld_privacy_accountant.PLDAccountant()
    accountant.compose(dp_accounting.GaussianDpEvent(sigma / sens), rounds)
    ours = float(gaussian_local_epsilon(sens, sigma, rounds, delta))
    assert ours == pytest.approx(accountant.get_epsilon(delta), rel=2e-3)


def test_deletion_reduction_never_exceeds_the_budget():
    """002 Lemma 3.7's pure randomizer is 2 eps_d-DP with eps_d the Gaussian eps at half the
    sensitivity; 2 eps_d <= eps0 (the Gaussian eps is convex in the sensitivity)."""
    for eps0 in (0.05, 0.5, 1.0, 2.0, 5.0):
        for delta0 in (1e-8, 1e-5, 1e-3):
            sigma = float(analytic_gaussian_sigma(eps0, delta0, 2.0))
            pure = deletion_pure_epsilon(2.0, sigma, delta0)
            assert 0.5 * eps0 <= pure <= eps0 * (1 + 1e-9)


def test_clone_with_total_variation_is_checked():
    eps0, n, rounds, delta, tv = 0.8, 500, 5, 1e-4, 1e-6
    eps, note = clone_with_tv(eps0, n, rounds, delta, tv)
    assert eps is not None and "delta_in" in note
    inner = delta - (1 + math.exp(eps)) * tv
    assert clone_composed(eps0, n, rounds, inner) <= eps
    assert eps >= clone_composed(eps0, n, rounds, delta)  # the correction only costs
    none, why = clone_with_tv(eps0, n, rounds, delta, delta / 2)
    assert none is None and "total variation" in why


def test_clone_upper_bound_is_above_the_exact_lower_bound_of_a_randomizer():
    """The clone pair bounds every eps0-LDP randomizer, so over T rounds it is above the
    composed exact lower bound of binary randomized response (000 Thm 14)."""
    for rounds in (1, 10):
        lower = compose_rounds([Round(make_randomizer("brr", epsilon0=1.0), 300, rounds)],
                               1e-5, "exact-lower").epsilon
        assert clone_composed(1.0, 300, rounds, 1e-5) >= lower


def _gaussian_run(eps, delta0=1e-11, n_clients=None, k=1, delta=1e-4, sens=0.04):
    eps = np.asarray(eps, float)
    sigma = analytic_gaussian_sigma(eps, delta0, sens)
    return RunPrivacy("gaussian", eps, n_clients or eps.size, k, delta, delta0, sigma, sens)


def test_account_gaussian_bounds_and_their_relations():
    rng = np.random.default_rng(1)
    eps = rng.uniform(0.5, 1.0, 2000)
    run = _gaussian_run(eps, k=40)
    previous = dict.fromkeys(BOUND_COLUMNS, 0.0)
    for epochs in (1, 2, 5):
        values, note = account(run, epochs)
        assert all(values[c] is not None for c in BOUND_COLUMNS), note
        for name in ("clone_epochs", "clone_steps", "gspa_epochs"):
            assert values[name] <= values["local_max"]  # capped: post-processing
        for name in ("clone_epochs", "clone_steps", "gspa_epochs", "local_max", "user_max"):
            assert values[name] >= previous[name]  # non-decreasing in the epochs
        assert values["user_median"] <= values["user_max"] <= values["local_max"]
        assert values["user_max"] <= values["clone_epochs"]
        assert values["clone_epochs"] <= values["clone_steps"]  # n clients hide more than k
        mu = gdp_mu(eps, np.full(eps.shape, 1e-11))
        # the vectorized search (issue 32) lands inside the scalar search's bracket
        search = gdp_epsilon(math.sqrt(epochs) * mu, 1e-4)
        assert (search.value - search.error - 1e-12 <= values["gspa_epochs"]
                <= search.value * (1 + 1e-10) + 1e-12)
        assert values["gspa_epochs"] <= values["local_max"]
        previous = values
    one = fmt21_approx_dp(float(eps.max()), 2000, 1e-4, 1e-11).epsilon
    assert account(run, 3)[0]["fmt21_pass"] == one
    assert account(run, 0)[0] == dict.fromkeys(BOUND_COLUMNS, 0.0)


def test_account_states_why_a_bound_is_missing():
    run = _gaussian_run(np.full(30, 0.5), delta0=1e-5)  # 30 x 1e-5 x epochs vs delta = 1e-4
    values, note = account(run, 10)
    assert values["clone_epochs"] is None and values["fmt21_pass"] is None
    assert "clone_epochs" in note and "fmt21_pass" in note
    assert values["clone_steps"] is None  # one client per step: nobody to hide among
    assert values["user_max"] == values["local_max"] > 0


def test_account_duchi_is_pure():
    eps = np.array([0.2, 0.5, 1.0] * 400)
    run = RunPrivacy("duchi", eps, eps.size, 10, 1e-5)
    values, note = account(run, 4)
    assert values["local_max"] == 4 * 1.0
    assert values["clone_epochs"] <= 4 * 1.0
    assert values["user_median"] == min(4 * 0.5, values["clone_epochs"])
    nothing, why = account(RunPrivacy("none", eps, eps.size, 10, 1e-5), 4)
    assert all(v is None for v in nothing.values()) and "no privacy" in why


def test_example_level_shuffle_bounds_use_the_client_level_parameters():
    """sigma calibrated to one example (2C/m): the shuffle bounds must use the reports' eps
    between arbitrary clients (sensitivity 2C), about m times larger; the local bound keeps the
    example-level sensitivity."""
    m, clip, delta0 = 10, 0.5, 1e-12
    eps = np.full(3000, 0.5)
    sigma = analytic_gaussian_sigma(eps, delta0, 2 * clip / m)
    example = RunPrivacy("gaussian", eps, 3000, 1, 1e-4, delta0, sigma, 2 * clip / m,
                         client_sensitivity=2 * clip)
    naive = RunPrivacy("gaussian", eps, 3000, 1, 1e-4, delta0, sigma, 2 * clip / m)
    values, _ = account(example, 2)
    wrong, _ = account(naive, 2)
    assert values["local_max"] == wrong["local_max"]
    client_eps = gdp_epsilon(2 * clip / float(sigma[0]), delta0).value
    assert client_eps > 5 * 0.5
    assert values["fmt21_pass"] is None or values["fmt21_pass"] > wrong["fmt21_pass"]
    assert values["clone_epochs"] > wrong["clone_epochs"]
    assert values["gspa_epochs"] >= wrong["gspa_epochs"]
    # the example-level unit's client-level eps is large: 003's formula falls back on the cap
    assert values["gspa_epochs"] == values["local_max"]


def test_vectorized_gdp_conversion_against_the_scalar_search():
    """Issue 32: one vectorized bisection for many mu. Every returned eps meets the (upper)
    delta condition, its bracket's lower end does not, and it lies within the scalar search's
    bracket."""
    from shufflesim.protocols.bounds.closed_form.gdp import gdp_delta
    from shufflesim.protocols.learning.gdp_vector import gdp_delta_upper, gdp_epsilons

    mus = np.geomspace(1e-3, 60.0, 41)
    for delta in (1e-10, 1e-5, 1e-2, 0.3):
        values, errors = gdp_epsilons(mus, delta)
        assert np.all(gdp_delta_upper(values, mus) <= delta)
        low = values - errors
        assert np.all((low == 0) | (gdp_delta_upper(low, mus) > delta))
        assert np.all(errors <= 1e-10 * values + 1e-14)
        for mu, value, error in zip(mus, values, errors, strict=True):
            scalar = gdp_epsilon(float(mu), delta)
            assert gdp_delta(float(value), float(mu)).upper == pytest.approx(
                float(gdp_delta_upper(value, mu)), rel=1e-12)
            # both brackets hold the exact eps: they overlap
            assert scalar.value - scalar.error - 1e-12 <= value <= scalar.value + error + 1e-12
    grid, _ = gdp_epsilons(np.array([[0.5, 1.0], [2.0, 4.0]]), 1e-5)
    assert grid.shape == (2, 2) and np.all(np.diff(grid.ravel()) > 0)
    with pytest.raises(Exception, match="mu"):
        gdp_epsilons(np.array([1.0, 0.0]), 1e-5)


def test_account_epochs_equals_account_per_epoch():
    from shufflesim.protocols.learning.accounting import account_epochs

    rng = np.random.default_rng(4)
    eps = rng.uniform(0.01, 2.0, 30)
    sigma = analytic_gaussian_sigma(eps, 1e-5, 2 * 0.5 / 20)
    run = RunPrivacy("gaussian", eps, 30, 1, 1e-4, 1e-5, sigma, 2 * 0.5 / 20,
                     client_sensitivity=1.0)
    together = account_epochs(run, [0, 1, 2, 5, 50])
    for e, (bounds, note) in zip([0, 1, 2, 5, 50], together, strict=True):
        single = account(run, e)
        assert single[1] == note and single[0] == bounds
    assert together[-1][0]["local_max"] == pytest.approx(
        float(gaussian_local_epsilon(2 * 0.5 / 20, sigma, 50, 1e-4).max()))
