"""A cheap certified upper bound on delta(eps) of one large group, for screening candidates
(issue 32: exact-lower at n = 1e9 in interactive time).

A screening only asks whether a candidate's delta(eps) at the best eps so far is <= delta
(numerical/candidates.py); at n = 1e9 the other k-RR triples sit at 0.45 delta, and the full
conditioning evaluation (2.9e5 rows of leaf and kink bounds, ~0.35 s) decided what a bound
within a factor 2 decides. This one uses the conditioning method's decomposition (000 Thm 12-14;
engine/conditioning.py: S = c_b T + d B + V given T = t, B ~ Bin(t, rho), V the pool sum)
with three simplifications, each an upper bound:

* T outside a window of +-Z_SCREEN sd: E[S_+ 1{T outside}] <= sqrt(E[S^2] P[T outside])
  (Cauchy-Schwarz), E[S^2] = n Var(G) + (n E G)^2 of the user's value G.
* The pool's spread (the kink sum): h_t is convex and piecewise linear with kinks d apart whose
  slope jumps are P[B = k] <= p_max, so with Y = V - E V,
  E h_t(V) - h_t(E V) <= p_max E[sum over kinks between E V and V of the distance past them]
  <= p_max E[|Y| + Y^2 / (2 d)] <= p_max (sd(V) + Var(V) / (2 d))
  (the distances past the kinks on one side form a decreasing sequence with step d: their sum
  is at most the first plus the integral). p_max over the window is the mode pmf at its
  smallest t: max_k P[Bin(t + 1, rho) = k] <= max_k P[Bin(t, rho) = k], since
  P[Bin(t + 1) = k] = rho P[Bin(t) = k - 1] + (1 - rho) P[Bin(t) = k].
* h_t(E V) by the leaf's closed form with its error (common.leaf_with_slope, as in
  conditioning._leaf_bounds).

Returned on the upper side of every rounding; None where it does not apply (the caller then
asks the engine).
"""

from __future__ import annotations

import math

import numpy as np

from shufflesim.protocols.bounds.atoms import RatioAtoms
from shufflesim.protocols.bounds.engine import conditioning
from shufflesim.protocols.bounds.engine.common import (
    REL_SPECIAL,
    REL_SUM,
    TINY,
    U,
    categories,
    chernoff_upper,
    input_slack,
    mode_pmf_on_range,
)
from shufflesim.protocols.distributions import binom

#: half-width of the window of T in standard deviations (P[outside] ~ 1e-8)
Z_SCREEN = 5.7
#: the narrower window tried first when the caller's threshold is known (P[outside] ~ 6e-5:
#: the Cauchy-Schwarz part is ~0.6 E[S_+] at 10-RR n = 1e9, enough where delta(eps) is half
#: of the threshold, as for the other k-RR triples)
Z_FAST = 4.0
#: fewest rows for which the screen is used (below it the engine's exact paths are cheap)
MIN_ROWS = 8192


def screen_delta_upper(atoms: RatioAtoms, n: int, epsilon: float,
                       threshold: float | None = None) -> float | None:
    """Certified upper bound on delta(eps) = E[(sum of n users' G)_+] / n (000 Thm 12-14) for
    one group of n users, or None where the screen does not apply (small windows, one sign of
    G, a degenerate decomposition). With ``threshold``, the Chernoff bound and then a window
    of Z_FAST sd are tried first and returned if <= threshold (every one is a valid bound)."""
    cat = _mixed_categories(atoms, n, epsilon)
    if cat is None:
        return None
    if threshold is not None:
        quick = _chernoff(cat, n)
        if quick <= threshold:
            return quick
        fast = _screen(cat, n, Z_FAST)
        if fast is None or fast <= threshold:
            return fast
    return _screen(cat, n, Z_SCREEN)


def _mixed_categories(atoms: RatioAtoms, n: int, epsilon: float):
    """The engine's categories of G at eps, or None unless G takes both signs."""
    cat = categories(atoms, n, epsilon)
    if cat.c.size < 2 or not (cat.c.min() < 0 < cat.c.max()):
        return None
    return cat


def _chernoff(cat, n: int) -> float:
    """The Chernoff bound of E[S_+] (common.chernoff_upper) plus the input slack, over n: ~1 ms,
    and decisive where delta(eps) is far below the threshold (e.g. at eps = 0)."""
    total = (chernoff_upper([cat]) + input_slack([cat])) * (1 + 8 * U) + TINY
    return total / n * (1 + 4 * U)


def _screen(cat, n: int, z: float) -> float | None:
    if not conditioning.well_posed(cat):
        return None
    roles = conditioning.choose_roles(cat)
    k = conditioning._coeffs(cat, roles)
    w_pair = 1.0 if not roles.pool else float(cat.w[roles.a] + cat.w[roles.b])
    if not 0.0 < w_pair < 1.0:
        return None
    sd_t = math.sqrt(n * w_pair * (1.0 - w_pair))
    if 2 * Z_SCREEN * sd_t < MIN_ROWS:
        return None
    lo = max(math.floor(n * w_pair - z * sd_t), 1)
    hi = min(math.ceil(n * w_pair + z * sd_t), n)
    t = np.arange(lo, hi + 1, dtype=float)
    pt = binom.pmf(t, n, w_pair)
    p_out = (float(binom.cdf(lo - 1, n, w_pair)) + float(binom.sf(hi, n, w_pair))) \
        * (1 + REL_SPECIAL) + 4 * U
    rows_lo, rows_hi = conditioning._single_terms(t, n - t, k, roles.main >= 0, np.zeros(1),
                                                  np.zeros(1), kink_sum=False)
    del rows_lo
    leaf = rows_hi[:, 0]
    # pool spread: p_max (sd(V) + Var(V) / (2 d)) per row
    m = n - t
    if roles.main >= 0:
        var_v = (k.alpha ** 2 * m * k.q * (1 - k.q) + m * (1 - k.q) * k.v_r) * (1 + 16 * U)
    else:
        var_v = np.zeros_like(m)            # one pool category or none: V is a constant
    p_max = float(mode_pmf_on_range(0.0, t[0], t[0], k.rho))
    spread = p_max * (np.sqrt(var_v) + var_v / (2 * k.d)) * (1 + 16 * U)
    inside = float((pt * (1 + REL_SPECIAL)) @ (leaf + spread)) * (1 + REL_SUM)
    # E[S^2] = n Var(G) + (n E G)^2 <= n E[(G - m)^2] + n^2 (|m| + e_m)^2 for any m within
    # e_m of E G (the sums' rounding: a few u times sum w |c|)
    mean = float(cat.w @ cat.c)
    e_m = 8 * U * cat.c.size * float(cat.w @ np.abs(cat.c))
    second = float(cat.w @ (cat.c - mean) ** 2) * (1 + 8 * U * cat.c.size)
    moment = (n * second + (n * (abs(mean) + e_m)) ** 2) * (1 + 8 * U)
    outside = math.sqrt(moment * p_out) * (1 + 8 * U)
    total = (inside + outside + input_slack([cat])) * (1 + 8 * U) + TINY
    return total / n * (1 + 4 * U)
