"""The conditioning method's kink sum for many rows, from one table of log-MGF bounds
(issue 32: exact-lower at n = 1e9 in interactive time).

engine/conditioning.py bounds E h_t(V) - h_t(E V) (its module docstring, step 2) by summing,
row by row, the 2J kinks of h_t nearest to the pool mean one by one (Chernoff with each kink's
own lam and the mean-variance bound phi) plus geometric far sides: ~6 evaluations of the
log-MGF bound psi_t per row, 70 % of an evaluation at n = 1e9 (2.3e5 rows). Here, for the
single style (the exact law of the main pool count X ~ Bin(m, q), a Bennett remainder):

* psi_t(lam) = m_t [ln(1 + q (e^{lam alpha} - 1)) - q lam alpha]
               + m_t v_R (e^{|lam| M} - 1 - |lam| M) / M^2
  is m_t times a function of lam that is >= 0 (a centred log-MGF and Bennett's term), so
  psi_t <= m_max times that function for every row of the window: one table F(lam) on a
  geometric grid of lam serves every row (any lam gives a valid Chernoff bound, so each row's
  Gaussian-optimal lam is rounded down to the grid).
* Kinks above the mean lie at distances a_0 + j d (j >= 0) with masses P[B = k_0 - j]; the
  first is bounded by its own mass times min(phi(Var, a_0), Chernoff), the others by
  p_max sum_{j >= 1} e^{F - lam (a_0 + j d)} / (lam e) (a geometric series) or, where that is
  larger, p_max (phi(Var, d) + Var / (2 d)) (the distances past kinks beyond the first,
  summed against an integral as in engine/screen.py). The same below the mean with -lam.
  p_max = the mode pmf at the window's smallest t (the largest of all rows: screen.py).
* The computed mean is within e_v of the true one (e_v < d / 2 here): distances are reduced
  by e_v, and the one kink that may lie on the other side of the true mean adds e_v p_max
  (E(k - V)_+ = E(V - k)_+ + k - E V).

The rounding of the table (F up to ~700, a few u relative) and of the sums is covered by a
relative margin of 1e-10.
"""

from __future__ import annotations

import numpy as np

#: grid points of the lam table per side
GRID = 256
#: relative margin for the table's and the sums' rounding
MARGIN = 1e-10


def _phi(var, dist):
    """E(Y - a)_+ <= (sqrt(var + a^2) - a) / 2 for E Y = 0, Var Y <= var, a >= 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(var > 0, var / (2.0 * (np.sqrt(var + dist * dist) + dist)), 0.0)


def _lam(var, dist):
    """The Gaussian-optimal lam of the Chernoff bound of E(Y - dist)_+ (any lam > 0 is valid)."""
    return (dist + np.sqrt(dist * dist + 4.0 * var)) / (2.0 * var)


def _table(psi_max, lam_rows):
    """Grid of lam (geometric, covering the rows' lam) and F(lam) = psi_max(lam)."""
    lo = float(np.min(lam_rows))
    hi = float(np.max(lam_rows))
    hi = max(hi, lo * (1 + 1e-9))
    grid = np.geomspace(lo, hi, GRID)
    grid[0] = min(grid[0], lo)
    return grid, np.asarray(psi_max(grid), dtype=float)


def _snap(grid, lam_rows):
    """Index of the largest grid lam <= each row's lam (grid[0] <= every row's lam)."""
    idx = np.searchsorted(grid, lam_rows, side="right") - 1
    return np.clip(idx, 0, grid.size - 1)


def _side(dist, p_first, var, d, p_max, psi_max):
    """Bound of sum_{j >= 0} P_j E(sign Y - dist - j d)_+ (P_0 = p_first, P_j <= p_max)."""
    lam_rows = _lam(var, dist)
    grid, table = _table(psi_max, lam_rows)
    idx = _snap(grid, lam_rows)
    lam = grid[idx]
    with np.errstate(over="ignore", invalid="ignore"):
        log_first = np.minimum(table[idx] - lam * dist - np.log(lam * np.e), 700.0)
        first = np.minimum(_phi(var, dist), np.exp(log_first))
        decay = np.exp(-lam * d)
        rest_chernoff = np.exp(np.minimum(log_first - lam * d, 700.0)) / -np.expm1(-lam * d)
        rest_chernoff = np.where(decay < 1.0, rest_chernoff, np.inf)
    rest_spread = _phi(var, d) + var / (2.0 * d)
    rest = np.minimum(np.nan_to_num(rest_chernoff, nan=np.inf), rest_spread)
    return p_first * first + p_max * rest


def kink_sum(bstar, var, e_v, d: float, p0, p1, p_max: float, psi_up, psi_down):
    """Upper bound on E h_t(V) - h_t(E V) per entry (conditioning's step 2), for kinks of h_t at
    distances d (b* - k) from the computed mean: ``bstar`` = b* per entry, ``p0`` = P[B = k_0]
    and ``p1`` = P[B = k_0 + 1] with k_0 = floor(b*), ``var`` >= Var(V) per entry, ``e_v`` the
    mean's error (< d / 2), ``psi_up(lam)`` / ``psi_down(lam)`` bounds of the log-MGF of
    +-(V - E V) for every row (arrays of lam > 0)."""
    k0 = np.floor(bstar)
    above = np.maximum(d * (bstar - k0) - e_v, 0.0)
    below = np.maximum(d * (k0 + 1.0 - bstar) - e_v, 0.0)
    up = _side(above, p0, var, d, p_max, psi_up)
    down = _side(below, p1, var, d, p_max, psi_down)
    return (up + down + e_v * p_max) * (1 + MARGIN)
