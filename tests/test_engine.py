"""The hockey-stick engine (protocols/bounds/engine/) and its exact oracle (engine/oracle.py).

Arbiters, from the most to the least elementary:
1. brute force over every outcome sequence of the users (tiny n) -> checks the oracle;
2. the oracle (exact multinomial enumeration in 50-digit decimal arithmetic) -> checks every
   engine method for n <= 40 and random atom sets, both sides;
3. an independent computation for 10-RR at n = 10^4 (2-D sum over the counts of the two extreme
   atoms with a different closed form for the third) -> checks the conditioning method at large n;
4. published numbers: 000 Table 4 (10-RR, n = 1000, delta = 1e-6), "Optimal (FFT)" column.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from shufflesim.protocols.bounds.atoms import RatioAtoms
from shufflesim.protocols.bounds.engine.common import categories, chernoff_upper
from shufflesim.protocols.bounds.engine.core import (
    EpsilonEstimate,
    Estimate,
    default_eps_max,
    delta_of_epsilon,
    epsilon_bound,
    epsilon_of_delta,
    hockey_stick,
)
from shufflesim.protocols.bounds.engine.oracle import (
    enumeration_size,
    exact_delta,
    exact_hockey_stick,
)
from shufflesim.protocols.errors import ParameterError

# ---------------------------------------------------------------------------------------------
# Atom sets (written by hand from 000 Table 1 / Thm 14 for k-RR)
# ---------------------------------------------------------------------------------------------

def krr_blanket(eps0: float, k: int = 10) -> RatioAtoms:
    """Blanket GPARV of k-RR (000 Table 1): m(y) = p = 1/(e^eps0 + k - 1) for every y."""
    e = math.exp(eps0)
    p = 1.0 / (e + k - 1)
    return RatioAtoms(np.array([e, 1.0, 1.0]), np.array([1.0, e, 1.0]),
                      np.array([p, p, (k - 2) * p]))


def krr_pair(eps0: float, k: int = 10) -> RatioAtoms:
    """Exact-pair GPARV of k-RR (000 Thm 14, x2 distinct from x1^0, x1^1): reference R(x2)."""
    e = math.exp(eps0)
    p = 1.0 / (e + k - 1)
    return RatioAtoms(np.array([e, 1.0, 1.0 / e, 1.0]), np.array([1.0, e, 1.0 / e, 1.0]),
                      np.array([p, p, e * p, (k - 3) * p]))


def random_atoms(rng: np.random.Generator, m: int) -> RatioAtoms:
    a = rng.uniform(0.0, 3.0, m)
    b = rng.uniform(0.0, 3.0, m)
    w = rng.dirichlet(np.ones(m + 1))[:m]
    return RatioAtoms(a, b, w)


def brute_force(groups, epsilon: float) -> float:
    """E[(sum G_i)_+] by summing over every sequence of per-user outcomes (float64)."""
    values, probs = [], []
    for atoms, count in groups:
        c = np.append(atoms.a - math.exp(epsilon) * atoms.b, 0.0)
        w = np.append(atoms.weight, max(0.0, 1.0 - atoms.weight.sum()))
        for _ in range(count):
            values.append(c)
            probs.append(w)
    total = 0.0
    for combo in itertools.product(*[range(len(c)) for c in values]):
        s = sum(values[i][j] for i, j in enumerate(combo))
        if s > 0:
            total += math.prod(probs[i][j] for i, j in enumerate(combo)) * s
    return total


# ---------------------------------------------------------------------------------------------
# 1. The oracle against brute force
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_oracle_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    atoms = random_atoms(rng, int(rng.integers(1, 4)))
    n = int(rng.integers(1, 7))
    eps = float(rng.uniform(0.0, 1.0))
    expected = brute_force([(atoms, n)], eps)
    got = float(exact_hockey_stick([(atoms, n)], eps))
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-300)


def test_oracle_two_groups_matches_brute_force():
    groups = [(krr_blanket(1.0, k=4), 3), (krr_pair(0.5, k=5), 3)]
    assert float(exact_hockey_stick(groups, 0.3)) == pytest.approx(brute_force(groups, 0.3),
                                                                   rel=1e-12)


def test_oracle_size_and_limits():
    atoms = krr_blanket(1.0)
    assert enumeration_size([(atoms, 10)]) == math.comb(13, 3)
    with pytest.raises(ParameterError, match="max_outcomes"):
        exact_hockey_stick([(atoms, 200)], 0.1, max_outcomes=1000)
    with pytest.raises(ParameterError, match="n"):
        exact_delta([(atoms, 5)], 0, 0.1)


# ---------------------------------------------------------------------------------------------
# 2. Engine methods against the oracle
# ---------------------------------------------------------------------------------------------

def _check_bracket(est: Estimate, exact: float, side: str):
    assert est.lower <= exact <= est.upper, (est, exact)
    assert est.lower <= est.upper
    assert est.value == (est.upper if side == "upper" else est.lower)
    assert est.error == pytest.approx(est.upper - est.lower)


@pytest.mark.parametrize("atoms_fn", [krr_blanket, krr_pair])
@pytest.mark.parametrize("n", [2, 9, 25])
@pytest.mark.parametrize("eps", [0.0, 0.2, 0.7])
def test_krr_methods_against_oracle(atoms_fn, n, eps):
    """For k-RR the pool given the pair is a single binomial: the enumeration and the
    conditioning method (unit blocks at small n) are exact up to rounding. Their guaranteed
    brackets carry the assumed accuracy REL_SPECIAL = 1e-9 of scipy's binomial functions,
    amplified by the cancellation in the closed form (about z^2 in the tail): they stay below
    1e-6 relative (plus 1e-12 absolute: the input rounding of a - e^eps b, n * 4u (a + e^eps b),
    is added to both sides); their midpoint agrees with the oracle to 1e-9."""
    atoms = atoms_fn(1.0)
    exact = float(exact_hockey_stick([(atoms, n)], eps))
    for method in ("enumerate", "conditioning", "fft"):
        for side in ("upper", "lower"):
            rtol = 1e-2 if method == "fft" else 1e-9
            est = hockey_stick([(atoms, n)], eps, side, method=method, rtol=rtol)
            _check_bracket(est, exact, side)
            if method != "fft":
                assert 0.5 * (est.lower + est.upper) == pytest.approx(exact, rel=1e-9,
                                                                      abs=1e-12)
                assert est.error <= 1e-6 * exact + 1e-12
            if method == "fft" and exact > 1e-6:
                assert est.error <= 3e-2 * exact


@pytest.mark.parametrize("seed", range(12))
def test_random_atoms_against_oracle(seed):
    """Random atom sets (1-4 atoms, any signs): every method brackets the exact value."""
    rng = np.random.default_rng(100 + seed)
    atoms = random_atoms(rng, int(rng.integers(1, 5)))
    n = int(rng.integers(2, 41))
    while enumeration_size([(atoms, n)]) > 20_000:
        n -= 5
    eps = float(rng.uniform(0.0, 1.5))
    exact = float(exact_hockey_stick([(atoms, n)], eps))
    for method in ("auto", "enumerate", "conditioning", "fft"):
        side = "upper" if seed % 2 else "lower"
        est = hockey_stick([(atoms, n)], eps, side, method=method,
                           rtol=1e-2 if method == "fft" else 1e-6)
        _check_bracket(est, exact, side)
        if method in ("auto", "enumerate"):
            assert est.error <= 1e-6 * exact + 1e-12


def test_groups_against_oracle():
    """Independent groups: one large group plus enumerated small ones (conditioning with
    shifts), and the FFT over all groups."""
    groups = [(krr_blanket(1.0), 30), (krr_pair(2.0), 2), (krr_blanket(0.5, k=3), 1)]
    for eps in (0.1, 0.4):
        exact = float(exact_hockey_stick(groups, eps))
        for method in ("enumerate", "conditioning", "fft", "auto"):
            est = hockey_stick(groups, eps, method=method, rtol=1e-2 if method == "fft" else 1e-8)
            _check_bracket(est, exact, "upper")
        cond = hockey_stick(groups, eps, method="conditioning", rtol=1e-9)
        assert cond.error <= 1e-7 * exact


def test_constant_groups_and_trivial_cases():
    atoms = krr_blanket(1.0)
    # All values <= 0 once eps >= eps0 (000 Property 2): delta = 0.
    est = hockey_stick([(atoms, 50)], 1.0 + 1e-9)
    assert est.method == "trivial" and est.lower == 0.0 and est.upper < 1e-10
    # A group whose G is constant only shifts the sum.
    const = RatioAtoms(np.array([2.0]), np.array([0.5]), np.array([1.0]))
    groups = [(atoms, 6), (const, 2)]
    exact = float(exact_hockey_stick(groups, 0.3))
    _check_bracket(hockey_stick(groups, 0.3), exact, "upper")
    # Constant groups summing to exactly 0 (values +1 and -2).
    plus = RatioAtoms(np.array([1.0]), np.array([0.0]), np.array([1.0]))
    minus = RatioAtoms(np.array([0.0]), np.array([2.0]), np.array([1.0]))
    zero = hockey_stick([(plus, 4), (minus, 2)], 0.0)
    assert zero.lower == 0.0 and zero.upper < 1e-12
    # No users at all, and zero-count groups.
    assert hockey_stick([(atoms, 0)], 0.3).upper == 0.0
    # Only non-negative values: E[S_+] = E[S].
    pos = RatioAtoms(np.array([3.0, 1.5]), np.array([1.0, 1.0]), np.array([0.2, 0.3]))
    est = hockey_stick([(pos, 7)], 0.1)
    mean = 7 * float(pos.weight @ (pos.a - math.exp(0.1) * pos.b))
    assert est.lower <= mean <= est.upper and est.error <= 1e-12 * mean


def test_chernoff_is_an_upper_bound():
    for atoms, n, eps in ((krr_blanket(1.0), 20, 0.3), (krr_pair(2.0), 15, 1.0)):
        exact = float(exact_hockey_stick([(atoms, n)], eps))
        assert chernoff_upper([categories(atoms, n, eps)]) >= exact


# ---------------------------------------------------------------------------------------------
# Invariants
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("atoms_fn", [krr_blanket, krr_pair])
@pytest.mark.parametrize("eps", [0.0, 0.3, 1.2])
def test_property_2_mean_of_gparv(atoms_fn, eps):
    """000 Property 2: E[G] = 1 - e^eps and 1 - e^(eps+eps0) <= G <= e^eps0 - e^eps."""
    eps0 = 1.3
    atoms = atoms_fn(eps0)
    values = atoms.values(eps)
    assert float(atoms.weight @ values) == pytest.approx(1 - math.exp(eps), abs=1e-14)
    assert values.min() >= 1 - math.exp(eps + eps0) - 1e-12
    assert values.max() <= math.exp(eps0) - math.exp(eps) + 1e-12


@pytest.mark.parametrize("n", [40, 3000])
def test_positive_minus_negative_part_is_the_mean(n):
    """E[S_+] - E[(-S)_+] = E[S] = n (1 - e^eps) (Property 2). -G is again a GPARV:
    -(a - e^eps b) = a' - e^eps b' with a' = e^eps b, b' = e^-eps a."""
    atoms = krr_pair(1.0)
    for eps in (0.0, 0.05):
        g = math.exp(eps)
        neg = RatioAtoms(g * atoms.b, atoms.a / g, atoms.weight)
        plus = hockey_stick([(atoms, n)], eps, rtol=1e-9)
        minus = hockey_stick([(neg, n)], eps, rtol=1e-9)
        mean = n * (1 - g)
        slack = 1e-9 * abs(mean) + 1e-9
        assert plus.lower - minus.upper - slack <= mean <= plus.upper - minus.lower + slack


def test_delta_is_monotone_in_epsilon():
    atoms = krr_blanket(2.0)
    grid = np.linspace(0.0, 0.4, 9)
    ests = [delta_of_epsilon([(atoms, 3000)], 3000, float(e), rtol=1e-2) for e in grid]
    for earlier, later in itertools.pairwise(ests):
        assert later.lower <= earlier.upper


def test_lower_le_upper_and_requested_side():
    atoms = krr_blanket(0.5)
    up = delta_of_epsilon([(atoms, 10**5)], 10**5, 0.004, "upper")
    lo = delta_of_epsilon([(atoms, 10**5)], 10**5, 0.004, "lower")
    assert 1e-10 < up.value < 1e-3
    assert lo.lower <= lo.value == lo.lower <= up.upper == up.value
    assert up.error <= 1e-3 * up.upper


# ---------------------------------------------------------------------------------------------
# 3. Large n: an independent computation
# ---------------------------------------------------------------------------------------------

def reference_krr_blanket(n: int, eps: float, eps0: float = 1.0, k: int = 10) -> float:
    """E[S_+] for the k-RR blanket GPARV by a 2-D sum over the counts (N+, N-) of the atoms
    (e^eps0, 1) and (1, e^eps0), and, given them, the count N0 ~ Bin(n - N+ - N-, q) of the atom
    (1, 1) (value c0 < 0) in closed form: with A = c+ N+ + c- N- and j = floor(A / |c0|),
    E[(A + c0 N0)_+] = A P[N0 <= j] - |c0| m q P[Bin(m-1, q) <= j-1]. Independent of the engine
    (which conditions on N+ + N- and bounds the pool by Jensen and kink sums)."""
    e = math.exp(eps0)
    p = 1.0 / (e + k - 1)
    c_plus, c_minus, c0 = e - math.exp(eps), 1 - e * math.exp(eps), 1 - math.exp(eps)
    sd = math.sqrt(n * p)
    lo, hi = max(0, int(n * p - 12 * sd)), int(n * p + 12 * sd)
    n_plus = np.arange(lo, hi + 1, dtype=float)[:, None]
    n_minus = np.arange(lo, hi + 1, dtype=float)[None, :]
    prob = stats.binom.pmf(n_plus, n, p) * stats.binom.pmf(n_minus, n - n_plus, p / (1 - p))
    a = c_plus * n_plus + c_minus * n_minus
    m = n - n_plus - n_minus
    q = (k - 2) * p / (1 - 2 * p)
    j = np.floor(np.maximum(a, 0.0) / -c0)
    inner = a * stats.binom.cdf(j, m, q) + c0 * m * q * stats.binom.cdf(j - 1, m - 1, q)
    inner = np.where(a > 0, np.maximum(inner, 0.0), 0.0)
    return float(np.sum(prob * inner))


@pytest.mark.parametrize("eps", [0.02, 0.035])
def test_large_n_against_independent_sum(eps):
    n = 10**4
    ref = reference_krr_blanket(n, eps)
    est = hockey_stick([(krr_blanket(1.0), n)], eps, method="conditioning", rtol=1e-6)
    assert est.lower <= ref * (1 + 1e-9) and ref * (1 - 1e-9) <= est.upper
    assert est.error <= 1e-4 * ref


def test_fft_agrees_with_conditioning_at_moderate_n():
    atoms = krr_pair(1.0)
    n, eps = 1000, 0.08
    cond = hockey_stick([(atoms, n)], eps, method="conditioning", rtol=1e-6)
    fft = hockey_stick([(atoms, n)], eps, method="fft", rtol=0.03)
    assert max(cond.lower, fft.lower) <= min(cond.upper, fft.upper)
    assert 1e-9 < fft.upper / n < 1e-3
    # The grid (~4e6 points for rtol = 0.03) leaves a rounding gap n h P[S > 0] of ~3%.
    assert fft.error <= 0.05 * fft.upper


def test_many_atoms_fft_against_oracle_and_at_moderate_n():
    """Many-atom GPARVs (like a discretized Laplace mechanism) are the FFT's regime: against
    the oracle for n = 8, and at n = 3000 its bracket is narrow and overlaps the conditioning
    method's (valid but wide there: the pool's spread is not in the pair)."""
    rng = np.random.default_rng(7)
    small = random_atoms(rng, 6)
    exact = float(exact_hockey_stick([(small, 8)], 0.2))
    _check_bracket(hockey_stick([(small, 8)], 0.2, method="fft", rtol=1e-3), exact, "upper")
    grid = np.linspace(-1.0, 1.0, 30)
    a = np.exp(1.5 * grid) / np.exp(1.5 * grid).mean()
    b = a[::-1].copy()
    atoms = RatioAtoms(a, b, np.full(30, 1.0 / 30))
    n, eps = 3000, 0.1
    fft = hockey_stick([(atoms, n)], eps, method="fft", rtol=1e-3)
    cond = hockey_stick([(atoms, n)], eps, method="conditioning", rtol=1e-3)
    assert 1e-9 < fft.upper / n < 1e-2
    assert fft.error <= 1e-2 * fft.upper
    assert max(cond.lower, fft.lower) <= min(cond.upper, fft.upper)
    assert hockey_stick([(atoms, n)], eps).error <= 1e-2 * fft.upper      # auto picks it up


def test_special_functions_meet_the_assumed_accuracy():
    """engine_common.REL_SPECIAL = 1e-9 assumes scipy.stats.binom (Boost) sf/pmf are accurate
    to 1e-9 relative: check a panel against mpmath at 30 digits (observed: < 1e-11)."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 30
    panel = [(600, 1000, 0.5), (4150, 8000, 0.5), (30, 10000, 0.001), (1_715_000, 10**7, 0.171),
             (5_020_000, 10**7, 0.5), (52_000, 100_000, 0.5)]
    for k, t, p in panel:
        pp = mpmath.mpf(p)

        def pmf(j, t=t, pp=pp):
            return mpmath.exp(mpmath.loggamma(t + 1) - mpmath.loggamma(j + 1)
                              - mpmath.loggamma(t - j + 1) + j * mpmath.log(pp)
                              + (t - j) * mpmath.log(1 - pp))
        exact_pmf = pmf(k)
        # P[X > k]: sum the pmf by its ratio recurrence until negligible.
        term, total, j = pmf(k + 1), mpmath.mpf(0), k + 1
        while term > total * mpmath.mpf(10) ** -25 and j <= t:
            total += term
            term = term * (t - j) / (j + 1) * pp / (1 - pp)
            j += 1
        assert float(abs(stats.binom.pmf(k, t, p) - exact_pmf) / exact_pmf) < 1e-10
        assert float(abs(stats.binom.sf(k, t, p) - total) / total) < 1e-10


