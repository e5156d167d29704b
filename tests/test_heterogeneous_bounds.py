"""Bounds for personalized budgets (protocols/bounds/personalized/).

The arbiter is brute-force enumeration of the shuffled histogram for small n with mixed
budgets: the law of the histogram of independent k-RR reports (each user with its own budget) is
computed exactly, and D_{e^eps}(P_X0 || P_X1) = sum_H (P0(H) - e^eps P1(H))_+ over every
neighbouring pair of datasets.
"""

import dataclasses
import itertools
import math

import mpmath
import numpy as np
import pytest

from shufflesim.protocols.bounds.closed_form.gdp import gdp_personalized_bound
from shufflesim.protocols.bounds.engine import core as engine
from shufflesim.protocols.bounds.numerical import optimal
from shufflesim.protocols.bounds.numerical.decompositions import blanket_atoms
from shufflesim.protocols.bounds.personalized import blanket as pblanket
from shufflesim.protocols.bounds.personalized import bounds as het
from shufflesim.protocols.bounds.personalized import exact as pexact
from shufflesim.protocols.bounds.personalized import profile as pprofile
from shufflesim.protocols.bounds.personalized.profile import BudgetProfile
from shufflesim.protocols.bounds.result import BoundKind, BoundStatus
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers.brr import BinaryRR
from shufflesim.protocols.randomizers.krr import KRR
from shufflesim.protocols.randomizers.laplace import Laplace


# ----------------------------------------------------------------------------------------------
# Brute force
# ----------------------------------------------------------------------------------------------
def _krr_row(k, eps, x):
    z = math.exp(eps) + k - 1
    row = np.full(k, 1.0 / z)
    row[x] = math.exp(eps) / z
    return row


def _histogram_law(rows):
    """{histogram: probability} of independent reports with the given pmf rows."""
    law = {(0,) * len(rows[0]): 1.0}
    for row in rows:  # a loop over the (few) users of the brute-force oracle
        nxt = {}
        for hist, prob in law.items():
            for y, py in enumerate(row):
                key = hist[:y] + (hist[y] + 1,) + hist[y + 1:]
                nxt[key] = nxt.get(key, 0.0) + prob * py
        law = nxt
    return law


def brute_delta(k, budgets, target, x0, x1, others, eps):
    """D(P_X0 || P_X1) where user ``target`` holds x0 / x1 and the others ``others``."""
    rows0, rows1 = [], []
    j = 0
    for i, e in enumerate(budgets):
        if i == target:
            rows0.append(_krr_row(k, e, x0))
            rows1.append(_krr_row(k, e, x1))
        else:
            row = _krr_row(k, e, others[j])
            rows0.append(row)
            rows1.append(row)
            j += 1
    p0, p1 = _histogram_law(rows0), _histogram_law(rows1)
    growth = math.exp(eps)
    return sum(max(0.0, p0[h] - growth * p1.get(h, 0.0)) for h in p0)


def _randomizer(k, eps=1.0):
    return BinaryRR(eps) if k == 2 else KRR(eps, k)


CASES = [  # (k, budgets, eps)
    (2, [0.1, 1.0, 0.5, 1.0], 0.1),
    (2, [2.0, 0.3, 0.3, 1.2, 0.7], 0.3),
    (3, [1.0, 0.5, 2.0], 0.2),
    (3, [0.4, 0.4, 1.5, 1.5], 0.05),
    (4, [2.0, 0.2, 1.0], 0.5),
]


