"""Privacy-blanket bounds of 004: Thm 3.1 (shuffled k-RR), Hoeffding and corrected Bennett,
generic and per randomizer; 000 Table 4 Blanket (Bennett) reproduction."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import optimize
from test_clones import exact_epsilon, hockey_stick, krr_pmf, shuffled_pair

from shufflesim.protocols.bounds.atoms import RatioAtoms, Rounding
from shufflesim.protocols.bounds.closed_form import blanket as bc
from shufflesim.protocols.bounds.closed_form import blanket_randomizer as bcr
from shufflesim.protocols.bounds.result import BoundKind, BoundStatus
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import make_randomizer


def krr(eps0: float, k: int):
    return make_randomizer("krr", epsilon0=eps0, domain_size=k)


class PmfRandomizer:
    """A stand-in randomizer given by its pmf matrix (inputs x outputs)."""

    name = "pmf_stub"

    def __init__(self, pmf: np.ndarray) -> None:
        self.pmf = pmf
        self.epsilon0 = float(np.max(np.log(pmf[:, None, :] / pmf[None, :, :])))

    def output_pmf(self):
        return self.pmf


def random_ldp_pmf(rng, d: int, size: int) -> np.ndarray:
    return rng.dirichlet(np.ones(size), size=d) * 0.9 + 0.1 / size


# -- 000 Table 4 -----------------------------------------------------------------------------------
TABLE4_TARGETS = [0.01, 0.05, 0.10, 0.20, 0.50, 1.00]
TABLE4_EPS0 = [0.170, 0.620, 1.000, 1.510, 2.370, 3.060]


def _bennett_eps(eps0: float) -> float:
    return bcr.blanket_bennett(krr(eps0, 10), 1000, 1e-6, tol=1e-11).epsilon


@pytest.mark.parametrize("target,published", list(zip(TABLE4_TARGETS, TABLE4_EPS0, strict=True)))
def test_table4_blanket_bennett_eps0(target, published):
    """000 Table 4, Blanket (Bennett), 10-RR, n = 1000, delta = 1e-6.

    Variant that matches: k-RR specific gamma and PARV moments (004 Lemma 5.7), exact Binomial
    expectation over the blanket count (no split of delta), corrected Bennett denominator. The
    published eps0 is the 0.01-grid point whose eps is nearest the target (equivalently, the
    exact eps0 root rounded to 0.01); it is on the non-conservative side for target 0.5."""
    root = optimize.brentq(lambda e0: _bennett_eps(e0) - target, 0.05, 4.0, xtol=1e-9)
    assert round(root, 2) == pytest.approx(published, abs=1e-9)
    grid = np.round(published + np.array([-0.01, 0.0, 0.01]), 2)
    eps = np.array([_bennett_eps(e0) for e0 in grid])
    assert int(np.argmin(np.abs(eps - target))) == 1
    assert abs(root - published) <= 0.01


def test_table4_bennett_is_the_tightest_blanket_variant():
    """At eps0 = 1.0 (target 0.1 in Table 4) the Hoeffding variants and the generic Bennett are
    all looser, so Table 4 could only have used the k-RR specific Bennett bound."""
    r = krr(1.0, 10)
    bennett = bcr.blanket_bennett(r, 1000, 1e-6).epsilon
    assert bennett == pytest.approx(0.0995, abs=5e-4)
    for other in (bcr.blanket_hoeffding(r, 1000, 1e-6).epsilon,
                  bc.blanket_bennett_generic(1.0, 1000, 1e-6).epsilon,
                  bc.blanket_hoeffding_generic(1.0, 1000, 1e-6).epsilon):
        assert other > 0.15


# -- PARV parameters -------------------------------------------------------------------------------
@pytest.mark.parametrize("eps0,k", [(0.3, 2), (1.0, 10), (3.7, 5), (6.0, 50)])
def test_krr_atoms_match_lemma_57(eps0, k):
    atoms = bcr.randomizer_blanket_atoms(krr(eps0, k)).atoms
    for eps in (0.0, 0.1, 0.5 * eps0, 0.99 * eps0):
        exact = bc.atoms_parv_bounds(eps, atoms)
        lemma = bc.krr_parv_bounds(eps, eps0, k)
        for field in ("gamma", "mean_gap", "upper", "width", "second_moment"):
            expected = np.broadcast_to(getattr(lemma, field), getattr(exact, field).shape)
            np.testing.assert_allclose(getattr(exact, field), expected, rtol=1e-10, atol=1e-12)


def test_generic_parameters_bound_every_randomizer():
    """004 Lemmas 5.2 and 5.4 (authors' constants) dominate the exact PARV parameters of random
    eps0-LDP randomizers, for every neighbour pair."""
    rng = np.random.default_rng(7)
    for _ in range(20):
        stub = PmfRandomizer(random_ldp_pmf(rng, 4, 6))
        atoms = bcr.randomizer_blanket_atoms(stub).atoms
        for eps in np.linspace(0, stub.epsilon0, 6)[:-1]:
            exact = bc.atoms_parv_bounds(eps, atoms)
            generic = bc.generic_parv_bounds(eps, stub.epsilon0)
            assert np.all(exact.gamma >= generic.gamma)
            np.testing.assert_allclose(exact.mean_gap, math.expm1(eps), rtol=1e-9, atol=1e-12)
            assert np.all(exact.upper <= generic.upper[0] + 1e-12)
            assert np.all(exact.width <= generic.width[0] + 1e-12)
            assert np.all(exact.second_moment <= generic.second_moment[0] + 1e-12)


# -- upper bounds dominate exact values ------------------------------------------------------------
@pytest.mark.parametrize("eps0,k,n", [(0.5, 2, 300), (1.0, 3, 60), (2.0, 4, 25), (3.0, 2, 500)])
def test_blanket_bounds_dominate_exact_krr(eps0, k, n):
    pmf = krr_pmf(eps0, k)
    r = krr(eps0, k)
    pairs = [shuffled_pair(pmf, 0, 1, x2, n) for x2 in range(k)]
    for eps in (0.05, 0.2, 0.5, 0.9 * eps0):
        exact = max(hockey_stick(p0, p1, eps) for p0, p1 in pairs)
        for value in (bcr.blanket_bennett_randomizer_delta(eps, r, n),
                      bcr.blanket_hoeffding_randomizer_delta(eps, r, n),
                      bc.blanket_bennett_generic_delta(eps, eps0, n),
                      bc.blanket_hoeffding_generic_delta(eps, eps0, n)):
            assert value >= exact - 1e-13
    delta = 0.01
    exact_eps = max(exact_epsilon(p0, p1, delta, eps0)[0] for p0, p1 in pairs)
    for res in (bcr.blanket_bennett(r, n, delta), bcr.blanket_hoeffding(r, n, delta),
                bc.blanket_bennett_generic(eps0, n, delta),
                bc.blanket_hoeffding_generic(eps0, n, delta)):
        assert res.epsilon >= exact_eps, res.method


def test_per_randomizer_bounds_dominate_exact_random_randomizers():
    rng = np.random.default_rng(11)
    for _ in range(3):
        stub = PmfRandomizer(random_ldp_pmf(rng, 3, 3))
        n = 30
        pairs = [shuffled_pair(stub.pmf, a, b, c, n)
                 for a in range(3) for b in range(3) for c in range(3) if a != b]
        for eps in (0.02, 0.1, 0.3):
            exact = max(hockey_stick(p0, p1, eps) for p0, p1 in pairs)
            assert bcr.blanket_bennett_randomizer_delta(eps, stub, n) >= exact - 1e-13
            assert bcr.blanket_hoeffding_randomizer_delta(eps, stub, n) >= exact - 1e-13
            assert bc.blanket_bennett_generic_delta(eps, stub.epsilon0, n) >= exact - 1e-13


@pytest.mark.parametrize("eps0,k,n,delta", [(1.0, 2, 400, 0.1), (1.0, 3, 300, 0.2)])
def test_theorem31_dominates_exact_krr(eps0, k, n, delta):
    pmf = krr_pmf(eps0, k)
    exact_eps = max(exact_epsilon(*shuffled_pair(pmf, 0, 1, x2, n), delta, eps0)[0]
                    for x2 in range(k))
    res = bc.blanket_krr_theorem31(krr(eps0, k), n, delta)
    assert res.epsilon >= exact_eps


# -- Thm 3.1 formula and inversion -----------------------------------------------------------------
def test_theorem31_gamma_and_inversion_roundtrip():
    for eps, n, delta, k in ((0.5, 10_000, 1e-6, 10), (0.99, 2_000, 1e-3, 3),
                             (0.1, 10**7, 1e-8, 100)):
        gamma = bc.blanket_krr_gamma(eps, n, delta, k)
        assert gamma == pytest.approx(max(14 * k * math.log(2 / delta) / ((n - 1) * eps**2),
                                          27 * k / ((n - 1) * eps)), rel=1e-14)
        back = bc.blanket_krr_epsilon_for_gamma(gamma, n, delta, k)
        assert eps <= back <= eps * (1 + 1e-12)
        # more noise than required: smaller eps
        assert bc.blanket_krr_epsilon_for_gamma(min(1.0, 2 * gamma), n, delta, k) < eps


def test_theorem31_uses_krr_gamma():
    r = krr(2.0, 10)
    gamma = 10 / (math.exp(2.0) + 9)
    assert bc.krr_blanket_gamma(2.0, 10) == pytest.approx(gamma)
    res = bc.blanket_krr_theorem31(r, 100_000, 1e-6)
    assert res.epsilon == pytest.approx(
        max(math.sqrt(140 * math.log(2e6) / (99_999 * gamma)), 270 / (99_999 * gamma)), rel=1e-12)
    assert res.kind is BoundKind.UPPER and res.status is BoundStatus.PROVEN


# -- monotonicity ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["blanket_bennett", "blanket_hoeffding",
                                  "blanket_bennett_generic", "blanket_hoeffding_generic",
                                  "blanket_krr_theorem31"])
def test_monotone_in_n_and_eps0(name):
    eps0s = [0.2, 0.5, 1.0, 2.0, 3.0, 4.0]
    ns = [1_000, 3_000, 10_000, 100_000, 10**6]
    vals = np.full((len(eps0s), len(ns)), np.nan)
    slack = np.zeros_like(vals)
    for i, e0 in enumerate(eps0s):
        for j, n in enumerate(ns):
            try:
                if name in ("blanket_bennett", "blanket_hoeffding"):
                    res = getattr(bcr, name)(krr(e0, 10), n, 1e-6)
                elif name == "blanket_krr_theorem31":
                    res = bc.blanket_krr_theorem31(krr(e0, 10), n, 1e-6)
                else:
                    res = getattr(bc, name)(e0, n, 1e-6)
            except ParameterError:
                continue
            vals[i, j], slack[i, j] = res.epsilon, res.epsilon_error
    assert np.isfinite(vals).sum() >= 12
    tol = np.maximum(slack[:, 1:], slack[:, :-1])
    dn = np.diff(vals, axis=1)
    assert np.all((dn <= tol) | np.isnan(dn))
    tol = np.maximum(slack[1:], slack[:-1])
    de = np.diff(vals, axis=0)
    assert np.all((de >= -tol) | np.isnan(de))


def test_bennett_beats_hoeffding_for_krr_and_no_amplification_is_eps0():
    r = krr(2.0, 10)
    assert bcr.blanket_bennett(r, 10_000, 1e-6).epsilon < bcr.blanket_hoeffding(r, 10_000,
                                                                              1e-6).epsilon
    tiny = bc.blanket_hoeffding_generic(3.0, 5, 1e-9)
    assert tiny.epsilon == pytest.approx(3.0, abs=2e-9) and "no amplification" in tiny.note


def test_delta_functions_vanish_above_the_local_level():
    r = krr(1.2, 4)
    assert bcr.blanket_bennett_randomizer_delta(1.2, r, 100) == 0.0
    assert bc.blanket_hoeffding_generic_delta(1.3, 1.2, 100) == 0.0
    assert bcr.blanket_bennett_randomizer_delta(0.0, r, 100) == 1.0  # a = 0: no information


# -- regimes and validation ------------------------------------------------------------------------
def test_regime_errors():
    with pytest.raises(ParameterError) as err:
        bc.blanket_krr_theorem31(krr(4.0, 10), 1000, 1e-6)
    assert err.value.field == "epsilon0" and err.value.value == 4.0
    assert "eps <= 1" in str(err.value)
    with pytest.raises(ParameterError) as err:
        bc.blanket_krr_epsilon_for_gamma(0.01, 1000, 1e-6, 10)
    assert err.value.field == "n"
    with pytest.raises(ParameterError) as err:
        bc.blanket_krr_gamma(1.5, 1000, 1e-6, 10)
    assert err.value.field == "epsilon" and err.value.value == 1.5
    with pytest.raises(ParameterError) as err:
        bc.blanket_krr_gamma(0.5, 1000, 1e-6, 1)
    assert err.value.field == "domain_size"
    with pytest.raises(ParameterError) as err:
        bc.blanket_krr_theorem31(SimpleNamespace(name="oue", epsilon0=1.0), 1000, 1e-6)
    assert err.value.field == "randomizer"


@pytest.mark.parametrize("kwargs,field", [
    (dict(epsilon0=0.0, n=100, delta=1e-6), "epsilon0"),
    (dict(epsilon0=1.0, n=0, delta=1e-6), "n"),
    (dict(epsilon0=1.0, n=100, delta=1.5), "delta"),
])
def test_bad_inputs_raise(kwargs, field):
    for fn in (bc.blanket_bennett_generic, bc.blanket_hoeffding_generic):
        with pytest.raises(ParameterError) as err:
            fn(**kwargs)
        assert err.value.field == field


def test_atoms_validation():
    good = bcr.randomizer_blanket_atoms(krr(1.0, 3)).atoms[0]
    down = RatioAtoms(good.a, good.b, good.weight, Rounding.DOWN)
    with pytest.raises(ParameterError) as err:
        bcr.blanket_bennett(krr(1.0, 3), 100, 1e-6, atoms=[down])
    assert err.value.field == "atoms.rounding"
    with pytest.raises(ParameterError) as err:
        bc.atoms_parv_bounds(0.1, [])
    assert err.value.field == "atoms"
    # explicit atoms give the same bound as the randomizer path (k-RR: 004 Lemma 5.7 in closed
    # form, without atoms): the same value to the inversion's tolerance, overlapping brackets
    r = krr(1.0, 3)
    with_atoms = bcr.blanket_bennett(r, 500, 1e-4, atoms=[good])
    closed = bcr.blanket_bennett(r, 500, 1e-4)
    assert closed.epsilon - closed.epsilon_error <= with_atoms.epsilon * (1 + 1e-12)
    assert with_atoms.epsilon - with_atoms.epsilon_error <= closed.epsilon * (1 + 1e-12)


@pytest.mark.parametrize("name,params", [
    ("brr", {}), ("oue", dict(domain_size=3)), ("subset", dict(domain_size=4, subset_size=2)),
    ("rappor", dict(domain_size=3)), ("olh", dict(domain_size=3, hash_range=2)),
    ("hr", dict(domain_size=3)),
])
def test_registered_randomizers_via_decompositions_dominate_exact(name, params):
    """Per-randomizer bounds built from protocols.bounds.numerical.decompositions (its
    candidate pairs, both directions) dominate the exact divergence of every pair and common x2
    (brute force)."""
    r = make_randomizer(name, epsilon0=1.0, **params)
    pmf = r.output_pmf()
    d, n = pmf.shape[0], (5 if pmf.shape[1] <= 8 else 4)
    pairs = [shuffled_pair(pmf, a, b, c, n)  # hockey_stick takes both directions
             for a in range(d) for b in range(a + 1, d) for c in range(d)]
    for eps in (0.05, 0.3, 0.7):
        exact = max(hockey_stick(p0, p1, eps) for p0, p1 in pairs)
        assert bcr.blanket_bennett_randomizer_delta(eps, r, n) >= exact - 1e-13
        assert bcr.blanket_hoeffding_randomizer_delta(eps, r, n) >= exact - 1e-13
    res = bcr.blanket_bennett(r, 10_000, 1e-6)
    assert res.status is BoundStatus.PROVEN and res.epsilon < 1.0


def test_continuous_randomizer_is_labelled_when_worst_pair_unproven():
    res = bcr.blanket_bennett(make_randomizer("laplace", epsilon0=1.0), 10_000, 1e-6)
    assert res.status is BoundStatus.APPROXIMATE and "not proven" in res.note
    assert 0 < res.epsilon < 1.0


# -- tiny eps0 (issue 14): closed forms without cancellation, checked against mpmath ----------
import mpmath as _mp  # noqa: E402


@pytest.mark.parametrize("eps0", [1e-300, 1e-12, 1e-6])
@pytest.mark.parametrize("eps_frac", [0.0, 0.5])
def test_generic_parv_bounds_tiny_eps0_against_mpmath(eps0, eps_frac):
    """004 Lemmas 5.2/5.4 generic constants: e0 - e/e0 was 0 at eps0 = 1e-300 (so
    blanket_bennett_generic returned eps = 0) and ~1e-10 relative off at 1e-6. Each constant is
    an upper bound (or a gap) that must be within 1e-13 relative of the exact value."""
    from shufflesim.protocols.bounds.closed_form.blanket import generic_parv_bounds
    eps = eps_frac * eps0
    params = generic_parv_bounds(eps, eps0)
    _mp.mp.dps = 400
    e, e0 = _mp.exp(_mp.mpf(eps)), _mp.exp(_mp.mpf(eps0))
    exact = {"upper": e0 - e / e0, "width": (e + 1) * (e0 - 1 / e0),
             "second_moment": e0 * (e * e + 1) - 2 * e / e0**3}
    for name, value in exact.items():
        got = float(getattr(params, name)[0])
        assert abs(got - value) <= 1e-13 * value, (name, got, value)


@pytest.mark.parametrize("eps0", [1e-300, 1e-12, 1e-6])
@pytest.mark.parametrize("k", [2, 10])
def test_krr_parv_bounds_tiny_eps0_against_mpmath(eps0, k):
    """004 Lemma 5.7 (k-RR): 1 - gamma was 0 at eps0 = 1e-300 (max L <= 0, delta = 0)."""
    from shufflesim.protocols.bounds.closed_form.blanket import krr_parv_bounds
    eps = 0.5 * eps0
    params = krr_parv_bounds(eps, eps0, k)
    _mp.mp.dps = 400
    e, e0 = _mp.exp(_mp.mpf(eps)), _mp.exp(_mp.mpf(eps0))
    g = k / (e0 + k - 1)
    upper = g * (1 - e) + (1 - g) * k
    assert upper > 0
    assert float(params.upper[0]) >= float(upper) * (1 - 1e-15)
    assert float(params.upper[0]) <= float(upper) * (1 + 1e-12)
    width = (1 - g) * k * (e + 1)
    assert abs(float(params.width[0]) - width) <= 1e-13 * width


@pytest.mark.parametrize("eps0", [1e-300, 1e-6])
def test_blanket_bennett_generic_tiny_eps0_is_not_zero(eps0):
    """At eps0 = 1e-300 the bound returned eps = 0 (no privacy loss at all): false."""
    from shufflesim.protocols.bounds.closed_form.blanket import blanket_bennett_generic
    res = blanket_bennett_generic(eps0, 1000, 1e-6)
    assert 0.0 < res.epsilon <= eps0 * (1 + 1e-9)
