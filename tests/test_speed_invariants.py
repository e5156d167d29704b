"""Issue 18: the speed work keeps every number sound.

* Chernoff exponents are minimised by a vectorized grid-and-zoom (engine/common.py
  minimise_unimodal): the bound it returns is a value of the exponent at some lam (valid), and no
  lam on a fine brute-force grid does better by more than float noise.
* The piecewise mechanism's atoms come from its cell geometry (atom_sets.piecewise_interval_atoms):
  they agree with the log-density route where that one is accurate, and stay a valid
  decomposition at eps0 = 30-50, where the log-density route cancelled and was refused.
* The conditioning method declines groups whose binomial parameter rounds to 0 or 1.
* The two-count kernel's binomial tails by anchored recurrences stay within their stated error
  bound of betainc, and its divergence brackets the all-betainc one.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from shufflesim.protocols.bounds import catalogue
from shufflesim.protocols.bounds.engine import common
from shufflesim.protocols.bounds.engine.conditioning import well_posed
from shufflesim.protocols.bounds.numerical import decompositions as dec
from shufflesim.protocols.bounds.numerical import two_count
from shufflesim.protocols.bounds.numerical import variation_ratio as vr
from shufflesim.protocols.bounds.numerical.atom_sets import check_decomposition
from shufflesim.protocols.bounds.numerical.density_atoms import _piecewise_constant_atoms
from shufflesim.protocols.randomizers import make_randomizer


# ------------------------------------------------------------------------------------------
# Chernoff minimisation
# ------------------------------------------------------------------------------------------
def test_minimise_unimodal_finds_the_minimum_of_a_convex_function():
    rng = np.random.default_rng(18)
    for _ in range(20):
        centre, curv = rng.uniform(-5, 5), rng.uniform(0.1, 10)
        got = common.minimise_unimodal(lambda s, c=centre, k=curv: k * (s - c) ** 2 + 3.0,
                                       -12.0, 6.0)
        assert 3.0 <= got <= 3.0 + curv * 1e-8


def test_minimise_unimodal_at_the_boundary():
    got = common.minimise_unimodal(lambda s: np.exp(s), -3.0, 2.0)
    assert got == pytest.approx(math.exp(-3.0), rel=1e-12)


def _brute_chernoff_upper(cat: common.Categories) -> float:
    """min over a fine lam grid of the same exponent (rounding term included)."""
    s = np.linspace(-25.0, 10.0, 200_001)
    lam = np.exp(s)
    log_mgf = cat.count * common.log_sum_exp(lam[:, None] * cat.c[None, :], cat.w)
    c_abs = float(np.abs(cat.c).max())
    vals = log_mgf - np.log(lam * math.e) + cat.count * 8 * common.U * (1 + lam * c_abs)
    return math.exp(float(np.min(vals)))


@pytest.mark.parametrize("eps0,n,eps", [(1.0, 1000, 0.1), (1.0, 10**6, 0.01), (4.0, 10**4, 1.0),
                                        (8.0, 10**5, 2.0), (0.01, 10**9, 0.0)])
def test_chernoff_upper_is_a_valid_and_near_optimal_exponent(eps0, n, eps):
    r = make_randomizer("krr", epsilon0=eps0, domain_size=10)
    cat = common.categories(dec.blanket_atoms(r, 0, 1), n, eps)
    got = common.chernoff_upper([cat])
    brute = _brute_chernoff_upper(cat)
    # not below the best exponent on the grid (less would be an invalid number), and within
    # float noise of it (not looser)
    assert got >= brute * (1 - 1e-6)
    assert got <= brute * (1 + 1e-5)


def test_log_sum_exp_matches_direct_sum():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(7, 5)) * 3
    b = rng.uniform(0.1, 1.0, size=5)
    direct = np.log(np.exp(x) @ b)
    assert np.allclose(common.log_sum_exp(x, b), direct, rtol=1e-14, atol=1e-14)
    assert common.log_sum_exp(np.array([[math.inf, 1.0]]), np.ones(2))[0] == math.inf


# ------------------------------------------------------------------------------------------
# Piecewise atoms from the cell geometry
# ------------------------------------------------------------------------------------------
def _log_density_blanket(r, x0, x1):
    vertices = dec._float_inputs(r)
    return _piecewise_constant_atoms((dec._logpdf(r, x0), dec._logpdf(r, x1)),
                                     dec._min_logpdf(r, vertices),
                                     r.density_breakpoints((x0, x1, *vertices)))


def _log_density_exact(r, x0, x1, x2):
    return _piecewise_constant_atoms((dec._logpdf(r, x0), dec._logpdf(r, x1)), dec._logpdf(r, x2),
                                     r.density_breakpoints((x0, x1, x2)))


def _summary(atoms) -> np.ndarray:
    """Functionals of the atom set that do not depend on how near-equal atoms were merged:
    E[G_eps+] on an eps grid, the mass, and second moments."""
    w, a, b = atoms.weight, atoms.a, atoms.b
    eps = np.linspace(0.0, 1.2 * max(float(np.log(np.max(a / b))), 0.01), 13)
    pos = [float(w @ np.maximum(a - math.exp(e) * b, 0.0)) for e in eps]
    return np.array([*pos, w.sum(), w @ a, w @ b, w @ (a * a), w @ (b * b), w @ (a * b)])


def _max_rel_diff(a, b) -> float:
    sa, sb = _summary(a), _summary(b)
    return float(np.max(np.abs(sa - sb) / np.maximum(np.abs(sb), 1e-3)))


@pytest.mark.parametrize("eps0", [0.1, 1.0, 4.0, 8.0])
def test_piecewise_atoms_agree_with_the_log_density_route(eps0):
    r = make_randomizer("piecewise", epsilon0=eps0)
    cand = dec.neighbour_candidates(r)
    pair = cand.pairs[0]
    assert _max_rel_diff(dec.blanket_atoms(r, *pair), _log_density_blanket(r, *pair)) < 1e-12
    for triple in cand.triples:
        assert _max_rel_diff(dec.exact_pair_atoms(r, *triple),
                             _log_density_exact(r, *triple)) < 1e-12
    # an off-grid pair too (overlapping high intervals)
    assert _max_rel_diff(dec.blanket_atoms(r, -0.3, 0.55),
                         _log_density_blanket(r, -0.3, 0.55)) < 1e-12


@pytest.mark.parametrize("eps0", [30.0, 40.0, 50.0])
def test_piecewise_atoms_stay_a_decomposition_at_large_eps0(eps0):
    r = make_randomizer("piecewise", epsilon0=eps0)
    cand = dec.neighbour_candidates(r)
    blanket = dec.blanket_atoms(r, *cand.pairs[0])
    check_decomposition(blanket, eps0, "blanket")
    # blanket mass = lo * 2C = 2 (1 + g) expit(-eps0/2) / (2 + g)
    g = float(r.high_interval_length())
    gamma = 2 * (1 + g) * float(r.low_mass()) / (2 + g)
    assert float(blanket.weight.sum()) == pytest.approx(gamma, rel=1e-13)
    # the (e^eps0, 1) atom carries R(1)'s high interval [1, C] seen from the blanket
    ratio = blanket.a / blanket.b
    assert float(ratio.max()) == pytest.approx(math.exp(eps0), rel=1e-12)
    for triple in cand.triples:
        atoms = dec.exact_pair_atoms(r, *triple)
        check_decomposition(atoms, eps0, "exact")
        assert float(atoms.weight.sum()) == pytest.approx(1.0, abs=1e-14)


@pytest.mark.parametrize("eps0", [30.0, 40.0])
def test_piecewise_bounds_computed_at_large_eps0(eps0):
    r = make_randomizer("piecewise", epsilon0=eps0)
    upper = catalogue.evaluate("optimal-blanket", r, 1000, 1e-6)
    lower = catalogue.evaluate("exact-lower", r, 1000, 1e-6)
    assert not upper.error and not lower.error
    assert upper.result.epsilon <= eps0
    assert lower.result.epsilon <= upper.result.epsilon


def test_conditioning_declines_a_degenerate_binomial():
    cat = common.Categories(np.array([-1e17, 0.0, 1.0]), np.array([1e-18, 0.5, 0.5]),
                            1000, 0.0)
    assert not well_posed(cat)
    ok = common.Categories(np.array([-1.0, 0.0, 2.0]), np.array([0.3, 0.4, 0.3]), 1000, 0.0)
    assert well_posed(ok)


# ------------------------------------------------------------------------------------------
# Calibration search (protocols/bounds/calibration.py largest_certified with a score)
# ------------------------------------------------------------------------------------------
def _synthetic(crossing: float, power: float = 2.0, holes=()):
    """eps(x) = 0.5 (x / crossing)^power; certified iff eps <= 0.5; ``holes``: points with no
    number (a regime error there)."""
    calls = []

    def eps(x):
        return 0.5 * (x / crossing) ** power

    def certified(x):
        calls.append(x)
        return not any(abs(x - h) < 1e-12 for h in holes) and eps(x) <= 0.5

    def score(x):
        if any(abs(x - h) < 1e-12 for h in holes):
            return None
        return math.log(eps(x) / 0.5)
    return certified, score, calls


@pytest.mark.parametrize("crossing,power", [(2.659, 1.0), (0.3, 3.0), (7.7, 0.5), (19.0, 2.0)])
def test_largest_certified_with_score_is_certified_and_faster(crossing, power):
    from shufflesim.protocols.bounds.calibration import largest_certified
    certified, score, calls = _synthetic(crossing, power)
    low, high = largest_certified(certified, 1e-4, 20.0, 1e-4, score=score)
    assert low <= crossing < high and high - low <= 1e-4 * low
    fast = len(calls)
    certified, _, calls = _synthetic(crossing, power)
    low_b, high_b = largest_certified(certified, 1e-4, 20.0, 1e-4)
    assert low_b <= crossing < high_b
    assert fast < len(calls)


def test_largest_certified_with_score_falls_back_without_numbers():
    """Points without a score (regime errors) send the search to bisection; the result is still
    a certified point and a bracket of width rtol."""
    from shufflesim.protocols.bounds.calibration import largest_certified
    seen = []

    def certified(x):
        seen.append(x)
        return x <= 1.5

    low, high = largest_certified(certified, 1e-4, 20.0, 1e-4, score=lambda x: None)
    assert low <= 1.5 < high and high - low <= 1e-4 * low
    assert all(x <= 1.5 for x in [low])


def test_largest_certified_limit_certified():
    from shufflesim.protocols.bounds.calibration import largest_certified
    certified, score, _ = _synthetic(100.0)
    assert largest_certified(certified, 1e-4, 20.0, 1e-4, score=score) == (20.0, None)


# ------------------------------------------------------------------------------------------
# Closed forms from cached per-randomizer quantities
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["blanket_hoeffding", "blanket_bennett",
                                  "blanket_hoeffding_generic", "blanket_bennett_generic"])
def test_closed_form_cache_returns_the_same_numbers(name):
    from shufflesim.protocols.bounds.closed_form import blanket, blanket_randomizer
    r = make_randomizer("krr", epsilon0=0.7, domain_size=6)
    first = catalogue.evaluate(name, r, 5000, 1e-6).result
    again = catalogue.evaluate(name, make_randomizer("krr", epsilon0=0.7, domain_size=6),
                               5000, 1e-6).result
    assert (again.epsilon, again.epsilon_error, again.note) == (
        first.epsilon, first.epsilon_error, first.note)
    other_n = catalogue.evaluate(name, r, 50_000, 1e-6).result
    assert other_n.epsilon < first.epsilon             # a different point is computed
    # a cold computation (caches cleared) gives the same value
    blanket_randomizer._RESULTS.clear()
    blanket_randomizer._cached_pairs.cache_clear()
    blanket._GENERIC_RESULTS.clear()
    cold = catalogue.evaluate(name, r, 5000, 1e-6).result
    assert cold.epsilon == first.epsilon


# ------------------------------------------------------------------------------------------
# Two-count kernel: binomial tails by anchored recurrences (issue 18, second round)
# ------------------------------------------------------------------------------------------
def _tail_case(rng, m):
    rho = float(rng.uniform(0.05, 0.95))
    lo = int(0.3 * m)
    c = np.arange(lo, lo + min(m - lo, 20000), dtype=float)
    slope, shift = rng.uniform(-0.2, 1.2), rng.normal(0.0, 3.0 * math.sqrt(m))
    k = np.floor(c * slope + c.mean() * (rho - slope) + shift)
    return k, c, rho


@pytest.mark.parametrize("m", [3000, 30000, 10**6, 10**8])
def test_two_count_tail_recurrence_within_its_error_bound(m, monkeypatch):
    """The recurrence's tails against betainc at every slice: the difference stays inside the
    stated error bound, and the bound itself is small (~1e-10 relative)."""
    monkeypatch.setattr(two_count, "_RECURSE_ABOVE", 2048)
    rng = np.random.default_rng(m)
    for _ in range(6):
        k, c, rho = _tail_case(rng, m)
        got, error = two_count._tail_at_least(k, c, rho, 1.0 - rho)
        assert not np.isscalar(error)          # the recurrence was used
        direct = two_count._binomial_at_least(k, c, rho)
        assert np.all(np.abs(got - direct) <= error)
        assert np.all(error <= 1e-9 * direct + 1e-180)


def test_two_count_tail_recurrence_detects_a_planted_fault(monkeypatch):
    """A recurrence term off by 1e-6 (relative) leaves the error bound."""
    monkeypatch.setattr(two_count, "_RECURSE_ABOVE", 2048)
    c = np.arange(300000.0, 320000.0)
    rho = 0.3
    for k in (np.full(c.size, 93000.0), np.floor(0.3 * c) + 40.0, np.floor(186000.0 - 0.3 * c)):
        wrong = stats.binom.pmf(k - 1.0, c, rho) * (1.0 + 1e-6)
        got, error = two_count._tail_at_least(k, c, rho, 1.0 - rho, below=wrong)
        direct = two_count._binomial_at_least(k, c, rho)
        assert np.any(np.abs(got - direct) > error)
        right, error = two_count._tail_at_least(k, c, rho, 1.0 - rho)
        assert np.all(np.abs(right - direct) <= error)


@pytest.mark.parametrize("eps0,n,wider", [(1.0, 10**8, 1.002), (4.0, 10**7, 1.01),
                                          (0.5, 10**5, 1.05)])
def test_two_count_divergence_recurrence_brackets_the_direct_route(eps0, n, wider, monkeypatch):
    """The divergence with recurrence tails (forced from 2048 slices on) and with betainc
    everywhere: guaranteed intervals of the same number, so they intersect; the recurrence's is
    at most ``wider`` times as wide."""
    r = make_randomizer("krr", epsilon0=eps0, domain_size=10)
    cands = vr.lower_candidates(r, n)
    assert cands
    for cand in cands:
        for eps in (0.3 * eps0 / math.sqrt(n / 1e3), eps0 / math.sqrt(n / 1e3)):
            monkeypatch.setattr(two_count, "_RECURSE_ABOVE", 2048)
            fast = two_count.two_count_delta(cand.pair, eps)
            monkeypatch.setattr(two_count, "_RECURSE_ABOVE", 10**12)
            slow = two_count.two_count_delta(cand.pair, eps)
            assert max(fast.lower, slow.lower) <= min(fast.upper, slow.upper)
            assert fast.upper - fast.lower <= wider * (slow.upper - slow.lower) + 1e-300