@pytest.mark.parametrize("k,budgets,eps", CASES)
def test_blanket_bound_dominates_every_dataset_and_target(k, budgets, eps):
    """Brute force over every target user, every ordered pair (x0, x1) and every dataset of the
    others: the true delta never exceeds the bound, and the bound is attained up to its
    bracket for some configuration (the worst case over datasets is in the reduction)."""
    r = _randomizer(k)
    profile = BudgetProfile.from_budgets(budgets)
    bound = het.optimal_blanket_personalized_delta(r, profile, eps)
    worst = 0.0
    for target in range(len(budgets)):
        for x0, x1 in itertools.permutations(range(k), 2):
            for others in itertools.product(range(k), repeat=len(budgets) - 1):
                worst = max(worst, brute_delta(k, budgets, target, x0, x1, others, eps))
    assert worst <= bound.upper * (1 + 1e-12)
    assert bound.lower <= bound.upper
    # Tightness: for k >= 3 the bound is attained (others holding a third value x2 add only
    # reports on x2 that carry no information on x0 vs x1 beyond the blanket); for binary RR
    # there is no third value and the worst dataset reaches ~94-96% of it here.
    assert worst >= (1 - 1e-6 if k >= 3 else 0.9) * bound.lower


@pytest.mark.parametrize("k,budgets,eps", CASES)
def test_exact_pair_matches_brute_force(k, budgets, eps):
    r = _randomizer(k)
    target_eps = budgets[0]
    values, counts = np.unique(budgets[1:], return_counts=True)
    family = pblanket._KRRFamily.of(r)
    x2_of = {"x2=x1": 1, "x2=x0": 0, "x2-other": 2}
    patterns = ["x2=x1", "x2=x0"] + (["x2-other"] if k >= 3 else [])
    for pattern in patterns:
        pair = pexact._ExactPair.build(family, target_eps, values, counts, pattern)
        est = pair.delta(eps)
        truth = brute_delta(k, budgets, 0, 0, 1, [x2_of[pattern]] * (len(budgets) - 1), eps)
        assert est.lower <= truth * (1 + 1e-12) + 1e-15
        assert truth <= est.upper * (1 + 1e-12)
        assert est.upper - est.lower <= 1e-9 + 1e-7 * truth


def test_blanket_sum_matches_brute_force_of_the_reduction_pair():
    """The formula sum_m P(M = m) f(m + 1) against a direct evaluation: M by enumeration of
    the others' blanket choices, f(m) by enumeration of the multinomial counts."""
    k, eps_t, others, eps = 3, 1.3, [0.2, 0.9, 0.9, 2.0], 0.15
    family = pblanket._KRRFamily.of(KRR(1.0, 3))
    law = family.others_law(*np.unique(others, return_counts=True))
    est = pblanket.blanket_delta_for_target(family, eps_t, law, eps)
    gammas = [k / (math.exp(e) + k - 1) for e in others]
    p, q = family.pq(eps_t)
    growth = math.exp(eps)
    values = np.array([k * (p - growth * q), k * (q - growth * p), k * q * (1 - growth)])
    probs = np.array([1 / k, 1 / k, (k - 2) / k])

    def f(m):
        total = 0.0
        for a in range(m + 1):
            for b in range(m + 1 - a):
                c = m - a - b
                coef = math.factorial(m) / (
                    math.factorial(a) * math.factorial(b) * math.factorial(c))
                pr = coef * probs[0] ** a * probs[1] ** b * probs[2] ** c
                total += pr * max(0.0, a * values[0] + b * values[1] + c * values[2])
        return total / m

    direct = 0.0
    for choice in itertools.product([0, 1], repeat=len(others)):
        pm = math.prod(g if c else 1 - g for g, c in zip(gammas, choice, strict=True))
        direct += pm * f(sum(choice) + 1)
    assert est.lower <= direct <= est.upper
    assert est.upper - est.lower <= 1e-8 * direct


def test_f_values_agree_with_the_engine():
    for r in (BinaryRR(0.7), KRR(1.5, 3), KRR(2.0, 10)):
        family = pblanket._KRRFamily.of(r)
        ms = [1, 3, 40, 700]
        for eps in (0.0, 0.05, 0.4):
            values, errs = pblanket.f_values(family, r.epsilon0, ms, eps)
            for m, v, e in zip(ms, values, errs, strict=True):
                ref = pblanket.f_engine(family, r.epsilon0, m, eps)
                assert v - e <= ref.upper and ref.lower <= v + e
                assert abs(v - ref.upper) <= 1e-6 * ref.upper + 1e-13


