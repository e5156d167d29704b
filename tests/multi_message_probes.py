"""Test helpers for the multi-message lower bounds: the truths a returned eps must stay below."""

from __future__ import annotations

from shufflesim.protocols.bounds.multi_message import bounds as mm
from shufflesim.protocols.bounds.multi_message import kernels, models


def model_deltas(r, n: int, eps: float) -> list[tuple[bool, float]]:
    """(thinned?, upper end of the exact divergence at eps) of every lower model of ``r`` among
    ``n`` users; a thinned model's divergence is the dense one, summed cell by cell
    (kernels.thinned_product_delta), independent of the tables and regions the bound uses."""
    big_n = mm.blanket_count(r, n)
    found = []
    for *_, model in mm.lower_models(r, n):
        if isinstance(model, models.ThinnedProductModel):
            retained = kernels.binomial_law(big_n, model.keep[0], kernels.THINNED_TAIL).convolve(
                kernels.binomial_law(model.others, model.keep[1], kernels.THINNED_TAIL))
            found.append((True, kernels.thinned_product_delta(
                retained, model.keep[2], model.columns, model.first, model.second, eps).upper))
        else:
            found.append((False, model.delta(big_n, eps).upper))
    return found
