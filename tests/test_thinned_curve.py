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