def test_poisson_binomial_law():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.05, 0.95, size=37)
    law = pprofile.poisson_binomial(np.append(p, [0.3, 0.8]), np.append(np.ones(37, int), [50, 20]))
    direct = np.array([1.0])
    for pi in np.append(p, np.r_[np.full(50, 0.3), np.full(20, 0.8)]):
        direct = np.convolve(direct, [1 - pi, pi])
    window = direct[law.offset:law.offset + law.pmf.size]
    np.testing.assert_allclose(law.pmf, window, rtol=1e-9, atol=1e-300)
    outside = direct.sum() - window.sum()
    assert outside <= law.dropped + 1e-15
    assert law.rel_err < 1e-8


# ----------------------------------------------------------------------------------------------
# Equal budgets: the homogeneous bounds
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("r,n", [(BinaryRR(0.5), 1000), (BinaryRR(2.0), 200), (KRR(1.0, 4), 300)])
def test_constant_budgets_give_the_homogeneous_bounds(r, n):
    profile = BudgetProfile.constant(r.epsilon0, n)
    delta = 1e-6
    upper_het = het.optimal_blanket_personalized(r, profile, delta)
    upper_hom = optimal.optimal_blanket_epsilon(r, n, delta)
    lower_het = het.exact_lower_personalized(r, profile, delta)
    lower_hom = optimal.exact_lower_epsilon(r, n, delta)
    for a, b in ((upper_het, upper_hom), (lower_het, lower_hom)):
        # The same quantity: the two certified brackets overlap and the values agree to their
        # numerical errors.
        assert abs(a.epsilon - b.epsilon) <= a.epsilon_error + b.epsilon_error + 1e-9
        assert abs(a.epsilon - b.epsilon) <= 2e-4 * b.epsilon
    atoms = blanket_atoms(r, 0, 1)
    for eps in (0.3 * upper_hom.epsilon, upper_hom.epsilon):
        d_het = het.optimal_blanket_personalized_delta(r, profile, eps)
        d_hom = engine.delta_of_epsilon([(atoms, n)], n, eps, rtol=1e-7)
        assert d_het.lower <= d_hom.upper and d_hom.lower <= d_het.upper


# ----------------------------------------------------------------------------------------------
# Budget mixtures
# ----------------------------------------------------------------------------------------------
MIXTURES = [
    (BinaryRR(1.0), [0.1, 0.5, 1.0], [540, 370, 90]),
    (BinaryRR(1.0), [0.01, 0.5], [1000, 1000]),
    (BinaryRR(1.0), [0.3, 3.0], [50, 150]),
    (KRR(1.0, 3), [0.2, 1.0], [200, 100]),
    (KRR(1.0, 5), [0.5, 1.0, 2.0], [60, 60, 60]),
]


@pytest.mark.parametrize("r,values,counts", MIXTURES)
def test_lower_below_upper_and_baselines_in_order(r, values, counts):
    profile = BudgetProfile.from_groups(values, counts)
    delta = 1e-5
    upper = het.optimal_blanket_personalized(r, profile, delta)
    lower = het.exact_lower_personalized(r, profile, delta)
    assert upper.kind is BoundKind.UPPER and lower.kind is BoundKind.LOWER
    assert upper.status is BoundStatus.PROVEN
    assert lower.epsilon <= upper.epsilon
    assert 0 < lower.epsilon_error + 1 and upper.epsilon_error < 1e-3 * upper.epsilon + 1e-6
    top = het.optimal_blanket_max_budget(r, profile, delta)
    low = het.baseline_min_budget(r, profile, delta)
    assert low.epsilon <= upper.epsilon + upper.epsilon_error
    assert upper.epsilon <= top.epsilon + top.epsilon_error
    assert upper.epsilon <= max(values)


