"""krr_relabel (k-RR, k >= 3: concentrated pairs dominate every configuration) against an
independent 50-digit truth.

The oracle: mpmath over the full k-count histogram of every neighbouring dataset pair at small
n (user 1 at x0 = 0 vs x1 = 1; the others n0 at 0, n1 at 1 and the rest spread over 2..k-1 in
every partition), computed by adding the users one at a time. Checked: each configuration's
upper curve is >= the truth of every dataset with its counts, spread ones included (the
theorem), in both directions; its lower curve is the concentrated dataset's exact pair; the
search's bracket contains the truth's eps(delta); for k = 3 it is krr_exact's exact curve; at
10-RR it sits at the best lower bound, below optimal-blanket.
"""

from __future__ import annotations

import mpmath as mp
import pytest

from shufflesim.protocols.bounds import catalogue as cat
from shufflesim.protocols.bounds.numerical import krr_exact as ke
from shufflesim.protocols.bounds.numerical import krr_relabel as kr
from shufflesim.protocols.bounds.numerical.small_n_truth import _partitions, small_n_truth_epsilon
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers.krr import KRR

MP_DIGITS = 50  # every test here runs at this many digits (tests/conftest.py)


def _law(epsilon0: float, k: int, values: list[int]) -> dict:
    """Histogram law (counts of 0..k-1) of k-RR users holding ``values``."""
    e0 = mp.e ** mp.mpf(epsilon0)
    law = {(0,) * k: mp.mpf(1)}
    for x in values:
        row = [e0 / (e0 + k - 1) if y == x else 1 / (e0 + k - 1) for y in range(k)]
        new: dict = {}
        for h, pr in law.items():
            for y in range(k):
                g = list(h)
                g[y] += 1
                new[tuple(g)] = new.get(tuple(g), mp.mpf(0)) + pr * row[y]
        law = new
    return law


def datasets(n: int, k: int):
    """(n0, n1, m, rest values) of every dataset up to relabelling 2..k-1."""
    for n0 in range(n):
        for n1 in range(n - n0):
            m = n - 1 - n0 - n1
            for part in _partitions(m, k - 2):
                rest = [2 + i for i, size in enumerate(part) for _ in range(size)]
                yield n0, n1, m, rest


def pair_truth(epsilon: float, epsilon0: float, k: int, others: list[int],
               direction: int = 0) -> mp.mpf:
    """D_{e^eps} of user 1 at 0 against 1 (direction 0) or 1 against 0 (direction 1)."""
    p0, p1 = _law(epsilon0, k, others + [0]), _law(epsilon0, k, others + [1])
    if direction:
        p0, p1 = p1, p0
    e = mp.e ** mp.mpf(epsilon)
    return sum(max(p0[h] - e * p1.get(h, 0), 0) for h in p0)


@pytest.mark.parametrize("k, n, epsilon0, epsilon", [
    (4, 6, 1.0, 0.3), (4, 6, 3.0, 1.4),
    pytest.param(5, 6, 2.0, 0.7, marks=pytest.mark.slow),
    pytest.param(6, 5, 1.5, 0.5, marks=pytest.mark.slow),
    pytest.param(4, 7, 2.0, 0.2, marks=pytest.mark.slow)])
def test_upper_curve_dominates_every_dataset_with_its_counts(k, n, epsilon0, epsilon):
    """The theorem: every dataset (spread rests included) is below its counts' upper curve,
    both directions (Q || P at (n0, n1) is P || Q at (n1, n0)); the lower curve is the
    concentrated dataset (rest all at 2) exactly."""
    curves = {}
    spread_checked = 0
    for n0, n1, m, rest in datasets(n, k):
        for direction in (0, 1):
            a, b = (n0, n1) if direction == 0 else (n1, n0)
            if (a, b) not in curves:
                curves[(a, b)] = kr.relabel_curves(epsilon0, k, a, b, m)
            upper_curve, lower_curve = curves[(a, b)]
            others = [0] * n0 + [1] * n1 + rest
            truth = pair_truth(epsilon, epsilon0, k, others, direction)
            assert truth <= upper_curve.delta(epsilon)[1] * (1 + 1e-12), (n0, n1, rest)
            if len(set(rest)) <= 1:
                lo, hi = lower_curve.delta(epsilon)
                assert lo <= truth <= hi
                assert hi - lo <= 1e-5 * truth + 1e-30      # REL ~ 5e-8 per entry
            else:
                spread_checked += 1
    assert spread_checked >= 10


def test_the_excess_reveal_is_charged_where_every_rest_user_may_land_in_v():
    """With a rest of one user (n0 = 0, n1 = 4, m = 1) the event s > m (more V' items than rest
    users) is likely and the upper curve, which reveals the excess uniform items there, is
    clearly above the concentrated pair's exact curve (5-RR, eps0 = 2, eps = 1.5: 0.000545
    against 0.000519); it is not silently the concentrated pair."""
    upper_curve, lower_curve = kr.relabel_curves(2.0, 5, 0, 4, 1)
    assert upper_curve.delta(1.5)[0] > 1.03 * lower_curve.delta(1.5)[1]


def truth_epsilon(epsilon0: float, k: int, n: int, delta: float) -> float:
    """eps(delta) over every dataset pair, by bisection on the 50-digit truth."""
    sets = list(datasets(n, k))

    def delta_at(eps):
        return max(pair_truth(eps, epsilon0, k, [0] * a + [1] * b + rest, d)
                   for a, b, _, rest in sets for d in (0, 1))
    lo, hi = 0.0, epsilon0
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        if delta_at(mid) <= delta:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


