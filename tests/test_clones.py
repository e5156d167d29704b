"""Clone-based bounds (002 FMT21 Thm 3.1, 3.2, 3.8, 4.1; stronger clone of 000 Sec. 3.3).

Oracles: brute-force enumeration of the shuffled output histogram (exact hockey-stick divergence
for a fixed neighbour pair, a lower bound on the true shuffled eps), brute-force enumeration of the
clone reference pair itself, the published FMT21 example, and invariants. The brute-force helpers
defined here are also imported by tests/test_blanket_closed.py and tests/test_efmrtt.py.
"""

from __future__ import annotations

import functools
import math
from itertools import combinations
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import special, stats

from shufflesim.protocols.bounds.closed_form import fmt21
from shufflesim.protocols.bounds.numerical import clones
from shufflesim.protocols.bounds.result import BoundKind, BoundStatus
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import make_randomizer


# -- brute force -------------------------------------------------------------------------------
@functools.lru_cache(maxsize=32)
def compositions(n: int, k: int) -> np.ndarray:
    """Every histogram of n items over k cells (stars and bars), shape (C(n+k-1, k-1), k);
    cached and read-only."""
    rows = []
    for bars in combinations(range(n + k - 1), k - 1):
        edges = (-1, *bars, n + k - 1)
        rows.append([edges[i + 1] - edges[i] - 1 for i in range(k)])
    out = np.array(rows, dtype=np.int64)
    out.flags.writeable = False
    return out


def shuffled_pair(pmf: np.ndarray, x0: int, x1: int, x2: int, n: int):
    """Exact output-histogram distributions of the shuffled randomizer (row-stochastic ``pmf``,
    inputs x outputs) on X0 = (x0, x2, ..., x2) and X1 = (x1, x2, ..., x2), n users."""
    k = pmf.shape[1]
    hist = compositions(n, k)
    log_p2 = np.log(pmf[x2])
    p0 = np.zeros(len(hist))
    p1 = np.zeros(len(hist))
    for y in range(k):  # the output of user 1 (small domain)
        rest = hist.copy()
        rest[:, y] -= 1
        ok = rest[:, y] >= 0
        rest = np.clip(rest, 0, None)
        log_mult = special.gammaln(n) - special.gammaln(rest + 1).sum(axis=1) + rest @ log_p2
        mult = np.where(ok, np.exp(log_mult), 0.0)
        p0 += pmf[x0, y] * mult
        p1 += pmf[x1, y] * mult
    return p0, p1