# ---------------------------------------------------------------------------------------------
# eps(delta)
# ---------------------------------------------------------------------------------------------

def _exact_fn(fun):
    def delta_fn(eps):
        v = fun(eps)
        return Estimate(v, v, v, "exact")
    return delta_fn


def test_epsilon_of_delta_brackets_a_known_root():
    fn = _exact_fn(lambda e: math.exp(-40 * e * e))           # root at sqrt(ln(1e6)/40)
    root = math.sqrt(math.log(1e6) / 40)
    up = epsilon_of_delta(fn, 1e-6, "upper", eps_max=5.0, rtol=1e-8)
    lo = epsilon_of_delta(fn, 1e-6, "lower", eps_max=5.0, rtol=1e-8)
    assert isinstance(up, EpsilonEstimate) and not up.saturated
    assert up.lower <= root <= up.upper and up.value == up.upper
    assert lo.lower <= root <= lo.upper and lo.value == lo.lower
    assert up.error <= 1e-7 and up.evaluations <= 20


def test_epsilon_of_delta_edge_cases():
    # Already below delta at eps = 0.
    res = epsilon_of_delta(_exact_fn(lambda e: 1e-9), 1e-6)
    assert res.value == 0.0 and res.error == 0.0 and res.evaluations == 1
    # Never below delta up to eps_max: inf for the upper side, eps_max for the lower side.
    up = epsilon_of_delta(_exact_fn(lambda e: 0.5), 1e-6, "upper", eps_max=2.0)
    lo = epsilon_of_delta(_exact_fn(lambda e: 0.5), 1e-6, "lower", eps_max=2.0)
    assert up.saturated and up.value == math.inf
    assert lo.saturated and lo.value == 2.0
    # A step function: the crossing is found to the requested tolerance.
    step = epsilon_of_delta(_exact_fn(lambda e: 1.0 if e < 0.3 else 0.0), 0.5, rtol=1e-9)
    assert 0.3 - 1e-8 <= step.lower <= 0.3 <= step.upper <= 0.3 + 1e-8
    with pytest.raises(ParameterError, match="delta"):
        epsilon_of_delta(_exact_fn(lambda e: 0.1), 0.0)
    with pytest.raises(ParameterError, match="eps_max"):
        epsilon_of_delta(_exact_fn(lambda e: 0.1), 0.01, eps_max=math.inf)