def test_many_distinct_budgets_use_a_dominating_case(monkeypatch):
    """With more than MAX_TARGETS distinct budgets one conservative case is used; it is at least
    the maximum over every target budget."""
    rng = np.random.default_rng(1)
    budgets = rng.uniform(0.2, 1.5, size=40)
    profile = BudgetProfile.from_budgets(budgets)
    r = BinaryRR(1.0)
    eps = 0.4
    conservative = het.optimal_blanket_personalized_delta(r, profile, eps)
    monkeypatch.setattr(het, "MAX_TARGETS", 10_000)
    exhaustive = het.optimal_blanket_personalized_delta(r, profile, eps)
    assert exhaustive.upper <= conservative.upper * (1 + 1e-9)
    assert conservative.upper <= 1.2 * exhaustive.upper  # and not far above


def test_gdp_wrapper_and_tagged_bound():
    profile = BudgetProfile.from_groups([0.1, 0.5, 1.0], [540, 370, 90], [0.0, 1e-7, 0.0])
    ours = het.gspa_gdp_personalized(profile, 1e-4)
    eps, deltas = profile.expanded()
    theirs = gdp_personalized_bound(eps, 1e-4, deltas)
    assert ours.epsilon == theirs.epsilon and ours.method == "gspa-gdp-personalized"
    assert ours.status is BoundStatus.APPROXIMATE
    r = BinaryRR(1.0)
    tagged = het.optimal_blanket_tagged(r, profile, 1e-4)
    groups = [optimal.optimal_blanket_epsilon(BinaryRR(v), c, 1e-4).epsilon
              for v, c in ((0.1, 540), (0.5, 370), (1.0, 90))]
    assert tagged.epsilon == pytest.approx(max(groups), rel=1e-12)
    constant = het.optimal_blanket_tagged(r, BudgetProfile.constant(1.0, 300), 1e-4)
    assert constant.epsilon == pytest.approx(
        optimal.optimal_blanket_epsilon(r, 300, 1e-4).epsilon, rel=1e-12)


def test_specs_and_errors():
    profile = BudgetProfile.from_groups([0.5, 1.0], [10, 10])
    users = het.PersonalizedUsers(BinaryRR(1.0), profile)
    names = {s.name for s in het.PERSONALIZED_SPECS}
    assert {"gspa-gdp-personalized", "optimal-blanket-personalized", "exact-lower-personalized",
            "optimal-blanket-max-budget", "optimal-blanket-tagged", "baseline-min-budget"} == names
    spec = het.personalized_spec("optimal-blanket-personalized")
    assert spec.applies_to(users) and not spec.applies_to(BinaryRR(1.0))
    assert not spec.applies_to(het.PersonalizedUsers(Laplace(1.0), profile))
    assert not hasattr(users, "epsilon0")
    result = spec.compute(users, 20, 1e-3)
    assert result.method == "optimal-blanket-personalized"
    with pytest.raises(ParameterError, match="n"):
        spec.compute(users, 21, 1e-3)
    with pytest.raises(ParameterError, match="randomizer.name"):
        het.optimal_blanket_personalized(Laplace(1.0), profile, 1e-3)
    with pytest.raises(ParameterError, match="delta"):
        het.exact_lower_personalized(BinaryRR(1.0), profile, 1.5)
    with pytest.raises(ParameterError, match="epsilons"):
        BudgetProfile.from_budgets([0.5, -1.0])
    assert dataclasses.replace(profile).n == 20


