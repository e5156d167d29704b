"""The dataset-pair search lower bound (protocols/bounds/numerical/pair_search.py, issue 31).

* Where its statistic is the whole shuffled output (binary RR; k-RR with k = 3) and its
  compositions cover every dataset (n small enough for the grid plus the corners'
  neighbourhoods to reach the worst one), it equals the exact curves of brr-exact / krr-exact.
* Its 2-D law of the counts against an independent direct 2-D convolution (scipy, including
  groups large enough for the FFT path) and against a brute-force enumeration of every user's
  category at n = 5.
* On its side of the small-n truth (every dataset pair); for others all at x2, equal to 001
  Thm 5.1's two-count kernel of the same triple (an independent code path).
* Refusals.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import signal

from shufflesim.protocols.bounds import catalogue as cat
from shufflesim.protocols.bounds.numerical import pair_search as ps
from shufflesim.protocols.bounds.numerical import two_count
from shufflesim.protocols.bounds.numerical import variation_ratio as vr
from shufflesim.protocols.bounds.numerical.small_n_truth import small_n_truth_epsilon
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import make_randomizer


@pytest.mark.parametrize("name,params,exact", [
    ("krr", {"domain_size": 3}, "krr-exact"),
    ("brr", {}, "brr-exact"),
])
def test_equals_the_exact_curve_where_the_statistic_is_sufficient(name, params, exact):
    r = make_randomizer(name, epsilon0=1.0, **params)
    n, delta = 20, 1e-6
    found = ps.pair_search_epsilon(r, n, delta).epsilon
    upper = cat.evaluate(exact, r, n, delta).result.epsilon
    assert found <= upper
    assert found >= upper * (1 - 1e-5)


def test_law_against_a_direct_convolution():
    r = make_randomizer("oue", epsilon0=1.3, domain_size=4)
    d = ps.Dataset(0, 1, 2, 12, 3, 20)
    stat = ps.pair_statistic(r, d)
    s = ps.category_masses(r, 0, 1, (0, 1, 2))
    direct = np.ones((1, 1))
    for m, (s0, s1) in zip((12, 3, 20), s, strict=True):
        t = np.zeros((m + 1, m + 1))
        for a in range(m + 1):
            for b in range(m + 1 - a):
                t[a, b] = (math.comb(m, a) * math.comb(m - a, b) * s0 ** a * s1 ** b
                           * (1 - s0 - s1) ** (m - a - b))
        direct = signal.convolve2d(direct, t)
    assert stat.fft_error > 0  # the 12 x 20 groups went through the FFT
    err = np.abs(stat.others - direct)
    assert err.max() <= 1e-13
    assert math.sqrt(float((err ** 2).sum())) <= stat.fft_error + 1e-12 * direct.sum()


def test_divergence_against_brute_force_enumeration():
    """n = 5: every user's category enumerated (3^5 assignments)."""
    r = make_randomizer("rappor", epsilon0=0.9, domain_size=3)
    d = ps.Dataset(0, 1, 2, 1, 2, 1)
    stat = ps.pair_statistic(r, d)
    s = ps.category_masses(r, 0, 1, (0, 1, 2))
    probs_others = [s[0]] * 1 + [s[1]] * 2 + [s[2]] * 1
    for reverse in (False, True):
        for eps in (0.0, 0.3, 0.8):
            law = {0: {}, 1: {}}
            for who, first in ((0, s[0]), (1, s[1])):
                rows = [first] + probs_others
                for cats in itertools.product(range(3), repeat=5):
                    p = 1.0
                    for (s0, s1), c in zip(rows, cats, strict=True):
                        p *= (s0, s1, 1 - s0 - s1)[c]
                    key = (cats.count(0), cats.count(1))
                    law[who][key] = law[who].get(key, 0.0) + p
            p_, q_ = (law[1], law[0]) if reverse else (law[0], law[1])
            truth = sum(max(0.0, p_.get(k, 0.0) - math.exp(eps) * q_.get(k, 0.0))
                        for k in set(p_) | set(q_))
            est = ps.pair_divergence(stat, eps, reverse)
            assert est.lower <= truth + 1e-15 and truth <= est.upper + 1e-15
            assert est.upper - est.lower < 1e-9


@pytest.mark.parametrize("name,params,n", [
    ("oue", {"domain_size": 3}, 6),
    ("rappor", {"domain_size": 3}, 6),
    ("subset", {"domain_size": 4, "subset_size": 2}, 5),
])
def test_on_its_side_of_the_small_n_truth(name, params, n):
    r = make_randomizer(name, epsilon0=0.5, **params)
    delta = 1e-4
    found = ps.pair_search_epsilon(r, n, delta).epsilon
    lo, hi = small_n_truth_epsilon(r, n, delta)
    assert 0 < found <= hi


@pytest.mark.parametrize("n", [7, 300])
def test_the_triple_against_001_thm51_kernel(n):
    """Others all at x2: the same statistic as 001 Thm 5.1's post-processed triple, evaluated
    by the independent two-count kernel (binomial tails)."""
    r = make_randomizer("subset", epsilon0=2.0, domain_size=5, subset_size=2)
    stat = ps.pair_statistic(r, ps.Dataset(0, 1, 2, 0, 0, n - 1))
    kernel = vr.triple_candidate(r, n, 0, 1, 2)
    for eps in (0.05, 0.4, 1.5):
        ours = ps.pair_divergence(stat, eps)
        theirs = two_count.two_count_divergence(kernel.pair, eps)
        assert ours.lower <= theirs.upper and theirs.lower <= ours.upper
        assert ours.value == pytest.approx(theirs.value, rel=1e-8, abs=1e-15)


def test_refusals():
    r = make_randomizer("oue", epsilon0=1.0, domain_size=4)
    with pytest.raises(ParameterError, match="n"):
        ps.pair_search_epsilon(r, ps.MAX_N + 1, 1e-6)
    with pytest.raises(ParameterError, match="delta"):
        ps.pair_search_epsilon(r, 10, 0.0)
    with pytest.raises(ParameterError, match="finite output"):
        ps.pair_search_epsilon(make_randomizer("laplace_binary", epsilon0=1.0), 10, 1e-6)