def test_epsilon_bound_against_oracle_search():
    """eps(delta) for n = 12 by the engine brackets the crossing of the exact delta(eps)."""
    atoms = krr_blanket(2.0)
    n, delta = 12, 1e-3
    res = epsilon_bound([atoms, atoms.swapped()], n, delta)
    assert exact_delta([(atoms, n)], n, res.upper) <= delta
    assert exact_delta([(atoms, n)], n, res.lower) > delta or res.lower == 0.0
    assert res.error <= 1e-4 * res.upper


def test_epsilon_bound_directions_and_eps_max():
    atoms = krr_pair(1.0)
    assert default_eps_max(atoms) == pytest.approx(1.0, rel=1e-8)
    one = epsilon_bound([atoms], 5000, 1e-6)
    both = epsilon_bound([atoms, atoms.swapped()], 5000, 1e-6)
    assert both.upper == one.upper            # k-RR is symmetric: the swap is deduplicated
    asym = RatioAtoms(np.array([2.0, 0.5]), np.array([1.0, 1.0]), np.array([0.4, 0.4]))
    r1 = epsilon_bound([asym], 3000, 1e-6)
    r2 = epsilon_bound([asym.swapped()], 3000, 1e-6)
    r12 = epsilon_bound([asym, asym.swapped()], 3000, 1e-6)
    assert r12.upper == max(r1.upper, r2.upper) and r12.lower == max(r1.lower, r2.lower)