@pytest.mark.slow
def test_lower_below_upper_over_a_random_grid():
    """A wider grid of random budget mixtures (2-4 groups, n up to 3000)."""
    rng = np.random.default_rng(11)
    for _ in range(40):
        k = int(rng.choice([2, 2, 3, 6]))
        groups = int(rng.integers(2, 5))
        values = np.round(np.exp(rng.uniform(np.log(0.05), np.log(3.0), size=groups)), 3)
        counts = rng.integers(1, 1000, size=groups)
        profile = BudgetProfile.from_groups(values, counts)
        r = _randomizer(k)
        delta = float(10.0 ** rng.uniform(-8, -3))
        upper = het.optimal_blanket_personalized(r, profile, delta)
        lower = het.exact_lower_personalized(r, profile, delta)
        assert lower.epsilon <= upper.epsilon, (k, values, counts, delta)


# ----------------------------------------------------------------------------------------------
# Edges (issue 14): tiny and large budgets against high-precision arithmetic
# ----------------------------------------------------------------------------------------------
EDGE_EPS = (1e-300, 1e-12, 1e-6, 8.0, 20.0)


def _mp_row(k, eps, x, values):
    """k-RR row over the groups (each value of ``values``, the rest) in mpmath."""
    s = mpmath.exp(-mpmath.mpf(eps))
    top = 1 / (1 + (k - 1) * s)
    low = s * top
    row = [top if v == x else low for v in values]
    if k > len(values):
        row.append((k - len(values)) * low)
    return row


def _mp_law(rows):
    law = {(0,) * len(rows[0]): mpmath.mpf(1)}
    for row in rows:  # a loop over the (two or three) users
        nxt = {}
        for hist, prob in law.items():
            for y, py in enumerate(row):
                key = hist[:y] + (hist[y] + 1,) + hist[y + 1:]
                nxt[key] = nxt.get(key, 0) + prob * py
        law = nxt
    return law


def _mp_delta(k, budgets, x0, x1, others, eps):
    """D_{e^eps}(P_X0 || P_X1) in mpmath: user 0 (budget budgets[0]) holds x0 / x1, user j >= 1
    holds others[j - 1]."""
    values = sorted({x0, x1, *others})
    rows0 = [_mp_row(k, budgets[0], x0, values)]
    rows1 = [_mp_row(k, budgets[0], x1, values)]
    for e, o in zip(budgets[1:], others, strict=True):
        rows0.append(_mp_row(k, e, o, values))
        rows1.append(_mp_row(k, e, o, values))
    p0, p1 = _mp_law(rows0), _mp_law(rows1)
    growth = mpmath.exp(mpmath.mpf(eps))
    return sum((max(0, p0[h] - growth * p1.get(h, 0)) for h in p0), mpmath.mpf(0))


def _mp_worst(k, budgets, eps):
    """max over target users, (x0, x1) = (0, 1) (k-RR is symmetric) and the others' values in
    {0, 1, 2}: the true delta of the mechanism at eps (every dataset up to relabelling)."""
    worst = mpmath.mpf(0)
    for target in range(len(budgets)):
        order = [budgets[target]] + budgets[:target] + budgets[target + 1:]
        for others in itertools.product(range(min(k, 3)), repeat=len(budgets) - 1):
            worst = max(worst, _mp_delta(k, order, 0, 1, others, eps))
    return worst


def _rel(a, b):
    return abs(mpmath.mpf(a) - b) / abs(b)


