"""protocols.accounting.m_bins: the k-RR blanket pair by (D, bin of m) (issue 32: rdp-blanket
over few rounds at small n).

Checked against a brute-force sum over every count vector at small n (the split aggregates
are a dominating pair: every Renyi moment at least the pair's own, and close to it), against
the former (S, D, h3-bin) enumeration (the same masses, a Renyi curve within 3e-4 up to order
100 and never looser), and the
composed rdp-blanket value against the enumeration's.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import gammaln

from shufflesim.protocols.accounting import enumeration, m_bins, pairs, rdp
from shufflesim.protocols.accounting.compose import Round, clear_caches, compose_rounds
from shufflesim.protocols.randomizers import make_randomizer


def _model(k, eps0):
    return pairs.blanket_model(make_randomizer("krr", epsilon0=eps0, domain_size=k))


def _pair_masses(model, n, h1, h2, h3):
    """(P0, P1) of the pair at the count vectors (h1, h2, h3; the rest null)."""
    (a1, a2), (b1, b2), (w1, w2) = model.a, model.b, model.w
    rest = n - h1 - h2 - h3
    log_m = (gammaln(n + 1) - gammaln(h1 + 1) - gammaln(h2 + 1) - gammaln(h3 + 1)
             - gammaln(rest + 1) + h1 * np.log(w1) + h2 * np.log(w2)
             + h3 * np.log(model.w_neutral) + rest * np.log(model.w_null))
    A = a1 * h1 + a2 * h2 + model.r * h3
    B = b1 * h1 + b2 * h2 + model.r * h3
    return np.exp(log_m) * A / n, np.exp(log_m) * B / n


def _moments(p0, p1, orders):
    """log E_P0[(P0 / P1)^(alpha - 1)] over the outcomes given."""
    live = p0 > 0
    ell = np.log(p0[live] / p1[live])
    return np.array([np.log(np.sum(p0[live] * np.exp((a - 1) * ell))) for a in orders])


def _brute_moments(model, n, orders):
    """log E_P0[(P0 / P1)^(alpha - 1)] of the pair itself, over every (h1, h2, h3)."""
    h1, h2, h3 = np.meshgrid(*(np.arange(n + 1.0),) * 3, indexing="ij")
    ok = h1 + h2 + h3 <= n
    p0, p1 = _pair_masses(model, n, h1[ok], h2[ok], h3[ok])
    return _moments(p0, p1, orders), p0, p1


def _kept_moments(model, n, tail, orders):
    """The pair's own moments over exactly the outcomes m_bins enumerates: S in its window,
    h1 - floor(S / 2) in the union of the D windows' offsets, every h3."""
    _, _, _, S_win, _, _, t = m_bins._windows(model, n, tail)
    h1, h2, h3 = np.meshgrid(*(np.arange(n + 1.0),) * 3, indexing="ij")
    S = h1 + h2
    off = h1 - np.floor(S / 2.0)
    ok = ((S + h3 <= n) & (S >= S_win[0]) & (S <= S_win[-1]) & (off >= t[0])
          & (off <= t[-1]))
    return _moments(*_pair_masses(model, n, h1[ok], h2[ok], h3[ok]), orders)