@pytest.mark.slow
@pytest.mark.parametrize("k, epsilon0, delta", [(4, 1.5, 1e-2), (5, 3.0, 1e-3)])
def test_search_bracket_contains_the_truth(k, epsilon0, delta):
    n = 5
    res = kr.krr_relabel_epsilon(KRR(epsilon0=epsilon0, domain_size=k), n, delta)
    truth = truth_epsilon(epsilon0, k, n, delta)
    assert res.epsilon - res.epsilon_error - 1e-7 <= truth <= res.epsilon + 1e-7
    assert res.epsilon_error <= 1e-3 * res.epsilon


@pytest.mark.parametrize("k, n, epsilon0, delta", [
    (4, 6, 1.0, 1e-3), (10, 7, 1.0, 1e-4), (5, 6, 3.0, 1e-6)])
def test_bracket_meets_the_small_n_truth_module(k, n, epsilon0, delta):
    """The same truth by the project's small-n module (every dataset, merged outputs,
    certified): krr-relabel's bracket overlaps it and is within 1e-5 of it."""
    r = KRR(epsilon0=epsilon0, domain_size=k)
    lo, hi = small_n_truth_epsilon(r, n, delta)
    res = kr.krr_relabel_epsilon(r, n, delta)
    assert res.epsilon >= lo and res.epsilon - res.epsilon_error <= hi
    assert res.epsilon <= hi * (1 + 1e-5)


@pytest.mark.parametrize("epsilon0, delta, n", [
    (3.0, 1e-8, 10), pytest.param(1.0, 1e-6, 30, marks=pytest.mark.slow),
    pytest.param(3.0, 1e-8, 30, marks=pytest.mark.slow)])
def test_three_rr_is_krr_exact(epsilon0, delta, n):
    ours = kr.krr_relabel_epsilon(KRR(epsilon0=epsilon0, domain_size=3), n, delta)
    exact = ke.krr_exact_epsilon(KRR(epsilon0=epsilon0, domain_size=3), n, delta)
    assert ours.epsilon == pytest.approx(exact.epsilon, rel=1e-5)


@pytest.mark.slow
def test_ten_rr_between_the_lower_bounds_and_the_blanket():
    """10-RR, n = 40: every proven lower bound <= krr-relabel <= optimal-blanket, and
    krr-relabel within 0.1 % of the best lower bound (its own concentrated pair)."""
    r = KRR(epsilon0=1.0, domain_size=10)
    n, delta = 40, 1e-10
    ours = kr.krr_relabel_epsilon(r, n, delta)
    lowers = [cat.evaluate(name, r, n, delta).result
              for name in ("exact-lower", "krr-exact-lower")]
    blanket = cat.evaluate("optimal-blanket", r, n, delta).result
    for low in lowers:
        assert low.epsilon <= ours.epsilon
    assert ours.epsilon < blanket.epsilon
    assert ours.epsilon - ours.epsilon_error >= max(low.epsilon for low in lowers) * (1 - 1e-5)
    assert ours.epsilon_error <= 1e-3 * ours.epsilon


def test_refusals():
    with pytest.raises(ParameterError, match="n"):
        kr.krr_relabel_epsilon(KRR(epsilon0=1.0, domain_size=10), kr.MAX_N + 1, 1e-6)
    with pytest.raises(ParameterError, match="domain_size"):
        kr.krr_relabel_epsilon(KRR(epsilon0=1.0, domain_size=2), 10, 1e-6)


def test_catalogue_declares_it_for_k_at_least_four_up_to_its_limit():
    names = {spec.name for spec in cat.applicable_bounds(KRR(epsilon0=1.0, domain_size=4))}
    assert "krr-relabel" in names
    three = {spec.name for spec in cat.applicable_bounds(KRR(epsilon0=1.0, domain_size=3))}
    assert "krr-relabel" not in three            # k = 3: krr-exact, which it equals
    ev = cat.evaluate("krr-relabel", KRR(epsilon0=1.0, domain_size=10), 12, 1e-6)
    assert ev.ok and ev.result.epsilon <= 1.0
    refused = cat.evaluate("krr-relabel", KRR(epsilon0=1.0, domain_size=10),
                           kr.CATALOGUE_MAX_N + 1, 1e-6)
    assert not refused.ok and refused.error.startswith(f"n = {kr.CATALOGUE_MAX_N + 1}")


def test_result_contract_and_monotonicity():
    """The BoundResult contract (name, kind, status, delta, a non-negative error) and the
    orders any privacy bound keeps: smaller at larger delta, larger at larger eps0, and never
    above eps0."""
    def eps(epsilon0, delta, n=12):
        res = kr.krr_relabel_epsilon(KRR(epsilon0=epsilon0, domain_size=5), n, delta)
        assert (res.method, res.kind.value, res.status.value) == ("krr-relabel", "upper", "proven")
        assert res.delta == delta and 0 <= res.epsilon_error <= 1e-4 * max(res.epsilon, 1e-9)
        assert res.epsilon <= epsilon0
        return res.epsilon
    assert eps(1.0, 1e-3) < eps(1.0, 1e-6) < eps(1.0, 1e-9)
    assert eps(0.5, 1e-6) < eps(1.0, 1e-6) < eps(2.0, 1e-6)