def hockey_stick(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    """max(D_{e^eps}(p||q), D_{e^eps}(q||p)) of two pmfs on the same support."""
    e = math.exp(eps)
    return max(np.clip(p - e * q, 0, None).sum(), np.clip(q - e * p, 0, None).sum())


def exact_epsilon(p: np.ndarray, q: np.ndarray, delta: float, upper: float) -> tuple[float, float]:
    """Bracket [lo, hi] (width 1e-10) of the smallest eps with hockey_stick <= delta."""
    if hockey_stick(p, q, 0.0) <= delta:
        return 0.0, 0.0
    lo, hi = 0.0, upper
    while hi - lo > 1e-10:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if hockey_stick(p, q, mid) <= delta else (mid, hi)
    return lo, hi


def krr_pmf(epsilon0: float, k: int) -> np.ndarray:
    return make_randomizer("krr", epsilon0=epsilon0, domain_size=k).output_pmf()


def clone_pair_bruteforce(eps0: float, n: int, p_clone: float) -> tuple[np.ndarray, np.ndarray]:
    """The clone pair P0 = (A + D, C - A + 1 - D), P1 = (A + 1 - D, C - A + D) on the grid
    (n0, n1) in [0, n]^2, by direct summation over C, A and D."""
    q = math.exp(eps0) / (math.exp(eps0) + 1)
    p0 = np.zeros((n + 1, n + 1))
    p1 = np.zeros((n + 1, n + 1))
    for c in range(n):
        wc = stats.binom.pmf(c, n - 1, p_clone)
        for a in range(c + 1):
            w = wc * stats.binom.pmf(a, c, 0.5)
            for d, wd in ((1, q), (0, 1 - q)):
                p0[a + d, c - a + 1 - d] += w * wd
                p1[a + 1 - d, c - a + d] += w * wd
    return p0.ravel(), p1.ravel()


# -- the clone pair -----------------------------------------------------------------------------
@pytest.mark.parametrize("eps0,n,p_clone", [(0.7, 9, math.exp(-0.7)), (2.5, 14, 0.3),
                                            (1.3, 2, 0.5), (4.0, 12, 2 / (math.exp(4) + 1))])
def test_clone_pair_delta_matches_bruteforce(eps0, n, p_clone):
    p0, p1 = clone_pair_bruteforce(eps0, n, p_clone)
    for eps in (0.0, 0.05, 0.3, 0.9 * eps0, eps0, eps0 + 0.1):
        e = math.exp(eps)
        forward = np.clip(p0 - e * p1, 0, None).sum()
        backward = np.clip(p1 - e * p0, 0, None).sum()
        assert forward == pytest.approx(backward, abs=1e-14)  # the pair is symmetric
        got = clones.clone_pair_delta(eps, eps0, n, p_clone)
        assert forward - 1e-15 <= got <= forward + 1e-10  # brute force has ~1e-17 noise


def test_coarsened_window_is_conservative_and_close():
    exact = clones.ClonePair(1.0, 200_000, math.exp(-1.0))
    coarse = clones.ClonePair(1.0, 200_000, math.exp(-1.0), max_points=16)
    assert exact.c.size > 16 and np.all(np.diff(exact.c) == 1)
    for eps in (0.005, 0.01, 0.02, 0.04):
        d_exact, d_coarse = exact.delta(eps), coarse.delta(eps)
        assert d_exact <= d_coarse <= 1.5 * d_exact + 1e-12


def test_more_clones_never_hurt():
    """The pair with a larger clone probability is a post-processing of the one with a smaller
    (thin the clones), so its divergence is no larger: stronger clone <= standard clone."""
    for eps0 in (0.5, 2.0, 4.0):
        for eps in (0.01, 0.1, 0.4):
            std = clones.fmt21_numerical_delta(eps, eps0, 3000)
            strong = clones.stronger_clone_delta(eps, eps0, 3000)
            assert strong <= std * (1 + 1e-9) + 1e-15


# -- published numbers ---------------------------------------------------------------------------
def test_fmt21_released_example():
    """002 authors' example, n = 1e5, eps0 = 4, delta = 1e-6: numerical bound within their
    bisection bracket [0.1675, 0.1728]; we get 0.169770 (exact evaluation of the same pair)."""
    res = clones.fmt21_numerical(4.0, 100_000, 1e-6)
    assert 0.1675 <= res.epsilon - res.epsilon_error <= res.epsilon <= 0.1728
    assert res.epsilon == pytest.approx(0.16977, abs=5e-6)
    assert res.kind is BoundKind.UPPER and res.status is BoundStatus.PROVEN
    assert clones.fmt21_numerical_delta(res.epsilon, 4.0, 100_000) <= 1e-6


def test_fmt21_closed_form_example():
    """Eq. (1) as printed gives 0.53463 (published "about 0.535"). The released code's variant
    (0.538) uses the factor (e^eps0 - 1)/(e^eps0 + e^-eps') with eps' = log(1 + a + c) instead of
    (e^eps0 - 1)/(e^eps0 + 1): a slightly looser constant from a different write-up of the proof.
    We implement the theorem as printed."""
    res = fmt21.fmt21_closed_form(4.0, 100_000, 1e-6)
    assert res.epsilon == pytest.approx(0.5346, abs=5e-5)
    assert round(res.epsilon, 3) == 0.535
    e0, n, d = math.exp(4.0), 100_000, 1e-6
    a = 8 * math.sqrt(e0 * math.log(4 / d) / n)
    c = 8 * e0 / n
    released = math.log1p((e0 - 1) / (e0 + math.exp(-math.log1p(a + c))) * (a + c))
    assert round(released, 3) == 0.538


# -- exact lower bounds never exceed the upper bounds ----------------------------------------
CASES = [  # (eps0, k, n, delta)
    (0.5, 2, 200, 0.05),
    (1.0, 3, 90, 0.1),
    (2.0, 2, 400, 0.1),
    (1.5, 4, 25, 0.2),
]


@pytest.mark.parametrize("eps0,k,n,delta", CASES)
def test_numerical_bounds_dominate_exact_krr(eps0, k, n, delta):
    pmf = krr_pmf(eps0, k)
    x2s = range(k)
    exact_delta = {}
    for eps in (0.0, 0.1, 0.3, 0.6):
        exact_delta[eps] = max(
            hockey_stick(*shuffled_pair(pmf, 0, 1, x2, n), eps) for x2 in x2s
        )
        assert clones.fmt21_numerical_delta(eps, eps0, n) >= exact_delta[eps] - 1e-13
    exact_eps = max(exact_epsilon(*shuffled_pair(pmf, 0, 1, x2, n), delta, eps0)[0] for x2 in x2s)
    assert clones.fmt21_numerical(eps0, n, delta).epsilon >= exact_eps


def test_closed_forms_in_regime_dominate_exact_krr():
    """Settings chosen inside every closed form's regime (n large enough for Thm 3.1 and 4.1)."""
    for eps0, k, n, delta in ((0.4, 2, 600, 0.05), (0.8, 3, 150, 0.2), (0.5, 4, 90, 0.2)):
        pmf = krr_pmf(eps0, k)
        exact_eps = max(exact_epsilon(*shuffled_pair(pmf, 0, 1, x2, n), delta, eps0)[0]
                        for x2 in range(k))
        randomizer = make_randomizer("krr", epsilon0=eps0, domain_size=k)
        for res in (fmt21.fmt21_closed_form(eps0, n, delta),
                    fmt21.fmt21_krr_closed_form(randomizer, n, delta),
                    fmt21.fmt21_approx_dp(eps0, n, delta, 1e-3 * delta / n),
                    clones.fmt21_numerical(eps0, n, delta)):
            assert res.epsilon >= exact_eps, res.method


def test_generic_numerical_dominates_exact_random_randomizers():
    """Random 3-input, 4-output randomizers at their true LDP level: the generic bound must
    dominate the exact divergence of every neighbour pair with x2 = ... = xn."""
    rng = np.random.default_rng(20240611)
    for _ in range(3):
        pmf = rng.dirichlet(np.ones(4), size=3) * 0.8 + 0.05
        eps0 = float(np.max(np.log(pmf[:, None, :] / pmf[None, :, :])))
        n = 12
        for eps in (0.05, 0.2, 0.5):
            worst = max(hockey_stick(*shuffled_pair(pmf, a, b, c, n), eps)
                        for a in range(3) for b in range(3) for c in range(3) if a != b)
            assert clones.fmt21_numerical_delta(eps, eps0, n) >= worst - 1e-13


# -- relations between the bounds ----------------------------------------------------------------
def test_numerical_is_tighter_than_closed_form():
    """002 Lemma 3.5 bounds the same pair's divergence, so the exact evaluation is never above."""
    for eps0 in (0.5, 1.0, 2.0, 3.0):
        for n in (10_000, 100_000):
            closed = fmt21.fmt21_closed_form(eps0, n, 1e-6).epsilon
            numeric = clones.fmt21_numerical(eps0, n, 1e-6).epsilon
            assert numeric <= closed


def test_approx_dp_with_zero_delta0_equals_closed_form():
    a = fmt21.fmt21_approx_dp(2.0, 50_000, 1e-6, 0.0)
    b = fmt21.fmt21_closed_form(2.0, 50_000, 1e-6)
    assert b.epsilon - 1e-8 <= a.epsilon <= b.epsilon + 1e-8
    c = fmt21.fmt21_approx_dp(2.0, 50_000, 1e-6, 1e-12)
    assert c.epsilon > a.epsilon


# -- monotonicity ----------------------------------------------------------------------------------
def _monotone(values: np.ndarray, slack: np.ndarray, axis: int, increasing: bool) -> bool:
    """Neighbours along ``axis`` ordered as claimed, up to the bisection error; NaN cells (outside
    a bound's regime) are skipped."""
    diff = np.diff(values, axis=axis)
    n = values.shape[axis]
    allowed = np.maximum(np.take(slack, range(1, n), axis=axis),
                         np.take(slack, range(n - 1), axis=axis))
    ok = diff >= -allowed if increasing else diff <= allowed
    return bool(np.all(ok | np.isnan(diff)))


@pytest.mark.parametrize("name", ["fmt21_numerical", "stronger_clone_numerical",
                                  "fmt21_closed_form", "fmt21_krr_closed_form"])
def test_monotone_in_n_and_eps0(name):
    eps0s = [0.25, 0.5, 1.0, 2.0, 3.0]
    ns = [3_000, 10_000, 30_000, 100_000]
    delta = 1e-6
    vals = np.full((len(eps0s), len(ns)), np.nan)
    slack = np.zeros_like(vals)
    for i, e0 in enumerate(eps0s):
        for j, n in enumerate(ns):
            try:
                if name == "fmt21_krr_closed_form":
                    res = fmt21.fmt21_krr_closed_form(
                        make_randomizer("krr", epsilon0=e0, domain_size=4), n, delta)
                else:
                    module = fmt21 if name == "fmt21_closed_form" else clones
                    res = getattr(module, name)(e0, n, delta)
            except ParameterError:
                continue  # outside the regime
            vals[i, j], slack[i, j] = res.epsilon, res.epsilon_error
    assert np.isfinite(vals).sum() >= 15
    assert _monotone(vals, slack, axis=0, increasing=True)
    assert _monotone(vals, slack, axis=1, increasing=False)


def test_krr_closed_form_improves_with_k():
    """Cor. 4.2: for fixed eps0 the k-RR bound decreases with k once k is large."""
    eps = [fmt21.fmt21_krr_closed_form(make_randomizer("krr", epsilon0=3.0, domain_size=k),
                                        100_000, 1e-6).epsilon for k in (4, 16, 64, 256)]
    assert all(a > b for a, b in zip(eps, eps[1:], strict=False))


# -- regimes and validation ------------------------------------------------------------------------
def test_regime_errors_name_field_and_value():
    limit = fmt21.fmt21_max_epsilon0(10_000, 1e-6)
    with pytest.raises(ParameterError) as err:
        fmt21.fmt21_closed_form(limit + 0.01, 10_000, 1e-6)
    assert err.value.field == "epsilon0" and err.value.value == pytest.approx(limit + 0.01)
    assert "log(n / (16 log(4/delta)))" in str(err.value)
    fmt21.fmt21_closed_form(limit - 1e-9, 10_000, 1e-6)  # just inside

    with pytest.raises(ParameterError) as err:
        fmt21.fmt21_krr_closed_form(make_randomizer("krr", epsilon0=3.0, domain_size=2), 50,
                                     1e-6)
    assert err.value.field == "n" and err.value.value == 50

    with pytest.raises(ParameterError) as err:
        fmt21.fmt21_approx_dp(1.0, 10_000, 1e-6, 1e-8)
    assert err.value.field == "delta0"

    with pytest.raises(ParameterError) as err:
        fmt21.fmt21_krr_closed_form(SimpleNamespace(name="oue", epsilon0=1.0), 100, 1e-6)
    assert err.value.field == "randomizer" and err.value.value == "oue"

    with pytest.raises(ParameterError) as err:
        fmt21.fmt21_theorem41_epsilon(0.5, 0.5, 1000, 1e-6)
    assert err.value.field == "p"


@pytest.mark.parametrize("kwargs,field", [
    (dict(epsilon0=0.0, n=100, delta=1e-6), "epsilon0"),
    (dict(epsilon0=-1.0, n=100, delta=1e-6), "epsilon0"),
    (dict(epsilon0=float("inf"), n=100, delta=1e-6), "epsilon0"),
    (dict(epsilon0=1.0, n=0, delta=1e-6), "n"),
    (dict(epsilon0=1.0, n=10.5, delta=1e-6), "n"),
    (dict(epsilon0=1.0, n=100, delta=0.0), "delta"),
    (dict(epsilon0=1.0, n=100, delta=1.0), "delta"),
])
def test_bad_inputs_raise(kwargs, field):
    for fn in (clones.fmt21_numerical, clones.stronger_clone_numerical, fmt21.fmt21_closed_form):
        with pytest.raises(ParameterError) as err:
            fn(**kwargs)
        assert err.value.field == field


def test_numpy_integers_accepted_and_trivial_cases():
    assert clones.fmt21_numerical(1.0, np.int64(5000), 1e-6).epsilon > 0
    # n = 1: no clones; the pair is binary RR, delta(eps) = q - e^eps (1 - q)
    res = clones.fmt21_numerical(1.0, 1, 1e-6)
    q = 1 / (1 + math.exp(-1.0))
    exact = math.log((q - 1e-6) / (1 - q))
    assert exact <= res.epsilon <= exact + 2e-9
    # delta above the TV distance of the pair: eps = 0
    assert clones.fmt21_numerical(0.1, 10, 0.2).epsilon == 0.0
    assert clones.fmt21_numerical_delta(2.0, 2.0, 100) == 0.0


def test_stronger_clone_is_labelled():
    res = clones.stronger_clone_numerical(2.0, 10_000, 1e-6)
    assert res.status is BoundStatus.STRONGER_CLONE
    assert res.epsilon < clones.fmt21_numerical(2.0, 10_000, 1e-6).epsilon


def test_scipy_binomial_accuracy_within_the_allowances():
    """The floating-point allowances of clones.ClonePair rest on the accuracy of
    scipy.stats.binom (module docstring); check them against 30-digit references."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30

    def upper_tail(m: int, c: int):
        j = m + 1
        term = mp.exp(mp.loggamma(c + 1) - mp.loggamma(j + 1) - mp.loggamma(c - j + 1)
                      - c * mp.log(2))
        total = mp.mpf(0)
        while j <= c:
            total += term
            if term < total * mp.mpf(10) ** -25:
                break
            term = term * (c - j) / (j + 1)
            j += 1
        return total

    for c in (1_000, 100_000):
        for z in (0.5, 3.0, 12.0):
            m = int(c / 2 + z * math.sqrt(c / 4))
            exact = upper_tail(m, c)
            rel = float(abs(mp.mpf(stats.binom.sf(m, c, 0.5)) - exact) / exact)
            assert rel <= clones.tail_relative_error(c) / 10
    for n, p in ((10**6, 0.018), (10**6, 0.37)):
        for z in (-12.0, 0.0, 12.0):
            k = int(n * p + z * math.sqrt(n * p * (1 - p)))
            exact = mp.exp(mp.loggamma(n + 1) - mp.loggamma(k + 1) - mp.loggamma(n - k + 1)
                           + k * mp.log(p) + (n - k) * mp.log(1 - p))
            rel = float(abs(mp.mpf(stats.binom.pmf(k, n, p)) - exact) / exact)
            assert rel <= clones.pmf_relative_error(n) / 10


# 001 Table 4 (generic eps0-LDP, delta = 0.01/n, T = 20): the generic variation-ratio row
# p = q = e^eps0, beta = tanh(eps0/2) is the stronger-clone pair (001 Sec. 4: "equivalent to the
# stronger clone reduction"), so our exact evaluation must lie just below the printed values
# (which are bisection upper ends rounded up to 3 significant figures).
TABLE4_001 = [
    (0.1, 10**4, 0.00280), (0.1, 10**6, 0.000346), (0.1, 10**8, 0.0000404),
    (1.0, 10**4, 0.0433), (1.0, 10**6, 0.00503), (1.0, 10**8, 0.000566),
    (3.0, 10**4, 0.227), (3.0, 10**6, 0.0255), (3.0, 10**8, 0.00283),
    (5.0, 10**4, 0.743), (5.0, 10**6, 0.0778), (5.0, 10**8, 0.00853),
]


@pytest.mark.parametrize("eps0,n,printed", [
    pytest.param(*row, marks=pytest.mark.slow) if row[1] == 10**8 else row for row in TABLE4_001
])
def test_stronger_clone_matches_001_table4(eps0, n, printed):
    res = clones.stronger_clone_numerical(eps0, n, 0.01 / n, tol=1e-12)
    assert 0.99 * printed <= res.epsilon <= printed


# -- tiny eps0 (issue 14): (e^eps0 - 1)/(e^eps0 + 1) = tanh(eps0/2) ----------------------------
@pytest.mark.parametrize("eps0", [1e-300, 1e-12, 1e-6, 1e-3, 1.0])
def test_fmt21_closed_form_tiny_eps0_against_mpmath(eps0):
    """002 Thm 3.1 eq. (1) evaluated in 400-digit arithmetic: the returned value must be at
    least the exact one (upper bound) and within 1e-11 relative of it. With the quotient as
    printed, eps0 = 1e-300 gave 0 and eps0 = 1e-6 fell below the exact value."""
    import mpmath as mp

    from shufflesim.protocols.bounds.closed_form.fmt21 import fmt21_closed_form
    n, delta = 10**6, 1e-15
    mp.mp.dps = 400        # e^eps0 - 1 at eps0 = 1e-300 needs ~300 digits
    e0 = mp.exp(mp.mpf(eps0))
    inner = 8 * mp.sqrt(e0 * mp.log(4 / mp.mpf(delta))) / mp.sqrt(n) + 8 * e0 / n
    exact = mp.log1p((e0 - 1) / (e0 + 1) * inner)
    got = fmt21_closed_form(eps0, n, delta).epsilon
    assert got >= exact
    assert got <= exact * (1 + 1e-11)


def test_fmt21_regime_uses_the_proofs_log_4_over_delta():
    """Issue 31: 002 prints log(2/delta) in the regime of Thm 3.1 / 3.8; the proof of Lemma A.1
    needs p n >= 16 log(4/delta). A point between the two conditions is refused."""
    n, delta = 10_000, 1e-6
    printed = math.log(n / (16 * math.log(2 / delta)))
    proven = math.log(n / (16 * math.log(4 / delta)))
    assert proven < printed
    assert fmt21.fmt21_max_epsilon0(n, delta) == pytest.approx(proven, rel=1e-15)
    with pytest.raises(ParameterError):
        fmt21.fmt21_closed_form((proven + printed) / 2, n, delta)
    with pytest.raises(ParameterError):
        fmt21.fmt21_approx_dp((proven + printed) / 2, n, delta, 0.0)