def _split_moments(agg, orders):
    """The same of the aggregates, each split into its two extreme losses (pld.py)."""
    width = agg.hi - agg.lo
    flat = ~(width > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(flat, 1.0, np.expm1(agg.lo - agg.ell) / np.expm1(-np.where(flat, 1.0,
                                                                                   width)))
    share = np.clip(share, 0.0, 1.0)
    hi_mass, lo_mass = agg.p0 * share, agg.p0 * (1 - share)
    return np.array([np.log(np.sum(hi_mass * np.exp((a - 1) * agg.hi))
                            + np.sum(lo_mass * np.exp((a - 1) * agg.lo))) for a in orders])


@pytest.mark.parametrize(("k", "eps0", "n", "tail"), [(3, 1.0, 40, 1e-60), (10, 0.5, 30, 1e-60),
                                                      (3, 4.0, 36, 1e-60), (3, 1.0, 44, 1e-3),
                                                      (10, 0.5, 40, 1e-2)])
def test_split_aggregates_dominate_the_pair(monkeypatch, k, eps0, n, tail):
    """With tails of 1e-3 and 1e-2 (and H3_TAIL = 1) the h3 tails of every S and the merged
    tails of several S (TAIL_SPAN) are aggregates of their own: they dominate too. Only the
    mass outside the S and D windows is left out, so the moments are compared on the
    enumerated part at those tails (the pair's moments are at least the enumerated
    outcomes' own)."""
    model = _model(k, eps0)
    assert m_bins.applies(model)
    orders = np.array([1.5, 2.0, 5.0, 20.0, 100.0])
    exact, p0, p1 = _brute_moments(model, n, orders)
    assert p0.sum() == pytest.approx(1.0, abs=1e-12) and p1.sum() == pytest.approx(1.0, abs=1e-12)
    if tail > 1e-30:
        monkeypatch.setattr(m_bins, "H3_TAIL", 1.0)
        monkeypatch.setattr(m_bins, "TAIL_SPAN", 0.1)         # merged tails of 2-4 S
        agg = m_bins.m_bin_aggregates(model, n, tail=tail, weak_rtol=0.002)
        split = _split_moments(agg, orders)
        kept = _kept_moments(model, n, tail, orders)
        assert np.all(split >= kept - 1e-12 * np.abs(kept) - 1e-14)
        return
    agg = m_bins.m_bin_aggregates(model, n, tail=tail, weak_rtol=0.002)
    assert agg.p0.sum() == pytest.approx(1.0, abs=1e-12)
    assert agg.p1.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(agg.lo <= agg.ell) and np.all(agg.ell <= agg.hi)
    split = _split_moments(agg, orders)
    assert np.all(split >= exact - 1e-12 * np.abs(exact) - 1e-14)
    # and close: the split's excess is second order in the bins' width
    assert np.all(split / (orders - 1) <= exact / (orders - 1) * (1 + 2e-3) + 1e-12)


@pytest.mark.parametrize(("k", "eps0", "n", "tail"), [(3, 1.0, 400, 1e-15), (10, 4.0, 600, 1e-60)])
def test_agrees_with_the_former_enumeration(k, eps0, n, tail):
    model = _model(k, eps0)
    new = m_bins.m_bin_aggregates(model, n, tail=tail, weak_rtol=0.002)
    old = enumeration.symmetric_aggregates(model, n, tail=tail, weak_rtol=0.002)
    assert new.p0.sum() == pytest.approx(old.p0.sum(), abs=1e-12)
    assert new.p1.sum() == pytest.approx(old.p1.sum(), abs=1e-12)
    assert new.p0.size < old.p0.size
    orders = rdp.ORDERS[:40]
    c_new = rdp._log_moments(new, model, n, orders)[0] / (orders - 1)
    c_old = rdp._log_moments(old, model, n, orders)[0] / (orders - 1)
    # close where the windows' tails do not weigh, and never looser (the wide h3 windows
    # of m_bins.H3_TAIL make the largest orders tighter)
    low = orders <= 100
    assert c_new[low] == pytest.approx(c_old[low], rel=3e-4)
    assert np.all(c_new <= c_old * (1 + 3e-4))


def test_rdp_blanket_over_few_rounds_keeps_its_value(monkeypatch):
    """krr-3, n = 1000, T = 1: 0.14293882 by the (S, D, h3-bin) enumeration (5-6 s); the
    m-bins within 2e-6 (about 0.5 s)."""
    r = make_randomizer("krr", epsilon0=1.0, domain_size=3)
    clear_caches()
    value = compose_rounds([Round(r, 1000, 1)], 1e-6, "rdp-blanket").epsilon
    assert value == pytest.approx(0.14293882082671733, rel=2e-6)
    monkeypatch.setattr(rdp, "M_BINS_UP_TO", 0)       # the former enumeration, a smaller n
    clear_caches()
    old = compose_rounds([Round(r, 300, 3)], 1e-6, "rdp-blanket").epsilon
    monkeypatch.undo()
    clear_caches()
    new = compose_rounds([Round(r, 300, 3)], 1e-6, "rdp-blanket").epsilon
    assert new == pytest.approx(old, rel=1e-5)