def test_parameter_errors():
    atoms = krr_blanket(1.0)
    with pytest.raises(ParameterError, match="side"):
        hockey_stick([(atoms, 5)], 0.1, "middle")
    with pytest.raises(ParameterError, match="epsilon"):
        hockey_stick([(atoms, 5)], -0.1)
    with pytest.raises(ParameterError, match="count"):
        hockey_stick([(atoms, -1)], 0.1)
    with pytest.raises(ParameterError, match="groups"):
        hockey_stick(atoms, 0.1)
    with pytest.raises(ParameterError, match="method"):
        hockey_stick([(atoms, 5)], 0.1, method="magic")
    with pytest.raises(ParameterError, match="n"):
        delta_of_epsilon([(atoms, 5)], 0, 0.1)
    with pytest.raises(ParameterError, match="rtol"):
        hockey_stick([(atoms, 5)], 0.1, rtol=-1.0)
    with pytest.raises(ParameterError, match="method"):
        many = [(krr_blanket(1.0), 50), (krr_pair(1.0), 50), (krr_blanket(2.0), 50)]
        hockey_stick(many, 0.1, method="conditioning")


# ---------------------------------------------------------------------------------------------
# 4. 000 Table 4: 10-RR, n = 1000, delta = 1e-6, "Optimal (FFT)" column
# ---------------------------------------------------------------------------------------------