@pytest.mark.parametrize("eps_t", EDGE_EPS)
@pytest.mark.parametrize("k", [2, 3, 1024])
def test_krr_family_quantities_against_mpmath(k, eps_t):
    """p - q = 1 - gamma, gamma, and the Poisson-binomial law of the blanket count keep full
    relative precision at tiny and large budgets (p - q was a plain difference: 0 at 1e-300,
    ~1e-4 relative error at 1e-12)."""
    family = pblanket._KRRFamily.of(_randomizer(k))
    with mpmath.workdps(400):
        e = mpmath.exp(mpmath.mpf(eps_t))
        gap = (e - 1) / (e + k - 1)
        gamma = k / (e + k - 1)
        assert _rel(family.gap(eps_t), gap) <= 1e-12
        assert _rel(float(family.blanket_complement(eps_t)), gap) <= 1e-12
        assert _rel(float(family.gamma(eps_t)), gamma) <= 1e-12
        # two others at eps_t and one at 2 eps_t: M ~ Bin(2, gamma) + Bern(gamma')
        law = family.others_law(np.array([eps_t, 2 * eps_t]), np.array([2, 1]))
        e2 = mpmath.exp(2 * mpmath.mpf(eps_t))
        g2 = k / (e2 + k - 1)
        truth = [(1 - gamma) ** 2 * (1 - g2), 2 * gamma * (1 - gamma) * (1 - g2)
                 + (1 - gamma) ** 2 * g2, gamma ** 2 * (1 - g2) + 2 * gamma * (1 - gamma) * g2,
                 gamma ** 2 * g2]
        for m, pm in zip(law.support, law.pmf, strict=True):
            if truth[m] > mpmath.mpf(10) ** -290:   # representable as a normal double
                assert _rel(pm, truth[m]) <= 1e-12 + law.rel_err, (m, pm, truth[m])
        dropped = sum(t for m, t in enumerate(truth) if m not in set(law.support.tolist()))
        assert dropped <= law.dropped + mpmath.mpf(10) ** -300


@pytest.mark.parametrize("eps_t", EDGE_EPS)
@pytest.mark.parametrize("k", [2, 3, 1024])
def test_f_values_against_mpmath_at_the_edges(k, eps_t):
    """f(m) = (1/m) E[(L_1 + ... + L_m)_+] (module docstring) by exact enumeration of the
    multinomial counts in 400-digit arithmetic: the bracket of :func:`f_values` holds it and is
    within 1e-10 relative, the certified error within 1e-4 (the old beta = (p - q)(1 + e^eps)
    was 0 at eps_t = 1e-300)."""
    family = pblanket._KRRFamily.of(_randomizer(k))
    ms = [1, 2, 5]
    for eps in (0.0, 0.5 * eps_t):
        values, errs = pblanket.f_values(family, eps_t, ms, eps)
        with mpmath.workdps(400):
            e_t = mpmath.exp(mpmath.mpf(eps_t))
            g = mpmath.exp(mpmath.mpf(eps))
            p, q = e_t / (e_t + k - 1), 1 / (e_t + k - 1)
            atoms = [k * (p - g * q), k * (q - g * p), k * q * (1 - g)]
            probs = [mpmath.mpf(1) / k, mpmath.mpf(1) / k, mpmath.mpf(k - 2) / k]
            for m, v, err in zip(ms, values, errs, strict=True):
                total = mpmath.mpf(0)
                for a in range(m + 1):
                    for b in range(m + 1 - a):
                        c = m - a - b
                        if c and k == 2:
                            continue
                        pr = (mpmath.factorial(m) / (mpmath.factorial(a) * mpmath.factorial(b)
                                                     * mpmath.factorial(c))
                              * probs[0] ** a * probs[1] ** b * probs[2] ** c)
                        total += pr * max(0, a * atoms[0] + b * atoms[1] + c * atoms[2])
                truth = total / m
                assert v - err <= truth <= v + err, (m, eps, v, err, truth)
                # the certified error carries REL_SPECIAL (1e-9) on magnitudes that cancel
                # in the positive part: loose, but the value itself is accurate
                assert err <= 1e-4 * truth, (m, eps, v, err, truth)
                if truth > mpmath.mpf(10) ** -290:  # not subnormal
                    assert _rel(v, truth) <= 1e-10, (m, eps, v, truth)


EXACT_EDGE = [(2, [eps, 0.5 * eps, 2 * eps]) for eps in EDGE_EPS[:3]] + [
    (3, [eps, 2 * eps, 0.5 * eps]) for eps in EDGE_EPS] + [(2, [8.0, 20.0, 12.0])]


