"""The exact band sum with a zero atom beside it (protocols/bounds/engine/zero_mixture.py):
the blankets of OUE, RAPPOR, Hadamard response, subset selection, OLH and BLH (five categories).

Checked against the engine's exhaustive enumeration (every count vector, n <= 40), against the
decimal oracle, against the conditioning method's independent bracket at n = 1e3, with a planted
table fault, with its row pruning switched off, and through the engine (no FFT)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from engine_probes import check_against_conditioning, check_against_enumeration, intersect

from shufflesim.protocols.bounds.engine import common, core, exact_band
from shufflesim.protocols.bounds.engine import fft as engine_fft
from shufflesim.protocols.bounds.engine import zero_mixture as zm
from shufflesim.protocols.bounds.engine.common import Categories
from shufflesim.protocols.bounds.engine.enumerate import enumeration_bounds
from shufflesim.protocols.bounds.engine.oracle import exact_hockey_stick
from shufflesim.protocols.bounds.numerical import decompositions as dec
from shufflesim.protocols.randomizers import make_randomizer

RANDOMIZERS = (("oue", 4), ("rappor", 16), ("hr", 16), ("subset", 6), ("olh", 4), ("blh", 4))


def _cats(ns, eps0s=(0.5, 1.0, 4.0), points=4, randomizers=RANDOMIZERS):
    """Blanket categories of the two-level randomizers, both directions, over a grid of eps,
    where the mixture applies."""
    for (name, d), eps0 in itertools.product(randomizers, eps0s):
        atoms = dec.blanket_atoms(make_randomizer(name, epsilon0=eps0, domain_size=d), 0, 1)
        for direction, n in itertools.product((atoms, atoms.swapped()), ns):
            for eps in np.linspace(0.0, eps0, points + 1)[1:-1]:
                cat = common.categories(direction, n, float(eps))
                if zm.applicable(cat):
                    yield (name, d, eps0, n, float(eps)), direction, cat


def _check_against_enumeration(ns) -> int:
    cases = []
    for label, _, cat in _cats(ns):
        assert not exact_band.applicable(cat)
        cases.append((label, cat))
    return check_against_enumeration(cases, zm.mixture_bounds)


def test_mixture_brackets_the_enumeration_and_is_tight():
    assert _check_against_enumeration((5, 17)) >= 150


@pytest.mark.slow
def test_mixture_brackets_the_enumeration_at_n_40():
    """n = 40: ~136 000 count vectors per case."""
    assert _check_against_enumeration((40,)) >= 75


def test_mixture_brackets_the_decimal_oracle():
    checked = 0
    for label, atoms, cat in _cats((12,), eps0s=(1.0, 4.0), points=2):
        lo, hi = zm.mixture_bounds(cat)
        exact = float(exact_hockey_stick([(atoms, 12)], label[-1]))
        assert lo <= exact * (1 + 1e-15) and exact <= hi * (1 + 1e-15), label
        checked += 1
    assert checked >= 12


def test_mixture_brackets_the_conditioning_method_at_n_1000():
    cases = [(label, cat) for label, _, cat in _cats((1000,), eps0s=(1.0, 4.0), points=2,
                                                     randomizers=RANDOMIZERS[::2])]
    assert check_against_conditioning(cases, zm.mixture_bounds, 8) >= 6


def test_mixture_brackets_the_conditioning_method_beyond_max_users():
    """n = 5000, 1e4 and 5e4 (beyond MAX_USERS), where the pool's rarer category is rare
    (eps0 = 4, 8): the mixture applies (WIDE_ROWS, LARGE_ROWS), and its bracket meets the
    conditioning method's and is 1000x narrower."""
    cases = [(label, cat) for label, _, cat in _cats((5000, 10_000, 50_000), eps0s=(4.0, 8.0),
                                                     points=2, randomizers=RANDOMIZERS[::2])]
    for _, cat in cases:
        mix = zm._mixture(exact_band.reduced(cat)[0])
        rows, cells = zm._sizes(cat.count, mix)
        assert rows <= (zm.WIDE_ROWS if cat.count <= zm.WIDE_USERS else zm.LARGE_ROWS)
        assert cells <= exact_band.MAX_CELLS
    assert check_against_conditioning(cases, zm.mixture_bounds, 8) >= 6


