"""``implementation-shuffled`` against the claim's own eps at the audited pair (shuffle_level.
claim_pair_epsilon, issue 29): the upper side of the engine's value for the very pair audited,
the comparison that exists when no proven shuffled bound does ((eps0, delta0) claims)."""

from __future__ import annotations

from shufflesim.simulator.audit.attacks import pair_model
from shufflesim.simulator.audit.implementation import Claim
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
