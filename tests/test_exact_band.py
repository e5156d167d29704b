"""The banded exact sum (protocols/bounds/engine/exact_band.py) and the eps search around it.

Checked against the engine's exhaustive enumeration (every count vector, n <= 100), against the
conditioning method's independent bracket (n = 1e3 - 1e4), with planted faults (a perturbed
value, a perturbed table entry), on the coupling bound for near-zero categories, and on the
shapes it declines.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from engine_probes import check_against_conditioning, check_against_enumeration, intersect

from shufflesim.protocols.bounds.engine import common, conditioning, core, exact_band
from shufflesim.protocols.bounds.engine.common import Categories, Estimate
from shufflesim.protocols.bounds.engine.enumerate import enumeration_bounds
from shufflesim.protocols.bounds.engine.eps_search import epsilon_of_delta
from shufflesim.protocols.bounds.numerical import decompositions as dec
from shufflesim.protocols.randomizers import make_randomizer


def _krr_cats(ns, eps0s=(0.1, 1.0, 4.0, 8.0), ks=(2, 3, 10), points=5):
    """Blanket and 000 Thm 14 categories of k-RR, both directions, over a grid of eps."""
    for eps0, k in itertools.product(eps0s, ks):
        r = make_randomizer("krr", epsilon0=eps0, domain_size=k)
        triple = (0, 1, 2) if k > 2 else (0, 1, 0)
        for base in (dec.blanket_atoms(r, 0, 1), dec.exact_pair_atoms(r, *triple)):
            for atoms, n in itertools.product((base, base.swapped()), ns):
                for eps in np.linspace(0.0, eps0, points)[:-1]:
                    cat = common.categories(atoms, n, float(eps))
                    if cat.c.min() < 0 < cat.c.max() and exact_band.applicable(cat):
                        yield (eps0, k, n, float(eps)), cat


def _check_against_enumeration(ns):
    return check_against_enumeration(_krr_cats(ns), exact_band.band_bounds)


def test_band_sum_brackets_the_enumeration_and_is_tight():
    assert _check_against_enumeration((5, 17, 40)) >= 300


@pytest.mark.slow
def test_band_sum_brackets_the_enumeration_at_n_100():
    """n = 100: ~180 000 count vectors per case (22 s in all)."""
    assert _check_against_enumeration((100,)) >= 100


def test_band_sum_brackets_the_conditioning_method_at_larger_n():
    cases = _krr_cats((1000, 10_000), eps0s=(0.1, 1.0, 8.0), ks=(3, 10), points=4)
    assert check_against_conditioning(cases, exact_band.band_bounds, 32) >= 40


def test_degenerate_pools_match_the_enumeration():
    """Pool empty (binary RR's exact atoms) and pool of one category (X constant)."""
    cases = [
        Categories(np.array([-1.3, 0.9]), np.array([0.45, 0.55]), 60, 0.0),
        Categories(np.array([-1.3, -0.2, 0.9]), np.array([0.2, 0.5, 0.3]), 60, 0.0),
        Categories(np.array([-1.3, 0.0, 0.9]), np.array([0.2, 0.5, 0.3]), 60, 0.0),
    ]
    for cat in cases:
        assert exact_band.applicable(cat)
        lo, hi = exact_band.band_bounds(cat)
        ref_lo, ref_hi = enumeration_bounds([cat])
        intersect(lo, hi, ref_lo, ref_hi, cat.c)
        assert hi - lo <= 1e-8 * hi


def test_positive_pool_coefficient_is_mirrored():
    """e = c_j - c_o > 0 is handled through X -> m - X: both orders of the pool agree with
    the enumeration."""
    for c in ([-2.0, 0.1, 0.4, 1.5], [-2.0, -0.4, -0.1, 1.5]):
        cat = Categories(np.array(c), np.array([0.15, 0.35, 0.3, 0.2]), 50, 0.0)
        lo, hi = exact_band.band_bounds(cat)
        ref_lo, ref_hi = enumeration_bounds([cat])
        intersect(lo, hi, ref_lo, ref_hi, c)
        assert hi - lo <= 1e-8 * hi


def test_planted_value_fault_is_detected():
    """Negative control: shifting one value by 0.1% moves the bracket off the enumeration's."""
    r = make_randomizer("krr", epsilon0=1.0, domain_size=10)
    cat = common.categories(dec.blanket_atoms(r, 0, 1), 40, 0.2)
    ref_lo, ref_hi = enumeration_bounds([cat])
    lo, hi = exact_band.band_bounds(cat)
    intersect(lo, hi, ref_lo, ref_hi, "unperturbed")
    c = cat.c.copy()
    c[np.argmax(c)] *= 1.001
    lo, hi = exact_band.band_bounds(Categories(c, cat.w, cat.count, cat.c_err))
    assert lo > ref_hi or hi < ref_lo


def test_planted_table_fault_is_detected(monkeypatch):
    """Negative control: a B table whose pmf is off by 1e-4 relative (SB and SSB rebuilt from
    it) gives a bracket that misses the enumeration's."""
    r = make_randomizer("krr", epsilon0=4.0, domain_size=10)
    cat = common.categories(dec.exact_pair_atoms(r, 0, 1, 2), 80, 1.0)
    ref_lo, ref_hi = enumeration_bounds([cat])
    real = exact_band._b_tables.__wrapped__

    def faulty(*args):
        b_lo, pb, sb, ssb, b_out, err, below = real(*args)
        pb = pb * (1 + 1e-4)
        sb = np.zeros_like(sb)
        np.cumsum(pb[:, ::-1], axis=1, out=sb[:, pb.shape[1] - 1::-1])
        ssb = np.zeros_like(ssb)
        np.cumsum(sb[:, ::-1], axis=1, out=ssb[:, pb.shape[1]::-1])
        return b_lo, pb, sb, ssb, b_out, err, below

    monkeypatch.setattr(exact_band, "_b_tables", faulty)
    lo, hi = exact_band.band_bounds(cat)
    assert lo > ref_hi or hi < ref_lo


def test_near_zero_category_coupling_bound():
    """A category of mass 1e-14 (below TINY_MASS) with a large spread of the others: the
    coupling bound (sign-aware) keeps the bracket around the enumeration that includes it, and
    is far tighter than n eps max|c|."""
    c = np.array([-3.0e5, -100.0, -0.3, 0.0, 2.0e3])
    w = np.array([3e-3, 0.02, 0.974, 1e-14, 3e-3])
    w = w / w.sum()
    cat = Categories(c, w, 60, 0.0)
    reduced, down, up = exact_band.reduced(cat)
    assert reduced.c.size == 4 and math.isclose(reduced.w.sum(), 1.0)
    crude = cat.count * 1e-14 * 2 * float(np.abs(c).max())
    assert up < crude / 100 and down < crude / 100
    lo, hi = exact_band.band_bounds(cat)
    ref_lo, ref_hi = enumeration_bounds([cat])
    intersect(lo, hi, ref_lo, ref_hi, "tiny category")
    # the exact effect of the tiny category lies within (down, up)
    plain_lo, plain_hi = enumeration_bounds([reduced])
    assert ref_lo - plain_hi <= up * (1 + 1e-9) + 1e-300
    assert plain_lo - ref_hi <= down * (1 + 1e-9) + 1e-300


def test_declined_shapes():
    three = Categories(np.array([-2.0, -0.5, -0.1, 0.3, 1.5]),
                       np.array([0.1, 0.3, 0.3, 0.2, 0.1]), 200, 0.0)
    assert not exact_band.applicable(three)                 # three pool categories
    r = make_randomizer("krr", epsilon0=1.0, domain_size=10)
    big = common.categories(dec.blanket_atoms(r, 0, 1), 10**6, 0.01)
    assert not exact_band.applicable(big)                   # tables over MAX_CELLS
    one_sign = Categories(np.array([-2.0, -0.5]), np.array([0.5, 0.5]), 20, 0.0)
    assert not exact_band.applicable(one_sign)


def test_tables_are_shared_across_eps():
    """The tables do not depend on eps: one build serves a whole search."""
    r = make_randomizer("krr", epsilon0=1.0, domain_size=10)
    atoms = dec.blanket_atoms(r, 0, 1)
    exact_band._b_tables.cache_clear()
    exact_band._x_tables.cache_clear()
    for eps in (0.01, 0.02, 0.05, 0.1):
        exact_band.band_bounds(common.categories(atoms, 5000, eps))
    assert exact_band._b_tables.cache_info().misses == 1
    assert exact_band._x_tables.cache_info().misses == 1


# ------------------------------------------------------------------------------------------
# The engine and the search around it
# ------------------------------------------------------------------------------------------
def test_engine_uses_the_band_sum_and_agrees_with_a_forced_method():
    r = make_randomizer("krr", epsilon0=1.0, domain_size=10)
    atoms = dec.blanket_atoms(r, 0, 1)
    auto = core.hockey_stick([(atoms, 5000)], 0.03)
    forced = core.hockey_stick([(atoms, 5000)], 0.03, method="fft", rtol=1e-4)
    assert auto.method == "conditioning"
    assert auto.error <= 1e-8 * auto.upper
    assert auto.lower <= forced.upper and forced.lower <= auto.upper


def test_search_steps_use_the_certifying_bound():
    """An engine that stops refining once the comparison with delta is decided returns loose
    upper estimates at points certified above delta. The search must not follow them: with
    the certifying (lower) estimate it converges in a handful of steps."""
    crossing = 0.4

    def delta_fn(eps):
        true = math.exp(-20.0 * eps * eps) * 1e-6 / math.exp(-20.0 * crossing ** 2)
        if true > 1e-6 * 1.01:
            return Estimate(2.0 * true, true * (1 - 1e-9), 2.0 * true)
        return Estimate(true * (1 + 1e-9), true * (1 - 1e-9), true * (1 + 1e-9))

    res = epsilon_of_delta(delta_fn, 1e-6, "upper", eps_max=2.0, rtol=1e-7, xtol=1e-15,
                           guess=0.39)
    assert res.lower <= crossing <= res.upper
    assert res.upper - res.lower <= 1e-7 * res.upper
    assert res.evaluations <= 14


@pytest.mark.parametrize("eps0, n", [(0.01, 10**5), (0.1, 10**5)])
def test_conditioning_far_kinks_finite_for_a_near_constant_pool(eps0, n):
    """The blanket at small eps0: the pool's variance is so small that the Chernoff lam
    overflows; the far-kink bound falls back to phi and the single style is finite and
    brackets the multi style."""
    r = make_randomizer("krr", epsilon0=eps0, domain_size=10)
    atoms = dec.blanket_atoms(r, 0, 1)
    guess = core.gaussian_guess(atoms, n, 1e-6, eps0)
    cat = common.categories(atoms, n, guess)
    lo, hi = conditioning.conditioning_bounds(cat, np.zeros(1), np.ones(1), np.zeros(1), 0)
    ref_lo, ref_hi = conditioning.conditioning_bounds(cat, np.zeros(1), np.ones(1),
                                                      np.zeros(1), 8)
    assert math.isfinite(hi) and hi < 1e3
    intersect(lo, hi, ref_lo, ref_hi, (eps0, n))
    assert hi - lo <= 1e-4 * hi