def test_rows_by_the_rarer_pool_category():
    """The rows count the pool category of the smaller variance (OUE d = 4, eps0 = 1: the
    rarer one), so at n = 1389 the window of its count is 2.5 sd narrower and there are about
    half as many rows as when they counted both pool categories (session 14)."""
    atoms = dec.blanket_atoms(make_randomizer("oue", epsilon0=1.0, domain_size=4), 0, 1)
    cat = exact_band.reduced(common.categories(atoms, 1389, 0.086))[0]
    mix = zm._mixture(cat)
    others = 1.0 - mix.w_pair
    pool = [float(w) / others for w, c in zip(cat.w, cat.c, strict=True)
            if c not in (0.0, mix.c_a, mix.shape.cb)]
    assert len(pool) == 2 and mix.s == pytest.approx(min(pool), rel=1e-12)
    both = zm._Mixture(mix.shape, mix.w_pair, sum(pool), mix.pool_pos, mix.c_a, mix.c_r)
    assert zm._sizes(1389, mix)[0] < 0.6 * zm._sizes(1389, both)[0]


def test_large_groups_where_the_pool_is_common_are_declined():
    """Beyond MAX_USERS the mixture is declined where its rows would be many (eps0 = 1,
    n = 1e4: ~4e5; eps0 = 4, n = 37276: ~4.8e4) or its tables too large (eps0 = 8, n = 1e7)."""
    for eps0, n in ((1.0, 10_000), (4.0, 37_276), (8.0, 10**7)):
        atoms = dec.blanket_atoms(make_randomizer("oue", epsilon0=eps0, domain_size=4), 0, 1)
        assert not zm.applicable(common.categories(atoms, n, 0.3 * eps0))
    atoms = dec.blanket_atoms(make_randomizer("oue", epsilon0=4.0, domain_size=4), 0, 1)
    assert zm.applicable(common.categories(atoms, 5179, 1.2))
    atoms = dec.blanket_atoms(make_randomizer("oue", epsilon0=8.0, domain_size=4), 0, 1)
    assert zm.applicable(common.categories(atoms, 138_950, 2.4))


def test_pruning_keeps_the_bracket(monkeypatch):
    """Rows left out by Chernoff's bound (zero_mixture._prune) move neither end beyond the
    other's bracket, and the unpruned sum is inside the pruned bracket."""
    r = make_randomizer("oue", epsilon0=1.0, domain_size=4)
    cat = common.categories(dec.blanket_atoms(r, 0, 1), 1000, 0.1)
    lo, hi = zm.mixture_bounds(cat)
    monkeypatch.setattr(zm, "PRUNE", 0.0)
    full_lo, full_hi = zm.mixture_bounds(cat)
    assert lo <= full_lo and full_hi <= hi
    assert hi - lo <= 1e-7 * hi


def test_planted_table_fault_is_detected(monkeypatch):
    """Negative control: an M table off by 1e-4 relative gives a bracket that misses the
    enumeration's."""
    r = make_randomizer("rappor", epsilon0=1.0, domain_size=16)
    cat = common.categories(dec.blanket_atoms(r, 0, 1), 40, 0.4)
    ref_lo, ref_hi = enumeration_bounds([cat])
    real = zm._m_tables.__wrapped__

    def faulty(n, w_pair, s):
        lo, pm, out, err = real(n, w_pair, s)
        return lo, pm * (1 + 1e-4), out, err

    monkeypatch.setattr(zm, "_m_tables", faulty)
    zm._rows.cache_clear()
    try:
        lo, hi = zm.mixture_bounds(cat)
    finally:
        zm._rows.cache_clear()
    assert lo > ref_hi or hi < ref_lo


def test_declined_shapes():
    """No exact zero, a zero with a one-category pool (exact_band's own shape), a group too
    large."""
    no_zero = Categories(np.array([-2.0, -0.5, -0.1, 0.3, 1.5]),
                         np.array([0.1, 0.3, 0.3, 0.2, 0.1]), 200, 0.0)
    assert not zm.applicable(no_zero)
    krr = common.categories(dec.blanket_atoms(
        make_randomizer("krr", epsilon0=1.0, domain_size=3), 0, 1), 200, 0.3)
    assert exact_band.applicable(krr) and not zm.applicable(krr)
    oue = dec.blanket_atoms(make_randomizer("oue", epsilon0=1.0, domain_size=4), 0, 1)
    assert zm.applicable(common.categories(oue, 1000, 0.1))
    assert not zm.applicable(common.categories(oue, 10**5, 0.01))


