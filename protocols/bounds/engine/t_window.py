"""A narrower window for the conditioning method's pair count T, with a joint Chernoff bound
for the rest (issue 32: exact-lower at n = 1e9 in interactive time).

engine/conditioning.py sums E[(S + s)_+ | T = t] P[T = t] over a window of T that leaves
plans.T_TAIL = 1e-22 of its mass outside (+-9.8 sd; 2.3e5 rows at n = 1e9 for 10-RR), because
outside it the bound E[(S + s)_+ | T] <= pos_pair T + ... is crude (~n times the mass). Here
the part of E[(S + s)_+] with T beyond t_hi (or below t_lo) is bounded by

    E[(S + s)_+ 1{T >= t_hi + 1}] <= E[e^{lam s}] E[e^{lam S + mu (T - t_hi - 1)}] / (lam e)
        = E[e^{lam s}] exp(n ln sum_j w_j e^{lam c_j + mu [j in pair]} - mu (t_hi + 1)) / (lam e)

for any lam > 0, mu >= 0 ((x)_+ <= e^{lam x} / (lam e), 1{T >= t_hi + 1} <= e^{mu (T - t_hi - 1)},
the users are i.i.d. and s is independent; 000 Thm 12-14 for the setting); the lower side with
-mu. It is about E[S_+] e^{-z^2 / 2} at z sd, so a window of ~7 sd (1.6e5 rows) suffices for
an outside part below 1e-10 of the sum, where the leaves' own bracket is ~1e-8 of it. (lam, mu)
is minimised on a grid (any point is valid); the log-MGF's rounding is added as in
common.chernoff_upper (8u (1 + lam max|c| + mu) per user).

The rows dropped from the window are dropped from the lower side too (every term is >= 0).
"""

from __future__ import annotations

import math

import numpy as np

from shufflesim.protocols.bounds.engine.common import Categories, U, log_sum_exp
from shufflesim.protocols.bounds.engine.plans import T_WINDOW_MIN_ROWS as MIN_ROWS

# MIN_ROWS (engine/plans.py): the fewest rows of the full window for which the narrower one is
# tried
#: candidate half-widths (sd of T), narrowest first
WIDTHS = (6.5, 7.0, 7.5, 8.0, 8.5)
#: the outside part may be at most this share of the Chernoff bound of E[S_+]
SHARE = 1e-10


def _log_bound(cat: Categories, pair: np.ndarray, lam: np.ndarray, mu: np.ndarray, edge: float,
               sign: float, log_shift: np.ndarray) -> np.ndarray:
    """ln of the joint bound on a (lam, mu) grid (arrays of one shape); ``edge`` = t_hi + 1
    (sign +1) or t_lo - 1 (sign -1); ``log_shift`` = ln E e^{lam s} on the grid."""
    x = lam[..., None] * cat.c + (sign * mu)[..., None] * pair
    per_user = log_sum_exp(x, cat.w)
    c_abs = float(np.abs(cat.c).max())
    rounding = cat.count * 8 * U * (1 + lam * c_abs + mu)
    return (cat.count * per_user - sign * mu * edge + log_shift - np.log(lam * math.e)
            + rounding)


def outside_bound(cat: Categories, pair_index: tuple[int, int], t_lo: float, t_hi: float,
                  shifts_v: np.ndarray, shifts_p: np.ndarray, shifts_err: np.ndarray,
                  lam_s: float) -> float:
    """Upper bound on E[(S + s)_+ 1{T < t_lo or T > t_hi}] (module docstring); ``lam_s``: a
    scale for lam (e.g. the Chernoff optimum of S alone)."""
    pair = np.zeros(cat.c.size)
    pair[list(pair_index)] = 1.0
    w_pair = float(cat.w[pair > 0].sum())
    n = cat.count
    lam = lam_s * np.geomspace(0.25, 4.0, 33)
    total = 0.0
    for sign, edge in ((1.0, t_hi + 1.0), (-1.0, t_lo - 1.0)):
        frac = min(max(edge / n, 1e-300), 1 - 1e-16)
        mu_star = abs(math.log(frac / (1 - frac)) - math.log(w_pair / (1 - w_pair)))
        mu = mu_star * np.linspace(0.0, 1.5, 31)
        lam_g, mu_g = np.meshgrid(lam, mu, indexing="ij")
        shift = log_sum_exp(lam_g[..., None] * (shifts_v + shifts_err), shifts_p)
        best = float(np.min(_log_bound(cat, pair, lam_g, mu_g, edge, sign, shift)))
        total += math.exp(min(best, 700.0))
    return total * (1 + 8 * U)


def narrowed(cat: Categories, pair_index: tuple[int, int], t: np.ndarray, shifts_v, shifts_p,
             shifts_err, chernoff_lam: float, chernoff_value: float):
    """(first row, last row + 1, outside bound) of the narrowest window of WIDTHS whose outside
    bound is <= SHARE * chernoff_value, or None (keep the full window)."""
    if t.size < MIN_ROWS or not (chernoff_value > 0 and math.isfinite(chernoff_value)):
        return None
    n = cat.count
    w_pair = float(cat.w[list(pair_index)].sum())
    mean, sd = n * w_pair, math.sqrt(n * w_pair * (1 - w_pair))
    for z in WIDTHS:
        lo = max(math.floor(mean - z * sd), int(t[0]))
        hi = min(math.ceil(mean + z * sd), int(t[-1]))
        bound = outside_bound(cat, pair_index, lo, hi, shifts_v, shifts_p, shifts_err,
                              chernoff_lam)
        if bound <= SHARE * chernoff_value:
            return int(lo - t[0]), int(hi - t[0]) + 1, bound
    return None
