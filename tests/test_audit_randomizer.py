"""Randomizer-level audit: planted faults (a randomizer that samples with 1.3 x eps0 but declares
eps0) are caught by both the eps0 lower bound and the goodness of fit; every registered
randomizer passes (negative control) with a bound close to its declared eps0."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import (
    make_randomizer,
    randomizer_class,
    randomizer_names,
    randomizer_parameters,
)
from shufflesim.protocols.randomizers.krr import KRR
from shufflesim.protocols.randomizers.registry import example_randomizer
from shufflesim.simulator.audit.randomizer_level import (
    RandomizerAuditOptions,
    audit_inputs,
    audit_randomizer,
    chi_square_fit,
)
from shufflesim.simulator.audit.run import AuditSettings, run_audit

LaplaceBinary = randomizer_class("laplace_binary")

#: Parameters the audit sets on top of a randomizer's declared example (the metric ones are
#: audited on their declared pair; planar: the projection on its direction).
AUDIT_OVERRIDES = {
    "laplace_metric": dict(epsilon0=1.2, low=-1.0, high=1.0),
    "planar_laplace": dict(epsilon0=3.0),
    "witch_hat": dict(epsilon0=1.2, brim=0.3),
}


@dataclass(frozen=True)
class LeakyKRR(KRR):
    """Declares eps0 but samples with 1.3 eps0 (planted fault)."""

    def randomize(self, values, rng, epsilon=None):
        return KRR(1.3 * self.epsilon0, self.domain_size).randomize(values, rng, epsilon)


@dataclass(frozen=True)
class LeakyLaplace(LaplaceBinary):
    """Laplace noise of scale 1 / (1.3 eps0) declared as 1 / eps0 (planted fault)."""

    def randomize(self, values, rng, epsilon=None):
        return LaplaceBinary(1.3 * self.epsilon0).randomize(values, rng, epsilon)


@pytest.mark.parametrize("randomizer", [LeakyKRR(0.5, 2), LeakyKRR(1.0, 4), LeakyKRR(2.0, 10),
                                        LeakyLaplace(1.0)], ids=repr)
def test_planted_budget_fault_is_caught_at_default_settings(randomizer):
    audit = audit_randomizer(randomizer, RandomizerAuditOptions(trials=100_000), 7)
    assert audit.ldp_violated and audit.epsilon_lb > randomizer.epsilon0
    assert audit.epsilon_lb <= 1.3 * randomizer.epsilon0
    assert audit.fit_rejected


@pytest.mark.parametrize("name", randomizer_names())
def test_every_registered_randomizer_passes(name):
    """Negative control at confidence 0.999 (a correct randomizer is flagged by the fit with
    probability <= 0.001 and by the eps0 bound with probability <= 0.001)."""
    if "delta0" in randomizer_parameters(name):
        pytest.skip("(eps0, delta0)-LDP: no pure eps0 to audit; audited with its delta0 in "
                    "tests/test_gaussian_ldp.py")
    r = example_randomizer(name, **AUDIT_OVERRIDES.get(name, {}))
    audit = audit_randomizer(r, RandomizerAuditOptions(trials=40_000, confidence=0.999), 1)
    assert not audit.ldp_violated and not audit.fit_rejected
    assert audit.fit_p_value is not None
    assert audit.epsilon_lb >= 0.75 * r.epsilon0


def test_bound_is_tight_with_many_samples():
    r = make_randomizer("krr", epsilon0=1.0, domain_size=4)
    audit = audit_randomizer(r, RandomizerAuditOptions(trials=1_000_000), 3)
    assert 0.97 * r.epsilon0 <= audit.epsilon_lb <= r.epsilon0
    assert len(audit.pairs) == 12 and audit.pairs[0].row_confidence == pytest.approx(
        1 - 0.05 / 12)


def test_split_strategy_without_holdout():
    r = make_randomizer("krr", epsilon0=1.0, domain_size=3)
    audit = audit_randomizer(r, RandomizerAuditOptions(trials=200_000, holdout_fraction=0), 3)
    assert audit.best.bound.selection_trials == 0
    assert 0.9 * r.epsilon0 <= audit.epsilon_lb <= r.epsilon0
    with pytest.raises(ParameterError):
        audit_randomizer(make_randomizer("laplace", epsilon0=1.0),
                         RandomizerAuditOptions(trials=1000, holdout_fraction=0), 3)


def test_chi_square_fit_edge_cases():
    pmf = np.array([0.5, 0.3, 0.2, 0.0])
    stat, dof, p = chi_square_fit(np.array([500, 300, 200, 0]), pmf)
    assert stat == pytest.approx(0.0) and p == pytest.approx(1.0) and dof == 2
    assert chi_square_fit(np.array([500, 300, 199, 1]), pmf)[2] == 0.0
    # Cells of expected count < 5 are pooled.
    _, dof, _ = chi_square_fit(np.array([97, 1, 1, 1]), np.array([0.97, 0.01, 0.01, 0.01]))
    assert dof == 1


def test_inputs_and_options():
    assert audit_inputs(make_randomizer("krr", epsilon0=1.0, domain_size=5), 8) == [0, 1, 2, 3,
                                                                                    4]
    assert audit_inputs(make_randomizer("krr", epsilon0=1.0, domain_size=50), 8) == [0, 1]
    assert audit_inputs(make_randomizer("duchi", epsilon0=1.0), 8) == [-1.0, 1.0]
    for bad in (dict(trials=5), dict(trials=100, holdout_fraction=1.5),
                dict(trials=100, bins=1)):
        with pytest.raises(ParameterError):
            RandomizerAuditOptions(**bad)


def test_records_of_the_randomizer_level():
    records = run_audit(AuditSettings(trials=20_000, level="randomizer"), LeakyKRR(1.0, 3),
                        None, np.random.SeedSequence(0))
    verdicts = {r["bound"]: r for r in records if r["row_type"] == "verdict"}
    assert verdicts["declared-eps0"]["verdict"] == "violated"
    assert verdicts["goodness-of-fit"]["verdict"] == "violated"
    assert sum(r["row_type"] == "fit" for r in records) == 3
    assert sum(r["row_type"] == "attack" for r in records) == 6


# -- (eps0, delta0)-LDP randomizers (issue 15 item 4): the randomizer level at their delta0 ------
GaussianClass = randomizer_class("gaussian")


@dataclass(frozen=True)
class HalfSigmaGaussian(GaussianClass):
    """Declares the calibrated sigma but samples with half of it (planted fault)."""

    def randomize(self, values, rng, epsilon=None):
        values = self.check_values(values)
        return values + 0.5 * self.sigma * rng.standard_normal(np.shape(values))


def _verdict(records, bound):
    return next(r for r in records if r["row_type"] == "verdict" and r["bound"] == bound)


def test_gaussian_randomizer_level_gives_an_eps0_delta0_verdict():
    """run_audit at the randomizer level: the gaussian's declared pair (low, high), every row
    at its delta0, verdict declared-eps0-delta0: consistent for the calibrated sampler,
    violated (and the fit rejected) for one sampling with half its sigma."""
    settings = AuditSettings(trials=200_000, level="randomizer", confidence=0.99)
    honest = make_randomizer("gaussian", epsilon0=1.0, delta0=1e-6)
    records = run_audit(settings, honest, None, np.random.SeedSequence(4))
    attacks = [r for r in records if r["row_type"] == "attack"]
    assert {r["pair"] for r in attacks} == {"(0.0, 1.0)", "(1.0, 0.0)"}
    assert all(r["delta"] == 1e-6 for r in attacks)
    v = _verdict(records, "declared-eps0-delta0")
    assert v["verdict"] == "consistent" and v["delta"] == 1e-6
    assert 0 < v["epsilon_lb"] <= 1.0
    assert _verdict(records, "goodness-of-fit")["verdict"] == "consistent"
    leaky = HalfSigmaGaussian(1.0, 1e-6)
    records = run_audit(settings, leaky, None, np.random.SeedSequence(4))
    v = _verdict(records, "declared-eps0-delta0")
    assert v["verdict"] == "violated" and v["epsilon_lb"] > 1.0
    assert "not (eps0, delta0) = (1, 1e-06)-LDP" in v["reason"]
    assert _verdict(records, "goodness-of-fit")["verdict"] == "violated"


def test_gaussian_shuffle_and_pipeline_levels_refuse_in_one_line():
    r = make_randomizer("gaussian", epsilon0=1.0, delta0=1e-6)
    for level in ("shuffle", "pipeline"):
        with pytest.raises(ParameterError) as info:
            run_audit(AuditSettings(trials=1000, level=level, delta=1e-6), r, 100,
                      np.random.SeedSequence(0))
        assert "(eps0, delta0)-LDP" in str(info.value) and "randomizer level" in str(info.value)
