"""brr-exact / brr-exact-lower (protocols/bounds/numerical/brr_exact.py) against the truth.

The oracle is independent of the module: 60-digit mpmath over the full output distributions of
every neighbouring dataset pair (every count k of ones among the others, both directions, no
log-concavity used), at small n. The eps searches are checked against the oracle's own
bisection, and the block domination (revealing in-between users) against the singles it
covers.
"""

from __future__ import annotations

import math

import mpmath as mp
import pytest

from shufflesim.protocols.bounds import catalogue as cat
from shufflesim.protocols.bounds.numerical import brr_exact as be
from shufflesim.protocols.randomizers.brr import BinaryRR

MP_DIGITS = 60  # every test here runs at this many digits (tests/conftest.py)


def _binomial_pmf(m: int, q) -> list:
    return [mp.binomial(m, j) * q**j * (1 - q) ** (m - j) for j in range(m + 1)]


def _convolve(a: list, b: list) -> list:
    out = [mp.mpf(0)] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] += x * y
    return out


def truth_delta(epsilon: float, epsilon0: float, n: int) -> mp.mpf:
    """max over every neighbouring pair (k ones among the n - 1 others, both directions) of the
    hockey-stick divergence of the count of ones, at 60 digits."""
    p = mp.e ** mp.mpf(epsilon0) / (1 + mp.e ** mp.mpf(epsilon0))
    e = mp.e ** mp.mpf(epsilon)
    best = mp.mpf(0)
    for k in range(n):
        z = _convolve(_binomial_pmf(k, p), _binomial_pmf(n - 1 - k, 1 - p))
        one = _convolve(z, [1 - p, p])
        zero = _convolve(z, [p, 1 - p])
        for a, b in ((one, zero), (zero, one)):
            best = max(best, sum(max(x - e * y, 0) for x, y in zip(a, b, strict=True)))
    return best


def truth_epsilon(epsilon0: float, n: int, delta: float) -> float:
    lo, hi = 0.0, epsilon0
    for _ in range(45):
        mid = (lo + hi) / 2
        if truth_delta(mid, epsilon0, n) > delta:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@pytest.mark.parametrize("epsilon0", [0.3, 1.0, 4.0, 9.0])
@pytest.mark.parametrize("n", [1, 2, 5, 12])
def test_delta_bracket_holds_the_truth(epsilon0, n):
    for eps in (0.0, 0.05, 0.2 * epsilon0, 0.5 * epsilon0, 0.9 * epsilon0, epsilon0):
        truth = truth_delta(eps, epsilon0, n)
        est = be.brr_exact_delta(eps, epsilon0, n)
        assert est.lower <= truth * (1 + mp.mpf(1e-12)) + mp.mpf(1e-300), (eps, est, truth)
        assert truth <= est.upper + mp.mpf(1e-50), (eps, est, truth)  # mpmath roundoff at eps0
        assert est.upper - est.lower <= 1e-6 * float(truth) + 1e-8


def test_bracket_at_n_40_covers_mid_k_maximum():
    """At n = 40 the blocks are split (END_SINGLES = 4), so the domination is exercised."""
    for epsilon0, eps in ((4.0, 0.9), (2.0, 0.6), (0.5, 0.2)):
        truth = truth_delta(eps, epsilon0, 40)
        est = be.brr_exact_delta(eps, epsilon0, 40)
        assert est.lower <= truth <= est.upper, (epsilon0, eps, est, truth)
        assert est.upper <= float(truth) * (1 + 2 * be.ETA) + 1e-30


def test_carried_partition_keeps_the_bracket():
    """One eps search's memo: every evaluation starts from the previous one's blocks (a finer
    partition from another eps); each bracket still holds the truth (n = 40, blocks split)."""
    for epsilon0 in (4.0, 0.5):
        memo: dict = {}
        for eps in (0.05 * epsilon0, 0.9 * epsilon0, 0.2 * epsilon0, 0.4 * epsilon0):
            truth = truth_delta(eps, epsilon0, 40)
            est = be.brr_exact_delta(eps, epsilon0, 40, threshold=1e-6, memo=memo)
            assert est.lower <= truth <= est.upper, (epsilon0, eps, est, truth)
            blocks = memo["blocks"]
            covered = sorted(k for a, b in blocks for k in range(a, b + 1))
            assert covered == list(range(be.END_SINGLES, 40 - be.END_SINGLES))


@pytest.mark.parametrize("epsilon0,n,delta", [(1.0, 10, 0.05), (4.0, 12, 0.01),
                                               (0.5, 8, 0.2)])
