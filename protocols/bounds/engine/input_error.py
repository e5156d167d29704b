"""The engine's input error with relative accuracy in the tail: a bound on |E[S_+] - E[S'_+]|
for S with the exact GPARV values a - e^eps b and S' with the computed ones (000 Thm 12-14).

:func:`shufflesim.protocols.bounds.engine.common.input_slack` bounds it by
A P[S' >= -A], A = n max_j c_err: every user is charged the largest atom's rounding, and the
probability is a Chernoff bound. At large eps0 that is an absolute floor: shuffled k-RR's blanket
GPARV at eps0 = 14, k = 65536, n = 1e6 has an atom b = e^eps0 / gamma ~ 1.2e6 with weight ~8e-7,
so A ~ n 4u e^eps b ~ 0.2 and the floor on delta(eps) is ~5e-15, above delta = 1e-15 (the
search saturated and the bound returned eps0 = 14 where the truth is ~5.85; issue 31).

Here each atom j carries its own rounding e_j = 4u (a_j + e^eps b_j) (the bound
:func:`shufflesim.protocols.bounds.engine.common.categories` states), and the users that drew
it are charged only that. With N_j the count of atom j (multinomial per group, groups
independent), S - S' is at most E_N = sum_j e_j N_j in size, S_+ and S'_+ differ only where
max(S, S') > 0, which implies S' + E_N >= 0 (S <= S' + E_N). Hence, for every lam > 0,

    |E[S_+] - E[S'_+]| <= E[E_N 1{S' + E_N >= 0}] <= E[E_N e^{lam (S' + E_N)}]
        = sum_g n_g (sum_j e_j w_j e^{lam v_j}) M_g^(n_g - 1) prod_{h != g} M_h^(n_h),

with v_j = c'_j + e_j and M_g = sum_j w_j e^{lam v_j} (E[N_j x^N] for a multinomial count is
n w_j x_j (sum_i w_i x_i)^(n - 1)); lam -> 0 gives the mean E[E_N]. Any lam is valid, so
the minimisation only affects tightness. The bound is relative: it is the Chernoff bound of
P[S' > 0] (up to a polynomial factor) times the per-user rounding, ~1e-25 at the example's
eps = 6 instead of 5e-9. The log-sum-exp rounding is covered as in
:func:`~shufflesim.protocols.bounds.engine.common.chernoff_upper` (8u (1 + lam max|v|) per
user in the exponent).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from shufflesim.protocols.bounds.atoms import RatioAtoms
from shufflesim.protocols.bounds.engine.common import TINY, U, log_sum_exp, minimise_unimodal

__all__ = ["error_bound", "tilted_input_slack"]

#: span (natural-log units of lam) searched on each side of the Chernoff-style guess
SPAN_BELOW = 30.0
SPAN_ABOVE = 12.0


def _parts(groups: Sequence[tuple[RatioAtoms, int]], epsilon: float):
    """Per group with count > 0: (v = computed value + its error, error, weight, count), the
    zero atom included (value 0, no error), weights as the engine's categories use them."""
    growth = math.exp(epsilon)
    parts = []
    for atoms, count in groups:
        if count <= 0:
            continue
        keep = atoms.weight > 0
        a, b, w = atoms.a[keep], atoms.b[keep], atoms.weight[keep]
        c = a - growth * b
        err = 4 * U * (a + growth * b)
        total = float(w.sum())
        if total > 1:
            w = w / total
        elif total < 1:
            c, err, w = np.append(c, 0.0), np.append(err, 0.0), np.append(w, 1.0 - total)
        parts.append((c + err, err, w, int(count)))
    return parts


def tilted_input_slack(groups: Sequence[tuple[RatioAtoms, int]], epsilon: float) -> float:
    """Upper bound on |E[S_+] - E[S'_+]| (exact vs computed GPARV values) for independent
    groups of (atoms, count) at ``epsilon`` (module docstring); valid for any groups, tight
    where S' > 0 is rare."""
    return error_bound(_parts(groups, epsilon))


def error_bound(parts) -> float:
    """Upper bound on E[E_N 1{S' + E_N >= 0}] for independent groups given as (v, e, w, n):
    atom values v = c' + e (c' the computed value), errors e >= 0, weights w (summing to 1)
    and the group's count n (module docstring)."""
    if not parts:
        return 0.0
    mean = sum(n * float(w @ e) for _, e, w, n in parts)
    if mean == 0.0:
        return 0.0
    # the mean E[E_N] (lam -> 0): sums of non-negative products, (atoms + 2) u relative each
    mean_bound = mean * (1 + 4 * U * (2 + max(v.size for v, *_ in parts)))
    v_abs = max(float(np.abs(v).max()) for v, *_ in parts)
    users = sum(n for *_, n in parts)

    def log_bound(s):
        lam = np.exp(np.atleast_1d(np.asarray(s, dtype=float)))[:, None]
        total = np.zeros(lam.shape[0])
        inner = []
        for v, e, w, n in parts:
            log_m = log_sum_exp(lam * v[None, :], w)
            total = total + n * log_m
            has = e > 0
            if has.any():
                inner.append(math.log(n) + log_sum_exp(lam * v[None, has], w[has] * e[has])
                             - log_m)
        terms = np.stack(inner, axis=-1)
        top = terms.max(axis=-1)
        with np.errstate(invalid="ignore", over="ignore"):
            out = (total + top + np.log(np.exp(terms - top[:, None]).sum(axis=-1))
                   + users * 8 * U * (1 + lam[:, 0] * v_abs) + 1e-12)
        return np.where(np.isnan(out), np.inf, out)

    variance = sum(n * max(float(w @ v ** 2) - float(w @ v) ** 2, 0.0) for v, _, w, n in parts)
    centre = sum(n * float(w @ v) for v, _, w, n in parts)
    scale = math.sqrt(variance) or 1.0
    guess = math.log(max(-centre, scale) / scale ** 2)
    best = minimise_unimodal(log_bound, guess - SPAN_BELOW, guess + SPAN_ABOVE)
    tilted = math.exp(min(best, 700.0)) + TINY               # TINY: exp may underflow
    return min(mean_bound, tilted)
