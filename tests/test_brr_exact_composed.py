"""Composed binary RR from the exact curve (protocols/accounting/brr_exact_pld.py).

Oracles (60-digit mpmath, every neighbouring dataset pair by enumeration):
* the one-round dominating PLD's delta is >= the truth at every eps in [-eps0, eps0];
* two rounds: the composed upper bound is >= the worst product pair over every choice of
  (k, direction) per round, and the composed lower bound is <= the worst same-pair product.
"""

from __future__ import annotations

import itertools

import mpmath as mp
import pytest

from shufflesim.protocols.accounting import brr_exact_pld as bp
from shufflesim.protocols.accounting.compose import Round, compose_rounds
from shufflesim.protocols.randomizers.brr import BinaryRR

MP_DIGITS = 60  # every test here runs at this many digits (tests/conftest.py)


def _pairs(epsilon0: float, n: int) -> list[tuple[list, list]]:
    """Every ordered neighbouring pair's (P, Q) laws of the count of ones."""
    p = mp.e ** mp.mpf(epsilon0) / (1 + mp.e ** mp.mpf(epsilon0))

    def binomial(m, q):
        return [mp.binomial(m, j) * q**j * (1 - q) ** (m - j) for j in range(m + 1)]

    def conv(a, b):
        out = [mp.mpf(0)] * (len(a) + len(b) - 1)
        for i, x in enumerate(a):
            for j, y in enumerate(b):
                out[i + j] += x * y
        return out

    out = []
    for k in range(n):
        z = conv(binomial(k, p), binomial(n - 1 - k, 1 - p))
        one, zero = conv(z, [1 - p, p]), conv(z, [p, 1 - p])
        out += [(one, zero), (zero, one)]
    return out


def _hockey(pq, epsilon) -> mp.mpf:
    e = mp.e ** mp.mpf(epsilon)
    return sum(max(a - e * b, 0) for a, b in zip(*pq, strict=True))


def _product(pq1, pq2):
    return ([a * c for a in pq1[0] for c in pq2[0]], [b * d for b in pq1[1] for d in pq2[1]])


@pytest.mark.parametrize("epsilon0,n", [(1.5, 6), (4.0, 5), (0.4, 8)])
def test_dominating_pld_is_above_the_truth(epsilon0, n):
    pld = bp.dominating_pld(epsilon0, n, 0.01)
    pairs = _pairs(epsilon0, n)
    for i in range(-20, 21):
        eps = epsilon0 * i / 20
        truth = max(_hockey(pq, eps) for pq in pairs)
        assert pld.get_delta_for_epsilon(eps) >= float(truth) * (1 - 1e-12) - 1e-15, (eps, truth)


def test_two_rounds_against_every_product_pair():
    epsilon0, n = 1.0, 4
    pairs = _pairs(epsilon0, n)
    rounds = Round(BinaryRR(epsilon0=epsilon0), n, 2)
    for delta in (0.3, 0.05):
        upper = bp.brr_exact_upper_composed(rounds, delta, step=0.005).epsilon
        lower = bp.brr_exact_lower_composed(rounds, delta, step=0.001).epsilon
        assert _worst(pairs, itertools.product(pairs, pairs), delta) <= upper + 1e-9
        assert lower <= _worst(pairs, ((pq, pq) for pq in pairs), delta) + 1e-9


def _worst(pairs, combos, delta) -> float:
    """max over the pairs of products of the smallest eps with delta(eps) <= delta."""
    best = 0.0
    for pq1, pq2 in combos:
        prod = _product(pq1, pq2)
        lo, hi = 0.0, 2.0
        for _ in range(40):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if _hockey(prod, mid) > delta else (lo, mid)
        best = max(best, hi)
    return best


def test_registered_and_one_round_matches_the_single_round_bound():
    r = BinaryRR(epsilon0=2.0)
    composed = compose_rounds(Round(r, 60, 1), 1e-5, "brr-exact").epsilon
    lower = compose_rounds(Round(r, 60, 1), 1e-5, "brr-exact-lower").epsilon
    from shufflesim.protocols.bounds import catalogue as cat
    single = cat.evaluate("brr-exact", r, 60, 1e-5).result.epsilon
    assert lower <= single * (1 + 1e-6) <= composed * (1 + 1e-3)
    assert composed <= single * 1.01


@pytest.mark.slow
def test_issue_31_target_t100():
    """n = 1000, eps0 = 4, delta = 1e-6, T = 100: within 5 % of the composed lower bound
    (optimal-blanket: 20.30, Thm 14 composed: 14.05)."""
    rounds = Round(BinaryRR(epsilon0=4.0), 1000, 100)
    upper = compose_rounds(rounds, 1e-6, "brr-exact").epsilon
    lower = max(compose_rounds(rounds, 1e-6, m).epsilon for m in ("brr-exact-lower",
                                                                  "exact-lower"))
    assert upper <= 1.05 * lower
    assert upper < 14.8
