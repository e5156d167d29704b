"""Issue 32: the thinned lower curve's thresholds placed by a subsample of its slices
(protocols/bounds/multi_message/thinned_scout.py). The scout only proposes thresholds: the eps
returned must stay below the model's dense exact divergence (certified by the full curve), agree
with the unscouted search, and take the scouted path (few full region passes); a scout that
misjudges the slices' weights can only lower the value, and one whose thresholds do not certify
the start falls back to the unscouted search."""

from __future__ import annotations

import pytest
from multi_message_probes import model_deltas

from shufflesim.protocols.bounds.multi_message import bounds as mm
from shufflesim.protocols.bounds.multi_message import models, thinned_curve, thinned_scout
from shufflesim.protocols.randomizers import make_randomizer

DEFAULT_ROWS = thinned_scout.SCOUT_ROWS


def _clear():
    models._thinned_tables.cache_clear()


def _cheu(d, f):
    return make_randomizer("cheu", domain_size=d, flip_probability=f, epsilon0=1.0)


def _lower(r, n, delta, monkeypatch, scout_rows):
    """exact_lower_bound's eps with the given SCOUT_ROWS, and the full-curve region passes."""
    monkeypatch.setattr(thinned_scout, "SCOUT_ROWS", scout_rows)
    _clear()
    full_rows = max(t["c1"].size for *_, m in mm.lower_models(r, n)
                    if isinstance(m, models.ThinnedProductModel)
                    for t in models.thinned_tables_of(m, mm.blanket_count(r, n)))
    passes = []
    original = thinned_curve.region_masses

    def counted(ready, thresholds):
        if ready["w"][0].shape[0] == full_rows:
            passes.append(len(thresholds))
        return original(ready, thresholds)
    monkeypatch.setattr(thinned_curve, "region_masses", counted)
    value = mm.exact_lower_bound(r, n, delta).epsilon
    monkeypatch.setattr(thinned_curve, "region_masses", original)
    return value, sum(passes)


def _dense_delta(r, n, eps):
    """The largest dense exact divergence over the thinned models at eps (the truth the
    returned eps must stay below)."""
    return max(delta for thinned, delta in model_deltas(r, n, eps) if thinned)


@pytest.mark.parametrize("d,f,n", [(4, 0.2, 300), (8, 0.1, 200)])
def test_scouted_eps_is_below_the_dense_divergence(d, f, n, monkeypatch):
    """A scout of every 2nd-3rd slice at small n (forced: SCOUT_ROWS = 50): the dense exact
    divergence at the returned eps exceeds delta, the value is within 5e-5 below the unscouted
    search's (stride 2 at d = 8, n = 200: -2.6e-5, the largest move seen), and the full curve
    was evaluated at fewer thresholds."""
    delta = 1e-4
    r = _cheu(d, f)
    old, old_passes = _lower(r, n, delta, monkeypatch, 10**9)
    new, new_passes = _lower(r, n, delta, monkeypatch, 50)
    assert _dense_delta(r, n, new) > delta
    assert old * (1 - 5e-5) <= new <= old * (1 + 1e-5)
    assert new_passes < old_passes


def test_scout_at_cheu_d4_n1e4_agrees_with_the_full_search(monkeypatch):
    """The benchmark's shape (909 slices at d = 16; d = 4 gives the same tables' sizes): the
    default scout, 3 or fewer full passes instead of 13, the same eps to 1e-5."""
    r = _cheu(4, 0.2)
    old, old_passes = _lower(r, 10000, 1e-6, monkeypatch, 10**9)
    new, new_passes = _lower(r, 10000, 1e-6, monkeypatch, DEFAULT_ROWS)
    assert old_passes >= 10 and new_passes <= 3
    assert new == pytest.approx(old, rel=1e-5)
    assert new <= mm.exact_upper_bound(r, 10000, 1e-6).epsilon


def test_a_misweighted_scout_only_lowers_the_value(monkeypatch):
    """Negative control: a scout whose weights are 3x too large proposes thresholds for a root
    far above the true one; the full curve still certifies what it returns, so the value stays
    below the dense divergence's crossing and does not exceed the honest search's."""
    delta = 1e-4
    r = _cheu(4, 0.2)
    honest, _ = _lower(r, 300, delta, monkeypatch, 50)
    subsample = thinned_scout._subsample

    def heavy(ready, stride):
        out = subsample(ready, stride)
        out["w"] = tuple(3.0 * w for w in out["w"])
        return out
    monkeypatch.setattr(thinned_scout, "_subsample", heavy)
    skewed, _ = _lower(r, 300, delta, monkeypatch, 50)
    assert skewed <= honest * (1 + 1e-9)
    assert _dense_delta(r, 300, skewed) > delta


def test_thresholds_that_certify_nothing_fall_back(monkeypatch):
    """A scout whose regions sit 5 above the true ones proposes thresholds at which the full
    curve cannot certify the cheap models' eps: the unscouted search runs, same value."""
    delta = 1e-4
    r = _cheu(4, 0.2)
    old, _ = _lower(r, 300, delta, monkeypatch, 10**9)
    original = thinned_scout.Scout.largest_certified

    returned = []

    def shifted(self, delta, low, high):
        self.scout.thresholds = [t + 5.0 for t in self.scout.thresholds]
        returned.append(original(self, delta, low, high))
        return returned[-1]
    monkeypatch.setattr(thinned_scout.Scout, "largest_certified", shifted)
    new, _ = _lower(r, 300, delta, monkeypatch, 50)
    assert returned == [None]                     # the scouted path gave up
    assert new == pytest.approx(old, rel=1e-12)
