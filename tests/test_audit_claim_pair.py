"""``implementation-shuffled`` against the claim's own eps at the audited pair (shuffle_level.
claim_pair_epsilon, issue 29): the upper side of the engine's value for the very pair audited,
the comparison that exists when no proven shuffled bound does ((eps0, delta0) claims)."""

from __future__ import annotations

import numpy as np
import pytest

from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.simulator.audit.attacks import pair_model
from shufflesim.simulator.audit.grading import failing
from shufflesim.simulator.audit.implementation import Claim
from shufflesim.simulator.audit.run import audit_implementation
from shufflesim.simulator.audit.shuffle_level import claim_pair_epsilon, exact_by_direction
from shufflesim.simulator.audit.verdicts import NOT_EVALUATED, VIOLATED, shuffled_verdict

CLAIM = Claim.registered("krr", epsilon0=2.0, domain_size=4)


def test_claim_pair_is_the_upper_side_of_the_pairs_exact_value():
    model = pair_model(CLAIM.randomizer, 20, 0, 1, 1)
    upper = claim_pair_epsilon(model, 1e-6)
    lower = max(e for e, _ in exact_by_direction(model, 1e-6))
    assert lower <= upper <= lower + 1e-6
    assert 1.99 < upper <= 2.0  # eps0 = 2 at n = 20: little amplification at delta = 1e-6
    weaker = claim_pair_epsilon(pair_model(CLAIM.randomizer, 20, 3, 0, 2), 1e-6)
    assert weaker < upper  # a pair the claim does not single out


def test_shuffled_verdict_without_a_proven_bound_uses_the_claim_pair():
    none = shuffled_verdict(0.3, 0.95, [], "gaussian", 50, 1e-3, "here")
    assert none.verdict == NOT_EVALUATED
    found = shuffled_verdict(0.3, 0.95, [], "gaussian", 50, 1e-3, "here", claim_pair=0.2)
    assert found.verdict == VIOLATED and found.bound_epsilon == 0.2
    assert "own eps at the audited pair" in found.sentence
    below = shuffled_verdict(0.1, 0.95, [], "gaussian", 50, 1e-3, "here", claim_pair=0.2)
    assert below.verdict == "consistent"


def _gaussian_client(sigma):
    def randomize(values, rng):
        values = np.asarray(values, dtype=float)
        return values + rng.normal(0.0, sigma, size=values.shape)
    return randomize


def test_a_gaussian_client_with_sigma_20_percent_too_small_is_caught_after_shuffling():
    """(1, 1e-6) Gaussian claim, n = 2, delta = 0.01, 3 x 10^5 trials (about 1 s of CPU): no
    proven shuffled bound applies; eps_lb 0.251 > the claim's own 0.205 at the audited pair
    (binned), adjusted p 2e-11 (seed 0). The correct client stays below it."""
    gauss = make_randomizer("gaussian", epsilon0=1.0, delta0=1e-6)
    claim = Claim(gauss, delta0=1e-6)

    def verdicts(sigma):
        rows = audit_implementation(_gaussian_client(sigma), claim, trials=300_000,
                                    level="shuffle", n=2, delta=(1e-2,), seed=0)
        return rows, {r["bound"]: r for r in rows if r["row_type"] == "verdict"}

    rows, bad = verdicts(0.8 * gauss.sigma)
    found = bad["implementation-shuffled"]
    assert found["verdict"] == "violated", found["reason"]
    assert "own eps at the audited pair" in found["reason"]
    assert "implementation-shuffled" in {r["bound"] for r in failing(rows, 0.95)}
    rows, good = verdicts(gauss.sigma)
    assert good["implementation-shuffled"]["verdict"] == "consistent"
    assert not failing(rows, 0.95)


@pytest.mark.slow
def test_correct_gaussian_clients_pass_the_shuffle_level_over_50_seeds():
    """False-violation rate within alpha = 0.05 over 50 seeds (n = 2, delta = 0.01, 2 x 10^4
    trials; Holm over each run's rows): at most 6 of 50 (P[Binomial(50, 0.05) >= 7] < 0.012)."""
    gauss = make_randomizer("gaussian", epsilon0=1.0, delta0=1e-6)
    claim = Claim(gauss, delta0=1e-6)
    client = _gaussian_client(gauss.sigma)
    false = sum(bool(failing(audit_implementation(client, claim, trials=20_000, level="shuffle",
                                                  n=2, delta=(1e-2,), seed=s), 0.95))
                for s in range(50))
    assert false <= 6
