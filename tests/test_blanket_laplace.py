"""004's Hoeffding and Bennett bounds for the Laplace mechanism (Lemma 5.8 with Lemmas 5.1, 5.3,
5.5 and the corrected 5.6): the lemma's constants against the exact moments of every pair on a
grid, the authors' released numbers, the conservative side of the rounding, the catalogue, and
the order against the engine's bounds (exact-lower, optimal-blanket)."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from shufflesim.protocols.bounds import catalogue as cat
from shufflesim.protocols.bounds.closed_form import blanket_laplace as bl
from shufflesim.protocols.bounds.result import BoundStatus
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import make_randomizer

C = 0.5  # centre of the blanket Lap(1/2, 1/eps0)


def _exp_integral(eps0: float, terms: list[tuple[float, float]]) -> float:
    """int_R (eps0/2) exp(eps0 sum_i s_i |w - p_i|) dw, exactly (piecewise linear exponent;
    terms = [(s_i, p_i)], sum s_i < 0)."""
    kinks = sorted({p for _, p in terms})
    total = 0.0
    bounds = [-math.inf, *kinks, math.inf]
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        mid = (lo + hi) / 2 if math.isfinite(lo) and math.isfinite(hi) else (
            hi - 1 if math.isfinite(hi) else lo + 1)
        slope = sum(s * math.copysign(1.0, mid - p) for s, p in terms)
        intercept = sum(s * abs(mid - p) for s, p in terms) - slope * mid

        def prim(w, slope=slope, intercept=intercept):
            if not math.isfinite(w):
                return 0.0
            return 0.5 * math.exp(eps0 * (intercept + slope * w)) / slope
        if slope == 0:
            total += 0.5 * eps0 * math.exp(eps0 * intercept) * (hi - lo)
        else:
            total += prim(hi) - prim(lo)
    return total


def _exact_moments(eps: float, eps0: float, x: float, xp: float) -> tuple[float, float]:
    """E[L], E[L^2] of the PARV of the pair (x, x') under omega = Lap(1/2, 1/eps0)."""
    e = math.exp(eps)
    # r_x r_y omega = (eps0/2) exp(eps0 (|w - c| - |w - x| - |w - y|))
    def prod(a, b):
        return _exp_integral(eps0, [(1.0, C), (-1.0, a), (-1.0, b)])
    mean = _exp_integral(eps0, [(-1.0, x)]) - e * _exp_integral(eps0, [(-1.0, xp)])
    second = prod(x, x) + e * e * prod(xp, xp) - 2 * e * prod(x, xp)
    return mean, second


def _parv_values(eps: float, eps0: float, x: float, xp: float) -> np.ndarray:
    w = np.concatenate([np.linspace(-3, 4, 20001), [x, xp, C, -1e3, 1e3]])
    r = lambda z: np.exp(eps0 * (np.abs(w - C) - np.abs(w - z)))  # noqa: E731
    return r(x) - math.exp(eps) * r(xp)


# -- 004 Lemma 5.8 against the exact moments ----------------------------------------------
@pytest.mark.parametrize("eps0", [0.2, 1.0, 3.0, 8.0])
@pytest.mark.parametrize("frac", [0.0, 0.3, 0.9])
def test_lemma_58_dominates_every_pair_and_is_attained(eps0, frac):
    """The lemma's range and second moment bound the exact ones of every pair on a grid of
    [0, 1]^2 and are attained by (0, 1); E[L] = 1 - e^eps for every pair (Lemma 5.4 (1))."""
    eps = frac * eps0
    p = bl.laplace_parv_bounds(eps, eps0)
    grid = np.linspace(0.0, 1.0, 6)
    worst_second, top, bottom = 0.0, -math.inf, math.inf
    for x in grid:
        for xp in grid:
            if x == xp:
                continue
            mean, second = _exact_moments(eps, eps0, x, xp)
            assert mean == pytest.approx(-math.expm1(eps), rel=1e-9, abs=1e-12)
            worst_second = max(worst_second, second)
            values = _parv_values(eps, eps0, x, xp)
            top, bottom = max(top, values.max()), min(bottom, values.min())
    assert float(p.second_moment[0]) >= worst_second
    assert float(p.second_moment[0]) == pytest.approx(_exact_moments(eps, eps0, 0.0, 1.0)[1],
                                                      rel=1e-9)
    assert float(p.upper[0]) >= top and float(p.upper[0]) == pytest.approx(top, rel=1e-12)
    assert float(p.upper[0] - p.width[0]) <= bottom
    assert float(p.width[0]) == pytest.approx(top - bottom, rel=1e-9)
    assert float(p.gamma[0]) <= math.exp(-eps0 / 2)
    assert float(p.mean_gap[0]) <= math.expm1(eps)


def test_blanket_mass_is_lemma_51():
    """004 Lemma 5.1 (2): int inf_x mu_x = e^{-eps0/2}, and the blanket is Lap(1/2, 1/eps0)."""
    for eps0 in (0.3, 2.0, 7.0):
        w = np.linspace(-40 / eps0, 1 + 40 / eps0, 400001)
        inf = 0.5 * eps0 * np.exp(-eps0 * np.maximum(np.abs(w), np.abs(w - 1)))
        mass = np.trapezoid(inf, w)
        assert mass == pytest.approx(math.exp(-eps0 / 2), rel=1e-6)
        blanket = 0.5 * eps0 * np.exp(-eps0 * np.abs(w - C))
        assert np.allclose(inf / mass, blanket, rtol=1e-5)


# -- the authors' released implementation ----------------------------------------------------------
def test_parameters_match_the_authors_release():
    """The released code's notebook prints, for the eps0 = 4 Laplace mechanism at eps = 0.25:
    gamma, max L, range, E[L^2] = 0.1353352832366127, 7.215282155480206, 16.567682708602117,
    12.415810765103338."""
    p = bl.laplace_parv_bounds(0.25, 4.0)
    published = (0.1353352832366127, 7.215282155480206, 16.567682708602117, 12.415810765103338)
    got = (p.gamma[0], p.upper[0], p.width[0], p.second_moment[0])
    for g, v in zip(got, published, strict=True):
        assert float(g) == pytest.approx(v, rel=1e-13)


def test_numbers_match_the_authors_release():
    """The released notebook: eps0 = 0.4, n = 5000: delta(0.005) is 0.005792337614227242
    (Hoeffding, Laplace) and 0.004853541355460176 (Bennett, Laplace); eps at delta = 1e-6 is
    0.02423345457274603 and 0.022807535585468337 (root finding to 1e-12; their Bennett is the
    corrected one, their Hoeffding keeps the m = 0 term, which is < 1e-300 here)."""
    assert bl.laplace_hoeffding_delta(0.005, 0.4, 5000) == pytest.approx(0.005792337614227242,
                                                                        rel=1e-11)
    assert bl.laplace_bennett_delta(0.005, 0.4, 5000) == pytest.approx(0.004853541355460176,
                                                                      rel=1e-11)
    r = make_randomizer("laplace", epsilon0=0.4)
    hoeffding = bl.blanket_hoeffding_laplace(r, 5000, 1e-6, tol=1e-12)
    bennett = bl.blanket_bennett_laplace(r, 5000, 1e-6, tol=1e-12)
    assert hoeffding.epsilon == pytest.approx(0.02423345457274603, abs=2e-12)
    assert bennett.epsilon == pytest.approx(0.022807535585468337, abs=2e-12)


@pytest.mark.parametrize("eps0,eps,n", [(0.4, 0.005, 5000), (1.0, 0.05, 10_000),
                                        (4.0, 0.3, 10**6), (8.0, 2.0, 1000)])
def test_delta_on_the_conservative_side_of_mpmath(eps0, eps, n):
    """Both deltas are >= the same formulas evaluated in 50-digit arithmetic."""
    mp.mp.dps = 50
    e, e0, one = mp.e ** mp.mpf(eps), mp.mpf(eps0), mp.mpf(1)
    g, a = mp.e ** (-e0 / 2), e - 1
    upper = mp.e ** (e0 / 2) - e * mp.e ** (-e0 / 2)
    width = (e + 1) * (mp.e ** (e0 / 2) - mp.e ** (-e0 / 2))
    v = ((e * e + 1) / 3 * (2 * mp.e ** (e0 / 2) + mp.e ** (-e0))
         - 2 * e * (2 * mp.e ** (-e0 / 2) - mp.e ** (-e0)))

    def expectation(theta):
        return ((1 - g + g * mp.e ** (-theta)) ** n - (1 - g) ** n) / (g * n)

    hoeffding = width**2 / (4 * a) * expectation(2 * a**2 / width**2)
    big_b = a * upper / v
    phi = (one + big_b) * mp.log(one + big_b) - big_b
    bennett = upper / mp.log(one + big_b) * expectation(v / upper**2 * phi)
    assert bl.laplace_hoeffding_delta(eps, eps0, n) >= float(min(hoeffding, one))
    assert bl.laplace_bennett_delta(eps, eps0, n) >= float(min(bennett, one))
    assert bl.laplace_bennett_delta(eps, eps0, n) == pytest.approx(float(min(bennett, one)),
                                                                  rel=1e-9)


@pytest.mark.parametrize("eps0", [1e-300, 1e-12, 1e-6])
def test_tiny_eps0_without_cancellation(eps0):
    """The parameters keep their relative accuracy at tiny eps0 (no e^a - e^b cancellation):
    against 400-digit arithmetic, and the bound is not eps = 0."""
    mp.mp.dps = 400
    eps = 0.5 * eps0
    p = bl.laplace_parv_bounds(eps, eps0)
    e, e0 = mp.e ** mp.mpf(eps), mp.mpf(eps0)
    exact = {
        "upper": mp.e ** (e0 / 2) - e * mp.e ** (-e0 / 2),
        "width": (e + 1) * (mp.e ** (e0 / 2) - mp.e ** (-e0 / 2)),
        "second_moment": ((e * e + 1) / 3 * (2 * mp.e ** (e0 / 2) + mp.e ** (-e0))
                          - 2 * e * (2 * mp.e ** (-e0 / 2) - mp.e ** (-e0))),
    }
    for name, value in exact.items():
        got = float(getattr(p, name)[0])
        assert value <= got <= value * (1 + 1e-13), name
    res = bl.blanket_bennett_laplace(make_randomizer("laplace", epsilon0=eps0), 1000, 1e-6)
    assert 0.0 < res.epsilon <= eps0 * (1 + 1e-9)


# -- catalogue -------------------------------------------------------------------------------------
def test_catalogue_applies_to_laplace_only_and_is_proven():
    for name in ("blanket_hoeffding_laplace", "blanket_bennett_laplace"):
        spec = cat.get_bound(name)
        assert spec.applies_to(make_randomizer("laplace", epsilon0=1.0))
        assert spec.applies_to(make_randomizer("laplace_binary", epsilon0=1.0))
        assert not spec.applies_to(make_randomizer("brr", epsilon0=1.0))
        metric = make_randomizer("laplace_metric", epsilon0=1.0, low=-1.0, high=2.0)
        assert spec.applies_to(metric)          # laplace rescaled: the same shuffled curve
        assert (cat.evaluate(name, metric, 10_000, 1e-6).result.epsilon
                == cat.evaluate(name, make_randomizer("laplace", epsilon0=1.0), 10_000,
                                1e-6).result.epsilon)
        ev = cat.evaluate(name, make_randomizer("laplace", epsilon0=1.0), 10_000, 1e-6)
        assert ev.ok and ev.result.status is BoundStatus.PROVEN
        assert ev.result.kind is spec.kind and "5.8" in ev.result.reference
        threshold = ev.result.epsilon
        assert spec.delta_at(make_randomizer("laplace", epsilon0=1.0), 10_000, threshold,
                             1e-6) <= 1e-6


def test_bennett_beats_hoeffding_and_both_beat_the_generic_bounds():
    """004 Sec. 6: the mechanism-specific bounds improve on the generic ones and Bennett on
    Hoeffding (checked here on a small grid)."""
    for eps0 in (0.5, 1.0, 3.0):
        for n in (10**4, 10**6):
            r = make_randomizer("laplace", epsilon0=eps0)
            values = {m: cat.evaluate(m, r, n, 1e-8).result.epsilon for m in (
                "blanket_hoeffding_laplace", "blanket_bennett_laplace",
                "blanket_hoeffding_generic", "blanket_bennett_generic")}
            assert values["blanket_bennett_laplace"] <= values["blanket_hoeffding_laplace"]
            assert values["blanket_hoeffding_laplace"] <= values["blanket_hoeffding_generic"]
            assert values["blanket_bennett_laplace"] <= values["blanket_bennett_generic"]


def test_bad_inputs_are_parameter_errors():
    r = make_randomizer("laplace", epsilon0=1.0)
    for kwargs, field in ((dict(n=0, delta=1e-6), "n"), (dict(n=100, delta=0.0), "delta"),
                          (dict(n=100, delta=1.0), "delta")):
        with pytest.raises(ParameterError) as err:
            bl.blanket_bennett_laplace(r, **kwargs)
        assert err.value.field == field
    with pytest.raises(ParameterError):
        bl.blanket_hoeffding_laplace(make_randomizer("laplace", epsilon0=200.0), 100, 1e-6)


# -- order against the engine's bounds -------------------------------------------------------------
#: exact-lower and optimal-blanket for ``laplace`` (delta = 1e-6), measured with this commit's
#: engine (15-45 s each, so recorded here; test_order_against_the_engine_live recomputes them)
ENGINE = {
    # (eps0, n): (exact-lower, optimal-blanket)
    (2.0, 100): (1.08016, 1.17689),
    (2.0, 1000): (0.259634, 0.326296),
    (1.0, 10_000): (0.0311451, 0.0380354),
}


@pytest.mark.parametrize("key", sorted(ENGINE))
def test_order_against_recorded_engine_values(key):
    eps0, n = key
    lower, optimal = ENGINE[key]
    r = make_randomizer("laplace", epsilon0=eps0)
    for method in ("blanket_hoeffding_laplace", "blanket_bennett_laplace"):
        eps = cat.evaluate(method, r, n, 1e-6).result.epsilon
        assert eps >= lower and eps >= optimal, (method, eps)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["laplace", "laplace_binary"])
