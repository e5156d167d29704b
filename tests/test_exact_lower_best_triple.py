"""The composed ``exact-lower`` takes the best 000 Thm 14 triple, not the first (issue 31):
its eps is the largest of the triples' composed lower bounds (mirror triples once), and the
note names that triple."""

from __future__ import annotations

import pytest

from shufflesim.protocols.accounting import pairs
from shufflesim.protocols.accounting.compose import Round, compose_models, compose_rounds
from shufflesim.protocols.randomizers.brr import BinaryRR
from shufflesim.protocols.randomizers.krr import KRR


@pytest.mark.parametrize("randomizer, n, rounds, delta", [
    (KRR(epsilon0=1.0, domain_size=3), 100, 2, 1e-8),
    (BinaryRR(epsilon0=2.0), 200, 3, 1e-6),
])
def test_composed_exact_lower_is_the_best_triple(randomizer, n, rounds, delta):
    models = pairs.exact_models(randomizer)
    each = [compose_models([(m, n, rounds)], delta, "lower")[0] for m in models]
    result = compose_rounds(Round(randomizer, n, rounds), delta, "exact-lower")
    # mirror triples ((0, 1, 1) and (0, 1, 0)) are composed once: their values agree to the
    # PLD grid's asymmetry (~1e-12)
    assert result.epsilon == pytest.approx(max(each), rel=1e-9)
    assert "best: 000 Thm 14 exact pair" in result.note


def test_mixed_rounds_use_matching_candidates():
    """Rounds with different randomizers: candidate j of each (or its first); still a lower
    bound no larger than the sum of the rounds' eps0."""
    rounds = [Round(KRR(epsilon0=1.0, domain_size=3), 100, 1),
              Round(BinaryRR(epsilon0=1.0), 100, 1)]
    result = compose_rounds(rounds, 1e-6, "exact-lower")
    assert 0 < result.epsilon <= 2.0
