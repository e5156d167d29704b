"""Atoms in continuous reports (simulator/audit/atoms.py, issue 29): a Laplace client that
sends its raw input in 1 of 1000 reports is caught at the randomizer level; a correct one
passes."""

from __future__ import annotations

import numpy as np

from shufflesim.simulator.audit.atoms import atom_count
from shufflesim.simulator.audit.implementation import Claim
from shufflesim.simulator.audit.run import audit_implementation

CLAIM = Claim.registered("laplace", epsilon0=1.0)


def laplace(values, rng):
    values = np.asarray(values, dtype=float)
    return values + rng.laplace(0.0, 1.0, size=values.shape)


def leaky(values, rng):
    out = laplace(values, rng)
    return np.where(rng.random(out.shape) < 1e-3, np.asarray(values, dtype=float), out)


def _atoms(client):
    rows = audit_implementation(client, CLAIM, trials=20_000, seed=4)
    return next(r for r in rows if r["bound"] == "implementation-atoms")


def test_atom_count():
    assert atom_count(np.array([0.5, 0.25, 0.5, 0.1]), 0.1) == (2, 1)
    assert atom_count(np.array([[0.1, 0.2], [0.1, 0.2], [0.3, 0.4]]), 0.4) == (2, 1)


def test_a_client_leaking_its_input_in_1_of_1000_reports_is_caught():
    row = _atoms(leaky)
    assert row["verdict"] == "violated" and row["strength"] == "strong"
    assert "equal to the input" in row["reason"]


def test_a_correct_laplace_client_has_no_atoms():
    assert _atoms(laplace)["verdict"] == "consistent"
