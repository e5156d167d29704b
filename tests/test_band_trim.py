"""Issue 32: the two-level mixture's band with X's window trimmed at its top
(band_sums.row_setup(trim=True), exact_band.row_bounds' tau term), and the band from k_lo + 1.

The trimmed bracket must hold the untrimmed one's values (each is a guaranteed bracket of the
same E[S_+]) and be no wider than it by more than TRIM_TAIL relative; with a planted fault
(an aggressive trim whose left-out mass is not added) the upper end falls below the untrimmed
lower end, so the test can see the term missing."""

from __future__ import annotations

import numpy as np
import pytest

from shufflesim.protocols.bounds.engine import band_sums, common, exact_band
from shufflesim.protocols.bounds.engine import zero_mixture as zm
from shufflesim.protocols.bounds.engine.plans import t_plan
from shufflesim.protocols.bounds.numerical import decompositions as dec
from shufflesim.protocols.randomizers import make_randomizer

#: (randomizer, d, eps0, n, eps): E[S_+] / n between ~1e-9 and ~1e-3
CASES = [("oue", 4, 0.5, 720, 0.06), ("hr", 16, 1.0, 373, 0.2), ("blh", 4, 0.5, 1389, 0.04),
         ("subset", 6, 1.0, 200, 0.3), ("rappor", 16, 0.5, 600, 0.08)]


def _fresh():
    for fn in (exact_band._b_tables, zm._m_tables, zm._x_tables, zm._rows):
        fn.cache_clear()


def _cat(name, d, eps0, n, eps):
    atoms = dec.blanket_atoms(make_randomizer(name, epsilon0=eps0, domain_size=d), 0, 1)
    cat = common.categories(atoms, n, eps)
    assert zm.applicable(cat)
    return cat


def _bounds(monkeypatch, cat, trim: bool, tail: float = band_sums.TRIM_TAIL,
            drop_tau: bool = False):
    _fresh()
    original = band_sums.row_setup

    def setup(plan, t, m, bi, xi, has_x, q=1.0, _trim=False, sizes=None):
        out = original(plan, t, m, bi, xi, has_x, q, trim, sizes)
        if drop_tau:
            out = band_sums.RowSetup(**{**out.__dict__, "tau": np.zeros_like(out.tau)})
        return out

    monkeypatch.setattr(band_sums, "TRIM_TAIL", tail)
    monkeypatch.setattr(zm, "row_setup", setup)
    try:
        return zm.mixture_bounds(cat)
    finally:
        monkeypatch.undo()
        _fresh()


@pytest.mark.parametrize("case", CASES)
def test_trimmed_bracket_holds_the_untrimmed_one(monkeypatch, case):
    cat = _cat(*case)
    lo, hi = _bounds(monkeypatch, cat, trim=False)
    t_lo, t_hi = _bounds(monkeypatch, cat, trim=True)
    assert 0 < lo <= hi and 0 < t_lo <= t_hi
    assert t_lo <= hi and lo <= t_hi                      # both hold the same value
    assert t_hi - t_lo <= (hi - lo) * (1 + 1e-6) + 2e-12 * hi


@pytest.mark.parametrize("case", CASES[:3])
def test_the_trim_is_used_and_its_term_is_needed(monkeypatch, case):
    """A trim at 1e-2 (X's top ~2.3 sd above its mean): with the tau term the bracket still
    holds the untrimmed value; without it (planted fault) its upper end falls below it."""
    cat = _cat(*case)
    lo, hi = _bounds(monkeypatch, cat, trim=False)
    t_lo, t_hi = _bounds(monkeypatch, cat, trim=True, tail=1e-2)
    assert t_lo <= hi and lo <= t_hi
    _, bad_hi = _bounds(monkeypatch, cat, trim=True, tail=1e-2, drop_tau=True)
    assert bad_hi < lo


def test_the_default_trim_narrows_the_band():
    """OUE d = 4, n = 1389 (issue 32's slowest point): the band's window of X ends 6-8 sd
    above X's mean on most rows (the table's, ~10-12 sd)."""
    _fresh()
    cat = _cat("oue", 4, 0.5, 1389, 0.036)
    zm.mixture_bounds(cat)
    mix = zm._mixture(exact_band.reduced(cat)[0])
    memo = zm._rows(cat.count, mix.w_pair, mix.s)[-1]
    chunks = memo["kept"][2]                # the kept rows, EVAL_ROWS at a time
    tau = np.concatenate([chunk[-1].tau for chunk in chunks])
    x_hi = np.concatenate([chunk[-1].x_hi for chunk in chunks])
    m = np.concatenate([chunk[1] for chunk in chunks])
    trimmed = tau > 0
    assert trimmed.mean() > 0.9
    q = mix.shape.q
    sd = np.sqrt(m * q * (1 - q))
    z = (x_hi - m * q)[trimmed] / sd[trimmed]
    assert np.all((z > 6) & (z < 8))
    _fresh()



def test_tops_over_a_wider_range_of_sizes_are_the_rows_own():
    """row_setup's ``sizes`` (the mixture's chunks share one table of tops): a range covering
    the rows gives their own setup; one that misses a row's m is refused."""
    _fresh()
    cat = _cat("oue", 4, 0.5, 720, 0.06)
    mix = zm._mixture(exact_band.reduced(cat)[0])
    n, sh = cat.count, mix.shape
    tp = t_plan(n, mix.w_pair)
    b = exact_band._b_tables(n, mix.w_pair, sh.rho)
    ti, y, _, lin, _ = zm._rows(n, mix.w_pair, mix.s)
    sizes = int(lin[1].min()), int(lin[1].max())
    x = zm._x_tables(*sizes, sh.q)
    plan = exact_band.BandPlan(tp.t, tp.pt, tp.tail_p, *b[:5], *x[:4], 0.0, x[5], b[6])
    part = slice(ti.size // 3, ti.size // 3 + 500)
    t, m, bi = tp.t[ti[part]], lin[1][part], ti[part]
    xi = (m - sizes[0]).astype(np.int64)
    assert sizes[0] < m.min() and m.max() < sizes[1]
    own = band_sums.row_setup(plan, t, m, bi, xi, True, sh.q, True)
    wide = band_sums.row_setup(plan, t, m, bi, xi, True, sh.q, True, sizes)
    assert (own.tau > 0).mean() > 0.9
    for field in ("x_hi", "ix_hi", "px_w", "ccx_hi", "tau"):
        np.testing.assert_array_equal(getattr(own, field), getattr(wide, field))
    with pytest.raises(ValueError, match="sizes"):
        band_sums.row_setup(plan, t, m, bi, xi, True, sh.q, True, (int(m.min()) + 1, sizes[1]))
    _fresh()
