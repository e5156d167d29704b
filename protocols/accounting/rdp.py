"""Renyi DP of shuffling (002 Sec. 6.1), composed over rounds and converted to (eps, delta).

002 Sec. 6.1 bounds the Renyi divergence of the shuffled mechanism by that of the clone pair
(the mechanism is a post-processing of the pair, and Renyi divergences satisfy data
processing); the same holds for the 000 Thm 13 blanket pair. Per round and order alpha we take
the largest of the two directions of

    D_alpha(P || Q) = 1 / (alpha - 1) log E_P[e^{(alpha - 1) L}]

over the round's aggregates (enumeration.py), each split into its two extreme losses (a
dominating pair, as in pld.py), with masses raised by their relative error and the mass outside
the enumerated region at the largest possible loss (loss_max). Renyi DP composes additively under
adaptive composition (Mironov 2017, Prop. 1); the composed curve rho(alpha) is converted with
Canonne, Kamath, Steinke 2020, Prop. 12:

    eps = rho(alpha) + (log(1/delta) + (alpha - 1) log(1 - 1/alpha) - log(alpha)) / (alpha - 1),

minimised over the orders of :data:`ORDERS` (each order gives a valid guarantee).
"""

from __future__ import annotations

import math
import time

import numpy as np
from scipy.special import logsumexp

from shufflesim.protocols.accounting import pairs
from shufflesim.protocols.accounting.enumeration import DEFAULT_WEAK_RTOL, aggregates
from shufflesim.protocols.accounting.pld import _Accumulator, _upper_direction, mass_relative_error
from shufflesim.protocols.accounting.rounds import (
    ComposedMethod,
    ComposedResult,
    pure_cap,
    round_models,
    total_rounds,
)
from shufflesim.protocols.bounds.result import BoundKind, BoundStatus

#: Tail mass left out of the binomial windows: the mass outside is charged at the largest loss,
#: e^{(alpha - 1) loss_max}, so it must be tiny for large orders.
RDP_TAIL = 1e-60
#: Renyi orders tried.
ORDERS = np.concatenate([1 + np.geomspace(1e-2, 1, 12)[:-1],
                         np.geomspace(2, 1e5, 60)])


def renyi_curve(model, n: int, *, tail: float = RDP_TAIL, weak_rtol: float = DEFAULT_WEAK_RTOL,
                orders=ORDERS) -> np.ndarray:
    """max over both directions of D_alpha of the round's pair, rounded up: each aggregate
    (enumeration.py) is split into its two extreme losses keeping P- and Q-mass (a dominating
    pair, pld.py), masses are raised by their relative error, and the mass outside the region
    is put at the largest possible loss."""
    agg = aggregates(model, int(n), tail=tail, weak_rtol=weak_rtol)
    eta = mass_relative_error(n)
    interval = max(model.loss_scale(n) / 200.0, model.loss_max * 2e-7)
    curves = []
    for d in (0, 1):
        if d == 0:
            mass, ell, lo, hi, out = agg.p0, agg.ell, agg.lo, agg.hi, agg.outside0
        else:
            mass, ell, lo, hi, out = agg.p1, -agg.ell, -agg.hi, -agg.lo, agg.outside1
        acc = _Accumulator()
        _upper_direction(acc, mass * (1 + eta), ell, lo, hi, interval)
        losses = np.append((np.arange(acc.values.size) + acc.low) * interval, model.loss_max)
        weights = np.append(acc.values, out * (1 + eta))
        keep = weights > 0
        losses, log_w = losses[keep], np.log(weights[keep])
        curve = np.array([logsumexp(log_w + (a - 1.0) * losses) / (a - 1.0) for a in orders])
        curves.append(curve)
        if model.is_swap_symmetric():
            break
    return np.maximum(np.max(curves, axis=0), 0.0) * (1 + 1e-12) + 1e-15


def epsilon_from_rdp(rho: np.ndarray, delta: float, orders=ORDERS) -> tuple[float, float]:
    """CKS20 Prop. 12 minimised over orders: (eps, best order)."""
    a = np.asarray(orders, dtype=float)
    eps = rho + (math.log(1 / delta) + (a - 1) * np.log1p(-1 / a) - np.log(a)) / (a - 1)
    i = int(np.argmin(eps))
    return float(max(eps[i], 0.0)), float(a[i])


def _rdp_method(name: str, model_of, reference: str):
    def compute(rounds, delta, *, interval=None, tail=RDP_TAIL,
                weak_rtol=DEFAULT_WEAK_RTOL) -> ComposedResult:
        start = time.perf_counter()
        rounds, models = round_models(rounds, delta, model_of)
        rho = np.zeros(len(ORDERS))
        for model, n, repeat in models:
            rho += repeat * renyi_curve(model, n, tail=tail, weak_rtol=weak_rtol)
        eps, alpha = epsilon_from_rdp(rho, delta)
        eps = min(eps, pure_cap(rounds))
        return ComposedResult(name, BoundKind.UPPER, eps, float(delta), total_rounds(rounds),
                              BoundStatus.PROVEN, reference, time.perf_counter() - start, None,
                              f"best Renyi order {alpha:.4g}")
    return compute


METHODS = (
    ComposedMethod("rdp-clone", BoundKind.UPPER, BoundStatus.PROVEN,
                   "Renyi DP of the 002 clone pair (002 Sec. 6.1), Mironov composition, "
                   "CKS20 Prop. 12 conversion", "any eps0-LDP randomizer with eps0 <= 50",
                   _rdp_method("rdp-clone", lambda r: pairs.clone_model(float(r.epsilon0)),
                               "002 Sec. 6.1 + Mironov 2017 Prop. 1 + CKS20 Prop. 12")),
    ComposedMethod("rdp-blanket", BoundKind.UPPER, BoundStatus.PROVEN,
                   "Renyi DP of the 000 Thm 13 blanket pair, Mironov composition, CKS20 "
                   "Prop. 12 conversion", f"randomizers {', '.join(pairs.SUPPORTED)}",
                   _rdp_method("rdp-blanket", pairs.blanket_model,
                               "000 Thm 13 pair + Mironov 2017 Prop. 1 + CKS20 Prop. 12")),
)
