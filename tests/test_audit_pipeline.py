"""Pipeline-level audit: a shuffler that does not permute is caught (empirical eps_lb above the
proven upper bound), a correct pipeline is not, and the pipeline's histogram statistic has the
law of the shuffle-level sampler."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.simulator.audit.attacks import LikelihoodRatioAttack
from shufflesim.simulator.audit.pipeline_batch import audit_shuffle_release, draw_rounds
from shufflesim.simulator.audit.pipeline_level import (
    audit_pipeline,
    identity_permutation,
    output_groups,
    release_statistics,
    shuffled_size,
)
from shufflesim.simulator.audit.run import AuditSettings, run_audit
from shufflesim.simulator.audit.sampling import HistogramSampler, tabulate
from shufflesim.simulator.audit.shuffle_level import AuditOptions
from shufflesim.simulator.pipeline import PipelineConfig

BINARY = make_randomizer("krr", epsilon0=2.0, domain_size=2)


def _verdicts(records):
    return {r["bound"]: r for r in records if r["row_type"] == "verdict"}


def test_non_permuting_shuffler_is_caught_at_default_settings():
    settings = AuditSettings(trials=1000, level="pipeline", delta=(1e-6,), permute=False,
                             bounds=("optimal-blanket", "fmt21_numerical"))
    records = run_audit(settings, BINARY, 500, np.random.SeedSequence(1))
    order = [r for r in records if r["row_type"] == "attack" and r["attack"] == "order"]
    assert max(r["epsilon_lb"] for r in order) > 1.5  # near eps0 = 2: user 1's own report
    verdicts = _verdicts(records)
    for name in ("optimal-blanket", "fmt21_numerical"):
        assert verdicts[name]["bound_status"] == "proven"
        assert verdicts[name]["verdict"] == "violated"
        assert "empirical lower bound" in verdicts[name]["reason"]
    assert verdicts["exact-lower"]["verdict"] == "reference"


def test_correct_pipeline_is_consistent():
    settings = AuditSettings(trials=1000, level="pipeline", delta=(1e-6,),
                             bounds=("optimal-blanket",))
    records = run_audit(settings, BINARY, 500, np.random.SeedSequence(1))
    order = [r for r in records if r["row_type"] == "attack" and r["attack"] == "order"]
    assert max(r["epsilon_lb"] for r in order) < 0.5
    assert _verdicts(records)["optimal-blanket"]["verdict"] == "consistent"
    for r in records:
        if r["row_type"] == "attack":
            assert r["epsilon_lb"] <= r["exact_lower"]


def test_fixed_size_batches_and_the_order_attack():
    """With batches of 100 the exact value (and the verdicts) use n = 100; a non-permuting
    shuffler is still caught by the order attack."""
    config = PipelineConfig(batch_size=100)
    assert shuffled_size(300, config) == 100 and shuffled_size(300, None) == 300
    audit = audit_pipeline(BINARY, 300, 1e-3, AuditOptions(trials=600, attacks=("order",)), 4,
                           x0=0, x1=1, x2=1, config=config, permutation=identity_permutation)
    assert audit.epsilon_lb(1e-3) > 1.4
    assert audit.exact[1e-3] < audit.epsilon_lb(1e-3)  # a true shuffler of 100 stays below


def test_pipeline_histogram_has_the_law_of_the_shuffle_sampler():
    """Two-sample chi-square (significance 1e-4, fixed seeds) of the LR statistic: pipeline
    rounds against the shuffle-level histogram sampler, k-RR with 4 values."""
    r = make_randomizer("krr", epsilon0=1.0, domain_size=4)
    n, rounds = 30, 3000
    groups = output_groups(r, n, 0, 1, 2)
    attack = LikelihoodRatioAttack(groups.model, resolution=64)
    values = np.full(n, 2)
    values[0] = 0
    drawn = draw_rounds(r, values, PipelineConfig(), rounds, np.random.default_rng(3))
    hist, order = release_statistics(audit_shuffle_release(drawn, np.random.default_rng(4)),
                                     drawn.user_rank(0), groups, r)
    assert (hist.sum(axis=1) == n).all() and order.shape == (rounds,)
    from shufflesim.simulator.audit.attacks import HistogramChunk

    pipe = np.bincount(attack.bin(HistogramChunk(n, hist)), minlength=attack.bins)
    (fast,) = tabulate(HistogramSampler(groups.model), [attack], 0, 20_000,
                       np.random.SeedSequence(8))
    used = (pipe + fast) > 0
    assert stats.chi2_contingency(np.vstack([pipe[used], fast[used]])).pvalue > 1e-4


def test_pipeline_level_needs_a_fixed_x2():
    with pytest.raises(Exception, match="fixed x2"):
        audit_pipeline(BINARY, 20, 1e-3, AuditOptions(trials=100), 0, x0=0, x1=1,
                       x2=np.array([0.5, 0.5]))
