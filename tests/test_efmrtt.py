"""EFMRTT19 closed form: eps = 12 eps0 sqrt(log(1/delta)/n) in its regime (eps0 <= 1/2,
n >= 1000, delta <= 1/100)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_clones import exact_epsilon, hockey_stick, krr_pmf, shuffled_pair

from shufflesim.protocols.bounds.closed_form import efmrtt
from shufflesim.protocols.bounds.result import BoundKind, BoundStatus
from shufflesim.protocols.errors import ParameterError


def test_formula_at_odd_parameters():
    res = efmrtt.efmrtt19_epsilon(0.37, 12_345, 3e-4)
    expected = 12 * 0.37 * math.sqrt(math.log(1 / 3e-4) / 12_345)
    assert expected <= res.epsilon <= expected * (1 + 1e-11)
    assert res.kind is BoundKind.UPPER and res.status is BoundStatus.PROVEN
    assert res.method == "efmrtt19" and res.delta == 3e-4


def test_delta_form_inverts_epsilon_form():
    for eps0, n, delta in ((0.5, 1000, 0.01), (0.1, 10**6, 1e-9), (0.25, 54_321, 2e-5)):
        eps = efmrtt.efmrtt19_epsilon(eps0, n, delta).epsilon
        assert efmrtt.efmrtt19_delta(eps, eps0, n) == pytest.approx(delta, rel=1e-9)
        assert efmrtt.efmrtt19_delta(1.01 * eps, eps0, n) < delta


@pytest.mark.parametrize("eps0,delta", [(0.5, 0.01), (0.3, 1e-3), (0.1, 0.005)])
def test_dominates_exact_binary_rr(eps0, delta):
    """Exact shuffled binary RR (both choices of the other users' common value), n = 1000."""
    n = 1000
    pmf = krr_pmf(eps0, 2)
    pairs = [shuffled_pair(pmf, 0, 1, x2, n) for x2 in (0, 1)]
    exact = max(exact_epsilon(p0, p1, delta, eps0)[0] for p0, p1 in pairs)
    bound = efmrtt.efmrtt19_epsilon(eps0, n, delta).epsilon
    assert bound >= exact
    for eps in (bound, 1.2 * bound, 2 * bound):  # delta form stays inside delta <= 1/100
        assert max(hockey_stick(p0, p1, eps) for p0, p1 in pairs) <= \
            efmrtt.efmrtt19_delta(eps, eps0, n)


def test_dominates_exact_random_binary_output_randomizers():
    rng = np.random.default_rng(3)
    n = 1000
    for _ in range(3):
        pmf = rng.dirichlet(np.ones(2), size=3) * 0.2 + 0.4  # mild, binary outputs
        eps0 = float(np.max(np.log(pmf[:, None, :] / pmf[None, :, :])))
        assert eps0 <= 0.5
        bound = efmrtt.efmrtt19_epsilon(eps0, n, 1e-3).epsilon
        for a in range(3):
            for b in range(3):
                if a == b:
                    continue
                for c in range(3):
                    p0, p1 = shuffled_pair(pmf, a, b, c, n)
                    assert hockey_stick(p0, p1, bound) <= 1e-3


def test_monotone_in_n_and_eps0():
    eps0s = [0.05, 0.1, 0.2, 0.35, 0.5]
    ns = [1000, 5000, 20_000, 10**6]
    vals = np.array([[efmrtt.efmrtt19_epsilon(e0, n, 1e-6).epsilon for n in ns] for e0 in eps0s])
    assert np.all(np.diff(vals, axis=0) > 0)
    assert np.all(np.diff(vals, axis=1) < 0)


@pytest.mark.parametrize("args,field", [
    ((0.51, 1000, 1e-3), "epsilon0"),
    ((0.5, 999, 1e-3), "n"),
    ((0.5, 1000, 0.02), "delta"),
    ((0.0, 1000, 1e-3), "epsilon0"),
    ((0.3, 1000, 0.0), "delta"),
])
def test_regime_errors(args, field):
    with pytest.raises(ParameterError) as err:
        efmrtt.efmrtt19_epsilon(*args)
    assert err.value.field == field
    assert str(args[{"epsilon0": 0, "n": 1, "delta": 2}[field]]) in str(err.value)


def test_delta_form_regime():
    with pytest.raises(ParameterError) as err:
        efmrtt.efmrtt19_delta(0.001, 0.5, 1000)  # delta would be ~1: outside delta <= 1/100
    assert err.value.field == "epsilon"
    with pytest.raises(ParameterError) as err:
        efmrtt.efmrtt19_delta(0.1, 0.6, 1000)
    assert err.value.field == "epsilon0"