TABLE4 = [(0.21, 0.01), (0.73, 0.05), (1.15, 0.10), (1.70, 0.20), (2.65, 0.50), (3.51, 1.00)]


def _eps_table4(eps0: float) -> EpsilonEstimate:
    atoms = krr_blanket(eps0)
    return epsilon_bound([atoms, atoms.swapped()], 1000, 1e-6, delta_rtol=1e-5)


@pytest.mark.parametrize("eps0, target", TABLE4)
def test_table4_optimal_column(eps0, target):
    """The published eps0 is a crossing on a 0.01 grid. Our exact crossing always lies within
    one grid step: eps(eps0 - 0.01) < target < eps(eps0 + 0.01). For three rows (0.73, 1.70,
    2.65) the brief's strict form eps(eps0) <= target < eps(eps0 + 0.01) holds. For the other
    three (0.21, 1.15, 3.51) the published value is the grid point just above our crossing
    (eps(eps0) exceeds the target by 0.11%, 0.29% and 0.14%): the paper rounded to the nearest
    grid point there (published.md: "not always on the conservative side"); an FFT with
    000's step l = (e^eps0 - 1)/1000 rounds G up and can only move its crossing further down,
    so the discretization does not explain these three."""
    below, at, above = (_eps_table4(round(eps0 + d, 2)) for d in (-0.01, 0.0, 0.01))
    assert below.upper < target < above.lower
    if eps0 in (0.73, 1.70, 2.65):
        assert at.upper <= target < above.lower
    else:
        assert target < at.lower and at.upper <= 1.003 * target


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 100, 1000, 12345, 10**6])
def test_integer_power_is_within_the_fft_error_budget(n):
    """Binary powering of characteristic-function values (|z| <= 1): relative error at most
    2 sqrt(2) (n - 1) U + U against a long-double reference, inside the 4 U per factor that
    the FFT method's error bound allows."""
    from shufflesim.protocols.bounds.engine.fft import integer_power

    rng = np.random.default_rng(n)
    z = np.sqrt(rng.random(20_000)) * np.exp(2j * np.pi * rng.random(20_000))
    z[:100] = np.exp(2j * np.pi * rng.random(100)) * (1 - 1e-5 * rng.random(100))  # near |z| = 1
    got = integer_power(z, n)
    assert got.dtype == complex and got.shape == z.shape
    zl = z.astype(np.clongdouble)
    reference = np.abs(zl) ** n * np.exp(1j * np.angle(zl) * n)
    kept = np.abs(reference) > 1e-250
    rel = np.abs(got[kept] - reference[kept]) / np.abs(reference[kept])
    unit = np.finfo(float).eps / 2
    assert float(rel.max()) <= 2 * np.sqrt(2) * max(n - 1, 0) * unit + 4 * unit


