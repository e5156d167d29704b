"""Verdicts: a planted bound at half the exact value is violated; correct implementations raise
no empirical violation of a proven bound over 50+ seeds; the verdict logic itself."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from shufflesim.protocols.bounds.catalogue import (
    BoundEvaluation,
    BoundSpec,
    evaluate_many,
    get_bound,
)
from shufflesim.protocols.bounds.numerical.optimal import exact_lower_epsilon
from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.bounds.spec import BOUNDS, any_ldp
from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.simulator.audit.run import AuditSettings, run_audit
from shufflesim.simulator.audit.shuffle_level import AuditOptions, audit_shuffle
from shufflesim.simulator.audit.verdicts import (
    CONSISTENT,
    NOT_EVALUATED,
    REFERENCE,
    VIOLATED,
    bound_verdicts,
    judge,
)

PLANTED = "planted-half-exact"


def _half_exact(randomizer, n, delta):
    exact = exact_lower_epsilon(randomizer, n, delta)
    return BoundResult(PLANTED, BoundKind.UPPER, exact.epsilon / 2, delta, 0.0,
                       BoundStatus.PROVEN, "test double")


@pytest.fixture
def planted_bound(monkeypatch):
    spec = BoundSpec(PLANTED, BoundKind.UPPER, "test double: half the exact lower bound",
                     BoundStatus.PROVEN, "any", any_ldp, _half_exact)
    monkeypatch.setitem(BOUNDS._items, PLANTED, spec)
    return spec


def test_planted_half_exact_bound_is_violated(planted_bound):
    r = make_randomizer("krr", epsilon0=2.0, domain_size=3)
    records = run_audit(AuditSettings(trials=20_000, delta=(1e-3,)), r, 50,
                        np.random.SeedSequence(0))
    verdicts = {v["bound"]: v for v in records if v["row_type"] == "verdict"}
    assert PLANTED in verdicts  # registered bounds are all audited by default
    planted = verdicts[PLANTED]
    assert planted["verdict"] == VIOLATED
    assert planted["tightness"] == pytest.approx(0.5, rel=1e-3)
    assert "exact lower bound" in planted["reason"]
    assert verdicts["optimal-blanket"]["verdict"] == CONSISTENT


#: Small settings for the false-alarm check: (k, n, eps0, delta, neighbour triple).
SETTINGS = [(2, 20, 2.0, 1e-3, (0, 1, 1)), (4, 30, 2.0, 1e-3, (0, 1, 2)),
            (2, 100, 3.0, 1e-2, (0, 1, 1))]


@pytest.mark.parametrize("k, n, eps0, delta, triple", SETTINGS)
def test_no_false_alarm_on_proven_bounds_over_50_seeds(k, n, eps0, delta, triple):
    """Correct k-RR: across 50 seeds the empirical bound (confidence 0.95) never violates a
    proven bound. Bounds are evaluated once per setting and judged against each seed."""
    r = make_randomizer("krr", epsilon0=eps0, domain_size=k)
    evaluations = evaluate_many(r, n, delta)
    exact = next(e for e in evaluations if e.spec.name == "exact-lower").result.epsilon
    proven = [e.spec.name for e in evaluations if e.ok and e.spec.kind is BoundKind.UPPER
              and e.status_label == BoundStatus.PROVEN.value]
    assert "optimal-blanket" in proven
    for seed in range(50):
        audit = audit_shuffle(r, n, delta, AuditOptions(trials=10_000), seed, x0=triple[0],
                              x1=triple[1], others=triple[2], with_exact=False)
        lb = audit.epsilon_lb(delta)
        for v in judge(evaluations, exact, lb, 0.95):
            if v.bound in proven:
                assert v.verdict == CONSISTENT, (seed, v)


def test_judge_logic():
    upper = get_bound("optimal-blanket")
    lower = get_bound("variation-ratio-lower")
    exact = get_bound("exact-lower")
    approx = get_bound("gspa-gdp")

    def ev(spec, eps, status=BoundStatus.PROVEN):
        return BoundEvaluation(spec, 100, 1e-6, BoundResult(spec.name, spec.kind, eps, 1e-6,
                                                             1e-6, status, spec.reference))

    evaluations = [ev(upper, 1.0), ev(exact, 0.8), ev(lower, 1.2),
                   ev(approx, 0.7, BoundStatus.APPROXIMATE),
                   BoundEvaluation(get_bound("efmrtt19"), 100, 1e-6, error="outside regime")]
    out = {v.bound: v for v in judge(evaluations, 0.8, 0.95, 0.95)}
    assert out["optimal-blanket"].verdict == CONSISTENT
    assert out["optimal-blanket"].tightness == pytest.approx(1.25)
    assert out["exact-lower"].verdict == REFERENCE
    assert out["variation-ratio-lower"].verdict == VIOLATED  # above a proven upper bound
    assert "optimal-blanket" in out["variation-ratio-lower"].reason
    assert out["gspa-gdp"].verdict == VIOLATED
    assert "exact lower bound" in out["gspa-gdp"].reason
    assert "empirical lower bound 0.95" in out["gspa-gdp"].reason
    assert out["efmrtt19"].verdict == NOT_EVALUATED and out["efmrtt19"].reason == "outside regime"
    # Only the empirical bound above: violated, and the reason says at which confidence.
    out = {v.bound: v for v in judge(evaluations[:2], 0.8, 1.01, 0.9)}
    assert out["optimal-blanket"].verdict == VIOLATED
    assert "confidence 0.9" in out["optimal-blanket"].reason
    # Equal within floating-point rounding is not a violation.
    same = [dataclasses.replace(evaluations[0])]
    assert judge(same, 1.0 * (1 + 1e-12), None, None)[0].verdict == CONSISTENT


def test_stronger_clone_bound_is_caught_by_the_exact_lower_bound():
    """000 Sec. 3.3: bounds resting on the stronger-clone reduction can fall below the exact
    value. The auditor finds it for the variation-ratio bound (001) on 4-RR, eps0 = 2, n = 100,
    delta = 1e-6 (exact 1.2587 > 1.2413; see the closing note of the audit scenario)."""
    r = make_randomizer("krr", epsilon0=2.0, domain_size=4)
    out = {v.bound: v for v in bound_verdicts(r, 100, 1e-6,
                                              names=["variation-ratio", "optimal-blanket"])}
    assert out["variation-ratio"].verdict == VIOLATED
    assert out["variation-ratio"].status == BoundStatus.STRONGER_CLONE.value
    assert out["optimal-blanket"].verdict == CONSISTENT
