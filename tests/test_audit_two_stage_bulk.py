"""The two-stage shuffle audit of an implementation in bulk (simulator/audit/two_stage_bulk.py,
issue 29): the compositions and their law, the same law as trial by trial, and its rows beside
the full audit's."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from shufflesim.simulator.audit.attacks import build_attacks
from shufflesim.simulator.audit.groups import output_groups
from shufflesim.simulator.audit.implementation import Claim, ImplementationRandomizer
from shufflesim.simulator.audit.loading import load_implementation
from shufflesim.simulator.audit.sampling import tabulate
from shufflesim.simulator.audit.shuffle_level import AuditOptions, ImplementationSampler
from shufflesim.simulator.audit.two_stage_bulk import (
    SUFFIX,
    BulkTwoStageSampler,
    audit_both,
    composition_pmf,
    compositions,
    two_stage_trials,
)

CLAIM = Claim.registered("krr", epsilon0=2.0, domain_size=4)


def krr(eps):
    def randomize(values, rng):
        values = np.asarray(values)
        keep = rng.random(values.shape) < np.exp(eps) / (np.exp(eps) + 3)
        return np.where(keep, values, (values + rng.integers(1, 4, size=values.shape)) % 4)
    return randomize


def _tested(eps):
    return ImplementationRandomizer(load_implementation(krr(eps)), CLAIM)


def test_compositions_and_their_multinomial_law():
    comps = compositions(5, 3)
    assert comps.shape == (math.comb(7, 2), 3)
    assert np.all(comps.sum(axis=1) == 5) and np.all(comps >= 0)
    assert len({tuple(c) for c in comps}) == comps.shape[0]
    ref = np.array([0.5, 0.3, 0.2])
    pmf = composition_pmf(comps, ref)
    expect = [stats.multinomial.pmf(c, 5, ref) for c in comps]
    assert np.allclose(pmf, expect)
    assert compositions(4, 1).tolist() == [[4]]
    assert compositions(10**4, 4) is None  # too many: trial by trial
    zero = composition_pmf(compositions(3, 2), np.array([1.0, 0.0]))
    assert np.allclose(zero, [0, 0, 0, 1]) or np.allclose(zero, [1, 0, 0, 0])
    assert two_stage_trials(1000, 20) == 20_000 and two_stage_trials(10**9, 10) == 10**9


def test_bulk_has_the_law_of_trial_by_trial():
    """The LR attack's binned counts in bulk and trial by trial (two-stage) agree in law:
    a two-sample chi-square over the bins does not reject (fixed seeds)."""
    tested = _tested(2.0)
    groups = output_groups(CLAIM.randomizer, 12, 0, 1, 1)
    attacks = build_attacks(groups.model, ("lr",))
    seq = np.random.SeedSequence(7)
    bulk = BulkTwoStageSampler(tested, groups, 0, 1, 1, 12)
    slow = ImplementationSampler(tested, groups, 0, 1, 1, 12, two_stage=True)
    a = tabulate(bulk, attacks, 0, 200_000, seq.spawn(1)[0], 1 << 16)[0]
    b = tabulate(slow, attacks, 0, 200_000, seq.spawn(2)[1], 1 << 16)[0]
    assert a.sum() == b.sum() == 200_000
    keep = (a + b) > 20
    table = np.vstack([a[keep], b[keep]])
    assert stats.chi2_contingency(table)[1] > 1e-3
    assert bulk.trials[0] == 200_000 and bulk.output_counts[0].sum() == 200_000


def test_audit_both_splits_the_confidence_and_names_the_two_stage_rows():
    options = AuditOptions(4000, 0.95)
    audit = audit_both(_tested(2.0), 12, (1e-6,), options, np.random.SeedSequence(1), x0=0,
                       x1=1, others=1)
    staged = [r for r in audit.rows if r.attack.endswith(SUFFIX)]
    full = [r for r in audit.rows if not r.attack.endswith(SUFFIX)]
    assert staged and full and len(staged) == len(full)
    assert staged[0].bound.trials > full[0].bound.trials  # n x the trials
    # each run at 1 - alpha / 2: a row's confidence is below the full audit's share
    alone = AuditOptions(4000, 0.975)
    assert all(r.row_confidence > 0.975 for r in audit.rows) and alone.confidence == 0.975
    assert "two-stage" in audit.note and audit.options.confidence == 0.95
    assert any("two-stage" in f.input for f in audit.fits)