def test_fft_near_zero_indices_match_the_full_mask():
    """engine_fft._near_zero finds |value| < r without a pass over the window: the same
    indices, in the same order, as the boolean mask it replaces (so every sum is unchanged)."""
    from shufflesim.protocols.bounds.atoms import Rounding
    from shufflesim.protocols.bounds.engine import fft as engine_fft
    from shufflesim.protocols.bounds.engine.common import categories
    from shufflesim.protocols.bounds.numerical.decompositions import exact_pair_atoms
    from shufflesim.protocols.randomizers import make_randomizer
    atoms = exact_pair_atoms(make_randomizer("laplace", epsilon0=4.0), 0.0, 1.0, 0.0,
                             rounding=Rounding.DOWN)
    laws = engine_fft._spread_laws([categories(atoms, 10**4, 0.2)], 0.01)
    conv = engine_fft._convolve(laws, 0.01, 1 << 16, 10.0, 6.0)
    for radius in (0.0, 0.05, 1.0, 7.3, 50.0, 1e9):
        mask = np.abs(conv.lattice * conv.h) < radius
        assert np.array_equal(np.flatnonzero(mask), engine_fft._near_zero(conv, radius))


def test_fft_window_narrows_only_for_near_gaussian_sums():
    """window_sd: 7 sd for 10^6 users of a bounded GPARV, the full 12 sd for a few users."""
    from shufflesim.protocols.bounds.atoms import Rounding
    from shufflesim.protocols.bounds.engine import fft as engine_fft
    from shufflesim.protocols.bounds.engine.common import categories
    from shufflesim.protocols.bounds.numerical.decompositions import exact_pair_atoms
    from shufflesim.protocols.randomizers import make_randomizer
    atoms = exact_pair_atoms(make_randomizer("laplace", epsilon0=4.0), 0.0, 1.0, 0.0,
                             rounding=Rounding.DOWN)
    assert engine_fft.window_sd([categories(atoms, 10**6, 0.035)], 5e-3) == 7.0
    assert engine_fft.window_sd([categories(atoms, 10, 2.5)], 5e-3) == engine_fft.K_WINDOW
