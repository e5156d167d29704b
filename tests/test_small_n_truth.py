"""The truth at small n (protocols/bounds/numerical/small_n_truth.py) as an oracle.

1. The module against an independent 50-digit mpmath brute force over the *unmerged* output
   space (every output of the randomizer, every neighbouring dataset pair, both directions).
2. Every proven upper bound of the catalogue is >= the truth's lower end and every proven
   lower bound <= its upper end, for the single-message randomizers with a categorical input
   and a finite output (fast cases here, more as slow).
"""

from __future__ import annotations

import itertools

import mpmath as mp
import numpy as np
import pytest

from shufflesim.protocols.bounds.catalogue import evaluate_many
from shufflesim.protocols.bounds.numerical import small_n_truth as snt
from shufflesim.protocols.bounds.result import BoundKind, BoundStatus
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers.registry import RANDOMIZERS

MP_DIGITS = 50  # every test here runs at this many digits (tests/conftest.py)


def _mp_matrix(randomizer):
    size = randomizer.output_size
    outputs = randomizer.outputs_from_index(np.arange(size))
    logs = randomizer.log_prob(np.arange(randomizer.input_domain.size).reshape(-1, 1),
                               outputs[None, ...])
    return [[mp.e ** mp.mpf(float(v)) for v in row] for row in logs]


def _law(rows):
    cells = len(rows[0]) if rows else 0
    law = {tuple([0] * cells): mp.mpf(1)}
    for row in rows:
        new = {}
        for h, pr in law.items():
            for y, py in enumerate(row):
                g = list(h)
                g[y] += 1
                g = tuple(g)
                new[g] = new.get(g, mp.mpf(0)) + pr * py
        law = new
    return law


def mp_truth_delta(randomizer, n: int, epsilon: float):
    """max over every pair (x0, x1), every multiset of the others and both directions."""
    m = _mp_matrix(randomizer)
    e = mp.e ** mp.mpf(epsilon)
    inputs = len(m)
    best = mp.mpf(0)
    for x0, x1 in itertools.combinations(range(inputs), 2):
        for others in itertools.combinations_with_replacement(range(inputs), n - 1):
            rows = [m[x] for x in others]
            p0, p1 = _law([*rows, m[x0]]), _law([*rows, m[x1]])
            for a, b in ((p0, p1), (p1, p0)):
                best = max(best, sum(max(a[h] - e * b.get(h, 0), 0) for h in a))
    return best


@pytest.mark.parametrize("name, params, n, epsilon", [
    ("hr", dict(epsilon0=1.0, domain_size=3), 3, 0.3),
    ("oue", dict(epsilon0=1.0, domain_size=3), 3, 0.2),
    ("rappor", dict(epsilon0=1.5, domain_size=2), 3, 0.5),
    ("subset", dict(epsilon0=1.0, domain_size=4), 3, 0.2),
    ("brr", dict(epsilon0=1.0), 6, 0.4),
])
def test_module_against_mpmath_brute_force(name, params, n, epsilon):
    randomizer = RANDOMIZERS.get(name)(**params)
    truth = mp_truth_delta(randomizer, n, epsilon)
    lower, upper = snt.small_n_truth_delta(randomizer, n, epsilon)
    assert lower <= truth * (1 + 1e-12) and truth <= upper * (1 + 1e-12)
    assert upper - lower <= 1e-9 * max(float(truth), 1e-300) + 1e-15


def _check_catalogue(name, params, n, delta):
    randomizer = RANDOMIZERS.get(name)(**params)
    lower, upper = snt.small_n_truth_epsilon(randomizer, n, delta)
    assert 0 <= lower <= upper
    for ev in evaluate_many(randomizer, n, delta):
        res = ev.result
        if res is None or res.status is not BoundStatus.PROVEN or res.epsilon is None:
            continue
        if res.kind is BoundKind.UPPER:
            assert res.epsilon >= lower * (1 - 1e-9) - 1e-12, (res.method, res.epsilon, lower)
        else:
            assert res.epsilon <= upper * (1 + 1e-9) + 1e-12, (res.method, res.epsilon, upper)


FAST = [
    ("brr", dict(epsilon0=0.5), 30, 1e-2),
    ("krr", dict(epsilon0=1.0, domain_size=3), 8, 1e-3),
    ("oue", dict(epsilon0=1.0, domain_size=3), 4, 1e-2),
    ("subset", dict(epsilon0=1.0, domain_size=4), 4, 1e-2),
]
SLOW = [
    ("hr", dict(epsilon0=0.5, domain_size=4), 5, 1e-2),
    ("rappor", dict(epsilon0=2.0, domain_size=3), 6, 1e-4),
    ("blh", dict(epsilon0=1.0, domain_size=3), 6, 1e-2),
    ("olh", dict(epsilon0=1.0, domain_size=3), 4, 1e-2),
    ("krr", dict(epsilon0=0.5, domain_size=10), 5, 1e-2),
    ("oue", dict(epsilon0=2.0, domain_size=3), 6, 1e-4),
]


@pytest.mark.parametrize("name, params, n, delta", FAST)
def test_catalogue_bounds_are_on_their_side_of_the_truth(name, params, n, delta):
    _check_catalogue(name, params, n, delta)


@pytest.mark.slow
@pytest.mark.parametrize("name, params, n, delta", SLOW)
def test_catalogue_bounds_are_on_their_side_of_the_truth_slow(name, params, n, delta):
    _check_catalogue(name, params, n, delta)


def test_refusals():
    with pytest.raises(ParameterError):
        snt.small_n_truth_epsilon(RANDOMIZERS.get("oue")(epsilon0=1.0, domain_size=8), 40, 1e-3)
    with pytest.raises(ParameterError):
        snt.merged_matrix(RANDOMIZERS.get("laplace")(epsilon0=1.0))
    with pytest.raises(ParameterError):
        snt.merged_matrix(RANDOMIZERS.get("mix_dump")(epsilon0=1.0, domain_size=4,
                                                    flip_probability=0.3, blanket_messages=2))


@pytest.mark.parametrize("name, params, n, epsilon", [
    ("krr", dict(epsilon0=1.0, domain_size=5), 4, 0.2),
    ("oue", dict(epsilon0=1.0, domain_size=3), 4, 0.2),
    ("subset", dict(epsilon0=1.0, domain_size=4), 3, 0.1),
])
def test_symmetric_reduction_matches_full_enumeration(name, params, n, epsilon):
    """The permutation-symmetric path (canonical datasets, columns merged per dataset) gives
    the same maximum as every pair and multiset over the globally merged outputs."""
    randomizer = RANDOMIZERS.get(name)(**params)
    matrix = snt.merged_matrix(randomizer)
    inputs = matrix.shape[0]
    full = max(curve.delta(epsilon)[1]
               for x0, x1 in itertools.combinations(range(inputs), 2)
               for others in itertools.combinations_with_replacement(range(inputs), n - 1)
               for curve in snt._dataset_curves(matrix, others, x0, x1, n))
    reduced = max(curve.delta(epsilon)[1] for curve in snt._symmetric_curves(randomizer, n))
    assert reduced == pytest.approx(full, rel=1e-9)


@pytest.mark.slow
def test_large_k_krr_is_feasible():
    """k-RR with k = 1024 at n = 5: a few cells per dataset; the truth lies between the proven
    bounds."""
    _check_catalogue("krr", dict(epsilon0=2.0, domain_size=1024), 5, 1e-2)