def test_epsilon_is_on_the_right_side_and_tight(epsilon0, n, delta):
    r = BinaryRR(epsilon0=epsilon0)
    truth = truth_epsilon(epsilon0, n, delta)
    upper = be.brr_exact_epsilon(r, n, delta).epsilon
    lower = be.brr_exact_lower_epsilon(r, n, delta).epsilon
    assert lower <= truth + 1e-9 <= upper + 2e-9
    assert upper <= truth * 1.01 + 1e-9


def test_block_dominates_every_single_in_it():
    """The revealing argument: the block pair's D is >= every D_k inside it."""
    n, epsilon0 = 300, 2.0
    for first, last in ((0, 30), (40, 200), (150, 299), (5, 6)):
        for eps in (0.2, 0.5, 1.0):
            block = be._block_upper(eps, epsilon0, n, first, last, 1e-30)
            singles = max(be.pair_delta(eps, epsilon0, k, n - 1 - k).lower
                          for k in range(first, last + 1))
            assert singles <= block, (first, last, eps, singles, block)


def test_agrees_with_the_blanket_and_thm14_ordering():
    """exact-lower (000 Thm 14, k = 0) <= brr-exact-lower <= brr-exact <= optimal-blanket."""
    r = BinaryRR(epsilon0=4.0)
    n, delta = 10_000, 1e-6
    upper = cat.evaluate("brr-exact", r, n, delta).result.epsilon
    lower = cat.evaluate("brr-exact-lower", r, n, delta).result.epsilon
    thm14 = cat.evaluate("exact-lower", r, n, delta).result.epsilon
    blanket = cat.evaluate("optimal-blanket", r, n, delta).result.epsilon
    assert thm14 <= lower * (1 + 1e-6) and lower <= upper <= blanket  # search tolerance 1e-7
    assert upper <= 1.01 * lower


def test_issue_31_point():
    """n = 1e5, eps0 = 4, delta = 1e-6: truth 0.08472 (issue 31), optimal-blanket 0.11815."""
    r = BinaryRR(epsilon0=4.0)
    upper = be.brr_exact_epsilon(r, 100_000, 1e-6).epsilon
    lower = be.brr_exact_lower_epsilon(r, 100_000, 1e-6).epsilon
    assert 0.08471 <= lower <= 0.08472 <= upper <= 0.0849


def test_large_eps0_and_tiny_n():
    r = BinaryRR(epsilon0=30.0)
    res = cat.evaluate("brr-exact", r, 1, 1e-6).result
    assert res.epsilon == pytest.approx(30.0)  # one user: no amplification
    assert math.isfinite(cat.evaluate("brr-exact", r, 1000, 1e-6).result.epsilon)


def test_duchi_is_dominated_by_binary_rr_and_shares_the_bound():
    """Duchi's 1-D mechanism: every input's report is a mixture of binary RR's two; over random
    intermediate inputs (others and user 1's pair) the count's divergence stays below binary
    RR's truth (joint convexity), and the catalogue gives both randomizers the same bound."""
    import random
    rng = random.Random(3)
    epsilon0, n = 1.5, 4
    p = mp.e ** mp.mpf(epsilon0) / (1 + mp.e ** mp.mpf(epsilon0))
    for eps in (0.1, 0.5, 1.0):
        truth = truth_delta(eps, epsilon0, n)
        e = mp.e ** mp.mpf(eps)
        for _ in range(20):
            pis = [1 - p + (2 * p - 1) * mp.mpf(rng.random()) for _ in range(n + 1)]
            z = [mp.mpf(1)]
            for pi in pis[2:]:
                z = _convolve(z, [1 - pi, pi])
            one = _convolve(z, [1 - pis[0], pis[0]])
            two = _convolve(z, [1 - pis[1], pis[1]])
            d = sum(max(x - e * y, 0) for x, y in zip(one, two, strict=True))
            assert d <= truth * (1 + mp.mpf(1e-30)), (eps, d, truth)
    duchi = cat.evaluate("brr-exact", cat_randomizer("duchi", 1.5), 1000, 1e-6)
    brr = cat.evaluate("brr-exact", BinaryRR(1.5), 1000, 1e-6)
    assert duchi.ok and duchi.result.epsilon == brr.result.epsilon


def cat_randomizer(name: str, epsilon0: float):
    from shufflesim.protocols.randomizers import make_randomizer
    return make_randomizer(name, epsilon0=epsilon0)