@pytest.mark.parametrize("eps0,n", [(0.5, 1000), (2.0, 1000), (4.0, 10_000)])
def test_order_against_the_engine_live(name, eps0, n):
    """Both bounds >= exact-lower (a proven lower bound: never above the truth) and >= the
    optimal blanket bound (000: the blanket decomposition is optimal, and 004's bounds bound the
    same blanket expectation from above)."""
    r = make_randomizer(name, epsilon0=eps0)
    ours = [cat.evaluate(m, r, n, 1e-6).result.epsilon
            for m in ("blanket_hoeffding_laplace", "blanket_bennett_laplace")]
    for reference in ("exact-lower", "optimal-blanket"):
        ev = cat.evaluate(reference, r, n, 1e-6)
        if ev.ok:
            assert min(ours) >= ev.result.epsilon, (reference, ours, ev.result.epsilon)


@pytest.mark.parametrize("eps0,n,delta", [(0.05, 10**5, 1e-6), (1.0, 1000, 1e-6),
                                          (4.0, 10**6, 1e-10), (8.0, 10**8, 1e-3)])
@pytest.mark.parametrize("which", ["hoeffding", "bennett"])
def test_newton_inversion_is_verified_and_short(monkeypatch, which, eps0, n, delta):
    """Issue 32 (closed forms by bracketed Newton steps): the returned eps has delta <= delta,
    eps - epsilon_error has delta > delta, the bracket is within the tolerance, and the search
    takes few evaluations of the closed form (the former false-position search took 14-25)."""
    log_name = f"{which}_log"
    calls = []
    original = getattr(bl, log_name)
    monkeypatch.setattr(bl, log_name, lambda *a: calls.append(1) or original(*a))
    bl._RESULTS.clear()
    bound = getattr(bl, f"blanket_{which}_laplace")
    delta_fn = getattr(bl, f"laplace_{which}_delta")
    result = bound(make_randomizer("laplace", epsilon0=eps0), n, delta)
    bl._RESULTS.clear()
    assert 0 < result.epsilon < eps0
    assert 0 < result.epsilon_error <= 1e-9
    assert delta_fn(result.epsilon, eps0, n) <= delta
    assert delta_fn(result.epsilon - result.epsilon_error, eps0, n) > delta
    assert len(calls) <= 12
