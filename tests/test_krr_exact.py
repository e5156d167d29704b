"""krr-exact / krr-exact-lower (protocols/bounds/numerical/krr_exact.py) against the truth.

The oracle is independent of the module: 50-digit mpmath over the full output histogram (all k
counts) of every neighbouring dataset pair (user 1 at 0 vs 1; every multiset of the others'
values; both directions), at small n. For k = 3 the module's count statistic is the whole
histogram, so its maximum is the truth; for k = 4 it is a lower bound.
"""

from __future__ import annotations

import itertools
import math

import mpmath as mp
import pytest

from shufflesim.protocols.bounds import catalogue as cat
from shufflesim.protocols.bounds.numerical import krr_exact as ke
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers.krr import KRR

MP_DIGITS = 50  # every test here runs at this many digits (tests/conftest.py)


def _row(epsilon0: float, k: int, x: int) -> list:
    e0 = mp.e ** mp.mpf(epsilon0)
    return [e0 / (e0 + k - 1) if y == x else 1 / (e0 + k - 1) for y in range(k)]


def _histogram_law(rows: list) -> dict:
    law = {tuple([0] * len(rows[0])): mp.mpf(1)} if rows else {}
    for row in rows:
        new: dict = {}
        for h, pr in law.items():
            for y, py in enumerate(row):
                g = list(h)
                g[y] += 1
                g = tuple(g)
                new[g] = new.get(g, mp.mpf(0)) + pr * py
        law = new
    return law


def truth_delta(epsilon: float, epsilon0: float, k: int, n: int) -> mp.mpf:
    """max over every dataset pair (user 1 at 0 vs 1, the others any multiset) and both
    directions of the hockey-stick divergence of the shuffled histogram."""
    e = mp.e ** mp.mpf(epsilon)
    best = mp.mpf(0)
    for others in itertools.combinations_with_replacement(range(k), n - 1):
        rows = [_row(epsilon0, k, x) for x in others]
        p0 = _histogram_law(rows + [_row(epsilon0, k, 0)])
        p1 = _histogram_law(rows + [_row(epsilon0, k, 1)])
        for a, b in ((p0, p1), (p1, p0)):
            d = sum(max(a[h] - e * b.get(h, 0), 0) for h in a)
            best = max(best, d)
    return best


def truth_epsilon(delta: float, epsilon0: float, k: int, n: int) -> float:
    lo, hi = 0.0, epsilon0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if truth_delta(mid, epsilon0, k, n) > delta:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _configs(n):
    return [(a, b, n - 1 - a - b) for a in range(n) for b in range(n - a)]


@pytest.mark.parametrize("epsilon0, n, epsilon", [(1.0, 4, 0.3), (2.0, 5, 0.8), (0.5, 6, 0.1)])
def test_k3_configurations_give_the_truth(epsilon0, n, epsilon):
    """k = 3: the maximum over (n0, n1, nr) of the certified brackets contains the 50-digit
    truth over every dataset pair, to 1e-6 relative (the closed-form trinomial's error
    bound, 1e-8, enters the bracket)."""
    truth = truth_delta(epsilon, epsilon0, 3, n)
    ends = [ke.config_delta(epsilon, epsilon0, 3, *c) for c in _configs(n)]
    lower = max(lo for lo, _ in ends)
    upper = max(hi for _, hi in ends)
    assert lower <= truth <= upper
    assert upper <= truth * (1 + 1e-6)


def test_k4_configurations_are_lower_bounds():
    """k = 4: every configuration's lower end is <= the truth (a post-processing of a real
    pair), and the module refuses an upper bound for k > 3."""
    epsilon0, n, epsilon = 1.0, 4, 0.2
    truth = truth_delta(epsilon, epsilon0, 4, n)
    assert max(ke.config_delta(epsilon, epsilon0, 4, *c)[0] for c in _configs(n)) <= truth
    with pytest.raises(ParameterError):
        ke.krr_exact_epsilon(KRR(epsilon0=1.0, domain_size=4), n, 1e-3)


@pytest.mark.parametrize("k, epsilon0, n, delta", [
    (3, 1.0, 5, 1e-2), (3, 2.0, 4, 1e-3),
    pytest.param(4, 1.0, 4, 1e-2, marks=pytest.mark.slow)])
def test_epsilon_brackets_the_truth(k, epsilon0, n, delta):
    truth = truth_epsilon(delta, epsilon0, k, n)
    randomizer = KRR(epsilon0=epsilon0, domain_size=k)
    lower = ke.krr_exact_lower_epsilon(randomizer, n, delta).epsilon
    assert lower <= truth * (1 + 1e-9)
    if k == 3:
        upper = ke.krr_exact_epsilon(randomizer, n, delta).epsilon
        assert upper >= truth * (1 - 1e-9)
        assert upper - lower <= 1e-6 * upper + 1e-9


def test_ordering_with_the_catalogue_bounds():
    """exact-lower <= krr-exact-lower <= krr-exact <= optimal-blanket (3-RR, n = 30)."""
    randomizer = KRR(epsilon0=1.0, domain_size=3)
    values = [cat.get_bound(name).compute(randomizer, 30, 1e-6).epsilon
              for name in ("exact-lower", "krr-exact-lower", "krr-exact", "optimal-blanket")]
    for a, b in itertools.pairwise(values):
        assert a <= b * (1 + 1e-9)
    assert values[2] <= values[1] * (1 + 1e-6)


def test_refusals():
    with pytest.raises(ParameterError):
        ke.krr_exact_epsilon(KRR(epsilon0=1.0, domain_size=3), ke.MAX_N_BLOCKS + 1, 1e-6)
    with pytest.raises(ParameterError):
        ke.krr_exact_lower_epsilon(KRR(epsilon0=1.0, domain_size=3), ke.MAX_N_CORNERS + 1, 1e-6)
    assert math.isfinite(ke.krr_exact_lower_epsilon(KRR(epsilon0=1.0, domain_size=8), 200,
                                                    1e-6).epsilon)


def test_lower_refuses_two_values_whose_third_value_pairs_would_exceed_the_truth():
    """2-RR has no value outside {x0, x1}: its "pairs with others at a third value" are no
    datasets, and their value (0.3535 at eps0 = 1, n = 200) rose above the exact truth of
    binary RR (brr-exact, 0.3182). krr-exact-lower must not apply to k = 2, and every proven
    lower bound that does apply stays below brr-exact's upper end."""
    from shufflesim.protocols.bounds import catalogue
    from shufflesim.protocols.randomizers.registry import make_randomizer

    two = make_randomizer("krr", epsilon0=1.0, domain_size=2)
    assert "krr-exact-lower" not in {spec.name for spec in catalogue.applicable_bounds(two)}
    with pytest.raises(ParameterError, match="domain_size"):
        ke.krr_exact_lower_epsilon(two, 200, 1e-6)
    truth = catalogue.evaluate("brr-exact", make_randomizer("brr", epsilon0=1.0), 200, 1e-6)
    for spec in catalogue.applicable_bounds(two):
        if spec.kind.value == "lower":
            got = catalogue.evaluate(spec.name, two, 200, 1e-6)
            if got.result is not None:
                assert got.result.epsilon <= truth.result.epsilon, spec.name