@pytest.mark.parametrize("k,budgets", EXACT_EDGE)
def test_exact_pair_against_mpmath_at_the_edges(k, budgets):
    """The exact-pair delta (every pattern) at n = 3 against 400-digit enumeration: the
    certified bracket holds the truth (the old code's alpha = q - e^eps p, p - e^eps q,
    1 - e^eps and p - q cancelled at tiny budgets)."""
    family = pblanket._KRRFamily.of(_randomizer(k))
    values, counts = np.unique(budgets[1:], return_counts=True)
    x2_of = {"x2=x1": 1, "x2=x0": 0, "x2-other": 2}
    patterns = ["x2=x1", "x2=x0"] + (["x2-other"] if k >= 3 else [])
    checked = 0
    for pattern in patterns:
        pair = pexact._ExactPair.build(family, budgets[0], values, counts, pattern)
        for frac in (0.0, 0.3, 0.9):
            eps = frac * budgets[0]
            est = pair.delta(eps)
            with mpmath.workdps(400):
                truth = _mp_delta(k, budgets, 0, 1, [x2_of[pattern]] * 2, eps)
                assert est.lower <= truth <= est.upper, (pattern, eps, est, truth)
                if truth > mpmath.mpf(10) ** -290:
                    # the certified width (REL_LOG terms; at large budgets alpha + beta X
                    # cancels and _perturbation widens it)
                    # (e^eps_t times REL_LOG: at eps_t = 20 the bracket is wide, not wrong)
                    if budgets[0] < 1:
                        assert est.upper - est.lower <= 1e-6 * truth, (pattern, eps, est, truth)
                    checked += 1
    assert checked >= 2 or budgets[0] < 1e-290  # at 1e-300 every delta is subnormal


BOUND_EDGE = [  # (k, budgets, deltas): n = 2, 3 with budgets at the edges
    (2, [1e-6, 2e-6], (1e-9, 1e-12)),
    (3, [1e-6, 5e-7, 2e-6], (1e-9, 1e-12)),
    (2, [1e-12, 3e-12, 1e-12], (1e-14, 1e-15)),
    (2, [1e-12, 1e-12], (1e-13,)),
    (3, [1e-12, 2e-12, 1e-12], (1e-13,)),
    (2, [1e-300, 1e-300], (1e-301,)),
    (3, [8.0, 20.0], (1e-6, 1e-12)),
    (2, [20.0, 8.0, 12.0], (1e-6, 1e-12)),
]


@pytest.mark.parametrize("k,budgets,deltas", BOUND_EDGE)
def test_personalized_bounds_against_mpmath_at_the_edges(k, budgets, deltas):
    """optimal-blanket-personalized never below the truth: the mechanism's delta at the
    returned eps (every target, every dataset of the others, 400-digit enumeration) is at most
    delta, and it is at most the largest budget (the old code returned inf at budgets 8-20 and
    1e-300, and 4e-11 at budgets 1e-12: its search had an absolute tolerance of 1e-9);
    exact-lower-personalized: some pair reaches delta at the returned eps (or it is 0), and
    where it is positive the two are close (the old lower bound was 0 at budgets 1e-12)."""
    r = _randomizer(k)
    profile = BudgetProfile.from_budgets(budgets)
    for delta in deltas:
        upper = het.optimal_blanket_personalized(r, profile, delta)
        lower = het.exact_lower_personalized(r, profile, delta)
        with mpmath.workdps(400):
            at_upper = _mp_worst(k, budgets, upper.epsilon)
            assert at_upper <= delta, (delta, upper.epsilon, at_upper)
            if lower.epsilon > 0:
                assert _mp_worst(k, budgets, lower.epsilon) >= delta, (delta, lower.epsilon)
        assert lower.epsilon <= upper.epsilon <= max(budgets)
        if min(budgets) >= 1e-12 and max(budgets) < 1:
            assert upper.epsilon - lower.epsilon <= 1e-3 * upper.epsilon, (upper, lower)
