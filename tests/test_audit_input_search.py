"""Worst-case inputs at the shuffle level (simulator/audit/input_search.py, issue 29): a client
running k-RR above its claimed eps0 is caught by ``implementation-shuffled`` with default
flags (no --x0/--x1/--x2), and the choice spends no confidence."""

from __future__ import annotations

import numpy as np
import pytest

from shufflesim.simulator.audit.implementation import Claim
from shufflesim.simulator.audit.input_search import candidates, pilot_trials
from shufflesim.simulator.audit.run import audit_implementation
from shufflesim.simulator.audit.sampling import child


def krr(eps):
    def randomize(values, rng):
        values = np.asarray(values)
        keep = rng.random(values.shape) < np.exp(eps) / (np.exp(eps) + 3)
        return np.where(keep, values, (values + rng.integers(1, 4, size=values.shape)) % 4)
    return randomize


CLAIM = Claim.registered("krr", epsilon0=2.0, domain_size=4)


def _shuffled(client, trials, seed=0):
    rows = audit_implementation(client, CLAIM, trials=trials, level="shuffle", n=20,
                                delta=(1e-6,), seed=seed)
    return {r["bound"]: r for r in rows if r["row_type"] == "verdict"}


def test_candidates_start_with_the_claims_worst_case():
    seq = np.random.SeedSequence(0)
    cands = candidates(CLAIM.randomizer, 20, 1e-6, seq)
    assert (cands[0].x0, cands[0].x1, cands[0].others) == (0, 1, 1)
    assert np.ndim(cands[1].others) == 1  # the coverage default
    assert len(cands) >= 3
    again = candidates(CLAIM.randomizer, 20, 1e-6, np.random.SeedSequence(0))
    assert [c.label for c in again] == [c.label for c in cands]  # seeded
    assert pilot_trials(100, 4) == 0 and pilot_trials(100_000, 4) == 5000
    assert child(seq, 1) is not None


def test_a_client_at_1_3x_its_eps0_is_caught_with_default_flags():
    found = _shuffled(krr(2.6), 100_000)["implementation-shuffled"]
    assert found["verdict"] == "violated", found["reason"]
    assert "inputs searched" in found["note"] and "chosen" in found["note"]


def test_a_correct_client_passes_the_search():
    found = _shuffled(krr(2.0), 40_000)
    assert found["implementation-shuffled"]["verdict"] == "consistent"
    assert found["implementation-fit"]["verdict"] == "consistent"


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 3])
def test_a_client_at_1_1x_its_eps0_is_caught_with_default_flags(seed):
    """1.1 x (true 2.2 against the claim's 2.0 at n = 20, proven bound 1.999): the full audit
    alone gave eps_lb 1.985 at 10^6 trials; with the two-stage run in bulk beside it (2 x 10^7
    trials per world for the same calls of the code), the pilots' two-stage scores and the
    catalogue's nested thresholds counted once (grading.py), eps_lb 2.09-2.15 at 10^6 trials,
    Holm-adjusted p < 1e-5 on seeds 0, 1, 3-6 (about 4-5 s of CPU each). Seeds 1 and 3 chose a
    sampled triple before the pilots' margin (input_search.MARGIN)."""
    found = _shuffled(krr(2.2), 1_000_000, seed)["implementation-shuffled"]
    assert found["verdict"] == "violated", found["reason"]
    assert found["adjusted_p_value"] < 0.05 and "two-stage" in found["note"]


@pytest.mark.slow
def test_pipeline_level_catches_a_client_at_1_3x_with_default_flags():
    """The pipeline level's search (worst case vs the others cycling through the domain):
    eps_lb 2.225 > 1.999 at 10^5 trials (about 1 s of CPU). At 2 x 10^4 (1.5-1.86 over 5
    seeds) the best tail event's sampling limit at the 14,400 evaluation trials is 1.85-2.03,
    so 2 x 10^4 cannot be relied on (session 9's 2.22 there was a fluctuation)."""
    rows = audit_implementation(krr(2.6), CLAIM, trials=100_000, level="pipeline", n=20,
                                delta=(1e-6,), seed=0)
    found = {r["bound"]: r for r in rows if r["row_type"] == "verdict"}
    assert found["implementation-shuffled"]["verdict"] == "violated"
    assert "chosen: worst case" in found["implementation-shuffled"]["note"]


def test_pipeline_search_keeps_the_coverage_fit():
    rows = audit_implementation(krr(2.0), CLAIM, trials=1000, level="pipeline", n=12,
                                delta=(1e-6,), seed=1)
    fits = [r for r in rows if r["row_type"] == "fit"]
    assert any("others cycle" in str(r["pair"]) for r in fits) or len(fits) == 2
    found = {r["bound"]: r for r in rows if r["row_type"] == "verdict"}
    assert found["implementation-shuffled"]["verdict"] == "consistent"
