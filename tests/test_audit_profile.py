"""``implementation-profile`` (simulator/audit/profile.py, issue 29): an (eps0, delta0) claim
tested at the randomizer level against the claimed mechanism's own privacy profile at a larger
delta, where samples have power: a Gaussian client with sigma 20 % too small is caught, a
correct one passes."""

from __future__ import annotations

import numpy as np
import pytest

from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.protocols.randomizers.gaussian import gaussian_delta
from shufflesim.simulator.audit.grading import failing
from shufflesim.simulator.audit.implementation import Claim
from shufflesim.simulator.audit.profile import PROFILE_DELTA, profile_epsilon
from shufflesim.simulator.audit.run import audit_implementation

GAUSSIAN = make_randomizer("gaussian", epsilon0=1.0, delta0=1e-6)
CLAIM = Claim(GAUSSIAN, delta0=1e-6)


def gaussian(sigma):
    def randomize(values, rng):
        values = np.asarray(values, dtype=float)
        return values + rng.normal(0.0, sigma, size=values.shape)
    return randomize


def _profile(client, trials, seed):
    rows = audit_implementation(client, CLAIM, trials=trials, seed=seed)
    return rows, next(r for r in rows if r["bound"] == "implementation-profile")


def test_profile_epsilon_inverts_the_claims_delta():
    eps = profile_epsilon(GAUSSIAN, PROFILE_DELTA)
    sigma, sens = GAUSSIAN.sigma, GAUSSIAN.sensitivity
    assert gaussian_delta(sigma, eps, sens) <= PROFILE_DELTA  # the upper end
    assert gaussian_delta(sigma, eps * (1 - 1e-9), sens) > PROFILE_DELTA * (1 - 1e-6)
    assert profile_epsilon(GAUSSIAN, 1e-6) == pytest.approx(1.0, rel=1e-3)  # the claim itself
    assert profile_epsilon(make_randomizer("krr", epsilon0=1.0, domain_size=3), 0.01) is None
    assert profile_epsilon(GAUSSIAN, 0.99) is None  # at or above delta(0)


def test_a_gaussian_client_with_sigma_20_percent_too_small_is_caught():
    """eps_lb 0.383 > the claim's 0.334 at delta = 0.01 (10^5 samples, seed 0; adjusted p
    5e-6), where implementation-ldp at delta0 = 1e-6 gives 0.586 < 1."""
    rows, found = _profile(gaussian(0.8 * GAUSSIAN.sigma), 100_000, 0)
    assert found["verdict"] == "violated" and found["subject"] == "implementation"
    assert found["adjusted_p_value"] < 0.05 and found["delta"] == PROFILE_DELTA
    assert "implementation-profile" in {r["bound"] for r in failing(rows, 0.95)}


@pytest.mark.parametrize("seed", [0, 1])
def test_a_correct_gaussian_client_passes(seed):
    rows, found = _profile(gaussian(GAUSSIAN.sigma), 100_000, seed)
    assert found["verdict"] == "consistent"
    assert not failing(rows, 0.95)


@pytest.mark.slow
def test_correct_gaussian_clients_pass_over_50_seeds():
    """False-violation rate within alpha = 0.05 over 50 seeds (Holm over each run's rows): at
    most 6 of 50 (P[Binomial(50, 0.05) >= 7] < 0.012)."""
    client = gaussian(GAUSSIAN.sigma)
    false = sum(bool(failing(audit_implementation(client, CLAIM, trials=20_000, seed=s), 0.95))
                for s in range(50))
    assert false <= 6
