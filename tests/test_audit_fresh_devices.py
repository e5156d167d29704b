"""Fresh-device mode (simulator/audit/fresh_devices.py, issue 29): a client seeded at import
repeats its randomness in every fresh process and is caught; one drawing from an unseeded
global state or from the audit's generator is not."""

from __future__ import annotations

import numpy as np
import pytest

from shufflesim.protocols.errors import ParameterError
from shufflesim.simulator.audit.fresh_devices import (
    agreement_probabilities,
    device_inputs,
    tail_at_least,
)
from shufflesim.simulator.audit.implementation import Claim
from shufflesim.simulator.audit.run import audit_implementation

BODY = '''
import numpy as np
{seed}
def randomize(values, rng):
    values = np.asarray(values)
    keep = np.random.random(values.shape) < np.exp(2.0) / (np.exp(2.0) + 3)
    return np.where(keep, values, (values + np.random.randint(1, 4, size=values.shape)) % 4)
'''
CLAIM = Claim.registered("krr", epsilon0=2.0, domain_size=4)


def _fresh(tmp_path, seed_line: str, devices: int) -> dict:
    path = tmp_path / "client.py"
    path.write_text(BODY.format(seed=seed_line))
    rows = audit_implementation(f"{path}:randomize", CLAIM, trials=2000, seed=1,
                                fresh_devices=devices)
    return next(r for r in rows if r["bound"] == "implementation-fresh-devices")


def test_poisson_binomial_tail():
    q = np.array([0.5, 0.5, 0.5])
    assert tail_at_least(q, 0) == pytest.approx(1.0)
    assert tail_at_least(q, 3) == pytest.approx(0.125)
    assert tail_at_least(q, 2) == pytest.approx(0.5)
    assert tail_at_least(np.zeros(4), 1) == 0.0


def test_agreement_probabilities_of_the_claim():
    values = device_inputs(CLAIM.input_domain)
    q = agreement_probabilities(CLAIM.randomizer, values)
    p = np.exp(2.0) / (np.exp(2.0) + 3)
    assert np.allclose(q, p**2 + 3 * ((1 - p) / 3) ** 2)


def test_a_client_seeded_at_import_is_caught(tmp_path):
    row = _fresh(tmp_path, "np.random.seed(1234)", 4)
    assert row["verdict"] == "violated" and row["strength"] == "strong"
    assert "all 64 reports identical in 4 of 4 fresh devices" in row["reason"]


def test_an_unseeded_global_state_passes(tmp_path):
    row = _fresh(tmp_path, "", 2)
    assert row["verdict"] == "consistent"


def test_fresh_devices_need_an_importable_client():
    with pytest.raises(ParameterError, match="fresh"):
        audit_implementation(lambda v, rng: np.asarray(v), CLAIM, trials=2000,
                             fresh_devices=2)
