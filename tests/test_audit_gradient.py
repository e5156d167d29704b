"""Gaussian gradient clients (simulator/audit/gradient.py, issue 29 item 4): the projection onto
the difference of the two inputs' clipped gradients turns a clipped-gradient client into the
registered scalar gaussian on [0, 1], audited at the randomizer and shuffle levels."""

from __future__ import annotations

import numpy as np
import pytest

from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.learning.randomizers import GaussianGradient
from shufflesim.simulator.audit.gradient import GradientClaim, audit_gradient, projected_client
from shufflesim.simulator.audit.grading import failing
from shufflesim.simulator.usercode import UserCodeError

CLAIM = GradientClaim(epsilon0=1.0, delta0=1e-6, clip=1.0, dim=8, examples_per_client=4)
MECHANISM = GaussianGradient(clip=1.0, examples_per_client=4, privacy_unit="example")


def _correct(g, rng):
    return MECHANISM.randomize(g, rng, 1.0, 1e-6)


def _too_little_noise(g, rng):  # sigma 20 % too small
    return g + 0.8 * CLAIM.sigma * rng.standard_normal(np.shape(g))


def test_the_claim_is_the_learning_randomizers_calibration():
    assert CLAIM.sensitivity == pytest.approx(0.5)
    assert CLAIM.sigma == pytest.approx(float(MECHANISM.sigma(1.0, 1e-6)), rel=1e-9)
    g_lo, g_hi = CLAIM.inputs()
    assert np.linalg.norm(g_hi - g_lo) == pytest.approx(CLAIM.sensitivity)
    assert max(np.linalg.norm(g_lo), np.linalg.norm(g_hi)) <= CLAIM.clip
    with pytest.raises(ParameterError, match="dim"):
        GradientClaim(1.0, 1e-6, 1.0, 0)


def test_the_projection_reads_the_inputs_difference_only():
    x = np.array([[0.0, 1.0], [0.25, 1.0]])
    exact = projected_client(lambda g, rng: np.array(g), CLAIM)
    assert np.allclose(exact(x, np.random.default_rng(0)), x)  # noiseless: x back exactly
    unit = np.full(CLAIM.dim, CLAIM.dim ** -0.5)

    def orthogonal_noise(g, rng):  # noise off the direction does not enter
        noise = rng.standard_normal(np.shape(g))
        return g + noise - np.outer(noise @ unit, unit)
    assert np.allclose(projected_client(orthogonal_noise, CLAIM)(x, np.random.default_rng(1)), x)
    s = projected_client(_correct, CLAIM)(np.zeros(200_000), np.random.default_rng(2))
    assert s.std() == pytest.approx(CLAIM.scalar.sigma, rel=0.01)  # the scalar claim's sigma
    with pytest.raises(UserCodeError, match="shape"):
        projected_client(lambda g, rng: np.asarray(g)[:, :1], CLAIM)(x, np.random.default_rng(0))


def test_a_gradient_client_with_sigma_20_percent_too_small_is_caught_at_the_randomizer_level():
    """10^5 samples, seed 0: implementation-profile 0.404 > the claim's 0.334 (adjusted
    p 2e-5) and the fit; the correct client (GaussianGradient) passes (profile 0.262).
    About 2 s of CPU for both."""
    rows = audit_gradient(_too_little_noise, CLAIM, trials=100_000, level="randomizer", seed=0)
    assert {"implementation-profile", "implementation-fit"} <= {
        r["bound"] for r in failing(rows, 0.95)}
    assert all("projected onto the difference" in r["gradient_projection"] for r in rows)
    assert not failing(audit_gradient(_correct, CLAIM, trials=100_000, level="randomizer",
                                      seed=0), 0.95)


@pytest.mark.slow
def test_a_gradient_client_with_sigma_20_percent_too_small_is_caught_at_the_shuffle_level():
    """n = 2, delta = 1e-2, 3 x 10^5 trials, seed 0: implementation-shuffled 0.253 > the claim's
    own eps at the audited pair (adjusted p 4e-13); the correct client 0.176 passes. About 4 s
    of CPU for both (slow under load)."""
    rows = audit_gradient(_too_little_noise, CLAIM, trials=300_000, level="shuffle", n=2,
                          delta=(1e-2,), seed=0)
    assert "implementation-shuffled" in {r["bound"] for r in failing(rows, 0.95)}
    assert not failing(audit_gradient(_correct, CLAIM, trials=300_000, level="shuffle", n=2,
                                      delta=(1e-2,), seed=0), 0.95)


def test_an_unknown_level_is_refused_in_one_line():  # the pipeline level: test_audit_pipeline_vector
    with pytest.raises(ParameterError, match="randomizer, shuffle or pipeline level"):
        audit_gradient(_correct, CLAIM, trials=10, level="analyzer")