def test_engine_sums_exactly_without_fft(monkeypatch):
    """oue d = 4, eps0 = 1, n = 100: the automatic method is the mixture (no FFT; before, each
    evaluation was an FFT of ~0.2 s with a 2e-3 bracket), and it agrees with a forced FFT."""
    atoms = dec.blanket_atoms(make_randomizer("oue", epsilon0=1.0, domain_size=4), 0, 1)
    forced = core.hockey_stick([(atoms, 100)], 0.35, method="fft", rtol=5e-3)

    def no_fft(*args, **kwargs):
        raise AssertionError("FFT called")

    monkeypatch.setattr(engine_fft, "fft_bounds", no_fft)
    auto = core.hockey_stick([(atoms, 100)], 0.35)
    assert auto.method == "conditioning"
    assert auto.error <= 1e-8 * auto.upper
    assert auto.lower <= forced.upper and forced.lower <= auto.upper


@pytest.mark.parametrize("name, d", [("oue", 4), ("hr", 16)])
def test_optimal_blanket_at_small_n_is_exact(name, d):
    """optimal-blanket at n = 100 now has a stated error ~1e-7 relative (the FFT's ~4e-4 before,
    fbce347: oue 0.3496722352, stated error 1.36e-4; hr 0.3598279596, 8.1e-5): the new bracket
    lies inside the old one."""
    from shufflesim.protocols.bounds import catalogue
    old = {"oue": (0.3496722352, 1.36e-4), "hr": (0.3598279596, 8.1e-5)}[name]
    r = make_randomizer(name, epsilon0=1.0, domain_size=d)
    result = catalogue.evaluate("optimal-blanket", r, 100, 1e-6).result
    assert result.epsilon_error <= 1e-6 * result.epsilon
    assert old[0] - old[1] <= result.epsilon - result.epsilon_error
    assert result.epsilon <= old[0] + 1e-10


def test_huge_values_do_not_overflow_the_pruning():
    """Values ~1e6 (RAPPOR d = 16, eps0 = 8: the soundness grid's point): e^{lam d} overflows;
    then no row is left out, and the sum still brackets the enumeration."""
    c = np.array([-9.92885237e+05, -9.89905279e+05, -3.32076226e+02, 0.0, 2.64788176e+03])
    w = np.array([3.2391e-04, 5.92517784e-06, 1.76627062e-02, 9.81684361e-01, 3.23503749e-04])
    cat = Categories(c, w / w.sum(), 30, 0.0)
    assert zm.applicable(cat)
    lo, hi = zm.mixture_bounds(cat)
    ref_lo, ref_hi = enumeration_bounds([cat])
    intersect(lo, hi, ref_lo, ref_hi, "huge values")
    assert hi - lo <= 1e-6 * hi


def test_rows_in_chunks_sum_as_one(monkeypatch):
    """The kept rows evaluated EVAL_ROWS at a time (a chunk of 7 rows, the last one shorter)
    give the bracket of one pass over all of them, up to the summation order's rounding; with
    every other chunk left out it falls below it."""
    r = make_randomizer("oue", epsilon0=1.0, domain_size=4)
    cat = common.categories(dec.blanket_atoms(r, 0, 1), 300, 0.3)
    assert zm.applicable(cat)

    def bracket(rows):
        monkeypatch.setattr(zm, "EVAL_ROWS", rows)
        zm._rows.cache_clear()
        try:
            return zm.mixture_bounds(cat)
        finally:
            zm._rows.cache_clear()

    whole_lo, whole_hi = bracket(10**9)
    mix = zm._mixture(exact_band.reduced(cat)[0])
    assert zm._rows(cat.count, mix.w_pair, mix.s)[1].size > 7 * 10
    lo, hi = bracket(7)
    assert lo == pytest.approx(whole_lo, rel=1e-13) and hi == pytest.approx(whole_hi, rel=1e-13)
    real_kept = zm._kept

    def short(*args):
        return real_kept(*args)[::2]

    monkeypatch.setattr(zm, "_kept", short)
    lo, hi = bracket(7)
    assert hi < whole_lo
