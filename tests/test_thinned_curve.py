"""Issue 32: the thinned (Cheu) model's lower estimate as a function of eps from one set of
regions (protocols/bounds/multi_message/thinned_curve.py): at the regions of
kernels.thinned_product_lower it gives that function's value; with regions placed anywhere it
stays below the dense exact divergence of the model (kernels.thinned_product_delta), and so does
the eps multi-message-exact-lower returns; a curve with a P1 mass too small is caught."""

from __future__ import annotations

import numpy as np
import pytest
from multi_message_probes import model_deltas

from shufflesim.protocols.bounds.multi_message import bounds as mm
from shufflesim.protocols.bounds.multi_message import kernels, thinned_curve
from shufflesim.protocols.randomizers import make_randomizer

F = 0.15


def _model():
    retained = kernels.binomial_law(300, 1 - F, kernels.THINNED_TAIL).convolve(
        kernels.binomial_law(299, F, kernels.THINNED_TAIL))
    args = (retained, 1 - F, (F, F), (1 - F, F), (F, 1 - F))
    return args, kernels.thinned_tables(*args)


@pytest.mark.parametrize("eps", [0.1, 0.4, 0.8])
def test_curve_at_the_kernel_regions_is_the_kernel_value(eps):
    """Equal where the kernel tries every offset; never below it (the kernel stops early at
    eps = 0.8, where only its last offsets have a positive part)."""
    _, tables = _model()
    curve = thinned_curve.LowerCurve([tables])
    curve.add(eps + c for c in kernels.THRESHOLD_OFFSETS)
    kernel = kernels.thinned_product_lower(tables, eps)
    assert curve(eps) >= kernel - 1e-12 * abs(kernel)
    if eps < 0.5:
        assert kernel > 0
        assert curve(eps) == pytest.approx(kernel, rel=1e-12)


def test_curve_stays_below_the_dense_divergence_everywhere():
    args, tables = _model()
    curve = thinned_curve.LowerCurve([tables])
    curve.add(np.linspace(-0.5, 1.5, 41))          # regions far from every eps below as well
    for eps in (0.05, 0.2, 0.4, 0.8, 1.2):
        dense = kernels.thinned_product_delta(*args, eps)
        assert curve(eps) <= dense.upper + 1e-12
        assert curve(eps) >= 0.8 * dense.lower - 1e-9     # and not a trivial estimate


def test_a_curve_with_too_little_p1_is_caught():
    """Negative control: P1 masses 1 % short lift the curve above the dense divergence."""
    args, tables = _model()
    curve = thinned_curve.LowerCurve([tables])
    curve.add(np.linspace(0.0, 0.6, 25))
    p0, p1 = curve.masses[0]
    curve.masses[0] = (p0, 0.99 * p1)
    assert any(curve(eps) > kernels.thinned_product_delta(*args, eps).upper
               for eps in (0.05, 0.2, 0.4))


@pytest.mark.parametrize("d,f,n", [(4, 0.2, 300), (8, 0.1, 200)])
def test_exact_lower_is_below_the_dense_divergence_at_its_eps(d, f, n):
    """The returned eps: the dense exact divergence of the model it came from exceeds delta."""
    delta = 1e-4
    r = make_randomizer("cheu", domain_size=d, flip_probability=f, epsilon0=1.0)
    result = mm.exact_lower_bound(r, n, delta)
    found = [delta for _, delta in model_deltas(r, n, result.epsilon)]
    assert max(found) > delta
    assert result.epsilon <= mm.exact_upper_bound(r, n, delta).epsilon


def _small_n_tables():
    """cheu d = 16, f = 0.15 at n = 50: many slices' heavy runs end at the grid's last column
    (the windows cover whole supports), the case where the narrowed layout pads past it."""
    from shufflesim.protocols.bounds.multi_message import models
    r = make_randomizer("cheu", epsilon0=1.0, domain_size=16, flip_probability=F)
    return [t for *_, m in mm.lower_models(r, 50) if isinstance(m, models.ThinnedProductModel)
            for t in models.thinned_tables_of(m, mm.blanket_count(r, 50))]


def test_narrowed_cells_are_each_slice_heavy_run_once():
    """prepared keeps, per slice, exactly the cells of its heavy run, each once (session 15:
    the padding past the last column used to repeat that column's cell, up to 9 times)."""
    tables = _small_n_tables()
    assert tables
    for t in tables:
        a0, a1, ga, la = t["a"]
        c1, c2 = t["c1"][:, None], t["c2"][:, None]
        full = (c1 * a0, c1 * a1, c2 * ga)
        heavy = (full[0] + full[1] + full[2]) > thinned_curve.CELL_DROP
        width = heavy.shape[1]
        assert heavy[:, -1].any()                       # the case is present
        ready = thinned_curve.prepared(t)
        assert ready["w"][0].shape[1] < width            # and the table is narrowed
        for i in np.flatnonzero(heavy.any(axis=1)):
            lo = int(np.argmax(heavy[i]))
            hi = width - int(np.argmax(heavy[i, ::-1]))
            for kept, whole in zip(ready["w"], full, strict=True):
                run = whole[i, lo:hi]
                assert sorted(kept[i][kept[i] != 0]) == sorted(run[run != 0])


def test_narrowed_region_masses_match_the_full_grid():
    """Region masses of the narrowed layout against the full grid's (every cell, no
    narrowing): equal up to the dropped cells (< CELL_DROP each) and rounding."""
    for t in _small_n_tables():
        ready = thinned_curve.prepared(t)
        a0, a1, ga, la = t["a"]
        c1, c2 = t["c1"][:, None], t["c2"][:, None]
        whole = dict(ready, w=(c1 * a0, c1 * a1, c2 * ga), cut0=t["shift"] - la)
        thresholds = np.linspace(-0.5, 2.0, 11)
        for narrow, full in zip(thinned_curve.region_masses(ready, thresholds),
                                thinned_curve.region_masses(whole, thresholds), strict=True):
            dropped = a0.shape[1] * thinned_curve.CELL_DROP
            assert np.all(narrow <= full * (1 + 1e-12) + 1e-300)
            assert np.all(narrow >= full * (1 - 1e-12) - dropped)
